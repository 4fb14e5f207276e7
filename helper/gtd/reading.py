"""Reading files where an agent may have been first: only a regular file's bytes
(a named pipe would block the read forever), and walks that keep a stack instead
of recursing. Below every other file module (gtd.fsio names these too): gtd.git
reads with them, and gtd.fsio's lock calls gtd.own_files, which calls git."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from stat import S_ISDIR, S_ISFIFO, S_ISREG


def read_bytes(path: Path, limit: int | None = None) -> bytes:
    """The content of the file at ``path`` (a symbolic link followed), like
    ``Path.read_bytes``, but only ever a regular file's: an agent can put a named
    pipe where the helper reads (PLAN.md, a state mirror), and a read of it blocks
    until someone writes, forever (the loop stalls under its lock); a link to a
    device may never end. Such a file raises OSError at once; a directory,
    IsADirectoryError as ``read_bytes`` does. ``limit``: at most that many bytes,
    from the start."""
    # O_NONBLOCK: opening a named pipe to read would itself wait for a writer.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        if not S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a pipe, device or socket)", str(path))
        chunks = []
        left = -1 if limit is None else limit
        while left and (chunk := os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))):
            chunks.append(chunk)
            left = left - len(chunk) if left > 0 else left
        return b"".join(chunks)
    finally:
        os.close(fd)


# Python 3.11's os.walk and shutil.rmtree recurse once a folder level: a chain of
# folders deeper than the recursion limit (1,000), which an agent or the code under
# test makes in a second, had every walk of the tree raise RecursionError (the
# worker died at each revert, and the loop with it). These two keep a stack.


def walk(top: str | Path) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top)`` (top-down, links listed but never followed into, folders
    that cannot be read passed over) without recursion; ``dirs`` may be pruned in
    place, as with os.walk."""
    stack = [os.fspath(top)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        dirs: list[str] = []
        files: list[str] = []
        links: set[str] = set()
        for entry in entries:
            try:
                is_dir = entry.is_dir()
                if is_dir and entry.is_symlink():
                    links.add(entry.name)
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry.name)
        yield folder, dirs, files
        stack.extend(os.path.join(folder, d) for d in reversed(dirs) if d not in links)


def is_pipe(path: str | Path) -> bool:
    """Whether ``path`` itself (not a link's target) is a named pipe."""
    try:
        return S_ISFIFO(os.lstat(path).st_mode)
    except OSError:
        return False
