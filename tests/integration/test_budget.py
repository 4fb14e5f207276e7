"""The budget ceiling through the real engine: `gtd loop` with scripted agents, real
git and pytest, the notifier recording its calls.

Every cycle's cost is really recorded: the scripted agent does its task and
prints its usage line (docs/cost.md, "The agent's usage line") with a priced
model, and the loop seals it with the cycle, as with any agent. The night's
spend is what those cycles cost; nothing is written into the sealed state by
the test. (tests/e2e/test_budget.py: the same through the pinned Claude Code.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from gtd.auto import state
from gtd.auto.budget import BudgetEvent
from gtd.auto.headless import EXIT_HALTED
from gtd.git import Git
from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import MUL, MUL_TEST, gtd_json, run_cli
from tests.integration.calc_project import make_project as make_calc_project
from tests.integration.test_notify import notifier_config, recorder, wait_for

PLAN = """\
# Calculator

### spec-calc

- [ ] **T1**: Add mul
  - Files: calc.py, tests/test_mul.py
  - Blocked by: none
- [ ] **T2**: Add div
  - Files: calc.py
  - Blocked by: T1
- [ ] **T3**: Add sub
  - Files: calc.py
  - Blocked by: T2
"""
DIV = MUL + "\n\ndef div(a, b):\n    return a / b\n"
SUB = DIV + "\n\ndef sub(a, b):\n    return a - b\n"
FILES = {
    "T1": {"calc.py": MUL, "tests/test_mul.py": MUL_TEST},
    "T2": {"calc.py": DIV},
    "T3": {"calc.py": SUB},
}
# The model the agents say they used: claude-opus-5-5, $20 per million output
# tokens, so a dollar is 50,000 output tokens and every cost below is exact.
MODEL = "claude-opus-5-5"
PER_USD = 50_000


def agent_source(costs: dict[str, float], *, model: str = MODEL, then: str = "") -> str:
    """An agent that does the brief's task (FILES), prints its usage line (the
    task's cost in ``costs``, as output tokens of ``model``), then runs ``then``
    (Python, with ``cycle``, ``task`` and ``Path`` at hand)."""
    tokens = {task: round(usd * PER_USD) for task, usd in costs.items()}
    return f"""\
import json, re, subprocess, sys
from pathlib import Path
brief = sys.stdin.read()
cycle, task = re.search(r"^# Cycle (\\d+) \\S (T\\d+):", brief, re.M).groups()
for rel, text in {FILES!r}[task].items():
    Path(rel).write_text(text)
print(json.dumps({{"gtd_usage": {{"output": {tokens!r}[task], "model": {model!r}}}}}), flush=True)
{then}
"""


# T1 $0.10 and T2 $1.00: the spend before T3 is over a $1.00 ceiling.
CHEAP_THEN_DEAR = {"T1": 0.10, "T2": 1.00, "T3": 0.10}
AGENT = agent_source(CHEAP_THEN_DEAR)


def budget_config(usd: float = 1.0, warn_at: float = 0.8) -> str:
    return f"budget:\n  usd: {usd}\n  warn_at: {warn_at}\n"


def make_project(repo: Repo, agent: str, config_extra: str) -> str:
    make_calc_project(repo, plan=PLAN, config_extra=config_extra)
    script = repo.path.parent / "agent.py"  # outside the repository: no cycle's work
    script.write_text(agent)
    return f"{sys.executable} {script}"


def night(repo: Repo, agent: str, cycles: int, env: dict[str, str] | None = None) -> list[str]:
    """The night so far: ``cycles`` cycles of the real loop, their usage recorded
    from the agent's own lines. Its progress lines."""
    res = run_cli(repo, "loop", "--agent", agent, "--max-cycles", str(cycles), env=env)
    assert res.code == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == cycles + 1, lines  # one line a cycle, then the stop
    return lines[:cycles]


def glance(repo: Repo) -> dict[str, Any]:
    """`gtd auto status --json`."""
    res = run_gtd(repo.path, "auto", "status", "--json")
    assert res.code == 0, res.stderr
    data: dict[str, Any] = res.json
    return data


def budget_records(repo: Repo) -> list[BudgetEvent]:
    return [r for r in state.read(Git(repo.path)).records if isinstance(r, BudgetEvent)]


def kinds(calls: list[dict[str, dict[str, object]]]) -> list[object]:
    return [c["event"]["kind"] for c in calls]


HALT_LINE = (
    "halted: Budget ceiling reached: spent $1.10 of $1.00 (110 %) since setup; T3 not "
    "started Next: stop the loop; raise budget.usd in .deepflow/config.yaml and commit it, "
    "or run `gtd cycle reset --budget` to start a new night"
)


