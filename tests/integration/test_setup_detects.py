"""`gtd auto setup` without a configured test command, through the real CLI: it
detects the project's own virtualenv, says why, links it into the clean room and
keeps it out of git; `gtd ratchet snapshot` says the same."""

from __future__ import annotations

import site
import subprocess
import sys

import pytest

from tests.conftest import Repo
from tests.integration.calc_project import CALC, CONFTEST, MUL, PLAN, TESTS, gtd_json, run_cli


def project_venv(repo: Repo) -> None:
    """A virtualenv in the repository that can run pytest: a bare one that sees this
    interpreter's packages through a .pth file (no download needed)."""
    venv = repo.path / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (target,) = venv.glob("lib/python*/site-packages")
    (target / "dev-packages.pth").write_text("\n".join(site.getsitepackages()) + "\n")


@pytest.fixture
def detected(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> Repo:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    repo.write("calc.py", CALC)
    repo.write("tests/test_calc.py", TESTS)
    repo.write("conftest.py", CONFTEST)
    # The virtualenv sees this interpreter's packages; the plugins of the
    # development environment (hypothesis, xdist) stay out of its runs, as in a
    # project that does not use them (each run's start-up is mostly theirs).
    repo.write(
        "pytest.ini",
        "[pytest]\naddopts = -p no:hypothesispytest -p no:xdist -p no:xdist.looponfail\n",
    )
    repo.write("PLAN.md", PLAN)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "initial")
    project_venv(repo)  # untracked, and no ignore rule names it
    return repo


def test_setup_runs_the_projects_virtualenv_and_keeps_it_out_of_git(detected: Repo) -> None:
    assert ".venv/" in detected.status()
    answer = gtd_json(detected, "auto", "setup")
    assert answer["status"] == "ready", answer
    assert answer["test_command"] == ".venv/bin/python -m pytest"
    assert answer["test_command_why"] == (
        "the project's virtualenv .venv/ (linked into the clean room)"
    )
    assert answer["linked"] == [".venv"]
    assert answer["tests"] == "2 / 2 passed at baseline"
    assert detected.status() == ""
    assert "\n/.venv\n" in (detected.path / ".git" / "info" / "exclude").read_text()
    # The clean room runs the linked virtualenv: a cycle passes there.
    assert gtd_json(detected, "cycle", "begin")["status"] == "task"
    detected.write("calc.py", MUL)
    assert gtd_json(detected, "cycle", "end")["status"] == "passed"
    snapshot = run_cli(detected, "ratchet", "snapshot")
    assert snapshot.code == 0, snapshot.stderr
    lines = snapshot.stdout.splitlines()
    assert (
        "Test command: .venv/bin/python -m pytest (the project's virtualenv .venv/ "
        "(linked into the clean room))" in lines
    )
    assert "Linked into the clean room: .venv" in lines
