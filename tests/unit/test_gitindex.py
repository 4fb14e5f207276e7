"""gtd.gitindex on any bytes: whatever an index file holds — damaged, truncated,
or forged by an agent with a checksum that holds — reading it answers an index
or None (git then decides), never an exception that would stop `cycle end`."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gtd import gitindex


@pytest.fixture(scope="module")
def real_index(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """An index git wrote: a few entries, one with a long name, format 2."""
    repo = tmp_path_factory.mktemp("repo")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    for name in ("a.py", "pkg/b.py", "pkg/sub/" + "c" * 200 + ".py"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    return (repo / ".git" / "index").read_bytes()


def sealed(body: bytes) -> bytes:
    """``body`` with the SHA-1 checksum git would write after it."""
    return body + hashlib.sha1(body).digest()


def read(tmp: Path, data: bytes) -> object:
    path = tmp / "index"
    path.write_bytes(data)
    return gitindex.read(str(path), 1000)


def test_the_real_index_is_read(real_index: bytes, tmp_path: Path) -> None:
    index = read(tmp_path, real_index)
    assert isinstance(index, gitindex.Index)
    assert [e.path for e in index.entries] == ["a.py", "pkg/b.py", "pkg/sub/" + "c" * 200 + ".py"]


@settings(
    max_examples=400,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cut=st.integers(min_value=0, max_value=400), flips=st.lists(st.integers(0, 399), max_size=6))
def test_forged_bytes_never_raise(
    real_index: bytes, tmp_path: Path, cut: int, flips: list[int]
) -> None:
    """Cut short and bytes flipped, then sealed with a checksum that holds: the
    entries' fields, names, flags and counts say anything."""
    body = bytearray(real_index[:-20])
    for at in flips:
        if at < len(body):
            body[at] ^= 0xFF
    body = body[: max(12, len(body) - cut)]
    answer = read(tmp_path, sealed(bytes(body)))
    assert answer is None or isinstance(answer, gitindex.Index)
    if answer is not None:  # every name one a file can have (the room lstats them)
        assert all(e.path and "\0" not in e.path for e in answer.entries)


@settings(
    max_examples=200,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.binary(max_size=300))
def test_any_bytes_after_a_header_never_raise(tmp_path: Path, data: bytes) -> None:
    for version in (2, 3, 4):
        body = b"DIRC" + version.to_bytes(4, "big") + (3).to_bytes(4, "big") + data
        answer = read(tmp_path, sealed(body))
        assert answer is None or isinstance(answer, gitindex.Index)
        if answer is not None:
            assert all(e.path and "\0" not in e.path for e in answer.entries)
    assert read(tmp_path, data) is None or data[:4] == b"DIRC"
    os.unlink(tmp_path / "index")


def test_a_name_holding_a_nul_is_left_to_git(real_index: bytes, tmp_path: Path) -> None:
    """A format-2 name's length is in its flags: a NUL inside it (forged, its
    checksum sealed again) would reach lstat as an embedded null byte."""
    at = real_index.index(b"a.py")
    body = bytearray(real_index[:-20])
    body[at + 1] = 0
    assert read(tmp_path, sealed(bytes(body))) is None
