"""The helper's sealed state: what the verdict and the breaker depend on, kept in
git objects under one ref, ``refs/gtd/state``, rather than in files an agent
working in the repository could rewrite along with their check values. (That is
the main work tree's; a linked worktree runs a loop of its own, with its state
under ``refs/gtd/worktrees/<id>/state``: gtd.paths.refs_of.)

The ref is a chain of commits (one per change, so `git log refs/gtd/state` is an
audit trail) whose tree holds:

- ``journal.json``: the work in flight (gtd.auto.journal), absent when none;
- ``summary.json``: what every tick needs — the commit the snapshot describes, the
  sealed config values, the environment to watch (gtd.auto.ratchet.snapshot);
- ``snapshot.json``: the ratchet snapshot and its baseline (read only to judge);
- ``pending.json``: the snapshot a passed cycle advances to, until its commit is made;
- ``pins.json``: the manifest of the person's refs pinned at the cycle's `begin`
  (gtd.auto.cycle.yours.COPY), for when the pins' side repository is lost;
- ``records.jsonl``: the history of cycles, halts, resets... (gtd.auto.records).

Reading all of it is one `git cat-file --batch`. A write makes the new blobs, the
tree and the commit, then moves the ref with a compare-and-swap, so two writers (or
an agent moving the ref) can never interleave silently.

The files people look at — ``.deepflow/cycle.json`` and
``.deepflow/auto-snapshot.{json,txt}`` — are *mirrors* written after the ref. The
helper never trusts them; :func:`tampered` compares them with the sealed blobs, and
a mirror that matches neither the sealed content nor the state before it (what a
crash between the two writes leaves) was edited by someone else.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import paths
from gtd.auto import journal as journal_mod
from gtd.auto import records as records_mod
from gtd.auto.journal import Journal
from gtd.auto.records import Record
from gtd.errors import GitError, GtdError, StateError
from gtd.fsio import (
    TEMP_MARK,
    atomic_write,
    place,
    read_bytes,
    stage,
    sync_folder,
    temp_bytes,
    temp_owner,
)
from gtd.git import Git
from gtd.git_parse import parse_tree
from gtd.names import json_bytes
from gtd.processes import alive
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Any

    from gtd.auto.config import AutoConfig

JOURNAL = "journal.json"
SUMMARY = "summary.json"
SNAPSHOT = "snapshot.json"
PENDING = "pending.json"
SETUP = "setup.json"  # the answer of a setup whose baseline finished after setup stopped waiting
RECORDS = "records.jsonl"
WAVE = "wave.json"  # the wave in flight (gtd.auto.wave_journal, gtd.auto.cycle.waves)

# State commits are the helper's, whoever runs it: a fixed identity, so a missing
# user.name never blocks the loop and the audit trail says who wrote it.
_IDENTITY = {
    "GIT_AUTHOR_NAME": "gtd",
    "GIT_AUTHOR_EMAIL": "gtd@localhost",
    "GIT_COMMITTER_NAME": "gtd",
    "GIT_COMMITTER_EMAIL": "gtd@localhost",
}


def ref(git: Git) -> str:
    """The ref of this work tree's state (``refs/gtd/state`` in the main one)."""
    return paths.refs_of(git.worktree_id()) + "state"


# What makes `git commit-tree` date a commit otherwise than now.
_DATED = frozenset({"GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"})


def _seal_commit(
    git: Git,
    parent: str,
    entries: dict[str, tuple[str, str]],
    blobs: list[tuple[str, bytes]],
    message: str,
    algo: str,
) -> str:
    """A seal's new ``blobs`` (whose ids ``entries`` holds already), its tree and
    its commit (on ``parent``) written by one git process, not one apiece
    (gtd.git_objects: the objects `hash-object`, `mktree` and `commit-tree`
    would write). Returns the commit's id."""
    import time

    from gtd import git_objects

    tree = git_objects.tree([(mode, name, oid) for name, (mode, oid) in entries.items()])
    tree_id = git_objects.object_id("tree", tree, algo)
    now = time.time()
    offset = time.localtime(now).tm_gmtoff // 60
    when = f"{int(now)} {'-' if offset < 0 else '+'}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
    ident = f"{_IDENTITY['GIT_COMMITTER_NAME']} <{_IDENTITY['GIT_COMMITTER_EMAIL']}>"
    body = git_objects.commit(tree_id, [parent], ident, when, message + "\n")
    return git.write_objects([*blobs, ("tree", tree), ("commit", body)], algo)[-1]


