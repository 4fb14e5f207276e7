"""A test suite that takes longer than the Bash timeout the tick gives `gtd cycle
end`, through the real Claude Code CLI: the tool call times out, the check goes on
in the worker `end` started (its own session, so the tool's kill does not reach
it), later ticks answer busy, and the tick after the verdict reports it and goes
on to complete the plan. The pack is a copy whose auto-cycle command asks for a
4-second timeout instead of 10 minutes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gtd.demo.model_rules import field_of, implementer_rules, rule, tick_rules, write
from gtd.demo.model_server import Block, ModelServer, Request, Text
from tests.e2e.harness import copy_pack, git, make_project, run_claude

pytestmark = pytest.mark.slow

TICK = "/gtd:auto-cycle"
PLAN = """\
# Calculator

- [ ] **T1**: Add mul
  - Files: calc.py, tests/test_mul.py
  - Blocked by: none
"""
MUL_TEST = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
SLOW = "import time\n\n\ndef test_slow():\n    time.sleep(8)\n"


def test_a_suite_longer_than_the_tick_still_ends_in_a_commit(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo", plan=PLAN, setup=False)
    (repo / "tests/test_slow.py").write_text(SLOW)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a slow test")
    from tests.e2e.harness import gtd

    setup = gtd(repo, "auto", "setup")
    assert "status: ready" in setup.stdout, setup.stdout + setup.stderr
    pack = copy_pack(tmp_path / "pack")
    command = pack / "commands/auto-cycle.md"
    text = command.read_text()
    assert "`timeout: 600000`" in text
    command.write_text(text.replace("`timeout: 600000`", "`timeout: 4000`"))

    def edits(task: str, repo: Path) -> list[Block]:
        calc = (repo / "calc.py").read_text() + "\n\ndef mul(a, b):\n    return a * b\n"
        return [write(repo, "calc.py", calc), write(repo, "tests/test_mul.py", MUL_TEST)]

    def said(req: Request) -> list[Block]:
        # A model's turn takes a while; here it paces the ticks so the background
        # check can finish within the ticks the test sends.
        time.sleep(2)
        return [Text(f"{field_of(req.last, 'status') or 'error'}: the tick ends here.")]

    server.script(
        *tick_rules(),
        *implementer_rules(repo, edits),
        rule(
            "main after end timed out",
            [
                Text(
                    "gtd cycle end did not answer within the tool's timeout; "
                    "the next tick recovers."
                )
            ],
            after="Bash",
            errors=True,
            when=lambda r: "gtd cycle end" in r.conversation and "status: " not in r.last,
        ),
        rule("main while busy", said, has=("status: busy",)),
        # Claude Code moves a Bash call past its timeout to the background and says
        # so when it ends: nothing to do, the helper already recorded the verdict.
        rule(
            "main notes the background command",
            [Text("Noted: the background check finished; the next tick reports it.")],
            errors=True,
            has=("Background command",),
        ),
    )
    ticks = [TICK] * 10
    session = run_claude(server, repo, ticks, base=tmp_path / "claude", plugin=pack, timeout=240)
    assert not server.errors, server.errors
    assert session.returncode == 0, session.stderr[-2000:]

    subjects = git(repo, "log", "--format=%s").splitlines()
    assert subjects[0].startswith("T1: mark done in PLAN.md"), subjects
    assert subjects[1] == "T1: Add mul"
    assert "- [x] **T1**" in (repo / "PLAN.md").read_text()
    story = server.describe()
    assert "[main after end timed out]" in story  # the tool's timeout hit `end`
    assert "[main while busy]" in story  # later ticks waited on the background check
    seen = json.dumps(server.requests)
    assert "previous: cycle 1 T1 passed" in seen  # and one tick reported its verdict
