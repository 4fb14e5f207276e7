"""The judge's store of hypothesis's Unicode tables: it keeps only tables its
own computation agrees with, gives a run only tables nothing changed since the
slot was trusted, and empties the run's storage (its example database too)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest
from filelock import FileLock

from gtd.auto.ratchet import hypotables
from tests.conftest import run_wide_dir

VERSION = unicodedata.unidata_version
CHARMAP = "charmap.json.gz"
UTF8 = "codec-v2-utf-8.json.gz"


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The two tables as this environment's hypothesis writes them: built once
    per test run (~1.3 s of CPU), by the first test process to ask."""
    storage = run_wide_dir(tmp_path_factory, "hypothesis-tables")
    tables = storage / "unicode_data" / VERSION
    with FileLock(str(storage) + ".lock"):
        if not (storage / "built").exists():
            code = (
                "from hypothesis.internal.charmap import charmap, intervals_from_codec\n"
                "charmap(); intervals_from_codec('utf-8')\n"
            )
            env = {**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(storage)}
            subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=storage)
            (storage / "built").touch()
    return {name: (tables / name).read_bytes() for name in (CHARMAP, UTF8)}


def _slot(tmp_path: Path) -> Path:
    slot = tmp_path / "rooms" / "0"
    slot.mkdir(parents=True)
    return slot


def _built_by_run(slot: Path, tables: dict[str, bytes]) -> None:
    where = hypotables.folder(slot) / "unicode_data" / VERSION
    where.mkdir(parents=True, exist_ok=True)
    for name, data in tables.items():
        (where / name).write_bytes(data)


def _kept(slot: Path, name: str) -> Path:
    return hypotables.store(slot) / "unicode_data" / VERSION / name


def test_tables_hypothesis_built_are_kept(tmp_path: Path, built: dict[str, bytes]) -> None:
    slot = _slot(tmp_path)
    _built_by_run(slot, built)
    hypotables.keep(slot)
    for name, data in built.items():
        assert _kept(slot, name).read_bytes() == data


@pytest.mark.parametrize(
    ("name", "table"),
    [
        (CHARMAP, [["Cc", [[0, 31]]], ["Ll", [[32, 127]]], ["Cs", [[128, 0x10FFFF]]]]),
        (UTF8, [[[0, 127]], []]),  # only ASCII encodes
        (UTF8, [[[0, 0x10FFFF]], []]),  # surrogates too
        (UTF8, [[[0, 0xD7FF], [0xE000, 0x10FFFF]], [[65, 65]]]),  # "A" does not come back
    ],
)
def test_a_forged_table_is_not_kept(
    tmp_path: Path, built: dict[str, bytes], name: str, table: object
) -> None:
    slot = _slot(tmp_path)
    _built_by_run(slot, {name: gzip.compress(json.dumps(table).encode())})
    hypotables.keep(slot)
    assert not _kept(slot, name).exists()


def test_unreadable_tables_are_not_kept(tmp_path: Path) -> None:
    slot = _slot(tmp_path)
    _built_by_run(slot, {CHARMAP: b"not gzip", UTF8: gzip.compress(b'{"a": 1}')})
    hypotables.keep(slot)
    assert not _kept(slot, CHARMAP).exists()
    assert not _kept(slot, UTF8).exists()


def test_the_helpers_own_tables_match_hypothesis(built: dict[str, bytes]) -> None:
    charmap = json.loads(gzip.decompress(built[CHARMAP]))
    assert {cat: [tuple(p) for p in pairs] for cat, pairs in charmap} == hypotables.categories()
    encodable, lossy = json.loads(gzip.decompress(built[UTF8]))
    assert ([tuple(p) for p in encodable], lossy) == hypotables.utf8_intervals()


def test_a_run_gets_the_store_and_nothing_else(tmp_path: Path, built: dict[str, bytes]) -> None:
    slot = _slot(tmp_path)
    storage = hypotables.folder(slot)
    (storage / "examples" / "abc").mkdir(parents=True)
    (storage / "examples" / "abc" / "x").write_text("a saved example")
    (storage / "constants").mkdir()
    hypotables.prepare(slot, since=time.time())
    assert list(storage.iterdir()) == []  # no store yet: an empty storage
    _built_by_run(slot, built)
    hypotables.keep(slot)
    hypotables.prepare(slot, since=None)  # this process's own tables
    tables = storage / "unicode_data" / VERSION
    assert sorted(p.name for p in storage.iterdir()) == ["unicode_data"]
    assert {p.name: p.read_bytes() for p in tables.iterdir()} == built


def test_a_table_changed_after_the_slot_was_trusted_is_removed_unread(
    tmp_path: Path, built: dict[str, bytes]
) -> None:
    slot = _slot(tmp_path)
    kept = _kept(slot, CHARMAP)
    kept.parent.mkdir(parents=True)
    kept.write_bytes(built[CHARMAP])  # not this process's own: another's
    written = kept.stat().st_ctime
    hypotables.prepare(slot, since=written + 1)  # written before: trusted
    storage = hypotables.folder(slot) / "unicode_data" / VERSION
    assert (storage / CHARMAP).read_bytes() == built[CHARMAP]
    hypotables.prepare(slot, since=written - 1)  # written since: not
    assert not (storage / CHARMAP).exists()
    assert not kept.exists()


def test_a_link_in_the_store_is_not_followed(tmp_path: Path, built: dict[str, bytes]) -> None:
    slot = _slot(tmp_path)
    elsewhere = tmp_path / "elsewhere.gz"
    elsewhere.write_bytes(built[CHARMAP])
    kept = _kept(slot, CHARMAP)
    kept.parent.mkdir(parents=True)
    kept.symlink_to(elsewhere)
    hypotables.prepare(slot, since=time.time() + 1)
    assert not (hypotables.folder(slot) / "unicode_data" / VERSION / CHARMAP).exists()
    assert not kept.is_symlink()
    assert elsewhere.read_bytes() == built[CHARMAP]  # removed the link, not its target
