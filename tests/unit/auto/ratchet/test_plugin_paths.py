"""The plugin's fast absolute path (pytest_report._abs) is os.path.abspath on every
path, hidden folders (the clean room lives under ``~/.cache``) and "." / ".."
parts alike: it only skips abspath's work where that work changes nothing."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from gtd.auto.ratchet import pytest_report

_PARTS = st.sampled_from(["a", ".", "..", ".cache", "..x", "x..", "", "b.", ".b", "..."])


@given(
    parts=st.lists(_PARTS, max_size=6),
    absolute=st.booleans(),
    trailing=st.booleans(),
)
def test_abs_is_abspath(parts: list[str], absolute: bool, trailing: bool) -> None:
    path = ("/" if absolute else "") + "/".join(parts) + ("/" if trailing else "")
    assert pytest_report._abs(path) == os.path.abspath(path)


def test_a_room_path_is_taken_as_it_is() -> None:
    room = "/home/me/.cache/gtd/rooms/repo-0a1b/0/tree/tests/test_x.py"
    assert pytest_report._abs(room) is room


def test_files_resolved_with_their_folders_remembered_are_resolved_as_realpath(
    tmp_path: Path,
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "test_a.py").write_text("")
    (tmp_path / "other.py").write_text("")
    (tmp_path / "linked").symlink_to(tmp_path / "real")  # a folder that is a link
    (tmp_path / "real" / "test_b.py").symlink_to(tmp_path / "other.py")  # a file that is
    folders: dict[str, str] = {}
    for name in ("linked/test_a.py", "linked/test_b.py", "real/test_a.py", "real/test_b.py",
                 "linked/missing.py", "linked/.", "linked/..", "linked/"):  # fmt: skip
        path = str(tmp_path / name) if not name.endswith("/") else f"{tmp_path}/{name}"
        assert pytest_report._both(path, folders) == pytest_report._both(path), name
    assert folders  # the folders were remembered, and served the later files
