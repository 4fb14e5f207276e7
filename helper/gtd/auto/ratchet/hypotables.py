"""hypothesis's storage in the clean room: a folder of the judge's own, and the
Unicode tables the judge checked itself.

hypothesis keeps its storage in ``.hypothesis/`` of the folder it runs in (the
room's checkout) unless ``HYPOTHESIS_STORAGE_DIRECTORY`` names another. There it
keeps its example database, and two tables it builds on first use by walking
all 1,114,112 code points (~1.4 s of CPU a run, with the room cleaned before
each run): ``unicode_data/<version>/charmap.json.gz`` (each character's Unicode
category) and ``codec-v2-<codec>.json.gz`` (which characters a codec encodes).
Both are trusted as found: a table that says only ASCII exists makes every
``text()`` strategy draw ASCII, and a bug on other characters is never tried.

So a judged run stores nothing in the checkout. Its storage is the slot's
``hypothesis/`` folder (:func:`folder`), emptied before every run (no example
database is carried from one run to the next, nor from the candidate's tree:
a tracked ``.hypothesis/`` there is read by nothing), and given only the tables
of the store beside the slots (``hypothesis-tables/``), which holds nothing the
helper did not check:

- a table is kept (:func:`keep`) only after a run built it and only where the
  helper, computing the same table with its own interpreter, finds the same
  intervals (its Unicode version must be the table's; other codecs than UTF-8
  are not kept, since checking one costs what building it does);
- a table of the store changed after the slot stopped being trusted (the
  cycle's begin, else the slot's last run: ``since``) is removed unused, as the
  room treats its own index; one this process wrote is its own.

Outside the repository, the store is out of reach of the implementer's
sandboxed shell (gtd.auto.sandbox) and read-only in the judge's box.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from gtd.fsio import atomic_write_bytes, open_regular, remove_tree

VARIABLE = "HYPOTHESIS_STORAGE_DIRECTORY"
FOLDER = "hypothesis"  # in a slot: the run's storage
STORE = "hypothesis-tables"  # beside the slots: the checked tables
_TABLES = "unicode_data"
# The tables the helper can check: the categories, and UTF-8 (text()'s codec).
_CHECKED = ("charmap.json.gz", "codec-v2-utf-8.json.gz")
_LARGEST = 1 << 20  # bytes: a table is a few kB gzipped

# Store files this process wrote (path -> (inode, ctime_ns)): its own, trusted
# whenever they were written.
_ours: dict[str, tuple[int, int]] = {}


def folder(slot: Path) -> Path:
    """The storage of the runs in ``slot``."""
    return slot / FOLDER


def store(slot: Path) -> Path:
    return slot.parent / STORE


def prepare(slot: Path, since: float | None) -> None:
    """Empty the runs' storage of ``slot`` (in place: a held run's box has the
    folder bound already) and put in the store's tables that are still trusted
    as of ``since``."""
    where = folder(slot)
    _real_directory(where)
    for name in os.listdir(where):
        _remove(where / name)
    for version, name, data in _trusted(store(slot), since):
        target = where / _TABLES / version / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def keep(slot: Path) -> None:
    """After a run in ``slot``: the tables it built that the store lacks, kept
    where the helper's own computation agrees with them."""
    built = folder(slot) / _TABLES / _version()
    kept = store(slot) / _TABLES / _version()
    for name in _CHECKED:
        if _exists(kept / name):
            continue
        data = _read(built / name)
        if data is None or not _agrees(name, data):
            continue
        with contextlib.suppress(OSError):
            _real_directory(store(slot))
            _real_directory(store(slot) / _TABLES)
            _real_directory(kept)
            atomic_write_bytes(kept / name, data)
            info = os.lstat(kept / name)
            _ours[str(kept / name)] = (info.st_ino, info.st_ctime_ns)


def _trusted(base: Path, since: float | None) -> Iterable[tuple[str, str, bytes]]:
    """(Unicode version, table name, bytes) of each table of the store that is
    a regular file nothing changed since ``since`` (or this process's own); any
    other is removed."""
    tables = base / _TABLES
    try:
        versions = [v for v in os.listdir(tables) if _real_dir(tables / v)]
    except OSError:
        return
    for version in versions:
        for name in os.listdir(tables / version):
            path = tables / version / name
            data = _read(path) if name in _CHECKED and _still_ours(path, since) else None
            if data is None:
                _remove(path)
                continue
            yield version, name, data


