"""The budget ceiling through the real Claude Code CLI and the scripted model: a
night whose spend would pass the ceiling stops before the next task, and says
what was spent, the ceiling and how to go on (docs/budget.md).

The scripted model's every answer carries known token counts
(gtd.demo.model_server._usage); the implementer's last answer of each task adds
a known, large count of output tokens (Rule.usage), so each task's cost is
dominated by a figure the test sets, and the few cents of the conversation's
own turns cannot move the halt to another task. The spend the messages name is
summed from what the model said, not read back from the helper.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from gtd.demo.model_rules import rule, tick_rules, write
from gtd.demo.model_server import Block, ModelServer, Request, Text, ToolUse
from tests.e2e.harness import (
    assert_on_script,
    claude_env,
    git,
    gtd,
    make_project,
    memory,
    run_claude,
    run_loop,
)
from tests.e2e.test_auto_cycle import MUL, MUL_TEST, NEG, SUB, SUB_TEST
from tests.e2e.test_cost import counts, sealed_cycles, usd, windows

pytestmark = pytest.mark.slow

TICK = "/gtd:auto-cycle"
# Output tokens the implementer's last answer adds: at claude-opus-5-5's $20 per
# million, $0.80; the conversation's own turns add about ten cents a cycle
# (a task measured $0.85 headless, $0.91 as the session's first tick).
DEAR = 40_000


def budget(usd: float) -> str:
    return f"budget:\n  usd: {usd}\n"


NEXT = (
    "stop the loop; raise budget.usd in .deepflow/config.yaml and commit it, or run "
    "`gtd cycle reset --budget` to start a new night"
)


def task_of(req: Request) -> str:
    """The task the brief names (`# Cycle 2 — T2: Add sub`)."""
    found = re.findall(r"Cycle \d+ \S (T\d+)", req.conversation)
    return found[0] if found else "?"


def whole_files(task: str, repo: Path) -> list[Block]:
    """Each task's work as whole-file writes (a headless agent has read nothing
    it could Edit)."""
    files = {
        "T1": {"calc.py": MUL, "tests/test_mul.py": MUL_TEST},
        "T2": {"calc.py": SUB, "tests/test_sub.py": SUB_TEST},
        "T3": {"calc.py": NEG},
    }[task]
    return [write(repo, rel, text) for rel, text in files.items()]


def of_task(task: str) -> Callable[[Request], bool]:
    return lambda req: task_of(req) == task


def spent_of(message: str) -> float:
    found = re.search(r"spent \$([\d,.]+) of", message)
    assert found, message
    return float(found.group(1).replace(",", ""))


def field(text: str, key: str) -> str:
    found = re.findall(rf"^{key}: (.*)$", text, re.M)
    assert found, f"no {key}: in {text!r}"
    return str(found[-1])


def test_in_session_a_ceiling_below_two_tasks_cost_halts_before_the_third(
    server: ModelServer, tmp_path: Path
) -> None:
    """T1 costs about $0.90, T2 about $2.50 (its implementer says three times the
    tokens): a ceiling of $2.50 is below the two tasks' cost. Before T2 the night
    has spent T1's cost and expects as much again (the night's average), under
    the ceiling: T2 starts. Before T3 the spend is over the ceiling: the tick's
    answer is a halt, and the loop stops without starting T3."""
    ceiling = 2.5
    repo = make_project(tmp_path / "repo", config_extra=budget(ceiling))
    base = git(repo, "rev-parse", "HEAD").strip()
    server.script(
        *tick_rules(),
        rule(
            "implementer reads the brief",
            lambda r: [
                ToolUse("Read", {"file_path": str(repo / re.findall(r"Read (\S+) and", r.last)[0])})
            ],
            agent="implementer",
            after="prompt",
        ),
        rule(
            "implementer writes",
            lambda r: [Text("Implementing the task."), *whole_files(task_of(r), repo)],
            agent="implementer",
            after="Read",
        ),
        *(
            rule(
                f"implementer reports {task}",
                [Text("Changed the task's files as the brief asks. Tests: all passed.")],
                agent="implementer",
                after="Write",
                when=of_task(task),
                usage={"output_tokens": DEAR * share},
            )
            for task, share in (("T1", 1), ("T2", 3), ("T3", 1))
        ),
    )
    session = run_claude(server, repo, [TICK] * 3, base=tmp_path / "claude", persist=True)
    assert_on_script(server, session)

    # Two tasks landed, at the cost the model said.
    subjects = git(repo, "log", "--format=%s", f"{base}..HEAD").splitlines()
    assert [s.split(" (")[0] for s in subjects] == [
        "T2: mark done in PLAN.md",
        "T2: Add sub",
        "T1: mark done in PLAN.md",
        "T1: Add mul",
    ]
    turns = windows(server)
    assert sorted(turns) == [1, 2]
    cost = {cycle: usd(counts(exchanges)) for cycle, exchanges in turns.items()}
    sealed = sealed_cycles(repo)
    for cycle in (1, 2):
        assert sealed[cycle].usage is not None
        assert sealed[cycle].usage.usd == pytest.approx(cost[cycle], abs=1e-6)
    # The scenario as designed: T2 started because T1's cost twice over fits,
    # and the two tasks' cost is over the ceiling.
    assert 2 * cost[1] <= ceiling < cost[1] + cost[2], cost
    night = cost[1] + cost[2]

    # The third tick's answer halts, says what was spent, the ceiling, how to go on.
    ticks = [
        e.request.last
        for e in server.exchanges
        if "<command-name>/gtd:auto-cycle</command-name>" in e.request.last
    ]
    assert len(ticks) == 3
    third = ticks[2]
    assert field(third, "status") == "halted", third
    assert field(third, "task") == "T3"
    assert field(third, "reason") == "budget ceiling (budget.usd)"
    message = field(third, "message")
    assert re.fullmatch(
        r"Budget ceiling reached: spent \$[\d.]+ of \$2\.50 \(\d+ %\) since setup; "
        r"T3 not started",
        message,
    ), message
    assert spent_of(message) == pytest.approx(night, abs=0.005 + 1e-9)
    assert f"({night / ceiling * 100:.0f} %)" in message
    assert field(third, "next") == NEXT
    # The model stopped the loop on it; no implementer ran for T3.
    assert session.tool_calls("CronList")
    assert not [e for e in server.exchanges if task_of(e.request) == "T3"]
    assert len(session.tool_calls("Agent")) == 2
    assert "- [ ] **T3**" in (repo / "PLAN.md").read_text()
    assert git(repo, "status", "--porcelain") == ""

    # The report, the glance and every later tick say the same.
    top = (repo / ".deepflow/auto-report.md").read_text().split("## Summary")[0]
    assert f"**Halted** — {message}." in top
    assert "1. Raise budget.usd in .deepflow/config.yaml and commit it" in top
    status = gtd(repo, "auto", "status", "--json")
    assert status.returncode == 0, status.stderr
    assert '"state": "halted"' in status.stdout
    again = gtd(repo, "cycle", "begin")
    assert again.stdout.startswith("status: halted\ntask: T3\n"), again.stdout
    assert [c["status"] for c in memory(repo)["cycles"]] == ["passed", "passed"]


def test_headless_a_ceiling_between_two_and_three_tasks_cost_halts_before_the_third(
    server: ModelServer, tmp_path: Path
) -> None:
    """`gtd loop --agent "claude -p --output-format json"`, each task costing
    about $0.85 (the agent's run, from Claude Code's JSON result). With $2.00,
    two tasks fit; before T3 the night has spent about $1.70 and expects its
    average per cycle again, which would cross the ceiling: the loop halts,
    exit 5, before T3's agent runs."""
    ceiling = 2.0
    repo = make_project(tmp_path / "repo", config_extra=budget(ceiling))
    base = git(repo, "rev-parse", "HEAD").strip()
    server.script(
        rule(
            "agent writes",
            lambda r: [Text("Implementing."), *whole_files(task_of(r), repo)],
            after="prompt",
        ),
        rule("agent reports", [Text("Done.")], after="Write", usage={"output_tokens": DEAR}),
    )
    res = run_loop(repo, claude_env(server, tmp_path / "claude"), timeout=300)
    story = res.stdout + res.stderr + server.describe()
    assert res.returncode == 5, story  # halted (gtd.exits, docs/errors.md)
    assert not server.off_script, story

    # Two agent runs, two commits of tasks; nothing of T3 was asked of the model.
    tasks = [task_of(e.request) for e in server.exchanges if e.rule == "agent writes"]
    assert tasks == ["T1", "T2"]
    subjects = git(repo, "log", "--format=%s", f"{base}..HEAD").splitlines()
    assert [s.split(" (")[0] for s in subjects] == [
        "T2: mark done in PLAN.md",
        "T2: Add sub",
        "T1: mark done in PLAN.md",
        "T1: Add mul",
    ]
    # Each run's cost is what the model said in it (the runs' requests, in order).
    runs: list[list[int]] = [[], []]
    run = -1
    for i, e in enumerate(server.exchanges):
        if e.rule == "agent writes":
            run += 1
        if run >= 0:
            runs[run].append(i)
    cost = [usd(counts([server.exchanges[i] for i in run_of])) for run_of in runs]
    sealed = sealed_cycles(repo)
    assert [sealed[n].usage.usd for n in (1, 2)] == pytest.approx(cost, abs=1e-6)
    assert cost[0] + cost[1] <= ceiling < sum(cost) + sum(cost) / 2, cost

    lines = res.stdout.splitlines()
    assert lines[0].startswith("cycle 1 T1 passed "), story
    assert lines[1].startswith("cycle 2 T2 passed "), story
    last = lines[-1]
    found = re.fullmatch(
        r"halted: Budget ceiling would be crossed: spent \$([\d.]+) of \$2\.00 \((\d+) %\) "
        r"since setup, and T3 is expected to cost \$([\d.]+) more \(the night's average per "
        r"cycle\); T3 not started Next: (.*)",
        last,
    )
    assert found, last
    night = sum(cost)
    assert float(found.group(1)) == pytest.approx(night, abs=0.005 + 1e-9)
    assert found.group(2) == f"{night / ceiling * 100:.0f}"
    assert float(found.group(3)) == pytest.approx(night / 2, abs=0.005 + 1e-9)
    assert found.group(4) == NEXT
    assert "- [ ] **T3**" in (repo / "PLAN.md").read_text()
    top = (repo / ".deepflow/auto-report.md").read_text().split("## Summary")[0]
    assert "**Halted** — Budget ceiling would be crossed" in top
