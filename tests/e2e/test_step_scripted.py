"""/gtd:step in a repository with scripted checks, through the real Claude Code CLI:
the command loads the pack's loop skill, the (scripted) model drives the loop as
the skill says — acting on agent prompts, and at every check calling
`gtd run --wait` until it stops answering `checking:` (the suite runs detached from
the Bash call, longer than one wait) — until the human is awaited. The check's
turns land as `gtd(check): …` commits; the model never handles the script's text,
and every call stays inside the command's own permissions."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from gtd.demo.model_rules import (
    answered,
    answered_command,
    rule,
    write,
)
from gtd.demo.model_server import Block, ModelServer, Request, Rule, Text, ToolUse
from tests.e2e.harness import (
    assert_on_script,
    git,
    gtd,
    run_claude,
)

pytestmark = pytest.mark.slow

# The suite: red until value.txt says ok; it takes a moment, as real suites do.
CHECK = """\
import pathlib, sys, time
time.sleep(2.5)
if pathlib.Path("value.txt").read_text().strip() != "ok":
    print("FAILED test_value: value.txt is not ok")
    sys.exit(1)
"""
TODO = "# Plan\n\nok\n\n## Open Questions\n\n### Spelling?\n\nSuggested default: ok\n"
TASK = "# Task\n\nWrite ok into value.txt.\n\n- [ ] value.txt says ok\n"
RECORD = "# Review: v\n\n<!-- base: abc -->\n\n## The value\n\n- [ ] ./value.txt#1 — ok\n"
LOOP_SKILL = "# The gtd loop protocol"
# The skill's `gtd run --wait 540`, with a wait shorter than the suite so the
# model has to come back for it.
RUN = "gtd run --wait 1"


def _ok(repo: Path, *args: str) -> str:
    res = gtd(repo, *args)
    assert res.returncode == 0, res.stderr
    return res.stdout


def make_step_project(path: Path) -> Path:
    """A repository with scripted checks, resting at `building` (the agent's turn)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    config = {
        "testCommand": "python3 check.py",
        "checks": "scripted",
        "agenticReview": False,
        "squash": False,
    }
    files = {"check.py": CHECK, "value.txt": "bad\n", ".gtdrc.json": json.dumps(config) + "\n"}
    for rel, text in files.items():
        (path / rel).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    (path / "idea.md").write_text("make the value ok\n")
    _ok(path, "step")
    (path / ".gtd").mkdir(exist_ok=True)
    (path / ".gtd/TODO.md").write_text(TODO)
    _ok(path, "step-agent")
    _ok(path, "step")
    (path / ".gtd/01-value").mkdir(parents=True)
    (path / ".gtd/01-value/01-task.md").write_text(TASK)
    assert "state: building" in _ok(path, "step-agent")
    return path


def _next(req: Request) -> dict[str, object] | None:
    """The JSON of `gtd next --json` when that is what the latest message answers."""
    if answered_command(req) != "gtd next --json":
        return None
    found = re.search(r"\{.*\}", req.last, re.S)
    return json.loads(found.group(0)) if found else None


def _at(state: str, actor: str = "agent") -> Callable[[Request], bool]:
    def check(req: Request) -> bool:
        nxt = _next(req)
        return nxt is not None and (nxt["state"], nxt["actor"]) == (state, actor)

    return check


def _skill_called(req: Request) -> bool:
    return any(
        isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == "Skill"
        for msg in req.messages
        if msg.get("role") == "assistant" and isinstance(msg.get("content"), list)
        for block in msg["content"]
    )


def _ran(command: str) -> Callable[[Request], bool]:
    return lambda req: answered_command(req) == command


