"""The budget ceiling through the real engine: `gtd loop` with scripted agents, real
git and pytest, the notifier recording its calls.

The tokens and cost of a cycle are recorded by the cost recorder (docs/cost.md),
which this branch does not hold yet: the night's first cycles are seeded into
the sealed history with the engine's own record-writing function
(gtd.auto.state.write), as the recorder would leave them, with the work they
did committed by a person. Everything after that is the real loop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from gtd.auto import plan_file, state
from gtd.auto.budget import BudgetEvent
from gtd.auto.cycle.engine import Cycle, render
from gtd.auto.headless import EXIT_HALTED
from gtd.auto.memory import CycleRecord
from gtd.auto.records import Record
from gtd.auto.usage import Usage
from gtd.clock import now
from gtd.fsio import locked, state_lock
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
AGENT = f"""\
import sys
from pathlib import Path
brief = sys.stdin.read()
if "— T2:" in brief:
    Path("calc.py").write_text({DIV!r})
elif "— T3:" in brief:
    Path("calc.py").write_text({SUB!r})
"""
# The agent that tries to lift the ceiling it spends against (and does the task).
RAISER = f"""\
import sys
from pathlib import Path
sys.stdin.read()
Path("calc.py").write_text({DIV!r})
config = Path(".deepflow/config.yaml")
config.write_text(config.read_text().replace("usd: 1.0", "usd: 1000.0"))
"""
AT = "2026-01-15T01:00:00Z"


def budget_config(usd: float = 1.0) -> str:
    return f"budget:\n  usd: {usd}\n  warn_at: 0.8\n"


def make_project(repo: Repo, agent: str, config_extra: str) -> str:
    make_calc_project(repo, plan=PLAN, config_extra=config_extra)
    script = repo.path.parent / "agent.py"  # outside the repository: no cycle's work
    script.write_text(agent)
    return f"{sys.executable} {script}"


def spent_before(repo: Repo, *costs: tuple[str, float | None], tried: float | None = None) -> None:
    """The night so far: each task's work committed by a person (PLAN.md ticked),
    and its cycle record sealed with its usage, as the cost recorder leaves it."""
    texts = {"T1": MUL, "T2": DIV}
    plan = PLAN
    seeded: list[Record] = []
    for number, (task, usd) in enumerate(costs, 1):
        repo.write("calc.py", texts[task])
        if task == "T1":
            repo.write("tests/test_mul.py", MUL_TEST)
        title = "Add mul" if task == "T1" else "Add div"
        plan = plan.replace(f"- [ ] **{task}**: {title}", f"- [x] **{task}**: {title} ✓ (abc1234)")
        seeded.append(
            CycleRecord(
                cycle=number,
                task=task,
                title=title,
                status="passed",
                commit="abc1234",
                reason=None,
                at=AT,
                tests_passed=2,
                tests_total=2,
                build_ok=True,
                usage=Usage(input=1000 * number, output=100, usd=usd, models=("claude-x",)),
            )
        )
    if tried is not None:  # an earlier, reverted try of the next task, T2
        seeded.append(
            CycleRecord(
                cycle=len(seeded) + 1,
                task="T2",
                title="Add div",
                status="reverted",
                commit=None,
                reason="tests failed: 1 of 3",
                at=AT,
                tests_passed=2,
                tests_total=3,
                build_ok=True,
                usage=Usage(input=500, usd=tried),
            )
        )
    repo.write("PLAN.md", plan)
    repo.commit_all("the night's work so far")
    # The baseline taken now, not by the next tick (whose crash a test aims at).
    assert run_gtd(repo.path, "ratchet", "snapshot").code == 0
    git = Git(repo.path, hardened=True)
    with locked(state_lock(repo.path)):
        st = state.write(git, state.read(git), "cycle records (as recorded)", append=seeded)
        render(repo.path, st, plan_file.load(repo.path)[1], now())
    Cycle(repo.path, now()).acknowledge(len(seeded))  # their verdicts were told


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
    spent_before(repo, ("T1", 0.10), ("T2", 1.00))
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == EXIT_HALTED == 5, res.stdout + res.stderr
    assert res.stdout.splitlines()[-1] == HALT_LINE
    # No cycle began: nothing of T3 was spent, the tree is as the person left it.
    assert state.read(Git(repo.path)).journal is None
    assert repo.subjects()[0] == "the night's work so far"
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
    assert "budget reset: $1.10 and 3,200 tokens spent before it" in reset.stdout
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
    spent_before(repo, ("T1", 0.10), ("T2", 1.00))
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


# fenced: the headless agent's sandbox keeps `.deepflow/` read-only (docs/sandbox.md);
# unfenced (GTD_SANDBOX=off): the edit lands, and the ratchet reverts the cycle.
@pytest.mark.slow
@pytest.mark.parametrize("fence", ["fenced", "unfenced"])
def test_an_agent_cannot_raise_the_ceiling_it_spends_against(repo: Repo, fence: str) -> None:
    agent = make_project(repo, RAISER, budget_config(1.0))
    spent_before(repo, ("T1", 0.30))
    env = {"GTD_SANDBOX": "off"} if fence == "unfenced" else {}
    res = run_cli(repo, "loop", "--agent", agent, "--max-cycles", "1", env=env)
    assert res.code == 0, res.stdout + res.stderr
    first = res.stdout.splitlines()[0]
    if fence == "unfenced" or "Read-only file system" not in first:
        assert first.startswith("cycle 2 T2 reverted: "), first
        assert ".deepflow/config.yaml" in first
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
    make_project(repo, AGENT, budget_config(1.0))
    nothing = run_gtd(repo.path, "cycle", "reset", "--budget", "--json")
    assert nothing.code == 0, nothing.stderr
    assert nothing.json == {"status": "unchanged", "message": "nothing spent since the night began"}
    both = run_gtd(repo.path, "cycle", "reset", "--budget", "T1")
    assert both.code == 1  # a usage mistake (docs/errors.md)
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


def test_a_task_begun_past_the_warning_share_says_so_once(repo: Repo) -> None:
    """$0.85 of $1.00 spent, and T2's own earlier try cost $0.05: it starts, its
    answer carries the warning, and the warning is sealed once."""
    make_project(repo, AGENT, budget_config(1.0))
    spent_before(repo, ("T1", 0.80), tried=0.05)
    begun = gtd_json(repo, "cycle", "begin")
    assert (begun["status"], begun["task"]) == ("task", "T2"), begun
    assert begun["budget"] == (
        "Budget warning: spent $0.85 of $1.00 (85 %) since setup (warns at 80 %)"
    )
    assert [e.event for e in budget_records(repo)] == ["warning"]
    report = (repo.path / ".deepflow/auto-report.md").read_text().split("## Summary")[0]
    assert "**Warning** — Budget: spent $0.85 of $1.00 (85 %) since setup" in report
    # Said once: the next task's answer does not repeat it (the report still does).
    ended = gtd_json(repo, "cycle", "end", "--cycle", str(begun["cycle"]))
    assert ended["status"] == "reverted", ended
    again = gtd_json(repo, "cycle", "begin")
    assert again["status"] == "task", again
    assert "budget" not in again
    assert [e.event for e in budget_records(repo)] == ["warning"]


# The agent ends its own cycle (`gtd cycle end` is let through while it works),
# then resets the budget between cycles, where the reset is allowed.
ENDS_AND_RESETS = f"""\
import subprocess, sys
from pathlib import Path
sys.stdin.read()
Path("calc.py").write_text({DIV!r})
gtd = [sys.executable, "-m", "gtd"]
subprocess.run([*gtd, "cycle", "end"], capture_output=True)
said = subprocess.run([*gtd, "cycle", "reset", "--budget"], capture_output=True, text=True)
print(said.stdout.splitlines()[0] if said.stdout else said.stderr)
"""


@pytest.mark.slow
def test_an_agent_that_resets_the_budget_after_ending_its_cycle_halts_the_loop(
    repo: Repo,
) -> None:
    """Unfenced (the fence keeps the sealed state read-only to the agent): its
    reset is sealed, and the loop's own end of the cycle finds it and halts."""
    agent = make_project(repo, ENDS_AND_RESETS, budget_config(1.0))
    spent_before(repo, ("T1", 0.30))
    res = run_cli(repo, "loop", "--agent", agent, env={"GTD_SANDBOX": "off"})
    assert res.code == EXIT_HALTED, res.stdout + res.stderr
    assert "cycle 2 was ended during its agent's turn" in res.stdout
    assert "the budget was reset" in res.stdout
    assert [e.event for e in budget_records(repo)] == ["reset"]
    # It holds until a person looks: every later tick is halted.
    again = run_gtd(repo.path, "cycle", "begin")
    assert again.stdout.startswith("status: halted\n"), again.stdout


@pytest.mark.slow
def test_raising_the_ceiling_in_a_committed_config_resumes_the_loop(repo: Repo) -> None:
    agent = make_project(repo, AGENT, budget_config(1.0))
    spent_before(repo, ("T1", 0.10), ("T2", 1.00))
    assert run_gtd(repo.path, "loop", "--agent", agent).code == EXIT_HALTED
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
    assert glance(repo)["budget"]["line"] == "budget $1.10 of $5.00 (22 %)"


@pytest.mark.slow
def test_a_dollar_ceiling_that_cannot_see_a_cost_halts(repo: Repo) -> None:
    """T1's model had no price: its tokens are known, its dollars are not."""
    agent = make_project(repo, AGENT, budget_config(100.0))
    spent_before(repo, ("T1", None))
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == EXIT_HALTED, res.stdout + res.stderr
    last = res.stdout.splitlines()[-1]
    assert last.startswith(
        "halted: Budget ceiling cannot be kept: cycle 1 used tokens of a model with no price "
        "(claude-x) and budget.usd is the only ceiling; spent $0.00 or more of $100.00"
    ), last
    assert "add the model's price (docs/cost.md) and run `gtd cycle reset --budget`" in last
