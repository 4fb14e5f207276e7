"""/gtd:auto-cycle through the real Claude Code CLI: pass, revert, breaker, and a
snapshot test weakened by the agent. The model is scripted (tests/e2e/harness.py);
slash-command expansion, the helper's injected output, permissions, the subagent
and the cron tools are Claude Code's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.demo.model_rules import (
    LOOP_PROMPT,
    edit,
    implementer_rules,
    tick_rules,
    write,
)
from gtd.demo.model_server import Block, ModelServer, ToolUse
from tests.e2e.harness import (
    NEVER_DURING_A_TEST,
    assert_on_script,
    auto_rules,
    git,
    gtd,
    loop_start_rules,
    make_project,
    memory,
    run_claude,
    tick_sizes,
    tree,
)
from tests.integration.calc_project import CALC

pytestmark = pytest.mark.slow

TICK = "/gtd:auto-cycle"
MUL = CALC + "\n\ndef mul(a, b):\n    return a * b\n"
SUB = MUL + "\n\ndef sub(a, b):\n    return a - b\n"
NEG = SUB + "\n\ndef neg(a):\n    return -a\n"
MUL_TEST = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
SUB_TEST = "from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"


def good_edits(task: str, repo: Path) -> list[Block]:
    if task == "T1":
        return [write(repo, "calc.py", MUL), write(repo, "tests/test_mul.py", MUL_TEST)]
    if task == "T2":
        return [
            edit(
                repo,
                "calc.py",
                "    return a * b\n",
                "    return a * b\n\n\ndef sub(a, b):\n    return a - b\n",
            ),
            write(repo, "tests/test_sub.py", SUB_TEST),
        ]
    assert task == "T3", task
    return [write(repo, "calc.py", NEG)]


def breaking_edits(task: str, repo: Path) -> list[Block]:
    return [
        edit(repo, "calc.py", "return a + b", "return a - b"),
        write(repo, "notes/scratch.txt", "agent notes\n"),
    ]


def test_three_ticks_commit_the_plan_then_the_loop_stops(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo")
    base = git(repo, "rev-parse", "HEAD").strip()
    server.script(*tick_rules(), *implementer_rules(repo, good_edits))
    session = run_claude(server, repo, [TICK] * 3, base=tmp_path / "claude")
    assert_on_script(server, session)

    subjects = git(repo, "log", "--format=%s", f"{base}..HEAD").splitlines()
    assert [s.split(" (")[0] for s in subjects] == [
        "T3: mark done in PLAN.md",
        "T3: Add neg",
        "T2: mark done in PLAN.md",
        "T2: Add sub",
        "T1: mark done in PLAN.md",
        "T1: Add mul",
    ]
    assert git(repo, "status", "--porcelain") == ""
    assert (repo / "calc.py").read_text() == NEG
    plan = (repo / "PLAN.md").read_text()
    t1 = git(repo, "log", "--format=%h", "-1", "--grep", "^T1: Add mul").strip()
    assert f"- [x] **T1**: Add mul ✓ ({t1})" in plan
    assert "- [ ]" not in plan
    mem = memory(repo)
    assert {k: v["status"] for k, v in mem["task_results"].items()} == {
        "T1": "success",
        "T2": "success",
        "T3": "success",
    }
    report = (repo / ".deepflow/auto-report.md").read_text()
    assert f"| 1 | T1 | Add mul | passed | {t1} |" in report
    assert "| Tasks committed | 3 |" in report
    # the brief reached the subagent, and only the subagent
    assert len(session.tool_calls("Agent")) == 3
    # the third tick's `next: complete` made it look for the loop's job and verify
    assert len(session.tool_calls("CronList")) == 1
    assert any(c["input"]["command"] == "gtd verify" for c in session.tool_calls("Bash"))

    ticks = tick_sizes(server)
    assert len(ticks) == 3
    for n, tick in enumerate(ticks, start=1):
        print(
            f"tick {n}: {tick.total} bytes added to the main conversation "
            f"({tick.command} command + injected output; by kind {tick.parts}; "
            f"{tick.requests} model requests)"
        )
    # the first tick of a session also carries Claude Code's session preamble (git
    # status, skill and agent lists); later ticks are what a running loop adds
    for tick in ticks[1:]:
        assert tick.total <= 4096, tick


def test_a_breaking_edit_is_reverted_and_recorded(server: ModelServer, tmp_path: Path) -> None:
    repo = make_project(tmp_path / "repo")
    head, before = git(repo, "rev-parse", "HEAD").strip(), tree(repo)
    server.script(*tick_rules(), *implementer_rules(repo, breaking_edits))
    session = run_claude(server, repo, [TICK], base=tmp_path / "claude")
    assert_on_script(server, session)

    # the edit really happened in the working tree, then the helper undid it
    assert (repo / "notes/scratch.txt").exists() is False
    assert tree(repo) == before
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert git(repo, "status", "--porcelain") == ""
    kept = git(repo, "show", "--stat", "--format=", "refs/gtd/reverted/cycle-1")
    assert "calc.py" in kept
    assert "notes/scratch.txt" in kept
    end = session.tool_calls("Bash")[-1]
    result = session.tool_result(end["id"])
    assert "status: reverted" in result
    assert "tests failed" in result
    mem = memory(repo)
    assert mem["consecutive_reverts"] == {"T1": 1}
    assert mem["revert_history"][0]["task"] == "T1"
    assert "tests failed" in mem["revert_history"][0]["reason"]
    report = (repo / ".deepflow/auto-report.md").read_text()
    assert (
        "| 1 | T1 | Add mul | reverted | work kept at `refs/gtd/reverted/cycle-1` | "
        "tests failed: 2 of 2"
    ) in report
    assert "| Tasks with reverts | 1 (T1): not done yet |" in report


def test_three_failing_ticks_trip_the_breaker_and_the_loop_deletes_its_job(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo", setup=False)
    server.script(
        *auto_rules(repo),
        *loop_start_rules(NEVER_DURING_A_TEST),
        *tick_rules(),
        *implementer_rules(repo, breaking_edits),
    )
    # /gtd:auto keeps the plan, sets up and starts the loop, whose first tick runs at
    # once; ticks 2 and 3 are typed into the same conversation, as the cron job
    # delivers its prompt (its schedule cannot fire during the test, so the ticks
    # are exactly these three; test_loop.py has the real job deliver them).
    session = run_claude(server, repo, ["/gtd:auto", TICK, TICK], base=tmp_path / "claude")
    assert_on_script(server, session)

    [create] = session.tool_calls("CronCreate")
    assert create["input"]["prompt"] == LOOP_PROMPT
    job = session.tool_result(create["id"]).split("job ", 1)[1].split()[0]
    [listing] = session.tool_calls("CronList")
    assert f"{job} " in session.tool_result(listing["id"])
    [delete] = session.tool_calls("CronDelete")
    assert delete["input"] == {"id": job}
    # the order: the breaker's halt, then CronList, then CronDelete
    order = [e["name"] for e in (*session.tool_calls("CronList"), delete)]
    assert order == ["CronList", "CronDelete"]
    assert "error" not in session.tool_result(delete["id"]).lower()
    ends = [
        c for c in session.tool_calls("Bash") if c["input"]["command"].startswith("gtd cycle end")
    ]
    assert len(ends) == 3
    assert [c["input"]["command"] for c in ends] == [
        f"gtd cycle end --cycle {n}" for n in (1, 2, 3)
    ]
    assert "next: halt" in session.tool_result(ends[-1]["id"])
    assert "Circuit breaker tripped: T1" in session.tool_result(ends[-1]["id"])
    assert memory(repo)["consecutive_reverts"] == {"T1": 3}
    begin = gtd(repo, "cycle", "begin")
    assert begin.stdout.startswith("status: halted"), begin.stdout


def test_weakening_a_snapshot_test_is_reverted_with_that_reason(
    server: ModelServer, tmp_path: Path
) -> None:
    """The plugin's hook refuses an Edit of a snapshot test (tests/e2e/test_guard.py);
    a weakening it cannot see — a script that rewrites the file — is the ratchet's to
    catch, and it reverts the cycle with that reason. (Where Claude Code's sandbox
    is on, the write itself fails: tests/e2e/test_sandbox.py; here it is off.)"""
    repo = make_project(tmp_path / "repo", sandbox=False)
    before = tree(repo)

    def weaken(task: str, repo: Path) -> list[Block]:
        script = (
            "python3 -c \"import pathlib; p = pathlib.Path('tests/test_calc.py'); "
            "p.write_text(p.read_text().replace('== 5', ''))\""
        )
        return [write(repo, "calc.py", MUL), ToolUse("Bash", {"command": script})]

    server.script(*tick_rules(), *implementer_rules(repo, weaken))
    session = run_claude(
        server, repo, [TICK], base=tmp_path / "claude", allowed=["Bash(python3:*)"]
    )
    assert_on_script(server, session)

    end = session.tool_calls("Bash")[-1]
    result = session.tool_result(end["id"])
    assert "status: reverted" in result
    named = "a protected test was changed: tests/test_calc.py::test_add (line 5)"
    assert f"reason: {named}" in result
    assert tree(repo) == before
    mem = memory(repo)
    assert mem["revert_history"][0]["reason"] == named
    assert named in (repo / ".deepflow/auto-report.md").read_text()
