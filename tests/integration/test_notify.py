"""Notifications end to end: `gtd loop` with scripted agents, a notifier script that
records each call, and the crashes and hangs that must not lose, repeat or stall
an event (gtd.auto.notifier)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gtd.auto.headless import EXIT_HALTED
from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import make_project as make_calc_project
from tests.integration.test_loop import BAD_AGENT, GOOD_AGENT, make_project

RECORDER = """\
import json, os, sys
event = json.load(sys.stdin)
env = {k: os.environ.get(k) for k in ("GTD_EVENT", "GTD_EVENT_ID", "GTD_TASK", "GTD_REPO")}
with open(sys.argv[1], "a") as out:
    out.write(json.dumps({"event": event, "env": env}) + "\\n")
"""


def notifier_config(repo: Repo, command: str, timeout_s: float = 10) -> str:
    return f"notify:\n  command: {json.dumps(command)}\n  timeout_seconds: {timeout_s}\n"


def recorder(repo: Repo) -> tuple[str, Path]:
    script = repo.path.parent / "notifier.py"
    script.write_text(RECORDER)
    calls = repo.path.parent / "calls.jsonl"
    return f"{sys.executable} {script} {calls}", calls


def calls_of(path: Path) -> list[dict[str, dict[str, object]]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def wait_for(path: Path, count: int, timeout_s: float = 20.0) -> list[dict[str, dict[str, object]]]:
    """The calls once there are ``count`` of them, then a while longer: a second
    delivery of the same event would show up by then."""
    deadline = time.monotonic() + timeout_s
    while len(calls_of(path)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    return calls_of(path)


def marker(repo: Repo) -> dict[str, object]:
    data: dict[str, object] = json.loads((repo.path / ".deepflow/notified.json").read_text())
    return data


@pytest.mark.slow
def test_a_night_calls_the_notifier_once_per_event(repo: Repo) -> None:
    """Two reverts trip the breaker (the reverts themselves are not news), a reset
    and a good agent finish the plan, `gtd verify` completes it: two calls, each
    once, with the event on stdin and in the environment."""
    command, calls = recorder(repo)
    bad = make_project(
        repo, BAD_AGENT, "circuit_breaker_threshold: 2\n" + notifier_config(repo, command)
    )
    res = run_gtd(repo.path, "loop", "--agent", bad)
    assert res.code == EXIT_HALTED, res.stdout + res.stderr
    got = wait_for(calls, 1)
    assert [c["event"]["kind"] for c in got] == ["breaker"], got
    event = got[0]["event"]
    assert (event["task"], event["cycle"]) == ("T1", 2)
    assert "Circuit breaker tripped: T1 failed 2 consecutive times" in str(event["message"])
    assert got[0]["env"] == {
        "GTD_EVENT": "breaker",
        "GTD_EVENT_ID": event["id"],
        "GTD_TASK": "T1",
        "GTD_REPO": str(repo.path),
    }
    # Every later tick sees the same halt record: still one call.
    again = run_gtd(repo.path, "loop", "--agent", bad)
    assert again.code == EXIT_HALTED
    assert run_gtd(repo.path, "cycle", "reset").code == 0
    good = f"{sys.executable} {repo.path.parent / 'good.py'}"
    (repo.path.parent / "good.py").write_text(GOOD_AGENT)
    res = run_gtd(repo.path, "loop", "--agent", good)
    assert res.code == 0, res.stdout + res.stderr
    assert len(wait_for(calls, 2, timeout_s=2)) == 1  # complete waits for verify
    verdict = run_gtd(repo.path, "verify", "--json")
    assert json.loads(verdict.stdout)["status"] == "passed"
    got = wait_for(calls, 2)
    assert [c["event"]["kind"] for c in got] == ["breaker", "complete"], got
    assert got[1]["event"]["verdict"] == "passed"
    assert got[1]["env"]["GTD_EVENT"] == "complete"
    # verify again: the same completion, not news.
    assert run_gtd(repo.path, "verify").code == 0
    assert len(wait_for(calls, 3, timeout_s=2)) == 2
    assert marker(repo)["failures"] == []


# recorded: the halt sealed, nothing rendered (the next begin renders, and tells);
# rendered: memory and report rendered too (the next begin tells without them).
@pytest.mark.slow
@pytest.mark.parametrize("point", ["recorded", "rendered"])
def test_a_crash_between_the_event_and_the_notification_delivers_it_once(
    repo: Repo, point: str
) -> None:
    command, calls = recorder(repo)
    bad = make_project(
        repo, BAD_AGENT, "circuit_breaker_threshold: 1\n" + notifier_config(repo, command)
    )
    # Killed right after the halt is sealed, before anything is told.
    env = {**os.environ, "GTD_CRASH_AT": point}
    crashed = subprocess.run(
        [sys.executable, "-m", "gtd", "loop", "--agent", bad],
        cwd=repo.path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert crashed.returncode == -9, crashed.stdout + crashed.stderr
    assert wait_for(calls, 1, timeout_s=2) == []
    # The next step tells it; two concurrent ticks after that tell nothing more.
    res = run_gtd(repo.path, "loop", "--agent", bad)
    assert res.code == EXIT_HALTED, res.stdout + res.stderr
    ticks = [
        subprocess.Popen(
            [sys.executable, "-m", "gtd", "cycle", "begin"], cwd=repo.path,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for _ in range(2)
    ]  # fmt: skip
    for tick in ticks:
        tick.wait(60)
    got = wait_for(calls, 2)
    assert [c["event"]["kind"] for c in got] == ["breaker"], got


@pytest.mark.slow
def test_two_deliverers_at_once_tell_each_event_once(repo: Repo) -> None:
    """The notify lock: two deliverers racing over the same waiting event."""
    command, calls = recorder(repo)
    slow = f"sleep 0.5; {command}"
    bad = make_project(
        repo, BAD_AGENT, "circuit_breaker_threshold: 1\n" + notifier_config(repo, slow)
    )
    env = {**os.environ, "GTD_CRASH_AT": "recorded"}
    subprocess.run(
        [sys.executable, "-m", "gtd", "loop", "--agent", bad],
        cwd=repo.path, capture_output=True, env=env, timeout=300,
    )  # fmt: skip
    code = "from pathlib import Path; from gtd.auto import notifier; notifier.deliver(Path('.'))"
    racers = [subprocess.Popen([sys.executable, "-c", code], cwd=repo.path) for _ in range(3)]
    for racer in racers:
        assert racer.wait(60) == 0
    got = calls_of(calls)
    assert [c["event"]["kind"] for c in got] == ["breaker"], got


@pytest.mark.slow
def test_a_hanging_notifier_is_cut_off_and_the_loop_goes_on(repo: Repo) -> None:
    """The notifier sleeps far past its bound: the loop never waits for it, its
    group is killed at the bound, and the failure is in the report."""
    pids = repo.path.parent / "hang.pid"
    hang = f"echo $$ > {pids}; sleep 300"
    bad = make_project(
        repo, BAD_AGENT, "circuit_breaker_threshold: 1\n" + notifier_config(repo, hang, 1)
    )
    began = time.monotonic()
    res = run_gtd(repo.path, "loop", "--agent", bad)
    assert res.code == EXIT_HALTED, res.stdout + res.stderr
    report = repo.path / ".deepflow/auto-report.md"
    deadline = time.monotonic() + 20
    while "## Notifications" not in report.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    text = report.read_text()
    assert "- breaker (" in text, text
    assert "not delivered: notifier killed after 1 s" in text
    assert marker(repo)["failures"][0]["why"] == "notifier killed after 1 s"  # type: ignore[index]
    # The shell and its sleep are gone (the whole group was killed).
    pid = int(pids.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # And the loop did not wait for it: a second run answers at once.
    began = time.monotonic()
    assert run_gtd(repo.path, "loop", "--agent", bad).code == EXIT_HALTED
    assert time.monotonic() - began < 5


def test_auto_status_reads_the_sealed_state_without_the_lock(repo: Repo) -> None:
    """One line (or one object) from the sealed state, answered while another
    process holds the state lock (a tick in the middle of its seal)."""
    bad = make_project(repo, BAD_AGENT, "circuit_breaker_threshold: 1\n")
    first = run_gtd(repo.path, "auto", "status")
    assert first.code == 0, first.stderr
    assert first.stdout == ("idle: next: T1 (Add mul) · 0 of 2 tasks done · cost unknown\n")
    assert run_gtd(repo.path, "loop", "--agent", bad).code == EXIT_HALTED
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from gtd.fsio import locked, state_lock\n"
         "with locked(state_lock(Path('.'))):\n    print('held', flush=True); time.sleep(30)"],
        cwd=repo.path, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        began = time.monotonic()
        res = run_gtd(repo.path, "auto", "status", "--json", timeout=10)
        took = time.monotonic() - began
    finally:
        holder.kill()
        holder.wait()
    assert res.code == 0, res.stderr
    got = json.loads(res.stdout)
    assert got["state"] == "halted"
    assert got["detail"].startswith("Circuit breaker tripped: T1 failed 1 consecutive times")
    assert (got["done"], got["left"], got["cost"]) == (0, 2, None)
    assert got["last"].startswith("cycle 1 T1 reverted (tests failed: 1 of 2")
    assert took < 5  # never waited on the lock (its wait is 30 s)


def test_auto_status_before_setup_says_what_to_do(repo: Repo) -> None:
    res = run_gtd(repo.path, "auto", "status")
    assert res.code == 1
    assert "gtd auto setup" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_the_check_worker_of_a_ticks_end_tells_too(repo: Repo) -> None:
    """The path Claude Code's ticks take: `gtd cycle end` hands the judging to a
    worker of its own session, which seals the halt and kicks the deliverer."""
    command, calls = recorder(repo)
    make_project(repo, BAD_AGENT, "circuit_breaker_threshold: 1\n" + notifier_config(repo, command))
    begun = json.loads(run_gtd(repo.path, "cycle", "begin", "--json").stdout)
    assert begun["status"] == "task", begun
    (repo.path / "calc.py").write_text("def add(a, b):\n    return 0\n")
    ended = json.loads(run_gtd(repo.path, "cycle", "end", "--json").stdout)
    assert ended["status"] == "reverted", ended
    got = wait_for(calls, 1)
    assert [(c["event"]["kind"], c["event"]["task"]) for c in got] == [("breaker", "T1")], got


def test_a_pause_and_its_resume_are_each_told_once(repo: Repo) -> None:
    """The night's pause: a 429 pauses the loop (one call), the next cycle after it
    resumes (one call), `gtd verify` completes the plan (one call)."""
    from tests.integration.test_pause import PLAN as ONE_TASK
    from tests.integration.test_pause import RATE, agent

    command, calls = recorder(repo)
    make_calc_project(
        repo,
        plan=ONE_TASK,
        config_extra="pause:\n  first_wait_seconds: 2\n" + notifier_config(repo, command),
    )
    res = run_gtd(repo.path, "loop", "--agent", agent(repo, [RATE]))
    assert res.code == 0, res.stdout + res.stderr
    assert run_gtd(repo.path, "verify").code == 0
    got = wait_for(calls, 3)
    assert [c["event"]["kind"] for c in got] == ["paused", "resumed", "complete"], got
    assert got[0]["event"]["task"] == "T1"
    assert "rate limit" in str(got[0]["event"]["message"])
