"""/gtd:auto through the real Claude Code CLI on a repository without PLAN.md: the
planner subagent writes the plan, `gtd auto setup` takes the snapshot, and the loop
is started the way Claude Code's bundled /loop skill does it (CronCreate of
`/gtd:auto-cycle`, then the first tick at once through the Skill tool)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.demo.model_rules import (
    LOOP_PROMPT,
    implementer_rules,
    role,
    tick_rules,
)
from gtd.demo.model_server import ModelServer
from tests.e2e.harness import (
    NEVER_DURING_A_TEST,
    PLANNED,
    REQUEST,
    assert_on_script,
    auto_rules,
    git,
    loop_start_rules,
    make_project,
    memory,
    run_claude,
)
from tests.e2e.test_auto_cycle import good_edits

pytestmark = pytest.mark.slow


def test_auto_plans_sets_up_and_starts_the_loop(server: ModelServer, tmp_path: Path) -> None:
    repo = make_project(tmp_path / "repo", plan=None, setup=False)
    server.script(
        *auto_rules(repo),
        *loop_start_rules(NEVER_DURING_A_TEST),
        *tick_rules(),
        *implementer_rules(repo, good_edits),
    )
    session = run_claude(server, repo, [f"/gtd:auto {REQUEST}"], base=tmp_path / "claude")
    assert_on_script(server, session)

    # the planner started with the plan-format skill preloaded (agents/planner.md
    # names it bare; Claude Code resolves it within the plugin)
    planner = [r for r in server.model_requests() if role(r) == "planner"]
    assert planner, "the planner subagent made no model request"
    assert "# PLAN.md format" in planner[0].conversation + planner[0].system
    # the planner's plan, committed by setup
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert subjects[2] == "chore(gtd): set up auto mode"
    assert git(repo, "show", "HEAD~2:PLAN.md") == PLANNED
    # the planner ran `gtd plan check` itself (Bash in the subagent, no prompt)
    checks = [c for c in session.tool_calls("Bash") if c["input"]["command"] == "gtd plan check"]
    assert len(checks) == 2
    assert all("error" not in session.tool_result(c["id"]).lower() for c in checks)
    # the loop: Skill(loop) -> CronCreate of the tick -> the first tick at once
    skills = [c["input"]["skill"] for c in session.tool_calls("Skill")]
    assert skills == ["loop", "gtd:auto-cycle"]
    [create] = session.tool_calls("CronCreate")
    assert create["input"] == {
        "cron": NEVER_DURING_A_TEST,
        "prompt": LOOP_PROMPT,
        "recurring": True,
    }
    assert "Scheduled recurring job" in session.tool_result(create["id"])
    # ... and that tick committed T1
    assert subjects[1] == "T1: Add mul(a, b) to calc.py"
    assert "- [x] **T1**: Add mul(a, b) to calc.py ✓" in (repo / "PLAN.md").read_text()
    assert memory(repo)["task_results"]["T1"]["status"] == "success"
    assert git(repo, "status", "--porcelain") == ""
