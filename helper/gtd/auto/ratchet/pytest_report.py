"""The pytest plugin behind the ratchet's per-test outcomes. Never imported by gtd.

The runner copies this file into a temporary directory, beside a one-line
``*.dist-info`` that declares it as a ``pytest11`` entry point, and puts that
directory on ``PYTHONPATH``: any pytest the test command starts (directly, through
make, tox or a shell pipeline) autoloads it. Recording an outcome per test in a
dict is far cheaper than pytest's ``--junitxml`` (an XML element per test and an
escaped copy of its output), which costs ~7 % of a fast suite.

Degrades, never breaks: where the plugin does not load (a command that replaces
``PYTHONPATH``, ``python -I``, ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``) the
``--junitxml`` the runner also passes stays in force; where it loads, it switches
that report off. An entry point rather than ``-p`` because ``-p`` of a module that
cannot be imported is a usage error that would fail the whole test run.

Runs in the user's test environment: standard library and pytest (6.1 or later)
only, syntax for any Python 3 that pytest supports. It takes its settings from
environment variables and removes them, and itself from ``PYTHONPATH`` and ``sys.path``, as
soon as pytest is configured, so what the tests run sees the user's environment:
a pytest that a test starts does not report into the ratchet's file.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

import pytest

REPORT_ENV = "GTD_RATCHET_REPORT"  # the JSON-lines file to append to
JUNIT_ENV = "GTD_RATCHET_JUNITXML"  # the --junitxml path the runner added
SITE_ENV = "GTD_RATCHET_SITE"  # the directory the runner put on PYTHONPATH

# Worst outcome wins when a test reports more than once (a failing teardown).
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


class Recorder:
    """Outcomes by node id, as JUnit XML would classify them: a failure in setup or
    teardown is an error, an xfail is skipped, a non-strict xpass passed."""

    def __init__(self, path: str, root: str) -> None:
        self.path = path
        self.root = root
        self.tests: dict[str, str] = {}

    def _note(self, nodeid: str, outcome: str) -> None:
        previous = self.tests.get(nodeid)
        if previous is None or _RANK[outcome] > _RANK[previous]:
            self.tests[nodeid] = outcome

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.passed:
            outcome = "passed"
        elif report.skipped:
            outcome = "skipped"
        else:
            outcome = "failed" if report.when == "call" else "error"
        self._note(report.nodeid, outcome)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # A module that fails to import is one error named after the module; a
        # module-level skip, one skipped entry.
        if report.failed:
            self._note(report.nodeid, "error")
        elif report.skipped:
            self._note(report.nodeid, "skipped")

    def pytest_sessionfinish(self) -> None:
        # One line per session, appended: a command that runs pytest twice
        # (`pytest unit && pytest e2e`) reports both.
        line = json.dumps({"root": self.root, "tests": self.tests}) + "\n"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError:  # the run is judged by its exit code; never fail it from here
            pass


@pytest.hookimpl(tryfirst=True)  # before junitxml's own pytest_configure reads the option
def pytest_configure(config: pytest.Config) -> None:
    report = os.environ.pop(REPORT_ENV, None)
    junit = os.environ.pop(JUNIT_ENV, None)
    site = os.environ.pop(SITE_ENV, None)
    _restore_environment(site, junit)
    if report is None or hasattr(config, "workerinput"):
        return  # not started by the ratchet, or an xdist worker (the controller records)
    try:
        recorder = Recorder(report, str(config.rootpath))  # rootpath: pytest >= 6.1
        config.pluginmanager.register(recorder, "gtd-ratchet-recorder")
    except Exception:  # an older or unusual pytest: the JUnit XML reports instead
        return
    xmlpath = getattr(config.option, "xmlpath", None)
    if junit and xmlpath and os.path.abspath(xmlpath) == os.path.abspath(junit):
        config.option.xmlpath = None  # this report replaces it


def _restore_environment(site: str | None, junit: str | None) -> None:
    if site:
        entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        kept = [entry for entry in entries if entry != site]
        if any(kept):
            os.environ["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            os.environ.pop("PYTHONPATH", None)
        sys.path[:] = [entry for entry in sys.path if entry != site]
    if junit:
        addopts = os.environ.get("PYTEST_ADDOPTS")
        if addopts is not None:
            rest = addopts.replace("--junitxml=" + shlex.quote(junit), "").strip()
            if rest:
                os.environ["PYTEST_ADDOPTS"] = rest
            else:
                del os.environ["PYTEST_ADDOPTS"]
