"""The working tree on disk (the edge around :mod:`files` and :mod:`protect`):
git's listing of it, and the protected configuration present in it.

The ratchet itself judges git trees (gtd.auto.ratchet.candidate reads
protected configuration from objects); these read the live files, for a view of the
working tree as it stands."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from gtd import paths
from gtd.auto.ratchet import protect
from gtd.fsio import read_bytes
from gtd.git import Git
from gtd.tuples import NamedTuple


class Listing(NamedTuple):
    """The working tree's files as git sees them (repository-relative, sorted)."""

    tracked: list[str]
    untracked: list[str]  # untracked and not ignored

    @property
    def present(self) -> list[str]:
        """Tracked and untracked together."""
        return sorted({*self.tracked, *self.untracked})


def list_tree(root: Path) -> Listing:
    """Tracked files and the untracked ones git does not ignore, in ONE git call
    (``-t`` tags each: ``?`` untracked, a letter otherwise)."""
    tracked, untracked = Git(root).listing()
    return Listing(tracked, untracked)


def discover(
    root: Path, listed: Iterable[str], commands: Sequence[str] | None = None
) -> dict[str, str]:
    """Protected configuration present now: key → digest (see
    :func:`protect.digests`).

    ``listed`` is git's view (tracked + untracked, ignores respected); the files at
    the top of the repository are looked at directly too, so a git-ignored
    pytest.ini or conftest.py is still seen (pytest reads it all the same).
    ``commands`` as for :func:`protect.protection`; the same commands must be used
    for a snapshot and the check against it.
    """
    from gtd.auto.ratchet import invocation

    seen = invocation.read(commands)

    def wanted(rel: str) -> bool:
        return protect.is_protected_path(rel) or (not seen.plain and protect.is_runner_file(rel))

    candidates = {p for p in listed if wanted(p)}
    try:
        top = os.listdir(root)
    except OSError:
        top = []
    candidates.update(name for name in top if wanted(name))
    candidates.add(paths.CONFIG)
    out: dict[str, str] = {}
    for rel in sorted(candidates):
        data = _read(root, rel)
        if data is not None:
            out.update(protect.digests(rel, data, plain=seen.plain))
    for rel in sorted(protect.named_paths(seen.named)):
        data = _read(root, rel)
        if data is not None:
            out[f"{rel} {protect.NAMED}"] = protect.digest(rel, data)
    return out


def _read(root: Path, rel: str) -> bytes | None:
    try:
        return read_bytes(root / rel)  # a named pipe there: at once, never a wait
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except OSError:  # unreadable (permissions, a name too long): digests as empty
        return b""
