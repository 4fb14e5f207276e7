"""The assertion machinery a verdict goes through (unittest's TestCase and its
contexts, doctest's checker, pytest's approx and raises), watched by the plugin
from the run's start: what a real suite does with it leaves no evidence; a
change to it made by the code under test is evidence naming the entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.auto.ratchet.results import Report
from tests.conftest import Repo
from tests.integration.plugin_runs import PYTEST, clean_env, in_room, run


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env(monkeypatch)


# A suite that uses all of it the ordinary way: TestCase classes with class
# set-up, cleanups, sub-tests, assertRaises and assertLogs contexts, a wider
# maxDiff and an equality function of their own; approx and raises; a mock's
# call assertion; a doctest module; and a test that patches TestCase with
# monkeypatch (undone at its end).
TEST_UNITTEST = """\
import logging
import unittest

from pkg import add


class Money:
    def __init__(self, cents):
        self.cents = cents


class TestAdd(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.addClassCleanup(lambda: None)

    def setUp(self):
        self.addTypeEqualityFunc(Money, lambda a, b, msg=None: self.assertEqual(a.cents, b.cents))

    def test_add(self):
        for a, b in [(1, 1), (2, 3)]:
            with self.subTest(a=a, b=b):
                self.assertEqual(add(a, b), a + b)

    def test_add_plain(self):
        self.assertEqual(add(2, 2), 4)

    def test_money(self):
        self.assertEqual(Money(3), Money(3))

    def test_raises_and_logs(self):
        with self.assertRaises(TypeError):
            add(1, None)
        with self.assertLogs("pkg", level="INFO"):
            logging.getLogger("pkg").info("added")
"""

TEST_PYTEST = """\
import unittest
from unittest.mock import Mock

import pytest

from pkg import add


def test_approx():
    assert add(0.1, 0.2) == pytest.approx(0.3)
    assert [add(0.1, 0.2)] == pytest.approx([0.3], rel=1e-6)


def test_raises():
    with pytest.raises(TypeError, match="unsupported"):
        add(1, None)


def test_mock_calls():
    sink = Mock()
    add(1, 2, sink)
    sink.assert_called_once_with(3)


def test_patched_for_one_test(monkeypatch):
    monkeypatch.setattr(unittest.TestCase, "longMessage", False)
    assert unittest.TestCase.longMessage is False
"""

PACKAGE = '''\
def add(a, b, sink=None):
    """
    >>> add(2, 2)
    4
    """
    if sink is not None:
        sink(a + b)
    return a + b
'''

GUARDED = ("tests/test_unittest.py", "tests/test_pytest.py")


def _project(repo: Repo, package: str) -> None:
    repo.write("pytest.ini", "[pytest]\ntestpaths = tests pkg\naddopts = --doctest-modules\n")
    repo.write("tests/test_unittest.py", TEST_UNITTEST)
    repo.write("tests/test_pytest.py", TEST_PYTEST)
    repo.write("pkg/__init__.py", package)


def _run(root: Path) -> Report:
    return run(root, PYTEST, in_room(root, GUARDED))


def test_a_suite_that_uses_the_assertion_machinery_leaves_no_evidence(repo: Repo) -> None:
    _project(repo, PACKAGE)
    report = _run(repo.path)
    assert report.outcomes is not None
    assert len(report.outcomes) == 9
    assert set(report.outcomes.values()) == {"passed"}
    assert report.evidence == ()


# The code under test, imported first by pytest's doctest support, makes
# doctest's checker accept any output (doctest is loaded after the run began:
# its classes are recorded as its import ended), makes a mock's call assertion
# accept any call, and gives approx's sequences a comparison of the standard
# library's own.
# The broken add (2 + 2 is 0), which every attack below hides.
BROKEN_ADD = '''
def add(a, b, sink=None):
    """
    >>> add(2, 2)
    4
    """
    total = a - b if isinstance(b, int) and b > 1 else a + b
    if sink is not None:
        sink(total)
    return total
'''

BROKEN = (
    """\
import doctest
import unittest.mock
import unittest.util

"""
    + BROKEN_ADD
    + """

doctest.OutputChecker.check_output = lambda self, want, got, optionflags: True
unittest.mock.NonCallableMock.assert_called_once_with = lambda self, *args, **kwargs: None
"""
)


def test_a_change_to_the_machinery_is_evidence(repo: Repo) -> None:
    approx = pytest.approx.__module__
    _project(
        repo,
        BROKEN
        + f"import {approx}\n\n{approx}.ApproxSequenceLike.__eq__ = unittest.util.safe_repr\n",
    )
    report = _run(repo.path)
    assert report.outcomes is not None
    assert report.outcomes["pkg/__init__.py::pkg.add"] == "passed"  # the attacks worked
    assert report.outcomes["tests/test_pytest.py::test_mock_calls"] == "passed"
    found = {e.subject: e.detail for e in report.evidence if e.kind == "machinery"}
    assert set(found) == {
        "doctest.OutputChecker.check_output",
        "unittest.mock.NonCallableMock.assert_called_once_with",
        f"{approx}.ApproxSequenceLike.__eq__",
    }
    assert found["doctest.OutputChecker.check_output"] == (
        f"rebound since it was first seen: {repo.path / 'pkg' / '__init__.py'}"
    )


# pytest's own adapters between a test and its report, changed by the code under
# test at import: the unittest adapter's addFailure made to drop the failure,
# pytest.warns' check made to pass without the warning, and the checker class
# pytest's doctest support makes lazily supplied ahead of it, accepting anything.
ADAPTERS = (
    """\
import doctest
import warnings

import _pytest.doctest
import _pytest.recwarn
import _pytest.unittest

"""
    + BROKEN_ADD
    + """

_pytest.unittest.TestCaseFunction.addFailure = lambda self, testcase, rawexcinfo: None
_pytest.recwarn.WarningsChecker.__exit__ = lambda self, *exc: None


class _Lenient(doctest.OutputChecker):
    def check_output(self, want, got, optionflags):
        return True


_pytest.doctest.CHECKER_CLASS = _Lenient
"""
)

TEST_WARNS = """\
import warnings

import pytest

from pkg import add


def test_warns():
    with pytest.warns(UserWarning):
        if add(2, 2) != 4:
            return
        warnings.warn("adding", UserWarning)
"""


def test_a_change_to_pytests_own_adapters_is_evidence(repo: Repo) -> None:
    _project(repo, ADAPTERS)
    repo.write("tests/test_warns.py", TEST_WARNS)
    report = _run(repo.path)
    assert report.outcomes is not None
    # The attacks worked: the broken add passes a TestCase, a warns and a doctest.
    assert report.outcomes["tests/test_unittest.py::TestAdd::test_add_plain"] == "passed"
    assert report.outcomes["tests/test_warns.py::test_warns"] == "passed"
    assert report.outcomes["pkg/__init__.py::pkg.add"] == "passed"
    found = {e.subject for e in report.evidence if e.kind in ("machinery", "patched")}
    assert {
        "_pytest.unittest.TestCaseFunction.addFailure",
        "_pytest.recwarn.WarningsChecker.__exit__",
        "_pytest.doctest.CHECKER_CLASS",
    } <= found, report.evidence


# -- library classes ----------------------------------------------------------------
# The classes of the libraries assertion helpers compare or check files through
# (fractions, pathlib, json...; the plugin's _KEPT) are recorded as first seen: a
# suite's ordinary use of them leaves no evidence, a method changed inside one
# that protected code binds is evidence naming it.

TEST_CLASSES = """\
import json
import numbers
from fractions import Fraction
from pathlib import Path

from pkg import add


class Cents(json.JSONEncoder):
    def default(self, o):
        return str(o)


class Deep(type(Path())):
    pass


numbers.Rational.register(type("Ratio", (), {}))


def test_fractions(monkeypatch):
    assert Fraction(add(1, 2)) == Fraction(3)
    monkeypatch.setattr(Fraction, "__repr__", lambda self: "x")  # undone at the end
    assert repr(Fraction(1)) == "x"


def test_paths(tmp_path):
    (tmp_path / "a").write_text("1")
    assert Deep(tmp_path / "a").read_text() == "1"
    assert json.dumps({"a": Fraction(1)}, cls=Cents) == '{"a": "1"}'


def test_class_data_changed_for_good():
    import string

    string.Template.delimiter = "$"  # data, not behaviour: never judged
"""


def _classes_project(repo: Repo, package: str) -> Report:
    repo.write("tests/test_classes.py", TEST_CLASSES)
    repo.write("pkg/__init__.py", package)
    return run(repo.path, PYTEST, in_room(repo.path, ("tests/test_classes.py",)))


def test_a_suite_that_uses_library_classes_leaves_no_evidence(repo: Repo) -> None:
    report = _classes_project(repo, PACKAGE)
    assert report.outcomes is not None
    assert set(report.outcomes.values()) == {"passed"}, report.outcomes
    assert report.evidence == ()


def test_a_library_class_changed_by_the_code_under_test_is_evidence(repo: Repo) -> None:
    lenient = "lambda self, other: True"
    package = (
        "import fractions\nimport pathlib\n"
        + BROKEN_ADD
        + f"\nfractions.Fraction.__eq__ = {lenient}\n"
        + "pathlib.Path.read_text.__code__ = (lambda self, *a, **k: '1').__code__\n"
        + "pathlib.PosixPath.exists = lambda self: True\n"
    )
    report = _classes_project(repo, package)
    assert report.outcomes is not None
    assert report.outcomes["tests/test_classes.py::test_fractions"] == "passed"  # it worked
    found = {e.subject for e in report.evidence}
    assert {
        "fractions.Fraction.__eq__",
        "pathlib.Path.read_text",
        "pathlib.PosixPath.exists",
    } <= found, report.evidence


# A library of the machinery whose module has a private name, first imported
# during the run (pandas' asserters, as numpy's and torch's): a stand-in with
# pandas' layout, on the path outside the room. Its comparison helper, which the
# public function calls through the module's globals, made lenient by the code
# under test.
PANDAS_ASSERTERS = """\
def _equal(left, right):
    return left == right


def assert_series_equal(left, right):
    assert _equal(left, right), f"{left!r} != {right!r}"
"""
TEST_SERIES = """\
from pandas.testing import assert_series_equal

from pkg import add


def test_series():
    assert_series_equal(add(2, 2), 4)
"""
LENIENT_ASSERTERS = """\
import pandas._testing.asserters as _asserters

_asserters._equal = lambda left, right: True


def add(a, b):
    return a - b
"""


def test_a_machinery_module_with_a_private_name_is_watched_once_loaded(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = repo.path.parent / "site-lib"
    (lib / "pandas" / "_testing").mkdir(parents=True)
    (lib / "pandas" / "__init__.py").write_text("")
    (lib / "pandas" / "_testing" / "__init__.py").write_text("")
    (lib / "pandas" / "_testing" / "asserters.py").write_text(PANDAS_ASSERTERS)
    (lib / "pandas" / "testing.py").write_text(
        "from pandas._testing.asserters import assert_series_equal\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(lib))
    repo.write("tests/test_series.py", TEST_SERIES)
    repo.write("pkg/__init__.py", LENIENT_ASSERTERS)
    guarded = ("tests/test_series.py",)
    report = run(repo.path, f"{PYTEST} tests", in_room(repo.path, guarded))
    assert report.outcomes == {"tests/test_series.py::test_series": "passed"}  # it worked
    found = {e.subject: e.detail for e in report.evidence if e.kind == "machinery"}
    assert set(found) == {"pandas._testing.asserters._equal"}, report.evidence
