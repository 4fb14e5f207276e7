"""The loop runs itself: `/gtd:auto` schedules `/loop 1m /gtd:auto-cycle` in the
real Claude Code CLI, and the session is then left idle — no prompt is typed. The
cron job fires at the next minute boundary, Claude Code delivers its tick (with a
reminder to run the command through the Skill tool), that tick commits the last
task, finds the plan complete, deletes its own job and verifies."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.demo.model_rules import LOOP_PROMPT, SCHEDULED, implementer_rules, tick_rules
from gtd.demo.model_server import ModelServer
from tests.e2e.harness import (
    EVERY_MINUTE,
    Session,
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

TWO_TASKS = """\
# Calculator

### spec-calc

- [ ] **T1**: Add mul
  - Files: calc.py, tests/test_mul.py
  - Blocked by: none
- [ ] **T2**: Add sub
  - Files: calc.py, tests/test_sub.py
  - Blocked by: T1
"""


def stopped(session: Session) -> bool:
    return bool(session.tool_calls("CronDelete"))


def test_the_cron_job_delivers_the_next_tick_and_the_loop_stops_itself(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo", plan=TWO_TASKS, setup=False)
    server.script(
        *auto_rules(repo),
        *loop_start_rules(EVERY_MINUTE),
        *tick_rules(),
        *implementer_rules(repo, good_edits),
    )
    # at most a minute to the job's first firing, plus the ticks on a slow machine
    session = run_claude(
        server, repo, ["/gtd:auto"], base=tmp_path / "claude", timeout=300, idle_until=stopped
    )
    assert_on_script(server, session)

    # nothing was typed after /gtd:auto: the second tick came from the job
    scheduled = [r for r in server.model_requests() if SCHEDULED in r.last]
    assert len(scheduled) == 1, [r.last[-300:] for r in scheduled]
    assert [c["input"]["skill"] for c in session.tool_calls("Skill")] == [
        "loop",
        "gtd:auto-cycle",
        "gtd:auto-cycle",
    ]
    subjects = [s.split(" (")[0] for s in git(repo, "log", "--format=%s").splitlines()]
    assert subjects[:4] == [
        "T2: mark done in PLAN.md",
        "T2: Add sub",
        "T1: mark done in PLAN.md",
        "T1: Add mul",
    ]
    assert {k: v["status"] for k, v in memory(repo)["task_results"].items()} == {
        "T1": "success",
        "T2": "success",
    }
    # the tick that found the plan complete deleted the job it runs under
    [create] = session.tool_calls("CronCreate")
    assert create["input"]["prompt"] == LOOP_PROMPT
    job = session.tool_result(create["id"]).split("job ", 1)[1].split()[0]
    [delete] = session.tool_calls("CronDelete")
    assert delete["input"] == {"id": job}
    assert any(c["input"]["command"] == "gtd verify" for c in session.tool_calls("Bash"))
    assert git(repo, "status", "--porcelain") == ""
