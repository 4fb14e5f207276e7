"""Tamper evidence from real attacks in real pytest runs: code in the test process
that patches pytest's reporting, registers hooks that rewrite reports, removes the
plugin's recorder, or comes from where it must not. Each attack leaves evidence in
the report that names what was changed and where the change came from."""

from __future__ import annotations

import os
import sys

import pytest

from gtd.auto.ratchet import report_listener
from gtd.auto.ratchet.results import Report
from tests.conftest import Repo
from tests.integration.plugin_runs import PY, PYTEST, clean_env, run

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env(monkeypatch)


def evidence(report: Report, kind: str) -> dict[str, str]:
    return {e.subject: e.detail for e in report.evidence if e.kind == kind}


# The code under test: broken (add is off by one), and on import it finds pytest's
# plugin manager and registers a hook wrapper that rewrites failing reports: one
# test's into a pass that keeps its failure text, another's into a report of a
# class of its own.
PACKAGE = """\
import gc

import pytest
from _pytest.reports import TestReport


def add(a, b):
    return a + b + 1


class Quiet(TestReport):
    pass


class Helper:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.outcome == "failed" and item.name == "test_add":
            report.outcome = "passed"
        elif report.outcome == "failed" and item.name == "test_add_more":
            quiet = Quiet(
                report.nodeid, report.location, report.keywords, "passed", None, report.when
            )
            outcome.force_result(quiet)


for obj in gc.get_objects():
    if type(obj).__name__ == "PytestPluginManager":
        obj.register(Helper(), "helper")
        break
"""

# A new test module that patches how pytest makes every report, at import.
PATCH_REPORT = """\
from _pytest.reports import TestReport

_made = TestReport.from_item_and_call.__func__


def _passing(cls, item, call):
    report = _made(cls, item, call)
    if item.name == "test_sub":
        report.outcome, report.longrepr = "passed", None
    return report


TestReport.from_item_and_call = classmethod(_passing)


def test_new():
    pass
"""

# A new test module that changes what a report's outcome reads as, and what
# running a test does, for every test of the session.
PATCH_CLASSES = """\
from _pytest.python import Function
from _pytest.reports import BaseReport

BaseReport.failed = property(lambda self: False)  # pytest's own count: no failures
_run = Function.runtest


def _runtest(self):
    if self.name != "test_mul":
        _run(self)


Function.runtest = _runtest


def test_newer():
    pass
"""

# A new test that swaps pluggy's hook execution and adds a plugin of its own.
PATCH_PLUGGY = """\
import pytest


class Status:
    def pytest_report_teststatus(self, report, config):
        return None


def test_hooks(pytestconfig):
    pm = pytestconfig.pluginmanager
    inner = pm._inner_hookexec
    pm._inner_hookexec = lambda *args: inner(*args)
    pm.register(Status(), "status")
"""


@pytest.fixture
def attacked(repo: Repo) -> Repo:
    repo.write("pytest.ini", "[pytest]\ntestpaths = tests\n")
    repo.write("tests/conftest.py", "")
    repo.write("pkg/__init__.py", PACKAGE)
    repo.write(
        "tests/test_pkg.py",
        "import pkg\n\n\n"
        "def test_add():\n    assert pkg.add(1, 1) == 2\n\n\n"
        "def test_add_more():\n    assert pkg.add(2, 2) == 4\n\n\n"
        "def test_sub():\n    assert 1 - 1 == 1\n\n\n"
        "def test_mul():\n    assert 2 * 2 == 5\n",
    )
    repo.write("tests/test_patch_report.py", PATCH_REPORT)
    repo.write("tests/test_patch_classes.py", PATCH_CLASSES)
    repo.write("tests/test_patch_pluggy.py", PATCH_PLUGGY)
    return repo