@pytest.mark.slow
def test_a_budget_below_two_tasks_cost_halts_before_the_third(repo: Repo) -> None:
    command, calls = recorder(repo)
    agent = make_project(repo, AGENT, budget_config(1.0) + notifier_config(repo, command))
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == EXIT_HALTED == 5, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    # T2 started: $0.10 spent and as much again expected fits under $1.00.
    assert lines[0].startswith("cycle 1 T1 passed "), lines
    assert lines[1].startswith("cycle 2 T2 passed "), lines
    assert lines[2:] == [HALT_LINE]
    # No cycle began: nothing of T3 was spent, the tree is as T2 left it.
    assert state.read(Git(repo.path)).journal is None
    assert repo.subjects()[0].startswith("T2: mark done in PLAN.md")
    assert repo.status() == ""
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    top = report.split("## Summary")[0]
    assert "**Halted** — Budget ceiling reached: spent $1.10 of $1.00" in top
    assert "1. Raise budget.usd in .deepflow/config.yaml and commit it" in top
    seen = glance(repo)
    assert seen["state"] == "halted"
    assert seen["budget"]["usd"] == 1.1
    assert seen["budget"]["ceiling_usd"] == 1.0
    assert "budget $1.10 of $1.00 (110 %)" in str(seen["line"])
    # Told once each: the warning (the spend is past 80 %) and the halt.
    got = wait_for(calls, 2)
    assert kinds(got) == ["budget-warning", "budget-halt"], got
    assert got[0]["event"]["message"] == (
        "Budget warning: spent $1.10 of $1.00 (110 %) since setup (warns at 80 %)"
    )
    assert got[1]["event"]["task"] == "T3"
    assert "To go on: raise budget.usd" in str(got[1]["event"]["message"])
    # Every later tick re-derives the halt and tells nothing new.
    assert run_gtd(repo.path, "loop", "--agent", agent).code == EXIT_HALTED
    tick = run_gtd(repo.path, "cycle", "begin")
    assert tick.code == 0
    assert tick.stdout.startswith("status: halted\ntask: T3\n"), tick.stdout
    assert len(wait_for(calls, 3, timeout_s=2)) == 2
    assert [e.event for e in budget_records(repo)] == ["warning", "halt"]

    # The reset is a sealed event; the night's count starts again and T3 runs.
    reset = run_gtd(repo.path, "cycle", "reset", "--budget")
    assert reset.code == 0, reset.stderr
    assert reset.stdout.startswith("status: reset\n")
    assert "budget reset: $1.10 and 55,000 tokens spent before it" in reset.stdout
    assert [e.event for e in budget_records(repo)] == ["warning", "halt", "reset"]
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == 0, res.stdout + res.stderr
    assert res.stdout.splitlines()[0].startswith("cycle 3 T3 passed ")
    # The reset is no news; nothing more was told.
    assert kinds(wait_for(calls, 3, timeout_s=2)) == ["budget-warning", "budget-halt"]


