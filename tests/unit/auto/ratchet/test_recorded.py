"""The plugin's JSON lines → per-test outcomes with repository-relative ids."""

from __future__ import annotations

import json
from pathlib import Path

from gtd.auto.ratchet.recorded import parse


def _line(root: Path | str, tests: dict[str, str]) -> str:
    return json.dumps({"root": str(root), "tests": tests}) + "\n"


def test_sessions_merge_and_the_worst_outcome_wins(tmp_path: Path) -> None:
    text = _line(tmp_path, {"t.py::a": "passed", "t.py::b": "passed"}) + _line(
        tmp_path, {"t.py::a": "failed", "u.py::c": "skipped"}
    )
    assert parse(text, str(tmp_path)) == {
        "t.py::a": "failed",
        "t.py::b": "passed",
        "u.py::c": "skipped",
    }


def test_ids_from_a_subdirectory_rootdir_are_made_repository_relative(tmp_path: Path) -> None:
    sub = tmp_path / "backend"
    sub.mkdir()
    text = _line(sub, {"tests/test_api.py::TestX::test_y[a::b]": "passed", "": "error"})
    assert parse(text, str(tmp_path)) == {
        "backend/tests/test_api.py::TestX::test_y[a::b]": "passed",
        "": "error",
    }


def test_tests_outside_the_repository_keep_pytests_id(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    text = _line(tmp_path, {"elsewhere/test_x.py::test_z": "passed"})
    assert parse(text, str(repo)) == {"elsewhere/test_x.py::test_z": "passed"}


def test_a_line_cut_short_or_malformed_is_skipped(tmp_path: Path) -> None:
    good = _line(tmp_path, {"t.py::a": "passed"})
    text = good + '{"root": "/x", "tests": {"t.py::b": "pas'
    text += "\n" + json.dumps({"root": "/x", "tests": ["not", "a", "map"]}) + "\n"
    text += json.dumps({"tests": {}}) + "\n"
    assert parse(text, str(tmp_path)) == {"t.py::a": "passed"}


def test_unknown_outcomes_are_dropped(tmp_path: Path) -> None:
    text = _line(tmp_path, {"t.py::a": "passed", "t.py::b": "rerun"})
    assert parse(text, str(tmp_path)) == {"t.py::a": "passed"}


def test_nothing_readable_is_none_and_an_empty_session_is_zero_tests(tmp_path: Path) -> None:
    assert parse("", str(tmp_path)) is None
    assert parse("garbage\n", str(tmp_path)) is None
    assert parse(_line(tmp_path, {}), str(tmp_path)) == {}