def test_attacks_inside_the_test_process_leave_evidence(attacked: Repo) -> None:
    root = attacked.path
    request = report_listener.Request(root, forbidden=(root / "pkg",))
    report = run(root, f"{PY} -m pytest -q -p no:cacheprovider -p no:xdist", request)
    # The attacks worked: every failure reads as a pass...
    assert report.outcomes is not None
    assert set(report.outcomes.values()) == {"passed"}
    # ...and each left its mark.
    patched = evidence(report, "patched")
    assert patched["_pytest.reports.TestReport.from_item_and_call"] == str(
        root / "tests" / "test_patch_report.py"
    )
    classes = str(root / "tests" / "test_patch_classes.py")
    assert patched["_pytest.reports.BaseReport.failed"] == classes
    assert patched["_pytest.python.Function.runtest"] == classes
    assert "pluggy PluginManager._inner_hookexec" in patched
    assert patched["pluggy PluginManager._inner_hookexec"].endswith("test_patch_pluggy.py")
    late = evidence(report, "late-plugin")
    assert late["helper"] == f"{root / 'pkg' / '__init__.py'} (pytest_runtest_makereport)"
    assert late["status"] == f"{root / 'tests' / 'test_patch_pluggy.py'} (pytest_report_teststatus)"
    # (a pass with a failure's text; a call that raised, reported passed: a plugin
    # other than pytest's implements the report hook, so the outcome watch is on)
    assert evidence(report, "passed-with-failure") == {
        "tests/test_pkg.py::test_add": "call",
        "tests/test_pkg.py::test_add_more": "call, raised",
        "tests/test_pkg.py::test_sub": "call, raised",
    }
    assert evidence(report, "report-class") == {"pkg.Quiet": "tests/test_pkg.py::test_add_more"}
    assert evidence(report, "forbidden-module") == {"pkg": str(root / "pkg" / "__init__.py")}
    # What the session says about itself.
    (session,) = report.sessions
    assert session.inipath == str(root / "pytest.ini")
    assert session.rootpath == str(root)
    assert session.conftests == ("tests/conftest.py",)
    # Every plugin that implements a hook is listed; these two with report hooks.
    assert {p.name for p in session.plugins if p.late and p.hooks} == {"helper", "status"}
    assert "funcmanage" in {p.name for p in session.plugins}  # pytest's own, late too
    env = session.environment
    assert env is not None
    assert (env.executable, env.prefix) == (sys.executable, sys.prefix)
    assert env.pytest == os.path.abspath(pytest.__file__)
    assert str(root) in env.path
    assert set(env.site) >= {p for p in sys.path if p.endswith("site-packages")}


def test_a_report_is_read_before_a_later_plugin_can_edit_it(repo: Repo) -> None:
    repo.write(
        "tests/test_edit.py",
        "class Edit:\n"
        "    def pytest_runtest_logreport(self, report):\n"
        "        report.outcome, report.longrepr = 'passed', None\n\n\n"
        "def test_register(pytestconfig):\n"
        "    pytestconfig.pluginmanager.register(Edit(), 'edit')\n\n\n"
        "def test_broken():\n    assert False\n",
    )
    report = run(repo.path, PYTEST)
    assert report.outcomes == {
        "tests/test_edit.py::test_register": "passed",
        "tests/test_edit.py::test_broken": "failed",
    }
    assert set(evidence(report, "late-plugin")) == {"edit"}


def test_a_report_hook_under_another_method_name_is_still_seen(repo: Repo) -> None:
    # pluggy binds a method to the hook its ``specname`` names (pytest asks only that
    # the method's name start with ``pytest_``): the plugin must ask the hooks who
    # implements them, not look for methods named like them.
    repo.write(
        "tests/test_hidden.py",
        "import pytest\n\n\n"
        "class Hidden:\n"
        "    @pytest.hookimpl(specname='pytest_runtest_logreport')\n"
        "    def pytest_innocent(self, report):\n"
        "        report.outcome, report.longrepr = 'passed', None\n\n\n"
        "def test_register(pytestconfig):\n"
        "    pytestconfig.pluginmanager.register(Hidden(), 'hidden')\n\n\n"
        "def test_broken():\n    assert False\n",
    )
    report = run(repo.path, PYTEST)
    assert evidence(report, "late-plugin") == {
        "hidden": f"{repo.path / 'tests' / 'test_hidden.py'} (pytest_runtest_logreport)"
    }
    assert report.outcomes is not None
    assert report.outcomes["tests/test_hidden.py::test_broken"] == "failed"


