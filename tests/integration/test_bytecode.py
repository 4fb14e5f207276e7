"""Bytecode in the clean room: what an earlier run compiled is read again (a run
does not recompile the project), what was written during a run is never loaded
in it (tests/redteam/test_in_process_reach.py forges both kinds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.auto.ratchet import early
from tests.conftest import Repo, run_gtd
from tests.integration.held_suite import PYTEST, set_up

PROBE = """\
from helper import double


def test_probe():
    assert double(2) == 4
"""


@pytest.fixture
def project(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> Repo:
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # a user's runs write it
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    repo.write("tests/helper.py", "def double(x):\n    return 2 * x\n")
    repo.write("tests/test_probe.py", PROBE)
    # The plugin autoloads here (make_project turns autoloading off): its guard is
    # what this file tests. The venv's hypothesis plugin only costs time.
    return set_up(repo, f"{PYTEST} -p no:hypothesispytest")


def _caches(project: Repo) -> dict[str, tuple[int, int]]:
    """Every bytecode file of the repository's rooms: (inode, change time)."""
    rooms = Path(early.rooms_home()) / early.repo_key(str(project.path / ".git"), "repo")
    return {
        str(p.relative_to(rooms)): (p.stat().st_ino, p.stat().st_ctime_ns)
        for p in rooms.glob("*/tree/**/__pycache__/*.pyc")
    }


def _run(project: Repo) -> None:
    res = run_gtd(project.path, "ratchet", "run", "--json")
    assert res.code == 0, res.stderr
    assert res.json["passed"] is True, res.json


def test_an_earlier_runs_bytecode_is_read_not_compiled_again(project: Repo) -> None:
    _run(project)
    _run(project)
    before = _caches(project)
    # pytest's cache of each rewritten test module and the import system's of
    # the module they import: a file rewritten anew would have a new inode.
    assert any("-pytest-" in name and "test_probe" in name for name in before), before
    assert any("/helper." in name and "-pytest-" not in name for name in before), before
    _run(project)
    assert _caches(project) == before
