"""What a wave's tick rests on, through the pinned CLI: two Agent calls sent in
one message with `run_in_background: false` (the **wave** bullet of
commands/auto-cycle.md) run at once, and the tick resumes when both have
returned. The scripted implementers take their time (Rule.delay_s), and the
model server sees their requests under way together
(ModelServer.overlapping)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.demo.model_rules import field_of, role, rule, tick_rules
from gtd.demo.model_server import Block, ModelServer, Request, Text, ToolUse
from tests.e2e.harness import make_project, run_claude

pytestmark = pytest.mark.slow

TICK = "/gtd:auto-cycle"
HOLD_S = 3.0


def _launch_two(req: Request) -> list[Block]:
    brief = field_of(req.last, "brief")
    assert brief, req.last
    return [
        ToolUse(
            "Agent",
            {
                "description": f"Implement part {n}",
                "subagent_type": "gtd:implementer",
                "prompt": f"Read {brief} and follow it exactly. (part {n})",
                "run_in_background": False,
            },
        )
        for n in (1, 2)
    ]


def test_two_agent_calls_in_one_message_run_at_once(server: ModelServer, tmp_path: Path) -> None:
    repo = make_project(tmp_path / "repo")
    server.script(
        rule("main launches two implementers", _launch_two, has=("status: task", "brief: ")),
        rule("main hears both", [Text("Both implementers returned.")], after="Agent"),
        rule(
            "an implementer works",
            [Text("Done with my part.")],
            agent="implementer",
            after="prompt",
            delay_s=HOLD_S,
            times=2,
        ),
        *tick_rules(),
    )
    session = run_claude(server, repo, [TICK], base=tmp_path / "claude", timeout=240)
    assert not server.errors, server.errors
    assert session.returncode == 0, session.stderr[-2000:]
    assert server.unused() == [], server.describe()

    implementers = [e for e in server.exchanges if e.rule == "an implementer works"]
    assert len(implementers) == 2, server.describe()
    together = server.overlapping(lambda e: e.rule == "an implementer works")
    assert len(together) == 1, [(e.started, e.ended) for e in implementers]
    # The main conversation went on only after both had returned.
    heard = next(e for e in server.exchanges if e.rule == "main hears both")
    assert all(e.ended is not None and e.ended <= heard.started for e in implementers)
    assert all(role(e.request) == "implementer" for e in implementers)
    assert sorted("(part 1)" in e.request.conversation for e in implementers) == [False, True]