# begin: killed between the seal of the budget's records and anything else
# (the report, the notifier); rendered: after the report, before the notifier.
@pytest.mark.slow
@pytest.mark.parametrize("point", ["budget-sealed", "rendered"])
def test_a_crash_after_the_seal_tells_each_event_once_and_counts_once(
    repo: Repo, point: str
) -> None:
    command, calls = recorder(repo)
    agent = make_project(repo, AGENT, budget_config(1.0) + notifier_config(repo, command))
    night(repo, agent, 2)  # T1 and T2: the next begin seals the warning and the halt
    env = {**os.environ, "GTD_CRASH_AT": point}
    crashed = subprocess.run(
        [sys.executable, "-m", "gtd", "loop", "--agent", agent],
        cwd=repo.path, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert crashed.returncode == -9, crashed.stdout + crashed.stderr
    assert [e.event for e in budget_records(repo)] == ["warning", "halt"]
    assert wait_for(calls, 1, timeout_s=2) == []
    # The next step tells them; concurrent ticks after it neither seal nor tell more.
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == EXIT_HALTED, res.stdout + res.stderr
    assert res.stdout.splitlines()[-1] == HALT_LINE  # the same spend: nothing counted twice
    ticks = [
        subprocess.Popen(
            [sys.executable, "-m", "gtd", "cycle", "begin"], cwd=repo.path,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for _ in range(2)
    ]  # fmt: skip
    for tick in ticks:
        tick.wait(60)
    assert kinds(wait_for(calls, 3)) == ["budget-warning", "budget-halt"]
    assert [e.event for e in budget_records(repo)] == ["warning", "halt"]
    assert glance(repo)["budget"]["usd"] == 1.1


# The agent that tries to lift the ceiling it spends against (and does the task).
RAISER = agent_source(
    {"T1": 0.30, "T2": 0.30},
    then="""\
if task == "T2":
    config = Path(".deepflow/config.yaml")
    config.write_text(config.read_text().replace("usd: 1.0", "usd: 1000.0"))
""",
)


# fenced: the headless agent's sandbox keeps `.deepflow/` read-only (docs/sandbox.md);
# unfenced (GTD_SANDBOX=off): the edit lands, and the ratchet reverts the cycle.
@pytest.mark.slow
@pytest.mark.parametrize("fence", ["fenced", "unfenced"])
def test_an_agent_cannot_raise_the_ceiling_it_spends_against(repo: Repo, fence: str) -> None:
    agent = make_project(repo, RAISER, budget_config(1.0))
    env = {"GTD_SANDBOX": "off"} if fence == "unfenced" else {}
    first, second = night(repo, agent, 2, env=env)
    assert first.startswith("cycle 1 T1 passed "), first
    if fence == "unfenced" or "Read-only file system" not in second:
        assert second.startswith("cycle 2 T2 reverted: "), second
        assert ".deepflow/config.yaml" in second
    # The file is back as the person wrote it, and the sealed ceiling never moved.
    assert "usd: 1.0\n" in (repo.path / ".deepflow/config.yaml").read_text()
    assert repo.status() == ""
    assert state.sealed_config(state.read(Git(repo.path))).budget_usd == 1.0
    # A person's next commit takes the baseline (and the config) again: still 1.0.
    repo.write("NOTES.md", "a person's note\n")
    repo.commit_all("notes")
    res = run_cli(repo, "loop", "--agent", agent, "--max-cycles", "1", env=env)
    assert res.code == 0, res.stdout + res.stderr
    assert state.sealed_config(state.read(Git(repo.path))).budget_usd == 1.0
    assert glance(repo)["budget"]["ceiling_usd"] == 1.0


def test_the_reset_waits_for_the_cycle_in_flight_and_says_when_nothing_is_spent(
    repo: Repo,
) -> None:
    make_project(repo, AGENT, budget_config(1.0))  # (its agent never runs here)
    nothing = run_gtd(repo.path, "cycle", "reset", "--budget", "--json")
    assert nothing.code == 0, nothing.stderr
    assert nothing.json == {"status": "unchanged", "message": "nothing spent since the night began"}
    both = run_gtd(repo.path, "cycle", "reset", "--budget", "T1")
    assert both.code == 2  # a usage mistake (docs/errors.md)
    assert "--budget resets the night's spend, not a task" in both.stderr
    begun = gtd_json(repo, "cycle", "begin")
    assert begun["status"] == "task", begun
    refused = run_gtd(repo.path, "cycle", "reset", "--budget")
    assert refused.code == 1
    assert "cycle 1 (T1) is in flight: the budget is reset between cycles" in refused.stderr
    assert budget_records(repo) == []
    assert json.loads(run_gtd(repo.path, "auto", "status", "--json").stdout)["budget"] == {
        "usd": 0.0,
        "tokens": 0,
        "ceiling_usd": 1.0,
        "ceiling_tokens": None,
        "warn_at": 0.8,
        "since": None,
        "warning": False,
        "halted": False,
        "unmeasured": [],
        "unpriced": [],
        "line": "budget $0.00 of $1.00 (0 %)",
    }


# T2's first try (cycle 2) breaks a test of the snapshot: it is reverted.
TRIES_TWICE = agent_source(
    {"T1": 0.45, "T2": 0.25},
    then=f"""\
if (cycle, task) == ("2", "T2"):
    Path("calc.py").write_text({DIV.replace("return a + b", "return a - b")!r})
""",
)


@pytest.mark.slow
def test_a_task_begun_past_the_warning_share_says_so_once(repo: Repo) -> None:
    """T1 cost $0.45, T2's reverted try $0.25: $0.70 of $1.00 is past the 60 %
    warning share. T2 is expected to cost what its own try did, $0.25, so it
    starts (the night's average, $0.35, would have crossed the ceiling); its
    answer carries the warning, and the warning is sealed once."""
    agent = make_project(repo, TRIES_TWICE, budget_config(1.0, warn_at=0.6))
    first, second = night(repo, agent, 2)
    assert first.startswith("cycle 1 T1 passed "), first
    assert second.startswith("cycle 2 T2 reverted: tests failed"), second
    assert [e.event for e in budget_records(repo)] == []  # T2's try began at 45 %
    begun = gtd_json(repo, "cycle", "begin")
    assert (begun["status"], begun["task"]) == ("task", "T2"), begun
    assert begun["budget"] == (
        "Budget warning: spent $0.70 of $1.00 (70 %) since setup (warns at 60 %)"
    )
    assert [e.event for e in budget_records(repo)] == ["warning"]
    report = (repo.path / ".deepflow/auto-report.md").read_text().split("## Summary")[0]
    assert "**Warning** — Budget: spent $0.70 of $1.00 (70 %) since setup" in report
    # Said once: the next task's answer does not repeat it (the report still does).
    ended = gtd_json(repo, "cycle", "end", "--cycle", str(begun["cycle"]))
    assert ended["status"] == "reverted", ended
    again = gtd_json(repo, "cycle", "begin")
    assert again["status"] == "task", again
    assert "budget" not in again
    assert [e.event for e in budget_records(repo)] == ["warning"]


# The agent ends its own cycle (`gtd cycle end` is let through while it works),
# then resets the budget between cycles, where the reset is allowed.
ENDS_AND_RESETS = agent_source(
    {"T1": 0.30, "T2": 0.30},
    then="""\
if task == "T2":
    gtd = [sys.executable, "-m", "gtd"]
    subprocess.run([*gtd, "cycle", "end"], capture_output=True)
    said = subprocess.run([*gtd, "cycle", "reset", "--budget"], capture_output=True, text=True)
    print(said.stdout.splitlines()[0] if said.stdout else said.stderr)
""",
)


@pytest.mark.slow
def test_an_agent_that_resets_the_budget_after_ending_its_cycle_halts_the_loop(
    repo: Repo,
) -> None:
    """Unfenced (the fence keeps the sealed state read-only to the agent): its
    reset is sealed, and the loop's own end of the cycle finds it and halts."""
    agent = make_project(repo, ENDS_AND_RESETS, budget_config(1.0))
    res = run_cli(repo, "loop", "--agent", agent, env={"GTD_SANDBOX": "off"})
    assert res.code == EXIT_HALTED, res.stdout + res.stderr
    assert res.stdout.startswith("cycle 1 T1 passed "), res.stdout
    assert "cycle 2 was ended during its agent's turn" in res.stdout
    assert "the budget was reset" in res.stdout
    assert [e.event for e in budget_records(repo)] == ["reset"]
    # It holds until a person looks: every later tick is halted.
    again = run_gtd(repo.path, "cycle", "begin")
    assert again.stdout.startswith("status: halted\n"), again.stdout


@pytest.mark.slow
def test_raising_the_ceiling_in_a_committed_config_resumes_the_loop(repo: Repo) -> None:
    agent = make_project(repo, AGENT, budget_config(1.0))
    assert run_gtd(repo.path, "loop", "--agent", agent).code == EXIT_HALTED  # before T3
    config = repo.path / ".deepflow/config.yaml"
    config.write_text(config.read_text().replace("usd: 1.0", "usd: 5.0"))
    # Not committed: every tick says dirty, and the sealed ceiling is unchanged.
    dirty = run_gtd(repo.path, "loop", "--agent", agent)
    assert dirty.code == 1, dirty.stdout + dirty.stderr
    assert dirty.stdout.startswith("dirty: "), dirty.stdout
    repo.commit_all("raise the budget")
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == 0, res.stdout + res.stderr
    assert any(line.startswith("cycle 3 T3 passed ") for line in res.stdout.splitlines())
    assert state.sealed_config(state.read(Git(repo.path))).budget_usd == 5.0
    # T1, T2 and now T3's $0.10
    assert glance(repo)["budget"]["line"] == "budget $1.20 of $5.00 (24 %)"


@pytest.mark.slow
def test_a_dollar_ceiling_that_cannot_see_a_cost_halts(repo: Repo) -> None:
    """T1's model had no price: its tokens are known, its dollars are not."""
    agent = make_project(repo, agent_source(CHEAP_THEN_DEAR, model="claude-x"), budget_config(100))
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == EXIT_HALTED, res.stdout + res.stderr
    assert res.stdout.startswith("cycle 1 T1 passed "), res.stdout  # a first task starts
    last = res.stdout.splitlines()[-1]
    assert last.startswith(
        "halted: Budget ceiling cannot be kept: cycle 1 used tokens of a model with no price "
        "(claude-x) and budget.usd is the only ceiling; spent $0.00 or more of $100.00"
    ), last
    assert "add the model's price (docs/cost.md) and run `gtd cycle reset --budget`" in last
