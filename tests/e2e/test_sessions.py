"""A cycle whose `gtd cycle end` never ran, through the real Claude Code CLI: the
next tick of the same session, or the first tick of a new session after the one
that began it was killed, has it judged at once instead of answering busy until
the agent timeout. The helper finds the session as the real client runs it (its
`!` injection and Bash tool under the `claude` process); only the model is
scripted (tests/e2e/harness.py)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from gtd.demo.model_rules import answered, implementer_rules, rule, tick_rules
from gtd.demo.model_server import Block, ModelServer, Request, Text
from tests.e2e.harness import assert_on_script, git, make_project, memory, run_claude
from tests.e2e.test_auto_cycle import MUL, good_edits
from tests.e2e.test_loop import TWO_TASKS

pytestmark = pytest.mark.slow

TICK = "/gtd:auto-cycle"
COMMITTED = ["T2: mark done in PLAN.md", "T2: Add sub", "T1: mark done in PLAN.md", "T1: Add mul"]


def subjects(repo: Path) -> list[str]:
    return [s.split(" (")[0] for s in git(repo, "log", "--format=%s").splitlines()]


def injected_with(server: ModelServer, text: str) -> list[str]:
    """The ticks' command expansions (with `begin`'s injected answer) holding ``text``."""
    return [
        r.last
        for r in server.model_requests()
        if "<command-name>/gtd:auto-cycle</command-name>" in r.last and text in r.last
    ]


def test_the_next_tick_of_the_session_judges_a_cycle_whose_end_never_ran(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo", plan=TWO_TASKS)
    server.script(
        # The first tick's model stops after the implementer: no `gtd cycle end`.
        rule("main forgets `gtd cycle end`", [Text("T1 is implemented.")], after="Agent", times=1),
        *tick_rules(),
        *implementer_rules(repo, good_edits),
    )
    session = run_claude(server, repo, [TICK, TICK], base=tmp_path / "claude", timeout=240)
    assert_on_script(server, session)

    # one `end` ran, the second tick's; the first tick's cycle was judged by its begin
    ends = [
        c for c in session.tool_calls("Bash") if c["input"]["command"].startswith("gtd cycle end")
    ]
    assert len(ends) == 1
    assert len(injected_with(server, "previous: cycle 1 T1 passed")) == 1
    assert subjects(repo)[:4] == COMMITTED
    assert {k: v["status"] for k, v in memory(repo)["task_results"].items()} == {
        "T1": "success",
        "T2": "success",
    }


def test_a_new_session_judges_the_cycle_of_a_session_killed_mid_cycle(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo", plan=TWO_TASKS)
    client: list[int] = []

    def crash(req: Request) -> list[Block]:
        # Claude Code dies with the implementer's edits made, before its tick's end
        os.killpg(client[0], signal.SIGKILL)
        return [Text("(never read: the client is gone)")]

    server.script(
        rule(
            "the session is killed",
            crash,
            agent="implementer",
            when=lambda r: bool(set(answered(r)) & {"Write", "Edit"}),
            times=1,
        ),
        *tick_rules(),
        *implementer_rules(repo, good_edits),
    )
    killed = run_claude(
        server, repo, [TICK], base=tmp_path / "claude", timeout=240, started=client.append
    )
    assert [e.rule for e in server.exchanges].count("the session is killed") == 1
    assert not killed.results  # no turn finished
    with pytest.raises(ProcessLookupError):
        os.kill(client[0], 0)  # gone (and reaped by the harness)
    assert (repo / "calc.py").read_text() == MUL
    journal = json.loads((repo / ".deepflow/cycle.json").read_text())
    assert (journal["phase"], journal["session"]["pid"]) == ("agent", client[0])

    with ModelServer() as fresh:
        fresh.script(*tick_rules(), *implementer_rules(repo, good_edits))
        # the same home (the user starts Claude Code again): a changed git
        # configuration outside the repository would be a revert of its own
        session = run_claude(fresh, repo, [TICK], base=tmp_path / "claude", timeout=240)
        assert_on_script(fresh, session)
        assert len(injected_with(fresh, "previous: cycle 1 T1 passed")) == 1

    assert subjects(repo)[:4] == COMMITTED
    assert git(repo, "status", "--porcelain") == ""
