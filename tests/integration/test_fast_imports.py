"""The commands that run most often never load typer (~25 ms a process; their
options are read on the CLI's fast path, docs/dependencies.md): each runs for
real, in a repository set up for auto mode, and says at exit whether it did."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import PYTEST

_PROBE = (
    "import atexit, json, sys\n"
    "atexit.register(lambda: sys.stderr.write('\\nLOADED ' + json.dumps("
    "[m for m in ('typer', 'shutil', 'tempfile', 'yaml') if m in sys.modules]) + '\\n'))\n"
    "from gtd.cli import main\n"
    "main(sys.argv[1:])\n"
)


def _loaded(cwd: Path, *args: str, stdin: str | None = None) -> tuple[list[str], str]:
    res = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
    )
    line = [x for x in res.stderr.splitlines() if x.startswith("LOADED ")]
    assert line, res.stderr
    return json.loads(line[-1][len("LOADED ") :]), res.stdout


@pytest.fixture
def project(repo: Repo) -> Repo:
    repo.write("tests/test_one.py", "def test_one():\n    assert 1 + 1 == 2\n")
    repo.write("PLAN.md", "# Plan\n\n- [ ] **T1**: a task\n  - Files: app.py\n")
    repo.write(".gitignore", "__pycache__/\n")
    # The suite's pytest without the development environment's plugins, as the
    # calculator project's: the set-up, `ratchet run` and `cycle end` each run it,
    # and loading hypothesis and xdist took most of each run.
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {PYTEST}\n")
    repo.commit_all("project")
    assert run_gtd(repo.path, "auto", "setup", "--json").code == 0
    return repo


def test_the_per_tick_commands_and_the_hook_load_no_typer_shutil_or_yaml(project: Repo) -> None:
    # One project for all (each set-up costs a baseline run); begin comes last but
    # one, and the hook judges a call while that cycle is in flight.
    for args in (("plan", "next", "--json"), ("ratchet", "run", "--json")):
        loaded, out = _loaded(project.path, *args)
        assert json.loads(out)["status"] in {"task", "passed"}, out  # it ran all the way
        assert loaded == [], f"gtd {' '.join(args)} loaded {loaded}"
    loaded, out = _loaded(project.path, "cycle", "begin", "--json")
    assert json.loads(out)["status"] == "task", out
    assert loaded == [], f"gtd cycle begin loaded {loaded}"
    call = {
        "hook_event_name": "PreToolUse",
        "cwd": str(project.path),
        "tool_name": "Edit",
        "tool_input": {"file_path": str(project.path / "tests/test_one.py")},
    }
    loaded, out = _loaded(project.path, "hook", "pre-tool-use", stdin=json.dumps(call))
    assert '"deny"' in out, out  # it judged the call (a snapshot test, mid-cycle)
    assert loaded == [], f"gtd hook pre-tool-use loaded {loaded}"
    project.write("app.py", "VALUE = 1\n")
    loaded, out = _loaded(project.path, "cycle", "end", "--cycle", "1", "--learning", "x", "--json")
    assert json.loads(out)["status"] == "passed", out  # it judged and committed
    assert loaded == [], f"gtd cycle end loaded {loaded}"
