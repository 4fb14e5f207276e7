"""Files in a repository that stop or block git: a ``shallow`` file git cannot
parse (pinned away before auto mode's git runs), and the named pipes git waits
on forever where it reads a file (named once git has waited). Read without git."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from gtd import reading


def repository_pins(root: Path) -> dict[str, str]:
    """Files of the git directory that would stop auto mode's git, pinned away: a
    ``shallow`` file git cannot parse stops every git command that reads a commit
    (``fatal: bad shallow line``), so the helper could not even read its sealed
    state to put the file back (gtd.auto.cycle.seals does, at `end`). git is then
    told there is none (auto mode walks no history)."""
    if "GIT_DIR" in os.environ or "GIT_SHALLOW_FILE" in os.environ:
        return {}
    shallow = root / ".git" / "shallow"
    if not os.path.lexists(shallow):
        return {}
    try:
        lines = reading.read_bytes(shallow).split(b"\n")
    except OSError:  # a pipe, a folder: git could not read it either
        lines = [b"?"]
    if all(_is_oid(line) for line in lines if line):
        return {}
    return {"GIT_SHALLOW_FILE": os.devnull}


def _is_oid(line: bytes) -> bool:
    return len(line) in (40, 64) and all(c in b"0123456789abcdef" for c in line)


# The files git opens in every folder it walks (a named pipe in one's place blocks it).
_READ_IN_TREE = frozenset({".gitignore", ".gitattributes", ".gitmodules", ".mailmap"})


def blocking_pipes(root: Path, seen: Iterable[str] = ()) -> list[str]:
    """The named pipes git may have waited on (absolute paths): those it had open
    (``seen``), those in the work tree where git reads a file, and any in the git
    directory (its refs, `info/`, `objects/info/alternates`; not the objects
    themselves, which git writes). Only looked for once git has waited: a walk of
    the whole tree."""
    found = dict.fromkeys(seen)
    for folder, dirs, files in reading.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]  # the repository's, a nested one's
        for name in files:
            path = os.path.join(folder, name)
            if name in _READ_IN_TREE and reading.is_pipe(path):
                found[path] = None
    for folder, dirs, files in reading.walk(root / ".git"):
        if os.path.basename(folder) == "objects":
            dirs[:] = [d for d in dirs if d == "info"]
        for name in files:
            path = os.path.join(folder, name)
            if reading.is_pipe(path):
                found[path] = None
    return list(found)
