"""The small project the held-run tests judge (test_held.py, test_early.py): a
probe test that writes what its process saw where the test asks it to, a second
test, a root conftest that marks when it is loaded, and a pytest test command;
set up for auto mode."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Repo, run_gtd

PYTEST = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider"


def make_project(
    repo: Repo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    probe: str,
    command: str = PYTEST,
    ratchet: str = "",
    autoload: bool = False,
    box: bool = False,
) -> Repo:
    """``repo`` with the project committed and set up; the probe writes
    ``tmp_path/probe.json``, the conftest appends to ``probe.json.conftest``.
    ``autoload``: the environment's pytest plugins load (the reporting plugin
    among them), as in a user's runs. ``box``: the judge's box on (the probe
    is written outside the room, which the box refuses: tests/integration/
    test_box.py holds boxed runs)."""
    if not autoload:  # the venv's plugins: slow
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.setenv("GTD_TEST_PROBE", str(tmp_path / "probe.json"))
    repo.write("tests/test_probe.py", probe)
    repo.write("tests/test_more.py", "def test_more():\n    assert 1 + 1 == 2\n")
    repo.write(
        "conftest.py",
        "import os\nopen(os.environ['GTD_TEST_PROBE'] + '.conftest', 'a').write('loaded\\n')\n",
    )
    return set_up(repo, command, ratchet + ("" if box else "  box: false\n"))


def set_up(repo: Repo, command: str, ratchet: str = "") -> Repo:
    """``repo``'s files committed with ``command`` as the test command (and the
    lines ``ratchet`` of that section), a one-task plan and bytecode ignored;
    then `gtd auto setup` (the baseline)."""
    repo.write(
        ".deepflow/config.yaml", f"ratchet:\n  test_command: {json.dumps(command)}\n{ratchet}"
    )
    repo.write(".gitignore", "__pycache__/\n")
    repo.write("PLAN.md", "# Plan\n\n- [ ] **T1**: more\n")
    repo.commit_all("init")
    setup = run_gtd(repo.path, "auto", "setup", "--json")
    assert setup.code == 0, setup.stderr
    return repo


def ended(pid: int, within: float = 10.0) -> bool:
    """Process ``pid`` gone within ``within`` seconds: no such process, or a
    zombie (its parent is gone; init reaps it). Reads /proc."""
    deadline = time.monotonic() + within
    while True:
        try:
            if ") Z " in Path(f"/proc/{pid}/stat").read_text():
                return True
        except OSError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
