"""What pytest collects, as the plugin reports it (custom ``python_files``,
``testpaths``, doctests from modules and text files, a plugin's own items), and the
selections the helper can ask for: only these files — with no conftest outside
them ever loaded — or only these tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.auto.ratchet import report_listener
from gtd.auto.ratchet.results import Item
from tests.conftest import Repo
from tests.integration.plugin_runs import PY, PYTEST, clean_env, run

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env(monkeypatch)


def test_every_collected_item_with_its_file_and_kind(repo: Repo) -> None:
    repo.write(
        "pytest.ini",
        "[pytest]\n"
        "testpaths = checks src\n"
        "python_files = *_solution.py\n"
        "addopts = --doctest-modules --doctest-glob=*.txt\n",
    )
    repo.write("checks/calc_solution.py", "def test_add():\n    assert 1 + 1 == 2\n")
    repo.write(
        "checks/unit_solution.py",
        "import unittest\n\n\nclass Case(unittest.TestCase):\n"
        "    def test_x(self):\n        pass\n",
    )
    repo.write("checks/test_not_collected.py", "def test_never():\n    pass\n")
    repo.write("checks/guide.txt", ">>> 1 + 1\n2\n")
    repo.write("src/pkg/__init__.py", "")
    repo.write(
        "src/pkg/mod.py",
        'def double(x):\n    """\n    >>> double(2)\n    4\n    """\n    return 2 * x\n',
    )
    # A plugin's own items: one per line of a .check file.
    repo.write(
        "checks/conftest.py",
        "import pytest\n\n\n"
        "class Line(pytest.Item):\n"
        "    def runtest(self):\n        pass\n\n\n"
        "class CheckFile(pytest.File):\n"
        "    def collect(self):\n"
        "        for n, _ in enumerate(self.path.read_text().splitlines()):\n"
        "            yield Line.from_parent(self, name=f'line{n}')\n\n\n"
        "def pytest_collect_file(parent, file_path):\n"
        "    if file_path.suffix == '.check':\n"
        "        return CheckFile.from_parent(parent, path=file_path)\n",
    )
    repo.write("checks/data.check", "a\nb\n")
    report = run(repo.path, f"{PYTEST} -k 'not line1'")
    assert report.complete, report.problems
    by_id = {item.node_id: item for item in report.items}
    assert by_id["checks/calc_solution.py::test_add"] == Item(
        "checks/calc_solution.py::test_add", "checks/calc_solution.py", "function"
    )
    assert by_id["checks/unit_solution.py::Case::test_x"].kind == "function"
    assert by_id["checks/guide.txt::guide.txt"].kind == "doctest-text"
    (doctest,) = [i for i in report.items if i.kind == "doctest-module"]
    assert (doctest.file, doctest.node_id.endswith("mod.double")) == ("src/pkg/mod.py", True)
    assert by_id["checks/data.check::line0"] == Item(
        "checks/data.check::line0", "checks/data.check", "other"
    )
    assert by_id["checks/data.check::line1"].deselected  # collected, not run
    assert not [i for i in report.items if "not_collected" in i.file]
    assert len(report.items) == 6
    assert report.outcomes is not None
    assert set(report.outcomes) == {i.node_id for i in report.items if not i.deselected}
    assert report.sessions[0].conftests == ("checks/conftest.py",)


# -- selection ---------------------------------------------------------------------------

# A session-wide hook (pytest calls it with every item of the session, not only
# those below the conftest) that makes every test pass, and a mark that the
# conftest was loaded at all.
FLIP = """\
import pathlib

pathlib.Path(__file__).with_name("LOADED").write_text("")


def pytest_collection_modifyitems(items):
    for item in items:
        item.runtest = lambda: None
