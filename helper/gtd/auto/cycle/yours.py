"""The person's work across a cycle, as the cycle engine sees it: one call at
`begin`, two at the end of a revert, one after a commit, one for the judge
(docs/your-work-is-safe.md). The work is gtd.auto.cycle.pins' (refs, stash,
worktrees) and gtd.auto.cycle.ignored's (ignored files)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gtd.auto.cycle import ignored, pins
from gtd.auto.journal import Journal
from gtd.errors import GtdError
from gtd.git import Git
from gtd.git_parse import Change

if TYPE_CHECKING:
    from typing import Any

# The key of the seals the pins are recorded under, and of the notes said so far.
SEAL = "pins"
NOTES = "your_work"
# The manifest's copy in the sealed state's tree (refs/gtd/state): where the side
# repository is lost, the list of the person's refs at `begin` survives there.
COPY = "pins.json"


def begin(git: Git, sealed: dict[str, Any]) -> bytes | None:
    """Pin the person's refs, stash, worktrees and ignored files into ``sealed``;
    the manifest, for its copy in the sealed state (:data:`COPY`). A repository
    the pins cannot be taken of (a ref naming a missing object, a full disk)
    does not stop the loop: the cycle runs as it did before pins, and its record
    says none were taken, and why."""
    try:
        sealed[SEAL] = pins.take(git, list(sealed.get("ignored") or ()))
    except (GtdError, OSError) as exc:
        why = exc.message if isinstance(exc, GtdError) else f"{exc.filename}: {exc.strerror}"
        sealed[SEAL] = {"error": why.replace("\n", " ")[:300]}
        return None
    return pins.manifest_bytes(git, sealed[SEAL])


def deny_write(git: Git, ignored: Sequence[str]) -> list[str]:
    """Absolute paths the agent has no business writing, for an OS sandbox's
    deny-write list: the side repository of the pins, the ignored paths
    (``ignored``: git's listing at `begin`, gtd.git.Git.ignored) but the
    helper's own, and the other worktrees of the repository."""
    from gtd import paths

    root = os.path.realpath(git.root)
    out = [str(pins.side_path(git))]
    out += [
        os.path.join(root, p.rstrip("/"))
        for p in ignored
        if not (paths.is_private(p.rstrip("/")) or p.rstrip("/") == paths.STATE_DIR)
    ]
    out += [p for p, _, _ in pins.read_worktrees(git) if os.path.realpath(p) != root]
    return out


def _seal(journal: Journal) -> dict[str, str] | None:
    seal = (journal.seals or {}).get(SEAL)
    return seal if isinstance(seal, dict) else None


def before_keep(git: Git, journal: Journal, added: Sequence[str]) -> list[str]:
    """A revert, before the cycle's work is kept: the person's ignored files the
    agent moved or copied to names git does not ignore taken out of the tree
    (moved back, or set aside), so no kept ref holds them."""
    seal = _seal(journal)
    manifest = None if seal is None else pins.load(git, seal)
    if manifest is None or not added:
        return []
    return ignored.put_back(git.root, git, manifest, added)


def after(git: Git, journal: Journal) -> list[str]:
    """After the revert or the commit: refs and stash put back, removed worktrees
    named, deleted ignored files put back or named."""
    seal = _seal(journal)
    if seal is None:
        return []
    if "error" in seal:
        return [
            f"your refs and ignored files could not be pinned when the cycle began: {seal['error']}"
        ]
    manifest = pins.load(git, seal)
    if manifest is None:
        # Removed with the helper's folder, say (`rm -rf .git/gtd` where no
        # sandbox fences it): the list of the refs survives in the sealed state,
        # their objects where git still has them; the copies of ignored files
        # and the pinned objects are gone. Said, never silent.
        gone = (
            "the pins of your refs and files taken when the cycle began are gone "
            f"({pins.side_path(git)})"
        )
        copy = pins.load_copy(git, seal, COPY)
        if copy is None:
            return [
                f"{gone}: a branch, tag, stash entry or ignored file the cycle deleted "
                "could not be put back, nor checked; `git fsck --lost-found` lists "
                "commits no ref names any more"
            ]
        notes = pins.settle(git, seal, journal.cycle, journal.branch or "", before=copy)
        return [
            f"{gone}: your refs and stash were checked and put back from the copy of "
            "their list in the sealed state, where git still has their commits; "
            "ignored files the cycle deleted could not be put back; `git fsck "
            "--lost-found` lists commits no ref names any more",
            *notes,
        ]
    notes = pins.settle(git, seal, journal.cycle, journal.branch or "")
    return notes + ignored.restore_deleted(git.root, pins.side(git), manifest)


def guard(git: Git, journal: Journal, changes: Sequence[Change]) -> list[str]:
    """The candidate's added files that are a person's ignored file under a new
    name or a copy of one: a commit would publish them."""
    seal = _seal(journal)
    manifest = None if seal is None else pins.load(git, seal)
    if manifest is None:
        return []
    added = {c.path: c.new_oid for c in changes if c.status == "A"}
    return ignored.smuggled(git.root, manifest, added) if added else []


def merged(journal: Journal, notes: Sequence[str]) -> Journal | None:
    """The journal with ``notes`` added to those sealed so far; None when none is new."""
    seals = dict(journal.seals or {})
    said = list(seals.get(NOTES) or ())
    new = [n for n in notes if n not in said]
    if not new:
        return None
    seals[NOTES] = [*said, *new]
    return journal.evolve(seals=seals)


def said(journal: Journal) -> tuple[str, ...]:
    return tuple((journal.seals or {}).get(NOTES) or ())
