"""setup's `tests:` line read as a person reads it: a test file pytest could not
collect is named as one, never counted as a test that failed
(gtd.auto.setup.tests_line)."""

from __future__ import annotations

from gtd.auto import setup
from gtd.auto.ratchet.model import Outcome, RunResult, Snapshot


def line(tests: dict[str, Outcome] | None) -> str:
    return setup.tests_line(Snapshot(baseline=RunResult((), tests)))


def test_a_run_that_ran_counts_its_tests() -> None:
    assert line({"t.py::a": "passed", "t.py::b": "failed"}) == "1 / 2 passed at baseline"


def test_a_collection_error_alone_is_said_as_one() -> None:
    assert line({"tests/test_x.py": "error"}) == (
        "none ran at baseline: 1 test file could not be collected (tests/test_x.py)"
    )


def test_tests_that_ran_beside_files_that_did_not_collect_are_counted_apart() -> None:
    tests: dict[str, Outcome] = {
        "tests/test_x.py": "error",
        "tests/test_y.py": "error",
        "tests/test_a.py::t": "passed",
        "tests/test_a.py::u": "failed",
        "tests/test_a.py::v": "passed",
    }
    assert line(tests) == (
        "2 / 3 passed at baseline: 2 test files could not be collected "
        "(tests/test_x.py, tests/test_y.py)"
    )


def test_no_per_test_results_says_so() -> None:
    assert line(None) == "no per-test results (judged by exit code)"
