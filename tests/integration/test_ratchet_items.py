"""What each test item runs, judged in real pytest runs: a test of any shape runs
the function it was collected to run, and code that finds the items (through
the garbage collector) and hands them a function of its own, or a ``runtest``
that calls nothing, leaves evidence naming each test."""

from __future__ import annotations

import pytest

from gtd.auto.ratchet.results import Report
from tests.conftest import Repo
from tests.integration.plugin_runs import PYTEST, clean_env, in_room, run
from tests.redteam.test_in_process_reach import TESTS_OF_EVERY_SHAPE


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env(monkeypatch)


INVENTORY = """\
from typing import NamedTuple


class Item(NamedTuple):
    name: str
    cents: int
    qty: int


def total(items):
    return sum(item.cents * item.qty for item in items)
"""

# Run first (its file sorts first), it swaps what the later tests' items run.
SWAPPER = """\
import gc


def test_swaps():
    for obj in gc.get_objects():
        nodeid = getattr(obj, "nodeid", "")
        if type(obj).__name__ != "Function":
            continue
        if nodeid.endswith("test_empty"):
            obj.obj = lambda *args, **kwargs: None
        elif nodeid.endswith("test_decorated"):
            obj.runtest = lambda: None
"""


def _suite(repo: Repo, *files: tuple[str, str]) -> Report:
    """The files' suite run as the clean room runs it (``repo`` the room)."""
    repo.write("inventory.py", INVENTORY)
    for rel, text in files:
        repo.write(rel, text)
    return run(repo.path, f"{PYTEST} tests", in_room(repo.path, ()))


def test_tests_of_every_shape_run_what_they_were_collected_to_run(repo: Repo) -> None:
    report = _suite(repo, ("tests/test_shapes.py", TESTS_OF_EVERY_SHAPE))
    assert report.outcomes is not None
    assert set(report.outcomes.values()) == {"passed"}
    assert len(report.outcomes) == 9
    assert [e for e in report.evidence if e.kind == "replaced-test"] == []


@pytest.mark.slow  # a twin's counterpart: the red-team tests keep the attack in the quick loop
def test_items_handed_other_functions_or_a_runtest_are_evidence(repo: Repo) -> None:
    broken = TESTS_OF_EVERY_SHAPE.replace("total([]) == 0", "total([]) == 1").replace(
        'total([Item("b", 2, 2)]) == 4', 'total([Item("b", 2, 2)]) == 5'
    )
    report = _suite(repo, ("tests/test_a_swapper.py", SWAPPER), ("tests/test_shapes.py", broken))
    assert report.outcomes is not None
    assert set(report.outcomes.values()) == {"passed"}  # the swaps hid both failures
    found = {e.subject: e.detail for e in report.evidence if e.kind == "replaced-test"}
    swapper = repo.path / "tests" / "test_a_swapper.py"
    assert found == {
        "tests/test_shapes.py::TestTotals::test_empty": (
            f"runs test_swaps.<locals>.<lambda> from {swapper} instead"
        ),
        "tests/test_shapes.py::test_decorated": "its runtest replaced",
    }
