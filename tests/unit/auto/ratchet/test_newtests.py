"""New test files no session collected: which count, and what the reason says."""

from __future__ import annotations

import pytest

from gtd.auto.ratchet.newtests import (
    added_test_modules,
    collected_files,
    configured_paths,
    reasons,
    tally,
)
from gtd.auto.ratchet.results import Item


def test_only_new_default_test_modules_count() -> None:
    added = [
        "integration/test_x.py",
        "checks/api_test.py",
        "tests/data/input.txt",  # a fixture, not a module
        "tests/helpers.py",  # no test_ name: pytest does not collect it by default
        "tests/conftest.py",
        "tests/test_old.py",  # the snapshot's already
        "build/lib/test_copy.pyc",
    ]
    assert added_test_modules(added, ["tests/test_old.py"]) == [
        "checks/api_test.py",
        "integration/test_x.py",
    ]


def test_a_module_that_failed_to_import_was_collected() -> None:
    items = [Item("tests/test_a.py::test_one", "tests/test_a.py", "function")]
    assert collected_files(items, ["tests/test_b.py"]) == {"tests/test_a.py", "tests/test_b.py"}


@pytest.mark.parametrize(
    ("name", "text", "paths"),
    [
        ("pytest.ini", "[pytest]\ntestpaths = tests\n    docs\n", ["tests", "docs"]),
        (".pytest.ini", "[pytest]\naddopts = -q\n", []),
        ("tox.ini", "[tox]\n[pytest]\ntestpaths = tests\n", ["tests"]),
        ("setup.cfg", "[tool:pytest]\ntestpaths = src tests\n", ["src", "tests"]),
        ("setup.cfg", "[pytest]\ntestpaths = tests\n", []),  # not its section there
        ("pyproject.toml", '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n', ["tests"]),
        ("pyproject.toml", '[tool.pytest.ini_options]\ntestpaths = "a b"\n', ["a", "b"]),
        ("pyproject.toml", "[tool.pytest.ini_options\n", []),  # unreadable
        ("pytest.ini", "no section at all", []),
    ],
)
def test_testpaths_are_read_from_each_kind_of_file(name: str, text: str, paths: list[str]) -> None:
    assert configured_paths(name, text.encode()) == paths


def test_reasons_say_where_tests_go() -> None:
    assert reasons(["integration/test_x.py"], ["tests"], []) == [
        "new test file integration/test_x.py did not run: it is outside the test paths"
        " (testpaths = tests): put it under tests/"
    ]
    # Inside testpaths yet not collected (a conftest's collect_ignore, python_files).
    assert reasons(["tests/test_y.py"], ["tests/"], []) == [
        "new test file tests/test_y.py did not run: the test command does not collect it:"
        " put it under tests/"
    ]
    # No testpaths (a command that names the package folder): where the tests are.
    old = ["tests/test_a.py", "tests/test_b.py", "src/pkg/test_c.py", "tests/data.json"]
    assert reasons(["integration/test_x.py"], [], old) == [
        "new test file integration/test_x.py did not run: the test command does not collect"
        " it: put it under tests/"
    ]
    # A command limited to the package folder: the folder its tests share.
    nested = ["src/pkg/tests/test_a.py", "src/pkg/tests/unit/test_b.py"]
    assert reasons(["integration/test_x.py"], [], nested)[0].endswith(
        ": put it under src/pkg/tests/"
    )
    assert reasons(["test_x.py"], [], []) == [
        "new test file test_x.py did not run: the test command does not collect it:"
        " put it where the tests run"
    ]
    assert reasons([], ["tests"], []) == []


def test_tally_counts_the_tests_the_baseline_did_not_hold() -> None:
    before = {"tests/test_a.py::test_one": "passed"}
    after = {
        "tests/test_a.py::test_one": "failed",  # an old one: not counted here
        "tests/test_b.py::test_two": "passed",
        "tests/test_b.py::test_three": "failed",
        "tests/test_b.py::test_four": "skipped",
    }
    assert tally(before, after) == "3 ran, 1 passed, 1 skipped"
    assert tally(before, {"tests/test_a.py::test_one": "passed"}) is None
    assert tally(before, None) is None


def test_an_old_test_file_that_no_longer_collects_is_no_new_test() -> None:
    # calc.py does not compile: the old file fails as a whole, under its path alone
    before = {"tests/test_a.py::test_one": "passed"}
    assert tally(before, {"tests/test_a.py": "error"}) is None
    # a new file that does not collect is a new test that did not pass
    assert tally(before, {"tests/test_a.py": "error", "tests/test_b.py": "error"}) == (
        "1 ran, 0 passed"
    )