def test_rebinding_the_part_shared_with_the_unittest_runner_is_evidence(repo: Repo) -> None:
    # in_process.py (the channel, the room redirect) is loaded by path, not as a
    # module of the plugin's package; code under test can still reach it through
    # the part that holds it, and switch the redirect off. The plugin's check of
    # its own code covers it as it covers the parts.
    repo.write(
        "tests/test_reach.py",
        "import sys\n\n\n"
        "def test_reach():\n"
        "    shared = sys.modules['_gtd_ratchet_plugin.terms'].P\n"
        "    shared.RoomRedirect.spec = lambda self, name, spec: spec\n",
    )
    report = run(repo.path, PYTEST)
    assert report.outcomes == {"tests/test_reach.py::test_reach": "passed"}
    assert evidence(report, "patched") == {"gtd_ratchet_report.RoomRedirect.spec": "rebound"}


def test_a_clean_run_has_no_evidence(repo: Repo) -> None:
    repo.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    report = run(
        repo.path, PYTEST, report_listener.Request(repo.path, forbidden=(repo.path / "live",))
    )
    assert report.evidence == ()
    assert report.complete


def test_removing_the_recorder_leaves_the_session_unfinished(repo: Repo) -> None:
    repo.write(
        "tests/test_quiet.py",
        "def test_broken():\n    assert False\n\n\n"
        "def test_unregister(pytestconfig):\n"
        "    pytestconfig.pluginmanager.unregister(name='gtd-ratchet-recorder')\n",
    )
    report = run(repo.path, PYTEST)
    assert not report.complete
    assert report.junit_outcomes is None
    assert evidence(report, "unregistered") == {
        "gtd-ratchet-recorder": "removed during the session"
    }


def test_a_patch_made_before_the_session_is_configured_is_foreign(repo: Repo) -> None:
    # A plugin loaded with -p from the command line patches pytest at import.
    repo.write(
        "plugins/early.py",
        "import _pytest.runner\n\n_real = _pytest.runner.call_and_report\n\n\n"
        "def call_and_report(*args, **kwargs):\n    return _real(*args, **kwargs)\n\n\n"
        "_pytest.runner.call_and_report = call_and_report\n",
    )
    repo.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    report = run(repo.path, f'PYTHONPATH="$PYTHONPATH:plugins" {PYTEST} -p early')
    assert evidence(report, "foreign") == {
        "_pytest.runner.call_and_report": str(repo.path / "plugins" / "early.py")
    }


# CallInfo.from_call makes what each phase of a test raised into the call info its
# report is made from: patched in place, or the class swapped in the runner module
# for one of its own, every failing test reads as a pass; put back at the next
# test's teardown, long before the session's end looks at what is patched.
PATCH_CALL_INFO = """\
from _pytest import runner

_class = runner.CallInfo
_original = runner.CallInfo.from_call.__func__
_bound = vars(runner.CallInfo)["from_call"]
_teardowns = []


def _quiet(cls, func, when, reraise=None):
    if when == "teardown":
        _teardowns.append(1)
    if len(_teardowns) == 2:  # test_then_broken's: put everything back
        runner.CallInfo = _class
        _class.from_call = _bound
    return _original(cls, lambda: None, when, reraise)


def test_patch():
    if {swap}:
        class Quiet(runner.CallInfo):
            from_call = classmethod(_quiet)

        runner.CallInfo = Quiet
    else:
        runner.CallInfo.from_call = classmethod(_quiet)


def test_then_broken():
    assert 1 == 2
"""


@pytest.mark.parametrize("swap", [False, True], ids=["patched", "swapped"])
def test_a_patched_or_swapped_call_info_leaves_evidence(repo: Repo, swap: bool) -> None:
    repo.write("tests/test_call_info.py", PATCH_CALL_INFO.format(swap=swap))
    report = run(repo.path, f"{PY} -m pytest -q -p no:cacheprovider -p no:xdist")
    assert report.outcomes is not None
    # The attack worked: the broken test reads as a pass...
    assert report.outcomes["tests/test_call_info.py::test_then_broken"] == "passed"
    # ...and the first report made after it names the change and where it came from.
    patched = evidence(report, "patched")
    assert "_pytest.runner.CallInfo.from_call" in patched, report.evidence
    assert patched["_pytest.runner.CallInfo.from_call"].endswith("test_call_info.py")
