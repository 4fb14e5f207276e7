"""Files too large for a commit (``commit.max_file_mb``, 100 MB by default).

A cycle that adds or changes such a file (a dump the code under test wrote, a
download) is refused before anything reads it: `git add` would hash every byte
into the repository's objects, the clean room would write every byte again, and
a pass would put it into the branch's history for good. The revert does not keep
it in the commit of the reverted work either: it is moved, whole, to
``.git/gtd/large/cycle-N/<path>`` (a rename: nothing is copied, nothing lost),
where a person can take it back from.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from gtd.fsio import unsafe_path
from gtd.git import PRIVATE_DIR, Git
from gtd.git_parse import StatusEntry
from gtd.names import readable

_MB = 1 << 20
LARGE_DIR = "large"


def too_large(root: Path, paths: Iterable[str], limit_mb: float) -> list[tuple[str, int]]:
    """The regular files among ``paths`` (repository-relative) over ``limit_mb``,
    with their sizes in bytes."""
    out = []
    for rel in paths:
        try:
            info = os.lstat(root / rel)
        except OSError:
            continue  # deleted, or a folder's entry gone since
        if stat.S_ISREG(info.st_mode) and info.st_size > limit_mb * _MB:
            out.append((rel, info.st_size))
    return out


def where(git: Git, cycle: int) -> Path:
    """Where the revert of ``cycle`` moves the files too large to keep."""
    return git.git_dir() / PRIVATE_DIR / LARGE_DIR / f"cycle-{cycle}"


def reason(found: list[tuple[str, int]], limit_mb: float, aside: Path, root: Path) -> str:
    rel, size = found[0]
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    return (
        f"file too large to commit: {readable(rel)} ({size / _MB:,.0f} MB; "
        f"commit.max_file_mb is {limit_mb:g}){more}: moved to "
        f"{readable(os.path.relpath(aside, root))}/"
    )


def set_aside(git: Git, cycle: int, limit_mb: float, changes: Iterable[StatusEntry]) -> list[str]:
    """Move the cycle's files over ``limit_mb`` (among ``changes``: changed or new,
    not ignored) out of the working tree, before its work is kept; their names."""
    # A name a forged tree put in the listing (`..`, a folder now a link) would
    # move a file from outside the tree: left to the revert, which names it.
    changed = [e.path for e in changes if unsafe_path(git.root, e.path) is None]
    found = too_large(git.root, changed, limit_mb)
    if not found:
        return []
    folder = where(git, cycle)
    for rel, _size in found:
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(git.root / rel, target)
    return [rel for rel, _ in found]
