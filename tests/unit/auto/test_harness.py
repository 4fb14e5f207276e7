"""What stopped an agent, read from the harness's own output (gtd.auto.harness):
the shapes below are Claude Code 2.1.332's, taken from runs against the scripted
model server answering 429 and 529 (docs/harness-failures.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gtd.auto import harness, pause
from gtd.auto.harness import Stop
from gtd.auto.memory import Pause

NOW = 1_800_000_000.0

# `claude -p --output-format json`, the API answering 429 (fields trimmed)
RESULT_429 = json.dumps(
    {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "api_error_status": 429,
        "api_error_type": "rate_limit_error",
        "terminal_reason": "api_error",
        "result": "API Error: Request rejected (429) · Rate limited (scripted)",
    }
)


@pytest.mark.parametrize(
    ("code", "stdout", "kind"),
    [
        (1, RESULT_429, harness.RATE_LIMIT),
        (1, "API Error: Request rejected (429) · Rate limited (scripted)\n", harness.RATE_LIMIT),
        (
            1,
            "API Error: 529 Overloaded (scripted). This is a server-side issue, usually "
            "temporary — try again in a moment.\n",
            harness.OVERLOADED,
        ),
        (1, "API Error: Connection error.\n", harness.NETWORK),
        (1, "Invalid API key · Please run /login\n", harness.LOGIN),
        (1, "Claude usage limit reached. Your limit will reset at 3am.\n", harness.USAGE_LIMIT),
        (124, "", harness.TIMED_OUT),
        (137, "", harness.KILLED),
    ],
)
def test_a_harness_failure_is_named(code: int, stdout: str, kind: str) -> None:
    stop = harness.from_agent(code, stdout, "", NOW)
    assert stop is not None
    assert stop.kind == kind


@pytest.mark.parametrize(
    ("code", "stdout"),
    [
        (0, RESULT_429),  # exit 0: the agent's own end, whatever it printed
        (0, "API Error: Request rejected (429)"),
        (1, "Traceback (most recent call last):\nValueError: boom\n"),  # the agent's bug
        (1, json.dumps({"type": "result", "is_error": True, "terminal_reason": "max_turns"})),
        (2, "the model says: API Error: 429 somewhere in a sentence\n"),
    ],
)
def test_anything_else_is_left_to_the_tests(code: int, stdout: str) -> None:
    assert harness.from_agent(code, stdout, "", NOW) is None


def test_a_stated_reset_is_read() -> None:
    stop = harness.from_agent(1, "Claude AI usage limit reached|1800003600\n", "", NOW)
    assert stop == Stop(harness.USAGE_LIMIT, "Claude AI usage limit reached|1800003600", 1800003600)
    clock = harness.reset_time("You've hit your session limit · resets 3:10am", NOW)
    assert clock is not None
    assert NOW < clock <= NOW + 86400
    assert time.localtime(clock)[3:5] == (3, 10)


# the same with a subscription's OAuth token, the 429 carrying the
# anthropic-ratelimit-unified-* headers (status rejected, reset, five_hour)
RESULT_USAGE = json.dumps(
    {
        "type": "result",
        "is_error": True,
        "api_error_status": 429,
        "api_error_type": "rate_limit_error",
        "api_error": "usage_limit_reached",
        "terminal_reason": "api_error",
        "result": "You've hit your 5-hour limit · resets 9:30am (UTC)",
    }
)


def test_a_subscriptions_usage_limit_waits_for_its_reset() -> None:
    # NOW is 2027-01-15 08:00 UTC
    stop = harness.from_agent(1, RESULT_USAGE, "", NOW)
    assert stop == Stop(
        harness.USAGE_LIMIT, "You've hit your 5-hour limit · resets 9:30am (UTC)", NOW + 5400
    )
    paris = harness.reset_time("You've hit your limit · resets 10:30am (Europe/Paris)", NOW)
    assert paris == NOW + 5400  # CET in January
    # a reset the minute-rounded clock shows as just past is now, not tomorrow
    assert harness.reset_time("resets 7:59am (UTC)", NOW) == NOW


def test_the_wait_is_the_reset_else_a_doubling_backoff() -> None:
    limited = Stop(harness.USAGE_LIMIT, "limit", NOW + 3600)
    assert pause.wait_until(limited, None, NOW, 60, 1800) == NOW + 3660
    rate = Stop(harness.RATE_LIMIT, "429")
    waits = []
    held: Pause | None = None
    for n in range(7):
        until = pause.wait_until(rate, held, NOW, 60, 1800)
        waits.append(until - NOW)
        held = Pause("T1", pause.iso(NOW), pause.iso(until), "rate limit", n + 1)
    assert waits == [60, 120, 240, 480, 960, 1800, 1800]


def entry(at: str, *, error: bool, status: int = 429) -> str:
    """One assistant line of a 2.1.332 transcript (an API error's as the CLI writes it)."""
    text = "API Error: Request rejected (429) · Rate limited" if error else "Done."
    line: dict[str, object] = {
        "type": "assistant",
        "timestamp": at,
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
    }
    if error:
        line.update(
            isApiErrorMessage=True,
            apiErrorStatus=status,
            apiErrorType="rate_limit_error",
            error="rate_limit",
        )
    return json.dumps(line)


def transcripts(base: Path, main: list[str], agent: list[str] | None) -> None:
    folder = base / "projects" / "-tmp-repo"
    (folder / "s1234567" / "subagents").mkdir(parents=True)
    (folder / "s1234567.jsonl").write_text("\n".join(main) + "\n")
    if agent is not None:
        (folder / "s1234567" / "subagents" / "agent-a1.jsonl").write_text("\n".join(agent) + "\n")


# the cycle began ten minutes ago (the transcripts are written now: their files' times
# say they are newer than the cycle)
BEGAN = float(int(time.time()) - 600)


def at(seconds: float) -> str:
    return pause.iso(BEGAN + seconds)


def test_the_implementers_transcript_ending_in_an_api_error_stops_the_cycle(
    tmp_path: Path,
) -> None:
    transcripts(tmp_path, [], [entry(at(5), error=True)])
    stop = harness.from_transcripts("s1234567", BEGAN, BEGAN + 60, tmp_path)
    assert stop is not None
    assert stop.kind == harness.RATE_LIMIT


def test_the_sessions_turn_dying_of_an_api_error_stops_the_cycle(tmp_path: Path) -> None:
    later = entry(at(60), error=False)  # the next tick's first call
    transcripts(tmp_path, [entry(at(5), error=True), later], None)
    stop = harness.from_transcripts("s1234567", BEGAN, BEGAN + 60, tmp_path)
    assert stop is not None
    assert stop.kind == harness.RATE_LIMIT


def test_an_error_before_the_cycle_or_one_the_implementer_got_past_is_not_ours(
    tmp_path: Path,
) -> None:
    before = entry(at(-60), error=True)
    transcripts(
        tmp_path,
        [before],
        [entry(at(5), error=True), entry(at(9), error=False)],
    )
    assert harness.from_transcripts("s1234567", BEGAN, BEGAN + 60, tmp_path) is None


def test_a_paused_tick_costs_no_more_than_a_busy_one() -> None:
    """Every tick of a pause injects the answer: it stays as short as busy's."""
    from gtd.auto.cycle import answers
    from gtd.auto.journal import Journal
    from gtd.cli.cycle_cmd import render

    held = Pause("T2", "2026-12-07T01:10:00Z", "2026-12-07T03:11:00Z", "usage limit", 3)
    paused = render(answers.paused(held))
    assert paused.splitlines() == [
        "status: paused",
        "until: 2026-12-07T03:11:00Z",
        "message: Paused until 03:11 UTC — usage limit",
        "next: end this tick",
    ]
    began = Journal(3, "T2", "Add perimeter", "task", False, "0" * 40, "main", "x", 0.0)
    assert len(paused.encode()) <= len(render(answers.busy(began)).encode())
