"""Test runs longer than a tick: `gtd cycle end` and `gtd auto setup` answer
`checking` when the suite outlives `ratchet.wait_seconds`; the run goes on in a
worker of its own session, later `begin`s answer busy, and the first one after the
verdict reports it (`previous:`). Real git, real pytest, real detached processes."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import MUL, MUL_TEST, PYTEST, gtd_json, make_project

pytestmark = pytest.mark.slow

SLOW_TEST = "import time\n\n\ndef test_slow():\n    time.sleep(3)\n"


def settle(repo: Repo, limit_s: float = 120) -> dict[str, object]:
    """`gtd cycle begin` until it no longer answers busy."""
    deadline = time.monotonic() + limit_s
    while True:
        answer = gtd_json(repo, "cycle", "begin")
        if answer["status"] != "busy" or time.monotonic() > deadline:
            return answer
        time.sleep(0.3)


@pytest.fixture
def slow_project(repo: Repo) -> Repo:
    repo.write("tests/test_slow.py", SLOW_TEST)
    make_project(repo, config_extra="  wait_seconds: 1\n")
    return repo


def test_a_cycle_longer_than_the_wait_is_reported_by_a_later_begin(slow_project: Repo) -> None:
    repo = slow_project
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    started = time.monotonic()
    answer = gtd_json(repo, "cycle", "end")
    assert answer["status"] == "checking", answer
    assert time.monotonic() - started < 10  # it did not wait for the suite
    pid = answer["pid"]
    assert isinstance(pid, int)
    os.kill(pid, 0)  # the worker is alive, outliving `end`
    busy = gtd_json(repo, "cycle", "begin")
    assert (busy["status"], busy["phase"]) == ("busy", "checking")

    after = settle(repo)
    assert after["status"] == "task", after
    assert after["task"] == "T2"
    assert str(after["previous"]).startswith("cycle 1 T1 passed")
    assert "previous" not in gtd_json(repo, "cycle", "begin")  # reported once
    assert repo.subjects()[0].startswith("T1: mark done in PLAN.md")
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "| 1 | T1 | Add mul | passed |" in report


def test_a_killed_worker_is_a_dead_check_and_the_cycle_is_reverted(slow_project: Repo) -> None:
    repo = slow_project
    base = repo.git("rev-parse", "HEAD").strip()
    gtd_json(repo, "cycle", "begin")
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    answer = gtd_json(repo, "cycle", "end")
    assert answer["status"] == "checking"
    pid = answer["pid"]
    assert isinstance(pid, int)
    os.killpg(pid, signal.SIGKILL)  # the worker and the tests it runs
    time.sleep(0.5)
    after = settle(repo)
    assert after["status"] == "task", after
    assert "interrupted" in str(after["recovered"])
    assert repo.git("rev-parse", "HEAD").strip() == base
    assert repo.git("show", "refs/gtd/reverted/cycle-1:calc.py") == MUL


def test_setup_answers_checking_and_a_second_call_gives_the_result(repo: Repo) -> None:
    repo.write("tests/test_slow.py", SLOW_TEST)
    repo.write("calc.py", "def add(a, b):\n    return a + b\n")
    repo.write(
        "tests/test_calc.py",
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 1) == 2\n",
    )
    repo.write("conftest.py", "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n")
    repo.write("PLAN.md", "# P\n\n- [ ] **T1**: mul\n  - Files: calc.py\n")
    repo.write(
        ".deepflow/config.yaml", f"ratchet:\n  test_command: {PYTEST}\n  wait_seconds: 0.5\n"
    )
    repo.commit_all("initial")
    first = gtd_json(repo, "auto", "setup")
    assert first["status"] == "checking", first
    deadline = time.monotonic() + 120
    while True:
        again = run_gtd(repo.path, "auto", "setup", "--json").json
        if again["status"] != "checking" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert again["status"] == "ready", again
    assert again["tests"] == "2 / 2 passed at baseline"
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
