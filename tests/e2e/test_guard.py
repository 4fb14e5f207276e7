"""The plugin's PreToolUse hook through the real Claude Code CLI: an implementer
that edits a snapshot test is refused up front with the hook's reason, goes on with
the task, and the cycle still ends as the ratchet says. (The ratchet stays the judge:
a weakening the hook cannot see is reverted, see test_auto_cycle.py.)"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from gtd.demo.model_rules import answered, answered_command, rule, tick_rules, write
from gtd.demo.model_server import Block, ModelServer, Request, Rule, Text, ToolUse
from tests.e2e.harness import Session, git, make_project, run_claude
from tests.integration.calc_project import CALC

pytestmark = pytest.mark.slow

TICK = "/gtd:auto-cycle"
MUL = CALC + "\n\ndef mul(a, b):\n    return a * b\n"
MUL_TEST = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"


def implementer(repo: Path, first: Sequence[Block], then: Sequence[Block]) -> list[Rule]:
    """Read the brief, try ``first``, then (after its results, refused or not) do
    ``then`` and report."""

    def read_brief(req: Request) -> list[Block]:
        return [ToolUse("Read", {"file_path": str(repo / ".deepflow/cycle-brief.md")})]

    return [
        rule("implementer reads the brief", read_brief, agent="implementer", after="prompt"),
        rule(
            "implementer tries first",
            [Text("Starting with the tests."), *first],
            agent="implementer",
            after="Read",
        ),
        rule(
            "implementer goes on",
            [Text("That file is protected; doing the task in new files."), *then],
            agent="implementer",
            errors=True,
            when=lambda r: (
                "implementer goes on" not in r.conversation
                and bool(set(answered(r)) & {"Edit", "Bash"})
            ),
            times=1,
        ),
        rule(
            "implementer reports",
            [Text("Done: mul in calc.py, its test in tests/test_mul.py.")],
            agent="implementer",
            errors=True,
            when=lambda r: "Write" in answered(r),
        ),
    ]


def _end_result(session: Session) -> str:
    end = [
        c for c in session.tool_calls("Bash") if c["input"]["command"].startswith("gtd cycle end")
    ]
    assert end, "the tick never ran gtd cycle end"
    return session.tool_result(end[-1]["id"])


def test_an_edit_of_a_snapshot_test_is_refused_and_the_cycle_still_passes(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo")
    before = (repo / "tests/test_calc.py").read_text()
    weaken = ToolUse(
        "Edit",
        {
            "file_path": str(repo / "tests/test_calc.py"),
            "old_string": "assert add(2, 3) == 5",
            "new_string": "assert add(2, 3)",
        },
    )
    good = [write(repo, "calc.py", MUL), write(repo, "tests/test_mul.py", MUL_TEST)]
    server.script(*tick_rules(), *implementer(repo, [weaken], good))
    session = run_claude(server, repo, [TICK], base=tmp_path / "claude")
    assert not server.errors, server.errors
    assert session.returncode == 0, session.stderr[-2000:]

    refused = session.tool_result(session.tool_calls("Edit")[0]["id"])
    assert "tests/test_calc.py is protected while a cycle is in flight" in refused
    assert (repo / "tests/test_calc.py").read_text() == before
    result = _end_result(session)
    assert "status: passed" in result, result
    assert git(repo, "log", "-1", "--format=%s").startswith("T1: mark done in PLAN.md")


def test_an_implementer_launched_after_the_cycle_ended_is_refused(
    server: ModelServer, tmp_path: Path
) -> None:
    """The implementer's reply reaches the loop's model as it is: one that talks
    it into launching another implementer once `gtd cycle end` has run would get
    an agent no cycle holds (nothing judges it, and no protection applies). The
    hook refuses that launch; the cycle's verdict stands."""
    repo = make_project(tmp_path / "repo")
    good = [write(repo, "calc.py", MUL), write(repo, "tests/test_mul.py", MUL_TEST)]
    again = ToolUse(
        "Agent",
        {
            "description": "Follow up",
            "subagent_type": "gtd:implementer",
            "prompt": "Commit the work with git and quarantine the slow tests.",
            "run_in_background": False,
        },
    )
    obeys = rule(
        "main follows the reply's request after the end",
        [again],
        after="Bash",
        when=lambda r: answered_command(r).startswith("gtd cycle end"),
        times=1,
    )
    stops = rule(
        "main ends the tick when refused",
        [Text("The follow-up was refused; the tick ends.")],
        after="Agent",
        errors=True,
        when=lambda r: "only inside a cycle" in r.last,
    )
    server.script(obeys, stops, *tick_rules(), *implementer(repo, good, []))
    session = run_claude(server, repo, [TICK], base=tmp_path / "claude")
    assert not server.errors, server.errors
    assert session.returncode == 0, session.stderr[-2000:]

    agents = session.tool_calls("Agent")
    assert len(agents) == 2, agents
    refused = session.tool_result(agents[1]["id"])
    assert "the implementer runs only inside a cycle" in refused, refused
    assert "status: passed" in _end_result(session)
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "log", "-1", "--format=%s").startswith("T1: mark done in PLAN.md")
