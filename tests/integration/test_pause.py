"""A harness failure is not a task failure (docs/harness-failures.md): `gtd loop`
with an agent that ends the way Claude Code does when the API refuses it (a 429
or 529 `--output-format json` result, exit 1) pauses, keeps the work, never
feeds the breaker, and retries the task after the wait; real git and pytest."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from gtd.auto import pause
from gtd.auto.headless import EXIT_HALTED
from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import MUL, MUL_TEST, gtd_json
from tests.integration.calc_project import make_project as make_calc_project

PLAN = """\
# Calculator

### spec-calc

- [ ] **T1**: Add mul
  - Files: calc.py, tests/test_mul.py
  - Blocked by: none
"""


def result(status: int, kind: str, text: str) -> str:
    """Claude Code 2.1.332's `--output-format json` result of a refused request."""
    return json.dumps(
        {
            "type": "result",
            "subtype": "success",
            "is_error": True,
            "api_error_status": status,
            "api_error_type": kind,
            "terminal_reason": "api_error",
            "result": text,
        }
    )


RATE = result(429, "rate_limit_error", "API Error: Request rejected (429) · Rate limited")
BUSY = result(529, "overloaded_error", "API Error: 529 Overloaded. This is a server-side issue")


def agent(repo: Repo, refusals: list[str]) -> str:
    """An agent refused by the API on its first runs (it wrote part of the work
    first: that is kept), then doing the task."""
    counter = repo.path.parent / "runs"
    script = repo.path.parent / "agent.py"
    script.write_text(
        f"""\
import sys
from pathlib import Path
from typing import Any
sys.stdin.read()
counter = Path({str(counter)!r})
runs = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(runs + 1))
refusals = {refusals!r}
if runs < len(refusals):
    Path("calc.py").write_text(Path("calc.py").read_text() + "# half done\\n")
    print(refusals[runs])
    sys.exit(1)
Path("calc.py").write_text({MUL!r})
Path("tests/test_mul.py").write_text({MUL_TEST!r})
"""
    )
    return f"{sys.executable} {script}"