def _still_ours(path: Path, since: float | None) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    if _ours.get(str(path)) == (info.st_ino, info.st_ctime_ns):
        return True
    # A change time cannot be set back: a table written since is not the helper's.
    return since is not None and info.st_ctime <= since


def _agrees(name: str, data: bytes) -> bool:
    """Whether ``data`` (a table as hypothesis wrote it) holds what the helper
    computes for ``name``; anything it cannot read does not."""
    try:
        table = json.loads(gzip.decompress(data))
    except (OSError, ValueError, EOFError):
        return False
    if name == "charmap.json.gz":
        if not isinstance(table, list) or not all(
            isinstance(row, list) and len(row) == 2 for row in table
        ):
            return False
        got = {str(cat): _merged(pairs) for cat, pairs in table}
        return len(got) == len(table) and got == categories()
    if not isinstance(table, list) or len(table) != 2:
        return False
    encodable, lossy = utf8_intervals()
    return _merged(table[0]) == encodable and _merged(table[1]) == lossy


def _merged(pairs: object) -> list[tuple[int, int]] | None:
    """Intervals as one sorted list with touching ones joined; None for anything
    that is not a list of [start, end] integer pairs."""
    if not isinstance(pairs, list):
        return None
    out: list[tuple[int, int]] = []
    for pair in pairs:
        if not (
            isinstance(pair, list)
            and len(pair) == 2
            and all(type(x) is int for x in pair)
            and pair[0] <= pair[1]
        ):
            return None
        out.append((pair[0], pair[1]))
    out.sort()
    joined: list[tuple[int, int]] = []
    for start, end in out:
        if joined and start <= joined[-1][1] + 1:
            joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
        else:
            joined.append((start, end))
    return joined


@functools.cache
def categories() -> dict[str, list[tuple[int, int]] | None]:
    """Each Unicode category → the code point intervals in it, by this
    interpreter's ``unicodedata`` (as hypothesis computes its charmap). Not to
    be changed by the caller: computed once a process (~0.1–0.5 s)."""
    import itertools
    import unicodedata

    out: dict[str, list[tuple[int, int]] | None] = {}
    start = 0
    cats = map(unicodedata.category, map(chr, range(sys.maxunicode + 1)))
    for cat, run in itertools.groupby(cats):
        size = sum(1 for _ in run)
        listed = out.setdefault(cat, [])
        assert listed is not None
        listed.append((start, start + size - 1))
        start += size
    return out


@functools.cache
def utf8_intervals() -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(the code points UTF-8 encodes, those that do not decode back to
    themselves), checked rather than assumed: every code point but the
    surrogates encodes and decodes back, in one call (UTF-8 encodes each
    character on its own bytes), and each surrogate fails to encode."""
    low, high = 0xD800, 0xDFFF
    text = "".join(map(chr, range(low))) + "".join(map(chr, range(high + 1, sys.maxunicode + 1)))
    if text.encode("utf-8").decode("utf-8") != text:
        return [], []  # never on a working interpreter: nothing agrees
    for point in range(low, high + 1):
        try:
            chr(point).encode("utf-8")
        except UnicodeEncodeError:
            continue
        return [], []
    return [(0, low - 1), (high + 1, sys.maxunicode)], []


def _version() -> str:
    import unicodedata

    return unicodedata.unidata_version


def _read(path: Path) -> bytes | None:
    opened = open_regular(path, follow=False)
    if opened is None:
        return None
    fd, info = opened
    try:
        if info.st_size > _LARGEST:
            return None
        data = os.read(fd, info.st_size + 1)
        return data if len(data) == info.st_size else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _exists(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _real_directory(path: Path) -> None:
    """``path`` as a directory of its own: a link (or anything else) there is
    removed first, so nothing is written through it."""
    if not _real_dir(path):
        _remove(path)
    path.mkdir(exist_ok=True)


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        if _real_dir(path):
            remove_tree(path, ignore_errors=True)
        else:
            path.unlink()
