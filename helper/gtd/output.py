"""The file a long command's output goes to: a file without a name, read once the
command has ended (gtd.proc.start_logged, the held test process of
gtd.auto.ratchet.held).

Why not a pipe: a test run writes as it goes (``pytest -q``, a dot and a flush
per test), and every write into a pipe wakes the reader on the other core. On
the reference machine a 500-test run written into a pipe that a process reads
took ~10–40 ms longer than the same run written into a file
(docs/performance.md). And a pipe is closed only once every process that
inherited it has ended: a test that starts a server and leaves it running (its
output not captured: ``pytest -s``) held the run until its timeout. A file says
nothing about who still holds it; the caller waits for the command's own
process instead.

Nobody can open the file by name: it is made unnamed (``O_TMPFILE``) or named
and unlinked at once. Imports nothing but ``os``: gtd.auto.ratchet.early opens
one before anything else of the helper is loaded."""

from __future__ import annotations

import os

# What is kept of a command's output: its end (the caller shows the last lines).
TAIL_BYTES = 1 << 20


def folder() -> str:
    """Where the file is made: ``$TMPDIR`` where it names a folder, else /tmp."""
    named = os.environ.get("TMPDIR")
    return named if named and os.path.isdir(named) else "/tmp"


def unnamed(where: str | None = None) -> int:
    """A new, empty file in ``where`` (:func:`folder` by default) that has no name,
    open for reading and writing (close-on-exec; the child gets it through
    dup2). Raises OSError where none can be made."""
    place = where or folder()
    flags = os.O_RDWR | os.O_CLOEXEC
    tmpfile = getattr(os, "O_TMPFILE", 0)  # Linux
    if tmpfile:
        try:
            return os.open(place, flags | tmpfile, 0o600)
        except OSError:
            pass  # a filesystem without unnamed files: named, then unlinked
    flags |= os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        path = os.path.join(place, f".gtd-output-{os.getpid()}-{os.urandom(6).hex()}")
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            continue
        os.unlink(path)
        return fd
    raise FileExistsError(f"no free name for an output file in {place}")


def tail(fd: int, limit: int = TAIL_BYTES) -> bytes:
    """The last ``limit`` bytes written to ``fd`` (from a line's start where that
    cuts the output), whatever its offset."""
    size = os.fstat(fd).st_size
    start = max(0, size - limit)
    chunks: list[bytes] = []
    at = start
    while at < size:
        data = os.pread(fd, min(size - at, limit), at)
        if not data:
            break
        chunks.append(data)
        at += len(data)
    data = b"".join(chunks)
    if start:
        cut = data.find(b"\n")
        data = data[cut + 1 :] if cut >= 0 else data
    return data
