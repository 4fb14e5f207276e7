"""`gtd loop` end to end: a scripted agent (a tiny Python script reading the brief
on stdin) driven by the real CLI through real cycles, git and pytest."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from gtd.auto.headless import EXIT_BLOCKED, EXIT_HALTED
from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import (
    CALC,
    CONFTEST,
    MUL,
    MUL_TEST,
    PYTEST,
    TESTS,
    gtd_json,
)
from tests.integration.calc_project import make_project as make_calc_project

PLAN = """\
# Calculator

### spec-calc

- [ ] **T1**: Add mul
  - Files: calc.py, tests/test_mul.py
  - Blocked by: none
- [ ] **T2**: Add div
  - Files: calc.py
  - Blocked by: T1
"""
DIV = MUL + "\n\ndef div(a, b):\n    return a / b\n"

GOOD_AGENT = f"""\
import sys
from pathlib import Path
brief = sys.stdin.read()
if "— T1:" in brief:
    Path("calc.py").write_text({MUL!r})
    Path("tests/test_mul.py").write_text({MUL_TEST!r})
elif "— T2:" in brief:
    Path("calc.py").write_text({DIV!r})
print("working...")
print("Learning: briefs arrive on stdin")
"""
BAD_AGENT = (
    "import sys\nsys.stdin.read()\nopen('calc.py', 'w').write('def add(a, b):\\n    return 0\\n')\n"
)
SLOW_AGENT = (
    "import sys, time\nsys.stdin.read()\nopen('calc.py', 'a').write('# wip\\n')\n"
    "open('.started', 'w').write('x')\ntime.sleep(60)\n"
)


def make_project(repo: Repo, agent_source: str, config_extra: str = "") -> str:
    make_calc_project(repo, plan=PLAN, config_extra=config_extra)
    # The agent lives outside the repository: it is not part of any cycle's work.
    script = repo.path.parent / "agent.py"
    script.write_text(agent_source)
    return f"{sys.executable} {script}"


def short(repo: Repo, subject: str) -> str:
    for line in repo.git("log", "--format=%h %s").splitlines():
        sha, _, subj = line.partition(" ")
        if subj == subject:
            return sha
    raise AssertionError(f"no commit {subject!r}")


# Two whole cycles and `gtd verify`; test_loop_max_cycles keeps the loop's passing
# cycle, and test_a_blocked_plan_stops_the_loop_with_its_own_code its stop, quick.
@pytest.mark.slow
def test_loop_runs_the_plan_to_complete(repo: Repo) -> None:
    agent = make_project(repo, GOOD_AGENT)
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == 0, res.stderr
    t1, t2 = short(repo, "T1: Add mul"), short(repo, "T2: Add div")
    assert res.stdout.splitlines() == [
        f"cycle 1 T1 passed {t1} (1 remaining)",
        f"cycle 2 T2 passed {t2} (0 remaining)",
        "complete: All tasks complete (2 done). Next: run `gtd verify`.",
    ]
    assert repo.status() == ""
    mem = (repo.path / ".deepflow/auto-memory.yaml").read_text()
    assert "briefs arrive on stdin" in mem
    # Each cycle keeps its own agent log; none overwrites another.
    logs = sorted(p.name for p in (repo.path / ".deepflow/agent-logs").iterdir())
    assert logs == ["cycle-1.log", "cycle-2.log"]
    for log in logs:
        text = (repo.path / ".deepflow/agent-logs" / log).read_text()
        assert "exit 0\n" in text
        assert "working..." in text
    assert gtd_json(repo, "verify")["status"] == "passed"


# Three reverted cycles; the breaker's own test (tests/integration/test_cycle.py)
# stays in the quick loop.
@pytest.mark.slow
def test_loop_stops_at_the_circuit_breaker(repo: Repo) -> None:
    agent = make_project(repo, BAD_AGENT, "circuit_breaker_threshold: 2\n")
    head = repo.git("rev-parse", "HEAD")
    res = run_gtd(repo.path, "loop", "--agent", agent)
    # A loop the breaker stopped exits with its own code, so a script can tell it
    # from a finished plan (`gtd loop ... && gtd verify`).
    assert res.code == EXIT_HALTED == 5, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith("cycle 1 T1 reverted: tests failed: 1 of 2 (tests/test_calc.py::")
    assert lines[1].startswith("cycle 2 T1 reverted: tests failed: 1 of 2")
    assert lines[2].startswith("halted: ")
    assert "gtd cycle reset" in lines[2]
    assert repo.git("rev-parse", "HEAD") == head
    assert repo.status() == ""


def test_loop_max_cycles(repo: Repo) -> None:
    agent = make_project(repo, GOOD_AGENT)
    res = run_gtd(repo.path, "loop", "--agent", agent, "--max-cycles", "1")
    assert res.code == 0, res.stderr
    assert res.stdout.splitlines() == [
        f"cycle 1 T1 passed {short(repo, 'T1: Add mul')} (1 remaining)",
        "stopped after 1 cycle (--max-cycles); run `gtd loop` again to go on",
    ]


def test_loop_refuses_a_dirty_tree_and_a_missing_agent(repo: Repo) -> None:
    agent = make_project(repo, GOOD_AGENT)
    missing = run_gtd(repo.path, "loop", "--agent", "no-such-agent-xyz -p")
    assert missing.code == 1
    assert "agent command not found: no-such-agent-xyz" in missing.stderr
    repo.write("notes.txt", "human work\n")
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == 1
    assert res.stdout.startswith("dirty: 1 uncommitted change")
    assert (repo.path / "notes.txt").read_text() == "human work\n"


# `default` is a variant of `ignored` (the harder: the loop must stop on a SIGINT its
# process inherited as ignored), which the quick loop keeps.
@pytest.mark.parametrize("inherited", [pytest.param("default", marks=pytest.mark.slow), "ignored"])
def test_ctrl_c_kills_the_agent_and_leaves_the_cycle_recoverable(
    repo: Repo, inherited: str
) -> None:
    """Started from a terminal, SIGINT has its default action; started as a background
    job of a non-interactive shell (a script's `gtd loop ... &`, some CI runners),
    it arrives ignored, and the loop must still stop on it."""
    agent = make_project(repo, SLOW_AGENT)
    # A disposition set here is what the child inherits through exec.
    wanted = signal.SIG_DFL if inherited == "default" else signal.SIG_IGN
    saved = signal.signal(signal.SIGINT, wanted)
    try:
        loop = subprocess.Popen(
            [sys.executable, "-m", "gtd", "loop", "--agent", agent],
            cwd=repo.path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, saved)
    deadline = time.monotonic() + 30
    while not (repo.path / ".started").exists():
        assert time.monotonic() < deadline, "the agent never started"
        assert loop.poll() is None, loop.communicate()
        time.sleep(0.05)
    loop.send_signal(signal.SIGINT)
    try:
        out, err = loop.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        loop.kill()
        raise AssertionError("SIGINT did not stop the loop") from None
    assert loop.returncode == 130, err
    assert out.splitlines() == [
        "interrupted: cycle 1 (T1) stopped with the agent's work left uncommitted; "
        "run `gtd cycle end` to judge it (commit or revert), then `gtd loop` again"
    ]
    assert (repo.path / ".deepflow/cycle.json").exists()
    # The agent's group is gone: it never finished its sleep to exit on its own.
    assert (
        "python"
        not in subprocess.run(
            ["pgrep", "-af", str(repo.path.parent / "agent.py")], capture_output=True, text=True
        ).stdout
    )
    # Recoverable: `cycle end` judges the partial work (no test broken: it passes).
    end = gtd_json(repo, "cycle", "end")
    assert end["status"] in ("passed", "reverted")
    assert not (repo.path / ".deepflow/cycle.json").exists()


FAILING_AGENT = (
    "import sys\nsys.stdin.read()\nprint('thinking')\nsys.stderr.write('oops\\n')\nsys.exit(3)\n"
)


def records(repo: Repo) -> list[dict[str, object]]:
    """The sealed history, as the helper keeps it (memory is folded from it)."""
    text = repo.git("show", "refs/gtd/state:records.jsonl")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_failing_agent_is_recorded_with_its_status_and_output(repo: Repo) -> None:
    agent = make_project(repo, FAILING_AGENT, "circuit_breaker_threshold: 2\n")
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == EXIT_HALTED, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("cycle 1 T1 reverted: no changes")
    assert lines[0].endswith("(the agent exited 3: oops)")
    assert lines[1].startswith("cycle 2 T1 reverted: no changes")
    assert lines[2].startswith("halted: Circuit breaker tripped: T1 failed 2 consecutive times.")
    cycles = [r for r in records(repo) if r["kind"] == "cycle"]
    assert [(r["cycle"], r["agent_exit"], r["agent_tail"]) for r in cycles] == [
        (1, 3, "oops"),
        (2, 3, "oops"),
    ]
    for n in (1, 2):
        log = (repo.path / f".deepflow/agent-logs/cycle-{n}.log").read_text()
        assert "exit 3\n--- stdout\nthinking\n" in log
        assert log.endswith("--- stderr\noops\n")
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "- Cycle 2 (T1: Add mul): the agent exited 3; full log " in report
    assert "`.deepflow/agent-logs/cycle-2.log`.\n\n      oops\n" in report
    assert "agent exited 3 (see Agent Output)" in report


def test_a_forced_halt_stops_the_loop_with_the_halt_code(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the helper's own detection, where no fence stops the write (bubblewrap
    # refuses it where installed: test_loop_fence.py)
    monkeypatch.setenv("GTD_SANDBOX", "off")
    tamper = (
        "import sys, json\nsys.stdin.read()\n"
        "open('calc.py', 'a').write('# more\\n')\n"
        "p = '.deepflow/cycle.json'\nd = json.load(open(p))\nd['task'] = 'T2'\n"
        "json.dump(d, open(p, 'w'))\n"
    )
    agent = make_project(repo, tamper)
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == EXIT_HALTED, (res.stdout, res.stderr)
    lines = res.stdout.splitlines()
    assert lines[0].startswith("cycle 1 T1 reverted: helper state modified")
    assert lines[-1].startswith("halted: Loop halted at T1: helper state modified")
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "**Halted** at T1: Add mul — Loop halted at T1: helper state modified" in report
    assert "Run `gtd cycle reset T1`." in report


def test_a_blocked_plan_stops_the_loop_with_its_own_code(repo: Repo) -> None:
    plan = (
        "# Calculator\n\n- [~] **T1**: Dropped\n  - Files: calc.py\n"
        "- [ ] **T2**: Add div\n  - Files: calc.py\n  - Blocked by: T1\n"
    )
    make_calc_project(repo, plan=plan)
    script = repo.path.parent / "agent.py"
    script.write_text(GOOD_AGENT)
    res = run_gtd(repo.path, "loop", "--agent", f"{sys.executable} {script}")
    assert res.code == EXIT_BLOCKED == 4, res.stderr
    assert res.stdout.startswith("blocked: All remaining tasks are blocked: T2 by T1")


SLOW_TEST = "import time\n\n\ndef test_slow():\n    time.sleep(3)\n"


def make_slow_project(repo: Repo) -> str:
    """The project with a test that takes 3 s and `ratchet.wait_seconds: 0`: every
    `gtd cycle end`, snapshot refresh and setup answers before its tests finish."""
    repo.write("tests/test_slow.py", SLOW_TEST)
    repo.write("calc.py", CALC)
    repo.write("tests/test_calc.py", TESTS)
    repo.write("conftest.py", CONFTEST)
    repo.write("PLAN.md", PLAN)
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {PYTEST}\n  wait_seconds: 0\n")
    repo.commit_all("initial")
    deadline = time.monotonic() + 120
    while gtd_json(repo, "auto", "setup")["status"] == "checking":
        assert time.monotonic() < deadline, "the baseline never finished"
        time.sleep(0.5)
    script = repo.path.parent / "agent.py"
    script.write_text(GOOD_AGENT)
    return f"{sys.executable} {script}"


@pytest.mark.slow
def test_the_loop_waits_for_a_cycle_being_checked(repo: Repo) -> None:
    """A `gtd cycle end` whose tests outlive its wait (here: no wait at all) answers
    `checking`; a loop started meanwhile waits for that verdict instead of exiting."""
    agent = make_slow_project(repo)
    assert gtd_json(repo, "cycle", "begin")["task"] == "T1"
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    assert gtd_json(repo, "cycle", "end")["status"] == "checking"
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == 0, res.stderr
    t1, t2 = short(repo, "T1: Add mul"), short(repo, "T2: Add div")
    assert res.stdout.splitlines() == [
        "waiting: cycle 1 (T1) is in flight (checking)",
        f"previous: cycle 1 T1 passed {t1}",
        f"cycle 2 T2 passed {t2} (0 remaining)",
        "complete: All tasks complete (2 done). Next: run `gtd verify`.",
    ]


@pytest.mark.slow
def test_the_loop_waits_for_a_new_baseline_after_a_persons_commit(repo: Repo) -> None:
    agent = make_slow_project(repo)
    first = run_gtd(repo.path, "loop", "--agent", agent, "--max-cycles", "1")
    assert first.code == 0, first.stderr
    # A person fixes a protected test between two cycles and commits it.
    repo.write("tests/test_calc.py", TESTS.replace("add(2, 3) == 5", "add(3, 2) == 5"))
    person = repo.commit_all("a person's fix")[:7]
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == (
        f"waiting: snapshot refreshed after {person} by a person: taking a new baseline"
    )
    assert lines[-2:] == [
        f"cycle 2 T2 passed {short(repo, 'T2: Add div')} (0 remaining)",
        "complete: All tasks complete (2 done). Next: run `gtd verify`.",
    ]
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert f"| snapshot refreshed after {person} by a person: its commit is the new baseline |" in (
        report
    )


# An agent that ends its own cycle with the helper, then commits a break: with
# no cycle in flight the commit would read as a person's.
EARLY_END_AGENT = """\
import subprocess, sys
sys.stdin.read()
subprocess.run([sys.executable, "-m", "gtd", "cycle", "end", "--json"], check=True)
open("calc.py", "w").write("def add(a, b):\\n    return 0\\n")
subprocess.run(["git", "commit", "-qam", "T1 done"], check=True)
"""


# The mechanism's quick test is tests/redteam/test_helper_commands.py's quarantine route.
@pytest.mark.slow
def test_an_agent_that_ends_its_own_cycle_and_commits_halts_the_loop(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gtd loop` names the cycle it began when it ends it (as the tick does), so
    the early end shows, and what followed it halts the loop. (Unfenced: under
    bubblewrap the agent's `gtd cycle end` cannot write .git at all.)"""
    monkeypatch.setenv("GTD_SANDBOX", "off")
    agent = make_project(repo, EARLY_END_AGENT)
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == EXIT_HALTED, (res.stdout, res.stderr)
    said = res.stdout + res.stderr
    assert "cycle 1 was ended during its agent's turn" in said, said
    assert "the branch moved" in said, said
    assert gtd_json(repo, "cycle", "begin")["status"] == "halted"
