"""What the tests lean on is protected without being declared: an assertion
helper in the product package, a tolerance the assertions read from product
code, a golden file outside the test folders — and the routes around them (a
package that shadows the helper, an entry pushed onto ``__path__``). Each break
below would otherwise commit as `passed`: the tests still pass."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Repo
from tests.integration.calc_project import gtd_json, make_project

MONEY = "def total(prices):\n    return round(sum(prices), 2)\n"
BROKEN = "def total(prices):\n    return round(sum(prices), 0)\n"
FLAGS = "TOL = 0.001\n"
TESTING = "def assert_money(got, want):\n    assert abs(got - want) < 0.01, (got, want)\n"
LAX = "def assert_money(got, want):\n    assert abs(got - want) < 100\n"
TEST = """\
import json
import pathlib

import pytest

from pkg import flags
from pkg.money import total
from pkg.testing import assert_money


def test_total():
    assert_money(total([1.10, 2.24]), 3.34)


def test_tolerance():
    assert total([0.104, 0.2]) == pytest.approx(0.3, abs=flags.TOL)


def test_golden():
    golden = pathlib.Path(__file__).parent.parent / "golden" / "totals.json"
    expected = json.loads(golden.read_text())
    assert total(expected["prices"]) == expected["total"]
"""
GOLDEN = {"prices": [1.25, 2.5], "total": 3.75}


@pytest.fixture
def project(repo: Repo) -> Repo:
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/money.py", MONEY)
    repo.write("pkg/flags.py", FLAGS)
    repo.write("pkg/testing.py", TESTING)
    repo.write("tests/test_money.py", TEST)
    repo.write("golden/totals.json", json.dumps(GOLDEN))
    make_project(repo)
    return repo


def _begin(repo: Repo) -> None:
    # In the test itself: the cycle seals the variables the tests inherit, and
    # PYTEST_CURRENT_TEST differs between a fixture and the test.
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"


def _end(repo: Repo) -> dict[str, object]:
    answer = gtd_json(repo, "cycle", "end")
    assert answer["status"] != "passed", answer
    return answer


def test_the_snapshot_holds_the_helper_and_the_golden_file(project: Repo) -> None:
    snap = json.loads((project.path / ".deepflow/auto-snapshot.json").read_text())
    assert "pkg/testing.py" in snap["files"]
    assert "golden/totals.json" in snap["files"]
    assert "pkg/money.py" not in snap["files"]  # the code under test stays free
    assert "pkg/flags.py" not in snap["files"]


def test_an_undeclared_assertion_helper_widened_with_the_break(project: Repo) -> None:
    _begin(project)
    project.write("pkg/testing.py", LAX)
    project.write("pkg/money.py", BROKEN)
    assert "pkg/testing.py" in str(_end(project)["reason"])
    assert (project.path / "pkg/testing.py").read_text() == TESTING


def test_a_package_that_shadows_the_helper(project: Repo) -> None:
    _begin(project)
    project.write("pkg/testing/__init__.py", LAX)
    project.write("pkg/money.py", BROKEN)
    reason = str(_end(project)["reason"])
    assert "a new module would shadow a protected one: pkg/testing/__init__.py" in reason
    assert not (project.path / "pkg/testing").exists()


def test_a_tolerance_the_assertions_read_widened(project: Repo) -> None:
    _begin(project)
    project.write("pkg/flags.py", "TOL = 1.0\n")
    project.write("pkg/money.py", BROKEN)
    reason = str(_end(project)["reason"])
    assert "pkg/flags.py:1: test-constants: changes TOL" in reason, reason


@pytest.mark.slow
def test_an_entry_pushed_onto_the_package_path(project: Repo) -> None:
    _begin(project)
    project.write("lax/testing.py", LAX)
    project.write("pkg/__init__.py", "import os\n\n__path__.insert(0, os.path.abspath('lax'))\n")
    project.write("pkg/money.py", BROKEN)
    assert "package-path: changes __path__" in str(_end(project)["reason"])


@pytest.mark.slow
def test_a_golden_file_rewritten_with_the_break(project: Repo) -> None:
    _begin(project)
    project.write("golden/totals.json", json.dumps({**GOLDEN, "total": 4.0}))
    project.write("pkg/money.py", BROKEN)
    assert "golden/totals.json" in str(_end(project)["reason"])


@pytest.mark.slow
def test_honest_work_on_the_code_under_test_passes(project: Repo) -> None:
    _begin(project)
    project.write("pkg/money.py", MONEY + "\n\ndef count(prices):\n    return len(prices)\n")
    answer = gtd_json(project, "cycle", "end")
    assert answer["status"] == "passed", answer


@pytest.mark.slow
def test_a_declared_helper_is_shadowed_by_a_package(repo: Repo) -> None:
    # the helper declared by hand: the same refusal
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/money.py", MONEY)
    repo.write("pkg/checks.py", "def same(a, b):\n    return a == b\n")  # no assert in it
    repo.write(
        "tests/test_checks.py",
        "from pkg.checks import same\n\n\ndef test_same():\n    assert same(1, 1)\n",
    )
    make_project(repo, config_extra="  protect: [pkg/checks.py]\n")
    _begin(repo)
    repo.write("pkg/checks/__init__.py", "def same(a, b):\n    return True\n")
    reason = str(_end(repo)["reason"])
    assert "a new module would shadow a protected one: pkg/checks/__init__.py" in reason