def step_rules(repo: Path) -> list[Rule]:
    """The main conversation following commands/step.md and the loop skill."""

    def bash(command: str, **more: object) -> list[Block]:
        return [ToolUse("Bash", {"command": command, **more})]

    def acts(state: str, *edits: Block) -> Rule:
        return rule(f"main acts at {state}", [*edits], after="Bash", when=_at(state), times=None)

    return [
        rule(
            "main asks gtd who is up",
            bash("gtd next --json"),
            after="prompt",
            has=("Drive gtd step mode",),
        ),
        rule(
            "main loads the loop skill",
            [ToolUse("Skill", {"skill": "gtd:loop"})],
            after="Bash",
            when=lambda r: _next(r) is not None and not _skill_called(r),
        ),
        rule(
            "main starts the loop",
            bash("gtd step-agent --json"),
            after="Skill",
            has=(LOOP_SKILL,),
            times=None,
        ),
        rule(
            "main asks who is up",
            bash("gtd next --json"),
            after="Bash",
            when=_ran("gtd step-agent --json"),
            times=None,
        ),
        acts("building", write(repo, "value.txt", "almost\n")),
        acts("fixing", write(repo, "value.txt", "ok\n")),
        acts("review", write(repo, ".gtd/REVIEW.md", RECORD)),
        rule(
            "main finishes its turn",
            bash("gtd step-agent --json"),
            after="Write",
            times=None,
        ),
        rule(
            "main runs the check",
            bash(RUN, timeout=600000),
            after="Bash",
            when=_at("testing", "check"),
            times=None,
        ),
        rule(
            "main waits for the check again",
            bash(RUN, timeout=600000),
            after="Bash",
            has=("checking: ",),
            when=_ran(RUN),
            times=None,
        ),
        rule(
            "main goes on after the check",
            bash("gtd step-agent --json"),
            after="Bash",
            has=("state: ",),
            when=_ran(RUN),
            times=None,
        ),
        rule("main hands off", bash("gtd next"), after="Bash", when=_at("await-review", "human")),
        rule(
            "main tells the human",
            [Text("gtd waits for your review in .gtd/REVIEW.md; run `gtd step`, then /gtd:step.")],
            after="Bash",
            when=_ran("gtd next"),
        ),
    ]


def test_step_runs_the_checks_as_background_jobs(server: ModelServer, tmp_path: Path) -> None:
    repo = make_step_project(tmp_path / "repo")
    start = len(git(repo, "log", "--format=%s").splitlines())
    server.script(*step_rules(repo))
    session = run_claude(server, repo, ["/gtd:step"], base=tmp_path / "claude", timeout=240)
    assert_on_script(server, session)

    # The command loaded the pack's loop skill, and its text reached the model.
    assert [c["input"]["skill"] for c in session.tool_calls("Skill")] == ["gtd:loop"]
    after_skill = [r for r in server.model_requests() if "Skill" in answered(r)]
    assert after_skill
    assert LOOP_SKILL in after_skill[0].last
    # Every check ran through `gtd run --wait`, polled while the suite was still
    # running (its answers started `checking:`); the model ran nothing but gtd.
    calls = session.tool_calls("Bash")
    assert all(c["input"]["command"].startswith("gtd ") for c in calls)
    answers = [session.tool_result(c["id"]) for c in calls if c["input"]["command"] == RUN]
    assert sum(a.startswith("checking: ") for a in answers) >= 2  # both checks outlived a wait
    finished = [a for a in answers if "state: " in a]
    assert [a.splitlines()[0] for a in finished] == [
        "committed: gtd(check): test-failed",
        "committed: gtd(check): close-package-approved",
    ]
    # The check's turns, attributed in history; the loop stopped at the human.
    subjects = git(repo, "log", "--first-parent", "--reverse", "--format=%s").splitlines()
    assert subjects[start:] == [
        "gtd(agent): building",
        "gtd: testing",
        "gtd(check): test-failed",
        "gtd(agent): fixing",
        "gtd: testing",
        "gtd(check): close-package-approved",
        "gtd: package done",
        "gtd(agent): review",
        "gtd: awaiting review",
    ]
    trailers = git(
        repo, "log", "--reverse", "--format=%s|%(trailers:key=Gtd-Counters,valueonly)%x00"
    )
    checks = [t.strip() for t in trailers.split("\0") if t.strip().startswith("gtd(check)")]
    assert checks == [
        "gtd(check): test-failed|t=1 r=0 h=0",
        "gtd(check): close-package-approved|t=1 r=0 h=0",
    ]
    status = json.loads(_ok(repo, "status", "--json"))
    assert (status["state"], status["actor"]) == ("await-review", "human")
    assert git(repo, "status", "--porcelain") == ""
