"""Named pipes a cycle left where git reads a file.

git opens the `.gitignore` and `.gitattributes` of every folder it walks as files:
a named pipe in one's place has git wait forever, and the loop with it.
:func:`gtd.processes.pipe_wait` stops such a git, and :class:`gtd.errors.GitBlocked`
names the pipes found. One in the work tree is the cycle's (git read that place
without waiting when the cycle began, or `begin` would have stopped there), and
holds no bytes: it is removed, so that the revert and every later cycle can read
the tree. One in the git directory (`.git/packed-refs`) is left to a person: the
error names it, and every command says so until it is gone.
"""

from __future__ import annotations

import os
from pathlib import Path

from gtd.errors import GitBlocked
from gtd.fsio import is_pipe


def clear(root: Path, blocked: GitBlocked) -> list[str]:
    """Remove the pipes of ``blocked`` that are in the work tree, and return their
    repository-relative names. Raises GitBlocked, naming the others, when some are
    elsewhere or none could be found."""
    top = os.path.realpath(root)
    removed: list[str] = []
    others: list[str] = []
    for path in blocked.paths:
        real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        rel = os.path.relpath(real, top)
        parts = rel.split(os.sep)
        if rel.startswith(os.pardir) or ".git" in parts or not is_pipe(real):
            others.append(path)
            continue
        os.unlink(real)
        removed.append("/".join(parts))
    if others or not removed:
        raise GitBlocked(blocked.command, others)
    return removed
