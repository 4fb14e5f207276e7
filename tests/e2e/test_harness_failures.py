"""A harness failure is not a task failure, through the real Claude Code CLI
(docs/harness-failures.md): the scripted model answers HTTP 429 and 529 mid-night
(Claude Code retries none of them: CLAUDE_CODE_MAX_RETRIES=0, where a person's
client would retry ten times over about three minutes, then fail the same way).

In session, the first limit kills the implementer and the tick's own turn (as a
usage limit does); the next tick finds the cycle in its agent phase, reads the
session's transcripts and pauses instead of judging it. The 529 kills only the
implementer; the tick runs `gtd cycle end`, which reads the implementer's
transcript and pauses. After each wait a tick starts the task again, and the
third attempt commits it; the breaker never counted the pauses. Headless, `gtd
loop` runs `claude -p --output-format json` and reads its result."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from gtd.auto import pause
from gtd.demo.model_rules import implementer_rules, rule, tick_rules
from gtd.demo.model_server import (
    ModelServer,
    Request,
    Rule,
    Text,
    ToolUse,
    overloaded,
    rate_limited,
)
from tests.e2e.harness import (
    claude_env,
    git,
    make_project,
    memory,
    run_claude,
    run_loop,
    tick_sizes,
)
from tests.e2e.test_auto_cycle import good_edits

pytestmark = pytest.mark.slow

TICK = "/gtd:auto-cycle"
ONE_TASK = """\
# Calculator

### spec-calc

- [ ] **T1**: Add mul
  - Files: calc.py, tests/test_mul.py
  - Blocked by: none
  - Done when mul(a, b) returns the product and tests/test_mul.py shows it.
