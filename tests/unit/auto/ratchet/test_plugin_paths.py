"""The plugin's fast absolute path (pytest_report._abs) is os.path.abspath on every
path, hidden folders (the clean room lives under ``~/.cache``) and "." / ".."
parts alike: it only skips abspath's work where that work changes nothing."""

from __future__ import annotations

import os

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