def _base_ref(git: Git) -> str:
    return paths.refs_of(git.worktree_id()) + "base"


def reverted_refs(git: Git) -> str:
    """The folder of reverted cycles' kept work (``refs/gtd/reverted/`` in the
    main work tree)."""
    return paths.refs_of(git.worktree_id()) + "reverted/"


def reverted_ref(git: Git) -> str:
    """A reverted cycle's kept work is this and its number."""
    return reverted_refs(git) + "cycle-"


def _foreign_ref(git: Git) -> str:
    return paths.refs_of(git.worktree_id()) + "foreign-state/"


def _hint(name: str) -> str:
    return (
        f"the helper's sealed state is damaged; inspect `git log {name}`, or "
        f"delete the ref (`git update-ref -d {name}`) and run `gtd auto setup`"
    )


class State(NamedTuple):
    commit: str | None  # None: auto mode was never set up here
    entries: dict[str, tuple[str, str]]  # tree name → (mode, blob id)
    journal: Journal | None
    summary: dict[str, Any] | None
    records: tuple[Record, ...]
    snapshot: bytes | None  # only when read with snapshot=True
    raw: dict[str, bytes]  # the blobs as read, by tree name
    head: tuple[str, str] | None = None  # HEAD and its tree, when read with head=True

    @property
    def set_up(self) -> bool:
        return self.summary is not None


EMPTY = State(None, {}, None, None, (), None, {})


class _Keep:
    """Marker: leave this part of the state as it is."""


KEEP: Any = _Keep()