"""
FIRST_WAIT_S = 4  # pause.first_wait_seconds: then 8 s for the second pause in a row
NO_RETRIES = {"CLAUDE_CODE_MAX_RETRIES": "0"}


def configure(repo: Path) -> None:
    config = repo / ".deepflow/config.yaml"
    config.write_text(config.read_text() + f"pause:\n  first_wait_seconds: {FIRST_WAIT_S}\n")
    git(repo, "commit", "-qam", "pause quickly")


def end_after_a_failed_agent(req: Request) -> list[ToolUse]:
    began = re.findall(r"^status: task\ncycle: (\d+)$", req.conversation, re.M)
    return [ToolUse("Bash", {"command": f"gtd cycle end --cycle {began[-1]}", "timeout": 600000})]


def refusals() -> list[Rule]:
    """The API refusing, in order: the first implementer (429) and the tick's own
    next request (429: the tick dies), then the second implementer (529)."""
    implementer = {"agent": "implementer", "after": "prompt", "times": 1}
    return [
        rule("implementer limited", [rate_limited()], **implementer),  # type: ignore[arg-type]
        rule("main limited", [rate_limited()], after="Agent", errors=True, times=1),
        rule("implementer overloaded", [overloaded()], **implementer),  # type: ignore[arg-type]
        rule(
            "main while paused",
            _say_paused,
            has=("<command-name>/gtd:auto-cycle", "status: paused"),
            errors=True,  # (beside it, the dead tick's failed Agent call)
        ),
        rule(
            "main ends a cycle whose agent failed",
            end_after_a_failed_agent,
            after="Agent",
            errors=True,
            # not a new tick's prompt beside the dead tick's last tool result
            when=lambda r: "<command-name>" not in r.last,
        ),
    ]


def _say_paused(req: Request) -> list[Text]:
    return [Text(f"paused: {_field(req.last, 'message')}")]


def _field(text: str, key: str) -> str:
    found = re.findall(rf"^{key}: (.*)$", text, re.M)
    return found[-1] if found else ""


def test_in_session_the_loop_pauses_on_429_and_529_then_commits(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo", plan=ONE_TASK)
    configure(repo)
    server.script(*refusals(), *tick_rules(), *implementer_rules(repo, good_edits))
    session = run_claude(
        server,
        repo,
        [TICK] * 5,
        base=tmp_path / "claude",
        persist=True,  # the transcripts the helper reads, as in a person's session
        env=NO_RETRIES,
        waits=[0, 0, FIRST_WAIT_S + 1, 0, 2 * FIRST_WAIT_S + 1],
        timeout=240,
    )
    # the first tick's turn died of the 429: its result is an error, the rest are not
    results = session.results
    assert len(results) == 5, server.describe()
    assert results[0]["is_error"] is True
    assert results[0]["terminal_reason"] == "api_error"
    assert results[0]["api_error_status"] == 429
    assert [r["is_error"] for r in results[1:]] == [False] * 4, server.describe()
    assert not server.off_script, server.describe()
    assert not server.errors, server.errors
    assert session.permission_denials == []

    said = [r["result"] for r in results]
    assert said[1].startswith("paused: Paused until "), said
    assert said[1].endswith("— rate limit"), said
    assert said[2].startswith("paused: "), said  # `end` answered paused
    assert said[3].startswith("paused: Paused until "), said
    assert said[3].endswith("— overloaded"), said
    t1 = git(repo, "log", "--format=%h", "-1", "--grep", "^T1: Add mul").strip()
    assert t1, git(repo, "log", "--oneline")
    mem = memory(repo)
    assert [(c["cycle"], c["status"], c.get("harness")) for c in mem["cycles"]] == [
        (1, "paused", "rate limit"),
        (2, "paused", "overloaded"),
        (3, "passed", None),
    ]
    assert mem["consecutive_reverts"] == {"T1": 0}
    assert mem["revert_history"] == []
    assert git(repo, "status", "--porcelain") == ""
    report = (repo / ".deepflow/auto-report.md").read_text()
    assert "| 1 | T1 | Add mul | paused | kept at `refs/gtd/reverted/cycle-1` |" in report
    assert "| 2 | T1 | Add mul | paused | kept at `refs/gtd/reverted/cycle-2` |" in report

    # the fourth tick only read the pause and answered it: one model request, like
    # a busy tick's (the second is not counted apart: its prompt arrived beside the
    # dead tick's last tool result)
    ticks = tick_sizes(server)
    for tick in ticks:
        print(f"tick: {tick.total} bytes, {tick.requests} requests, {tick.parts}")
    [paused] = [t for t in ticks if t.requests == 1]
    print(
        f"paused tick: {paused.total} bytes added to the main conversation "
        f"({paused.command} command + injected output; by kind {paused.parts})"
    )
    assert paused.total <= 4096, paused


def test_in_session_a_subscriptions_usage_limit_waits_for_its_reset(
    server: ModelServer, tmp_path: Path
) -> None:
    """Signed in with a subscription, the limit kills the implementer and the
    tick's turn with `You've hit your 5-hour limit · resets …`; the next tick
    reads it from the transcripts and pauses until that time; the tick after the
    reset commits the task."""
    repo = make_project(tmp_path / "repo", plan=ONE_TASK)
    configure(repo)
    reset = int(time.time()) + 70
    implementer = {"agent": "implementer", "after": "prompt", "times": 1}
    server.script(
        rule("implementer limited", [rate_limited(reset)], **implementer),  # type: ignore[arg-type]
        rule("main limited", [rate_limited(reset)], after="Agent", errors=True, times=1),
        *refusals()[3:],  # saying a pause; ending a cycle whose agent failed
        *tick_rules(),
        *implementer_rules(repo, good_edits),
    )
    session = run_claude(
        server,
        repo,
        [TICK] * 3,
        base=tmp_path / "claude",
        persist=True,
        env={**NO_RETRIES, "ANTHROPIC_API_KEY": "", "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-x"},
        waits=[0, 0, lambda: max(0.0, reset + 62 - time.time())],
        timeout=300,
    )
    results = session.results
    assert len(results) == 3, server.describe()
    assert results[0]["is_error"] is True
    assert "hit your 5-hour limit · resets " in results[0]["result"]
    assert not server.off_script, server.describe()
    said = [r["result"] for r in results]
    assert said[1].startswith("paused: Paused until "), said
    assert said[1].endswith("— usage limit"), said
    mem = memory(repo)
    assert [(c["status"], c.get("harness")) for c in mem["cycles"]] == [
        ("paused", "usage limit"),
        ("passed", None),
    ]
    until = pause.epoch(mem["cycles"][0]["until"])
    assert reset <= until <= reset + 60  # the stated minute, plus one: not the backoff
    assert mem["consecutive_reverts"] == {"T1": 0}
    assert git(repo, "log", "--format=%h", "-1", "--grep", "^T1: Add mul").strip()


def test_headless_the_loop_pauses_on_429_and_529_then_commits(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo", plan=ONE_TASK)
    configure(repo)
    # the headless agent is the main conversation of its own `claude -p`
    server.script(
        # with the subscription's reset header: under an API key Claude Code 2.1.332
        # says nothing of it (`Request rejected (429)`), so the pause is the backoff
        rule("agent limited", [rate_limited(int(time.time()) + 3600)], after="prompt", times=1),
        rule("agent overloaded", [overloaded()], after="prompt", times=1),
        rule("agent edits", [Text("Implementing."), *good_edits("T1", repo)], after="prompt"),
        rule("agent reports", [Text("Done.")], after="Write"),
    )
    env = {**claude_env(server, tmp_path / "claude"), **NO_RETRIES}
    res = run_loop(repo, env)
    assert res.returncode == 0, res.stdout + res.stderr + server.describe()
    assert not server.off_script, server.describe()
    lines = [x for x in res.stdout.splitlines() if not x.startswith("paused: ")]
    assert lines[0].startswith("cycle 1 T1 paused until "), lines
    assert "rate limit: API Error: Request rejected (429)" in lines[0]
    until = lines[0].split("paused until ", 1)[1].split(":", 3)
    assert pause.epoch(":".join(until[:3])) < time.time() + 600  # not the hour the header said
    assert lines[1].startswith("cycle 2 T1 paused until "), lines
    assert "overloaded: API Error: 529" in lines[1]
    assert lines[2].startswith("cycle 3 T1 passed "), lines
    assert "paused: Paused until " in res.stdout  # the loop slept (8 s for the second)
    mem = memory(repo)
    assert [c["status"] for c in mem["cycles"]] == ["paused", "paused", "passed"]
    assert [c.get("agent_exit") for c in mem["cycles"]] == [1, 1, 0]
    assert mem["consecutive_reverts"] == {"T1": 0}
    log = (repo / ".deepflow/agent-logs/cycle-1.log").read_text()
    assert '"api_error_status":429' in log
    assert '"terminal_reason":"api_error"' in log


def test_headless_a_subscriptions_usage_limit_waits_for_its_reset(
    server: ModelServer, tmp_path: Path
) -> None:
    """Signed in with a subscription (an OAuth token), Claude Code reads the
    429's anthropic-ratelimit-unified-* headers and says when the limit resets:
    `You've hit your 5-hour limit · resets 6:54am (UTC)`. The loop waits until
    then (its minute, plus one), not the backoff."""
    repo = make_project(tmp_path / "repo", plan=ONE_TASK)
    configure(repo)
    reset = int(time.time()) + 70
    server.script(
        rule("agent limited", [rate_limited(reset)], after="prompt", times=1),
        rule("agent edits", [Text("Implementing."), *good_edits("T1", repo)], after="prompt"),
        rule("agent reports", [Text("Done.")], after="Write"),
    )
    env = {**claude_env(server, tmp_path / "claude"), **NO_RETRIES}
    del env["ANTHROPIC_API_KEY"]
    env["CLAUDE_CODE_OAUTH_TOKEN"] = "sk-ant-oat01-scripted"
    res = run_loop(repo, env, timeout=300, persist=True)
    assert res.returncode == 0, res.stdout + res.stderr + server.describe()
    lines = res.stdout.splitlines()
    assert lines[0].startswith("cycle 1 T1 paused until "), lines
    assert "usage limit: You've hit your 5-hour limit · resets " in lines[0]
    until = pause.epoch(lines[0].split("paused until ", 1)[1][:20])
    assert reset <= until <= reset + 60  # the stated minute, plus one: not the 4 s backoff
    assert lines[1].startswith("paused: Paused until "), lines
    assert lines[1].endswith("— usage limit"), lines
    assert lines[2].startswith("cycle 2 T1 passed "), lines
    mem = memory(repo)
    assert [c["status"] for c in mem["cycles"]] == ["paused", "passed"]
    assert mem["cycles"][0]["harness"] == "usage limit"
    passed_at = pause.epoch(mem["cycles"][1]["at"])
    assert passed_at >= until  # the second attempt began after the reset