"""


@pytest.fixture
def hostile(repo: Repo) -> Repo:
    """A snapshot test that fails, and new folders whose conftests would hide it:
    one pytest loads before collection (a ``test*`` folder of an argument), one
    during collection. And a new test module that would do the same on import."""
    repo.write(
        "tests/test_old.py",
        "def test_broken():\n    assert 1 + 1 == 3\n\n\ndef test_ok():\n    pass\n",
    )
    for folder in ("test_extra", "extra"):
        repo.write(f"tests/{folder}/conftest.py", FLIP)
        repo.write(f"tests/{folder}/test_{folder}_new.py", "def test_new():\n    pass\n")
    repo.write(
        "tests/test_new_module.py",
        "import pathlib\npathlib.Path(__file__).with_name('IMPORTED').write_text('')\n",
    )
    return repo


def _marks(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.name in ("LOADED", "IMPORTED")
    )


def test_unselected_conftests_would_flip_outcomes(hostile: Repo) -> None:
    report = run(hostile.path, f"{PYTEST} tests")
    assert report.outcomes is not None
    assert report.outcomes["tests/test_old.py::test_broken"] == "passed"  # the attack works
    assert _marks(hostile.path) == [
        "tests/IMPORTED",
        "tests/extra/LOADED",
        "tests/test_extra/LOADED",
    ]


def test_only_these_files_loads_no_conftest_and_no_module_outside_them(hostile: Repo) -> None:
    request = report_listener.Request(hostile.path, only_files=("tests/test_old.py",))
    # With the folder as argument (its test* subfolders are loaded before collection)
    # and with none (pytest walks the tree).
    report = run(hostile.path, f"{PYTEST} tests; {PYTEST}", request)
    assert report.outcomes == {
        "tests/test_old.py::test_broken": "failed",
        "tests/test_old.py::test_ok": "passed",
    }
    assert report.complete, report.problems
    assert [s.selected for s in report.sessions] == [True, True]
    assert [s.conftests for s in report.sessions] == [(), ()]
    assert report.evidence == ()
    assert _marks(hostile.path) == []


def test_xdist_workers_apply_the_selection_too(hostile: Repo) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed")
    request = report_listener.Request(hostile.path, only_files=("tests/test_old.py",))
    report = run(hostile.path, f"{PY} -m pytest -q -p no:cacheprovider -n 2 tests", request)
    assert report.outcomes == {
        "tests/test_old.py::test_broken": "failed",
        "tests/test_old.py::test_ok": "passed",
    }
    assert report.complete, report.problems
    assert _marks(hostile.path) == []


def test_only_these_tests_reruns_just_them(hostile: Repo) -> None:
    request = report_listener.Request(hostile.path, only_ids=("tests/test_old.py::test_broken",))
    report = run(hostile.path, f"{PYTEST} tests", request)
    assert report.outcomes == {"tests/test_old.py::test_broken": "failed"}
    assert [(i.node_id, i.deselected) for i in sorted(report.items)] == [
        ("tests/test_old.py::test_broken", False),
        ("tests/test_old.py::test_ok", True),
    ]
    assert report.complete, report.problems
    assert _marks(hostile.path) == []


def test_getting_around_the_selection_is_evidence(repo: Repo) -> None:
    # A conftest the selection allows, loaded during collection (so its hooks come
    # before the plugin's), forces an unselected module beside it into collection;
    # and the selected test registers an unselected folder's conftest by hand.
    repo.write(
        "suite/deep/conftest.py",
        "import pytest\n\n\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_ignore_collect(collection_path):\n"
        "    return False if 'extra' in str(collection_path) else None\n",
    )
    repo.write("suite/deep/test_extra_new.py", "def test_new():\n    pass\n")
    repo.write("suite/deep/extra/conftest.py", FLIP)
    repo.write("suite/deep/extra/test_extra.py", "def test_new():\n    pass\n")
    repo.write(
        "suite/deep/test_sel.py",
        "import importlib.util, pathlib\n\n\n"
        "def test_broken():\n    assert 1 + 1 == 3\n\n\n"
        "def test_register(pytestconfig):\n"
        "    path = pathlib.Path(__file__).parent / 'extra' / 'conftest.py'\n"
        "    spec = importlib.util.spec_from_file_location('extra_conftest', path)\n"
        "    module = importlib.util.module_from_spec(spec)\n"
        "    spec.loader.exec_module(module)\n"
        "    pytestconfig.pluginmanager.register(module, str(path))\n",
    )
    request = report_listener.Request(repo.path, only_files=("suite/deep/test_sel.py",))
    report = run(repo.path, f"{PYTEST} suite", request)
    assert report.outcomes == {
        "suite/deep/test_sel.py::test_broken": "failed",
        "suite/deep/test_sel.py::test_register": "passed",
    }
    deep = repo.path / "suite" / "deep"
    assert {(e.kind, e.subject) for e in report.evidence} == {
        ("unselected", str(deep / "test_extra_new.py")),
        ("conftest-outside", str(deep / "extra" / "conftest.py")),
    }
    conftests = ("suite/deep/conftest.py", "suite/deep/extra/conftest.py")
    assert report.sessions[0].conftests == conftests


def test_a_selection_the_plugin_could_not_apply_is_a_problem(hostile: Repo) -> None:
    request = report_listener.Request(hostile.path, only_files=("tests/test_old.py",))
    report = run(hostile.path, f"{PYTEST} -p no:gtd_ratchet_report tests", request)
    assert report.source == "junit"
    assert not report.complete
    assert report.junit_outcomes is None  # never judged as if the selection held