def read(git: Git, *, snapshot: bool = False, head: bool = False) -> State:
    """The sealed state in one git call (the snapshot only when asked for; HEAD
    and its tree too with ``head``: one process less than asking git apart)."""
    parts = [JOURNAL, SUMMARY, RECORDS, SETUP] + ([SNAPSHOT] if snapshot else [])
    name = ref(git)
    names = [f"{name}^{{commit}}", f"{name}^{{tree}}", *(f"{name}:{part}" for part in parts)]
    if head:
        names += ["HEAD^{commit}", "HEAD^{tree}"]
    objects = git.objects(names)
    commit, tree = objects[0], objects[1]
    head_commit, head_tree = objects[-2:] if head else (None, None)
    at_head = (head_commit.oid, head_tree.oid) if head_commit and head_tree else None
    if commit is None or tree is None:
        return EMPTY._replace(head=at_head)  # (never set up: HEAD as asked, still)
    if SUMMARY not in parse_tree(tree.data, len(tree.oid) // 2) and _take_back(git, commit.oid):
        return read(git, snapshot=snapshot, head=head)
    found = objects[2 : 2 + len(parts)]
    raw = {part: obj.data for part, obj in zip(parts, found, strict=True) if obj}
    try:
        entries = parse_tree(tree.data, len(tree.oid) // 2)
        the_journal = journal_mod.loads(raw[JOURNAL].decode()) if JOURNAL in raw else None
        summary = json.loads(raw[SUMMARY]) if SUMMARY in raw else None
        history = records_mod.decode(raw.get(RECORDS, b"").decode())
    except (ValueError, TypeError) as exc:
        raise StateError(f"{name}: unreadable sealed state ({exc})", _hint(name)) from None
    return State(
        commit.oid,
        entries,
        the_journal,
        summary,
        tuple(history),
        raw.get(SNAPSHOT),
        raw,
        at_head,
    )


def subject(git: Git, st: State) -> str:
    """The first line of the message of the state's last commit ("" where none)."""
    if st.commit is None:
        return ""
    found = git.objects([st.commit])[0]
    if found is None:
        return ""
    message = found.data.partition(b"\n\n")[2]
    return message.partition(b"\n")[0].decode("utf-8", "replace")


# How far back a state commit of the helper's is looked for under commits it did not make.
_LOOK_BACK = 64


def _take_back(git: Git, tip: str) -> bool:
    """The state's ref holds a commit whose tree is not a state (no summary): one the
    helper did not make, as a plain `git commit` with HEAD made a link to the
    ref (`ref: refs/gtd/state`) writes. Read as it is, the loop would say it was
    never set up, and a new setup take whatever the tree holds as its baseline.
    The newest first-parent ancestor that is a state is put back (compared and
    swapped), the foreign tip kept under ``refs/gtd/foreign-state/<id>``, and
    both said on stderr; False when there is no such ancestor (then the ref is
    left as it is)."""
    import sys

    from gtd.names import readable

    log = git.call("rev-list", "--first-parent", f"--max-count={_LOOK_BACK}", tip)
    ancestors = log.stdout.split()[1:] if log.returncode == 0 else []
    if not ancestors:
        return False
    found = git.objects([f"{oid}:{SUMMARY}" for oid in ancestors])
    back = next((oid for oid, obj in zip(ancestors, found, strict=True) if obj), None)
    if back is None:
        return False
    name, foreign = ref(git), _foreign_ref(git)
    git.update_refs([(f"{foreign}{tip}", tip, None), (name, back, tip)])
    print(
        f"gtd: {name} held a commit gtd did not make ({readable(tip[:12])}, a `git commit` "
        f"with HEAD on {name}?): kept as {foreign}{tip[:12]}…, the state put back "
        f"at {back[:12]}",
        file=sys.stderr,
    )
    return True


def objects_checked(st: State) -> float | None:
    """When the last check of git's object files began (gtd.auto.cycle.forged),
    as sealed in the summary; None before the first."""
    value = (st.summary or {}).get("objects_checked")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def sealed_config(st: State) -> AutoConfig:
    """The config sealed at set-up (what every cycle is judged by)."""
    from gtd.auto.config import from_json

    assert st.summary is not None
    return from_json(st.summary.get("config") or {})


def read_blob(git: Git, st: State, name: str) -> bytes | None:
    """A part of the state read on demand (the snapshot, the pending snapshot)."""
    if name in st.raw:
        return st.raw[name]
    entry = st.entries.get(name)
    if entry is None:
        return None
    found = git.objects([entry[1]])[0]
    return None if found is None else found.data


def write(
    git: Git,
    old: State,
    message: str,
    *,
    journal: Journal | Any | None = KEEP,
    summary: dict[str, Any] | Any = KEEP,
    snapshot: bytes | Any = KEEP,
    pending: bytes | Any | None = KEEP,
    others: dict[str, bytes | None] | None = None,
    append: Sequence[Record] = (),
    pin: str | None = None,
) -> State:
    """Seal a new state on top of ``old`` (which must still be the ref's value).
    ``pin``: a commit to keep reachable under ``refs/gtd/base`` (a cycle's base,
    which an agent could otherwise cut from history and have pruned)."""
    entries = dict(old.entries)
    raw = dict(old.raw)
    new_journal = old.journal if journal is KEEP else journal
    new_summary = old.summary if summary is KEEP else summary
    contents: dict[str, bytes | None] = {}
    if journal is not KEEP:
        contents[JOURNAL] = None if journal is None else journal_bytes(journal)
    if summary is not KEEP:
        contents[SUMMARY] = json.dumps(summary, indent=1, sort_keys=True).encode() + b"\n"
    if snapshot is not KEEP:
        contents[SNAPSHOT] = snapshot
    if pending is not KEEP:
        contents[PENDING] = pending
    contents.update(others or {})
    if append:
        lines = json_bytes("".join(records_mod.encode(rec) + "\n" for rec in append))
        contents[RECORDS] = raw.get(RECORDS, b"") + lines
    # In memory and one git process for every object (gtd.git_objects), but for
    # the first seal (the repository's hash not known yet) or a date asked for.
    parent = None if _DATED.intersection(os.environ) else old.commit
    if parent is not None:
        from gtd import git_objects

        algo = git_objects.algorithm(parent)
    blobs: list[tuple[str, bytes]] = []
    for name, data in contents.items():
        if data is None:
            entries.pop(name, None)
            raw.pop(name, None)
            continue
        if parent is not None:
            oid = git_objects.object_id("blob", data, algo)
            blobs.append(("blob", data))
        else:
            oid = git.write_blob(data)
        entries[name] = ("100644", oid)
        raw[name] = data
    if parent is not None:
        commit = _seal_commit(git, parent, entries, blobs, message, algo)
    else:
        rows = sorted(entries.items())
        tree = git.make_tree((mode, "blob", oid, name) for name, (mode, oid) in rows)
        commit = git.run(
            "commit-tree",
            tree,
            *(("-p", old.commit) if old.commit else ()),
            input_text=message + "\n",
            env=_IDENTITY,
        ).strip()
    name = ref(git)
    moves: list[tuple[str, str | None, str | None]] = [(name, commit, old.commit or "")]
    if pin is not None:
        moves.append((_base_ref(git), pin, None))
    try:
        git.update_refs(moves)
    except GitError as exc:
        raise StateError(
            f"{name} changed while gtd was writing it ({exc.message})",
            "another gtd process or a program writing git refs is at work; retry, "
            f"and if it repeats, see `git log {name}`",
        ) from None
    return State(
        commit,
        entries,
        new_journal,
        new_summary,
        (*old.records, *append),
        raw.get(SNAPSHOT) if snapshot is not KEEP else old.snapshot,
        raw,
    )


# -- mirrors ---------------------------------------------------------------------------
# Written only under the state lock (gtd.fsio.locked), as everything here is: a
# command that holds it knows no other helper is writing one.


def journal_bytes(journal: Journal) -> bytes:
    """The journal as sealed, and as its mirror holds it, byte for byte."""
    return json_bytes(journal_mod.dumps(journal))


class Staged(NamedTuple):
    """A journal mirror written to its temp file before the journal is sealed."""

    tmp: str
    data: bytes


def stage_journal(root: Path, journal: Journal) -> Staged:
    """The mirror of ``journal``, written beside `.deepflow/cycle.json` (the temp
    file :func:`write_mirrors` renames once ``journal`` is sealed) and made
    durable first. A helper killed between the seal and the rename leaves the
    mirror in that temp, whole, and the next command renames it into place
    (:func:`adopt_journal`): `end`'s strict check never meets a mirror missing
    for a crash (docs/crash-safety.md, "Crash safety")."""
    data = journal_bytes(journal)
    mirror = root / paths.JOURNAL
    tmp = stage(mirror, data)
    sync_folder(mirror.parent)  # the temp's name outlives a power cut the seal outlives
    return Staged(tmp, data)


def write_mirrors(
    root: Path,
    st: State,
    *,
    snapshot_paths: Sequence[str] | None = None,
    staged: Staged | None = None,
) -> None:
    """The human-readable copies of the sealed journal and snapshot. ``staged``:
    the journal's mirror as :func:`stage_journal` wrote it before the seal,
    renamed into place when it is the sealed journal's."""
    journal_file = root / paths.JOURNAL
    if staged is not None and st.raw.get(JOURNAL) == staged.data:
        place(staged.tmp, journal_file)
    else:
        if staged is not None:  # not what was sealed: a stale copy, never shown
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staged.tmp)
        if JOURNAL in st.raw:
            atomic_write(journal_file, st.raw[JOURNAL].decode())
        else:
            journal_file.unlink(missing_ok=True)
    if SNAPSHOT in st.raw:
        atomic_write(root / paths.SNAPSHOT_JSON, st.raw[SNAPSHOT].decode())
    if snapshot_paths is not None:
        atomic_write(root / paths.SNAPSHOT, "".join(f"{p}\n" for p in sorted(snapshot_paths)))


def journal_temp(name: str) -> bool:
    """Whether ``name`` (in `.deepflow/`) is the name of a journal mirror's temp
    file: :func:`adopt_journal`'s to judge, never a plain leftover."""
    return name.startswith(_JOURNAL_TEMP) and temp_owner(name) is not None


_JOURNAL_TEMP = f".{Path(paths.JOURNAL).name}{TEMP_MARK}"


def adopt_journal(root: Path, st: State) -> bool:
    """Finish the journal mirror's write that a killed helper left undone: a temp
    file of it (:func:`journal_temp`) holding exactly the sealed journal, read
    from git's objects, is renamed into place when the mirror does not hold it
    already; whether one was. Nothing in such a file is trusted: it only ever
    puts in place the bytes the helper itself sealed, which whoever could write
    the temp could as well have written to the mirror; and the checks that follow
    read the mirror itself (:func:`tampered`). Every other temp file of a dead
    owner is removed; one whose owner runs is left to it. Under the state lock:
    no helper writes a mirror meanwhile, so the owner's pid in the name does not
    decide the rename (a killed helper's pid may be taken since)."""
    mirror = root / paths.JOURNAL
    try:
        names = sorted(n for n in os.listdir(mirror.parent) if journal_temp(n))
    except OSError:
        return False
    sealed = st.raw.get(JOURNAL)
    adopted = False
    for name in names:
        tmp = mirror.parent / name
        if not adopted and sealed is not None and _adopt(tmp, mirror, sealed):
            adopted = True
        elif not alive(temp_owner(name)):
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return adopted


def _adopt(tmp: Path, mirror: Path, sealed: bytes) -> bool:
    """``tmp`` renamed to ``mirror`` when it holds exactly ``sealed`` and the
    mirror does not. A file swapped in at ``tmp`` between the read and the rename
    lands as the mirror, where the check that follows reads it for what it is."""
    if _mirror_bytes(mirror) == sealed or temp_bytes(tmp, len(sealed)) != sealed:
        return False
    try:
        os.replace(tmp, mirror)
    except OSError:  # a folder at the mirror's name, say: the check names it
        return False
    return True


def _mirror_bytes(path: Path) -> bytes | None:
    try:
        return read_bytes(path)
    except OSError:  # missing, or a pipe or folder (gtd.own_files sets it aside)
        return None


def tampered(root: Path, git: Git, st: State, *, strict: bool = False) -> list[str]:
    """The mirror files whose content matches neither the sealed state nor the
    state just before it (what a crash between the ref and the mirror leaves).
    ``strict`` (`end`, after the agent ran): the journal's mirror was written
    before the agent got its task, so it must match the seal exactly."""
    out: list[str] = []
    sealed = {JOURNAL: st.raw.get(JOURNAL), SNAPSHOT: read_blob(git, st, SNAPSHOT)}
    previous: dict[str, bytes | None] | None = None
    for rel, name in ((paths.JOURNAL, JOURNAL), (paths.SNAPSHOT_JSON, SNAPSHOT)):
        try:
            mirror: bytes | None = read_bytes(root / rel)
        except FileNotFoundError:
            # A missing mirror forges nothing: the helper never reads one, and
            # writes it again from the seal at its next write. The agent's
            # ordinary clean-up (`git clean -fdX`, `rm -rf .deepflow`) removes
            # it along with every ignored file; that is no reason to halt.
            continue
        except OSError:
            out.append(rel)
            continue
        if mirror == sealed[name]:
            continue
        if not (strict and name == JOURNAL):
            if previous is None:
                previous = _previous(git, st)
            if name in previous and mirror == previous[name]:
                continue
        out.append(rel)
    return out


def mend_snapshot_mirror(root: Path, git: Git, st: State) -> bool:
    """Finish the snapshot mirror's write that a killed helper left undone: a crash
    between the seal and the mirror (in `setup`, a refresh, a pass) leaves it
    missing or as the state before had it, which :func:`tampered` forgives only
    until the next seal — the cycle about to begin would be reverted as one whose
    agent edited it. Written again from the seal; a mirror that holds neither
    state's snapshot is left for `end` to name. Whether it was written. The
    mirror is compared by its git blob id, read from the state's tree, so the
    common case costs no git call."""
    entry = st.entries.get(SNAPSHOT)
    if entry is None:
        return False
    path = root / paths.SNAPSHOT_JSON
    try:
        data: bytes | None = read_bytes(path)
    except FileNotFoundError:
        data = None
    except OSError:
        return False
    if data is not None and _blob_id(data, len(entry[1])) == entry[1]:
        return False
    if data is not None and paths.SNAPSHOT_JSON in tampered(root, git, st):
        return False  # (a missing mirror forges nothing: written again from the seal)
    sealed = read_blob(git, st, SNAPSHOT)
    if sealed is None:
        return False
    atomic_write(path, sealed.decode())
    return True


def _blob_id(data: bytes, width: int) -> str:
    import hashlib

    made = hashlib.sha1 if width == 40 else hashlib.sha256  # git's own object ids
    return made(b"blob %d\0" % len(data) + data).hexdigest()


def _previous(git: Git, st: State) -> dict[str, bytes | None]:
    if st.commit is None:
        return {}
    names = [f"{st.commit}^:{JOURNAL}", f"{st.commit}^:{SNAPSHOT}"]
    objects = git.objects(names)
    return {
        JOURNAL: objects[0].data if objects[0] else None,
        SNAPSHOT: objects[1].data if objects[1] else None,
    }


def require_setup(root: Path, st: State) -> None:
    if st.set_up:
        return
    if (root / paths.SNAPSHOT_JSON).exists():
        raise GtdError(
            "auto mode's state now lives in git (refs/gtd/state), and this repository "
            "was set up by an older gtd",
            "run `gtd auto setup` once: it takes a new snapshot and keeps your memory",
        )
    raise GtdError(
        "auto mode is not set up in this work tree",
        "run `gtd auto setup` first (each worktree of a repository runs a loop of its own)",
    )
