"""The plugin under older pytest releases it supports, each installed by pip in a
fresh virtual environment: pytest 6 (``path`` arguments, conftests loaded through
``_getconftestmodules``, attrs-made classes) and pytest 7."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gtd import proc
from gtd.auto.ratchet import report_listener
from gtd.auto.ratchet.results import Report, Result
from tests.conftest import Repo

pytestmark = pytest.mark.slow

_OFFLINE = ("Could not find a version", "No matching distribution", "Network is unreachable")

SUITE = """\
import pytest


def test_pass():
    pass


def test_fail():
    assert False


@pytest.mark.skip(reason="not today")
def test_skip():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


@pytest.mark.xfail(reason="fixed already")
def test_xpass():
    pass


def double(x):
    '''
    >>> double(2)
    4
    '''
    return 2 * x
"""

# Loaded, it would turn every test into a pass and leave a mark.
FLIP = """\
import pathlib

pathlib.Path(__file__).with_name("LOADED").write_text("")


def pytest_collection_modifyitems(items):
    for item in items:
        item.runtest = lambda: None
"""


@pytest.mark.parametrize(
    "version",
    [
        pytest.param(
            "6.2.5",
            marks=pytest.mark.skipif(
                sys.version_info >= (3, 12), reason="pytest 6 does not run on Python 3.12+"
            ),
        ),
        "7.4.4",
    ],
)
def test_an_older_pytest_reports_selects_and_checks(
    version: str, repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH"):
        monkeypatch.delenv(name, raising=False)
    venv = tmp_path / "venv"
    env = {**os.environ, "HOME": str(tmp_path), "PIP_NO_CACHE_DIR": "1"}
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    python = venv / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"pytest=={version}"],
        capture_output=True,
        text=True,
        env=env,
    )
    if done.returncode != 0 and any(mark in done.stderr for mark in _OFFLINE):
        pytest.skip(f"the package index is not reachable: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr
    repo.write("tests/test_kinds.py", SUITE)
    repo.write("tests/test_extra/conftest.py", FLIP)
    repo.write("tests/test_extra/test_more.py", "def test_more():\n    pass\n")
    argv = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--doctest-modules"]

    def run(request: report_listener.Request) -> Report:
        listener = report_listener.start(request)
        result = proc.run([*argv, "tests"], repo.path, env=listener.env, pass_fds=listener.pass_fds)
        assert "INTERNALERROR" not in result.output, result.output
        return listener.finish()

    selected = run(report_listener.Request(repo.path, only_files=("tests/test_kinds.py",)))
    k = "tests/test_kinds.py::"
    assert dict(selected.tests) == {
        k + "test_pass": Result("passed"),
        k + "test_fail": Result("failed"),
        k + "test_skip": Result("skipped", "tests/test_kinds.py:12", "not today"),
        k + "test_xfail": Result("xfailed", None, "known"),
        k + "test_xpass": Result("xpassed"),
        k + "test_kinds.double": Result("passed"),
    }
    assert selected.complete, selected.problems
    assert selected.evidence == ()  # attrs' and pytest's own code is not foreign
    assert {i.kind for i in selected.items} == {"function", "doctest-module"}
    assert not (repo.path / "tests" / "test_extra" / "LOADED").exists()
    (session,) = selected.sessions
    assert session.environment is not None
    assert session.environment.pytest.startswith(str(venv))
    # Without the selection the conftest loads, and says so.
    whole = run(report_listener.Request(repo.path))
    assert whole.sessions[0].conftests == ("tests/test_extra/conftest.py",)
    assert (repo.path / "tests" / "test_extra" / "LOADED").exists()
