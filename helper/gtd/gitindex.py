"""Git's index file, read in the process: the stat data git recorded for each
file it checked out, for the question `git diff-files` answers (which files are
no longer as git left them) without a process. The clean room asks it after
every test run, on the run's critical path: the git call and the thread it ran
in were ~3 ms of the ratchet's tail on the generated 500-test suite
(docs/performance.md).

Formats 2, 3 and 4 (git's Documentation/gitformat-index.txt), SHA-1 and SHA-256
repositories. Whatever is not read here exactly as git would read it — a split
or sparse index, an extension git requires readers to know, entries git is told
to assume unchanged or to skip, a conflict, a checksum that does not hold —
makes :func:`read` answer None, and the caller asks git."""

from __future__ import annotations

import os
from struct import Struct
from struct import error as StructError

from gtd import digest
from gtd.fsio import open_regular
from gtd.tuples import NamedTuple

_HEADER = Struct(">4sII")  # "DIRC", version, number of entries
# ctime s, ns; mtime s, ns; dev, ino, mode, uid, gid, size: 32 bits each
_STAT = Struct(">10I")
_FLAGS = Struct(">H")
_EXTENSION = Struct(">4sI")
_ASSUME_VALID = 0x8000
_EXTENDED = 0x4000
_STAGE = 0x3000
_NAME_MASK = 0x0FFF
_SKIP_WORKTREE = 0x4000  # extended flags
_INTENT_TO_ADD = 0x2000
_ENTRY_MOST = 4 * 10 + 32 + 2 + 2 + 8  # an entry's fixed part, SHA-256, padding
_LOW32 = 0xFFFFFFFF
_BILLION = 1_000_000_000


class Entry(NamedTuple):
    """One stage-0 entry: its path (git's bytes, decoded as the helper decodes
    git's output), mode, blob id, and its stat data as git compares it under
    ``core.checkStat=default`` and ``core.trustctime``: change and modification
    times (seconds, nanoseconds), inode, owner, group and size, each as git
    stores it (32 bits). The device is not compared (git's own default)."""

    path: str
    mode: int
    oid: str
    stat: tuple[int, int, int, int, int, int, int, int]


class Index(NamedTuple):
    entries: list[Entry]
    stamp_s: int  # the file's modification time, in seconds: git's "racy" line


def stat_data(st: os.stat_result) -> tuple[int, int, int, int, int, int, int, int]:
    """``st`` in the form of :attr:`Entry.stat`."""
    c_s, c_ns = divmod(st.st_ctime_ns, _BILLION)
    m_s, m_ns = divmod(st.st_mtime_ns, _BILLION)
    return (
        c_s & _LOW32,
        c_ns,
        m_s & _LOW32,
        m_ns,
        st.st_ino & _LOW32,
        st.st_uid & _LOW32,
        st.st_gid & _LOW32,
        st.st_size & _LOW32,
    )


def read(path: str, most: int) -> Index | None:
    """The index at ``path``; None where it is missing, holds more than ``most``
    entries (git is the faster reader of a large one), or is anything this
    module does not read exactly as git would."""
    # Anything but a regular file is git's (whose calls the helper watches for
    # the wait a named pipe in the index's place would make).
    opened = open_regular(path)
    if opened is None:
        return None
    fd, info = opened
    try:
        head = os.read(fd, _HEADER.size)
        if len(head) < _HEADER.size:
            return None
        signature, version, count = _HEADER.unpack(head)
        if signature != b"DIRC" or version not in (2, 3, 4) or count > most:
            return None
        # No more than such an index can hold (its names are at most 4 KB each,
        # its extensions a small multiple of that): an index an agent made huge
        # is git's to read, not read into memory here.
        if info.st_size > _HEADER.size + most * (_ENTRY_MOST + 4096) + (1 << 20):
            return None
        chunks = [head]
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    length = _hash_length(data)
    if length is None:
        return None
    try:
        entries, at = _entries(data, version, count, length)
    except (ValueError, IndexError, UnicodeError, OverflowError, StructError):
        return None  # cut short or forged: git's to read (and to refuse)
    if entries is None or not _extensions_known(data, at, len(data) - length):
        return None
    return Index(entries, info.st_mtime_ns // _BILLION)


def _hash_length(data: bytes) -> int | None:
    """20 (SHA-1) or 32 (SHA-256): the length whose trailing checksum holds."""
    for length in (20, 32):
        body, checksum = data[:-length], data[-length:]
        if len(body) > _HEADER.size and digest.raw(body, length) == checksum:
            return length
    return None


def _entries(data: bytes, version: int, count: int, length: int) -> tuple[list[Entry] | None, int]:
    out: list[Entry] = []
    at = _HEADER.size
    previous = b""
    base = _STAT.size + length + _FLAGS.size
    for _ in range(count):
        start = at
        fields = _STAT.unpack_from(data, at)
        oid = data[at + _STAT.size : at + _STAT.size + length].hex()
        (flags,) = _FLAGS.unpack_from(data, at + _STAT.size + length)
        at = start + base
        if flags & (_ASSUME_VALID | _STAGE):
            return None, at  # told to trust the entry, or a conflict: git's to read
        if flags & _EXTENDED:
            if version < 3:
                return None, at
            (extended,) = _FLAGS.unpack_from(data, at)
            at += _FLAGS.size
            if extended & (_SKIP_WORKTREE | _INTENT_TO_ADD):
                return None, at
        if version == 4:
            strip, at = _varint(data, at)
            end = data.index(b"\0", at)
            if strip > len(previous):
                return None, at
            name = previous[: len(previous) - strip] + data[at:end]
            at = end + 1
        else:
            size = flags & _NAME_MASK
            end = at + size if size < _NAME_MASK else data.index(b"\0", at)
            name = data[at:end]
            # padded with 1 to 8 NULs to a multiple of 8 from the entry's start
            at = start + ((at - start + len(name) + 8) & ~7)
        if not name or b"\0" in name:
            return None, at  # no file has such a name: a forged or damaged index
        previous = name
        c_s, c_ns, m_s, m_ns, _dev, ino, mode, uid, gid, size_ = fields
        path = name.decode("utf-8", "surrogateescape")
        out.append(Entry(path, mode, oid, (c_s, c_ns, m_s, m_ns, ino, uid, gid, size_)))
    return out, at


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """Git's offset varint (varint.c): each continuation adds one before the shift."""
    byte = data[at]
    at += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[at]
        at += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, at


def _extensions_known(data: bytes, at: int, end: int) -> bool:
    """Whether every extension between ``at`` and the checksum is one git lets a
    reader ignore (a signature starting with A–Z: the cache tree, the untracked
    cache, fsmonitor's, the offset tables...). A split index (``link``) keeps its
    entries in another file, a sparse one (``sdir``) has folders for entries:
    both are git's to read."""
    while at < end:
        if at + _EXTENSION.size > end:
            return False
        signature, size = _EXTENSION.unpack_from(data, at)
        if not (65 <= signature[0] <= 90):
            return False
        at += _EXTENSION.size + size
    return at == end
