"""The lock files a killed git child of the helper left in the git directory, and
only those: each git call that may take a lock is noted in :data:`CHILDREN_DIR`
before it starts (by :class:`gtd.git.Git`), and a lock made after a noted child
that is gone is that child's."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from gtd import paths, processes, reading

CHILDREN_DIR = "gtd-children"
PENDING = "pending-"  # a note made before its git child started: pending-<helper pid>-<n>
_CLOCK_SLACK_NS = 50_000_000
# How far a note's change time may lie after the start it records: the note is
# renamed for its child once that runs, which a loaded machine may delay.
_NOTE_SLACK_NS = 2_000_000_000


def stale_locks(git_dir: Path) -> list[Path]:
    """Remove the lock files that a git child of this helper left when it was killed,
    and only those: a child is known by the note made when it started (its pid, its
    start time); once that process is gone, a lock file in the git directory made
    after it started is its. Returns what was removed."""
    children = git_dir / CHILDREN_DIR
    try:
        notes = list(os.scandir(children))
    except OSError:
        return []
    dead_since: list[int] = []
    for note in notes:
        owner = _note_owner(note.name)
        if owner is None:
            continue
        if processes.alive(owner):
            continue  # still running: its locks are live
        try:
            # The note's own change time bounds the start it claims: the helper
            # writes a note just before its child starts, and a note written
            # later (by an agent, claiming time 0) cannot set that time back.
            made = note.stat(follow_symlinks=False).st_ctime_ns
            # gtd.reading's read: a note made a named pipe is no wait
            claimed = int(reading.read_bytes(Path(note.path)).strip() or 0)
        except (OSError, ValueError):
            claimed = made = time.time_ns()
        dead_since.append(max(claimed, made - _NOTE_SLACK_NS))
        with contextlib.suppress(OSError):
            os.unlink(note.path)
    if not dead_since:
        return []
    # File times come from the kernel's coarse clock, which may read a few
    # milliseconds behind the time the note took just before the child started.
    oldest = min(dead_since) - _CLOCK_SLACK_NS
    removed: list[Path] = []
    candidates = [git_dir / "index.lock", git_dir / "HEAD.lock", git_dir / "packed-refs.lock"]
    # refs/, and the helper's private indexes (the revert's keep.index in gtd/).
    for folder in ("refs", paths.PRIVATE_DIR):
        for parent, _dirs, names in reading.walk(git_dir / folder):
            candidates.extend(Path(parent) / n for n in names if n.endswith(".lock"))
    stale = []
    for lock in candidates:
        try:
            if lock.stat().st_mtime_ns >= oldest:
                stale.append(lock)
        except OSError:
            continue
    held = processes.held_open(str(lock) for lock in stale) if stale else set()
    for lock in stale:
        if os.path.realpath(lock) in held:
            continue  # a running git's (a person's): never ours to remove
        with contextlib.suppress(OSError):
            lock.unlink()
            removed.append(lock)
    return removed


def _note_owner(name: str) -> int | None:
    """The process a child note stands for: the git child itself, or for a note
    made before the child had a name, the helper that made it (its death means
    the child, if it ever ran, is its orphan)."""
    if name.isdigit():
        return int(name)
    if name.startswith(PENDING):
        try:
            return int(name[len(PENDING) :].split("-", maxsplit=1)[0])
        except ValueError:
            return None
    return None


def children_running(git_dir: Path) -> bool:
    """Whether a git child some helper noted (see :func:`stale_locks`) may still
    be running: a lock file it could hold is then not provably dead."""
    try:
        notes = list(os.scandir(git_dir / CHILDREN_DIR))
    except OSError:
        return False
    owners = (_note_owner(note.name) for note in notes)
    return any(owner is not None and processes.alive(owner) for owner in owners)