def memory(repo: Repo) -> dict[str, Any]:
    import yaml

    data = yaml.safe_load((repo.path / ".deepflow/auto-memory.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_the_loop_pauses_on_a_429_and_a_529_then_commits_the_task(repo: Repo) -> None:
    # A threshold of 2: the two refused cycles would have tripped it as reverts.
    make_calc_project(
        repo,
        plan=PLAN,
        config_extra="circuit_breaker_threshold: 2\npause:\n  first_wait_seconds: 3\n",
    )
    command = agent(repo, [RATE, BUSY])
    res = run_gtd(repo.path, "loop", "--agent", command)
    assert res.code == 0, res.stdout + res.stderr
    # (a short wait may be over before the loop asks again: no `paused:` line)
    lines = [x for x in res.stdout.splitlines() if not x.startswith("paused: ")]
    assert lines[0].startswith("cycle 1 T1 paused until "), lines
    assert "rate limit: API Error: Request rejected (429)" in lines[0]
    assert lines[1].startswith("cycle 2 T1 paused until ")
    assert "overloaded" in lines[1]
    assert lines[2].startswith("cycle 3 T1 passed "), lines
    mem = memory(repo)
    assert mem["consecutive_reverts"] == {"T1": 0}
    assert mem["revert_history"] == []
    cycles = mem["cycles"]
    assert isinstance(cycles, list)
    assert [c["status"] for c in cycles] == ["paused", "paused", "passed"]
    assert [c.get("harness") for c in cycles] == ["rate limit", "overloaded", None]
    # the second pause waited twice the first (3 s, then 6 s; the stamps are whole
    # seconds), and the task was tried again only after each
    waits = [pause.epoch(c["until"]) - pause.epoch(c["at"]) for c in cycles[:2]]
    assert 2 <= waits[0] <= 4, waits
    assert 5 <= waits[1] <= 7, waits
    assert pause.epoch(cycles[1]["at"]) >= pause.epoch(cycles[0]["until"])
    assert pause.epoch(cycles[2]["at"]) >= pause.epoch(cycles[1]["until"])
    # the refused agents' work is kept, as a revert's is
    kept = repo.git("show", "refs/gtd/reverted/cycle-1:calc.py")
    assert kept.endswith("# half done\n")
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "| 1 | T1 | Add mul | paused | kept at `refs/gtd/reverted/cycle-1` |" in report
    # the summary's rows add up to the cycles: one committed, two paused
    assert "| Total cycles run | 3 |" in report
    assert "| Cycles committed | 1 |" in report
    assert "| Cycles reverted | 0 |" in report
    assert "| Cycles paused | 2 |" in report


def test_a_pause_longer_than_the_longest_halts_and_says_why(repo: Repo) -> None:
    make_calc_project(
        repo,
        plan=PLAN,
        config_extra="pause:\n  first_wait_seconds: 1\n  longest_pause_minutes: 0.05\n",
    )
    command = agent(repo, [RATE] * 5)
    res = run_gtd(repo.path, "loop", "--agent", command)
    assert res.code == EXIT_HALTED, res.stdout + res.stderr
    last = res.stdout.splitlines()[-1]
    assert last.startswith("halted: Loop halted at T1: paused longer than pause.longest_pause")
    assert "rate limit" in last
    # a reset clears the halt and the pause: the next begin starts the task
    reset = gtd_json(repo, "cycle", "reset")
    assert reset["status"] == "reset", reset
    begin = gtd_json(repo, "cycle", "begin")
    assert begin["status"] == "task", begin


def test_begin_answers_paused_while_the_pause_holds(repo: Repo) -> None:
    make_calc_project(repo, plan=PLAN, config_extra="pause:\n  first_wait_seconds: 600\n")
    begin = gtd_json(repo, "cycle", "begin")
    assert begin["status"] == "task"
    Path(repo.path / "calc.py").write_text("# started\n")
    # what `gtd loop` does: end the cycle with what the agent's exit said
    from gtd.auto import harness
    from gtd.auto.cycle import Cycle
    from gtd.clock import now

    stop = harness.from_agent(1, RATE, "", now().epoch)
    ended = Cycle(repo.path, now()).end(None, detach=False, agent_exit=1, stopped=stop)
    assert ended["status"] == "paused", ended
    tick = run_gtd(repo.path, "cycle", "begin", "--tick")
    assert tick.stdout.startswith("status: paused\nuntil: "), tick.stdout
    assert "message: Paused until " in tick.stdout
    print(f"paused tick answer: {len(tick.stdout.encode())} bytes\n{tick.stdout}")
    mem = memory(repo)
    assert mem["consecutive_reverts"] == {}
    assert repo.status() == ""  # the base is back; the work is in the kept ref
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "**Paused** until " in report
    assert " — rate limit." in report
    # `gtd cycle reset` ends the pause: the next begin starts the task again
    assert gtd_json(repo, "cycle", "reset")["status"] == "reset"
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"


def test_a_pause_made_of_edited_files_is_no_pause(repo: Repo) -> None:
    """The pause is folded from the sealed records: an agent (or anyone) editing
    the memory file to say paused changes nothing the loop reads."""
    make_calc_project(repo, plan=PLAN, config_extra="pause:\n  first_wait_seconds: 600\n")
    memory_file = repo.path / ".deepflow/auto-memory.yaml"
    text = memory_file.read_text().replace("cycles: []", "cycles:\n")
    forged = (
        text + '  - { cycle: 1, task: T1, status: paused, at: "2026-01-01T00:00:00Z",'
        ' until: "2999-01-01T00:00:00Z", harness: usage limit }\n'
    )
    memory_file.write_text(forged)
    assert [c["status"] for c in memory(repo)["cycles"]] == ["paused"]
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"


def test_a_crash_while_pausing_recovers_as_a_pause(repo: Repo) -> None:
    """Killed after the paused cycle's work was kept, before its record: the next
    begin finishes the bookkeeping, a pause, not a revert."""
    make_calc_project(
        repo,
        plan=PLAN,
        config_extra="circuit_breaker_threshold: 1\npause:\n  first_wait_seconds: 600\n",
    )
    command = agent(repo, [RATE])
    env_crash = {"GTD_CRASH_AT": "reverted-kept"}
    import os
    import subprocess

    crashed = subprocess.run(
        [sys.executable, "-m", "gtd", "loop", "--agent", command],
        cwd=repo.path,
        env={**os.environ, **env_crash},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert crashed.returncode == -9, crashed.stdout + crashed.stderr
    begin = gtd_json(repo, "cycle", "begin")
    assert begin["status"] == "paused", begin
    assert "stopped by the harness" in str(begin["recovered"])
    mem = memory(repo)
    cycles = mem["cycles"]
    assert isinstance(cycles, list)
    assert [c["status"] for c in cycles] == ["paused"]
    assert mem["consecutive_reverts"] == {}  # a threshold of 1 would have halted a revert
    assert repo.git("show", "refs/gtd/reverted/cycle-1:calc.py").endswith("# half done\n")
    assert repo.status() == ""
