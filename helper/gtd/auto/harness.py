"""Harness failures (docs/harness-failures.md): the agent's harness stopped it, and
the tests never judged its work: a usage or rate limit, an overloaded API, a
network drop, an expired login, a killed or timed-out agent.

Read from what the harness itself writes, never from what the model says:

- headless (`gtd loop`): the agent's exit status, and its output: Claude Code's
  `--output-format json` result (``"is_error": true``, ``"api_error_status": 429``,
  ``"terminal_reason": "api_error"``) or, as text, its last line
  (``API Error: Request rejected (429) · …``); an exit of 0 is never one;
- in a Claude Code session: the session's transcripts (``<config>/projects/<dir>/
  <session>.jsonl`` and ``<session>/subagents/agent-*.jsonl``), whose entries for
  a failed request carry ``"isApiErrorMessage": true`` with ``apiErrorStatus`` and
  ``apiErrorType``. An error entry written since the cycle began, in the newest
  implementer's transcript or in the session's own, stopped that cycle.

Pure but for :func:`from_transcripts`, which reads the files.
"""

from __future__ import annotations

import calendar
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from gtd.tuples import NamedTuple

USAGE_LIMIT = "usage limit"
RATE_LIMIT = "rate limit"
OVERLOADED = "overloaded"
NETWORK = "network"
LOGIN = "login"
KILLED = "agent killed"
TIMED_OUT = "agent timed out"
KINDS = (USAGE_LIMIT, RATE_LIMIT, OVERLOADED, NETWORK, LOGIN, KILLED, TIMED_OUT)

AGENT_TIMED_OUT = 124  # gtd.auto.headless: an agent killed at its timeout (as timeout(1))
_TAIL_BYTES = 256 * 1024  # the end of a transcript is where its last turn is
_USAGE = re.compile(
    r"usage limit|usage_limit|hit your (?:[\w-]+ )*limit|out of (?:extra )?usage|limit reached",
    re.I,
)
_LOGIN = re.compile(
    r"/login|not logged in|invalid api key|oauth token (?:has )?(?:expired|revoked)|"
    r"authentication[_ ](?:failed|error)|token (?:has )?expired",
    re.I,
)
_NETWORK = re.compile(
    r"connection error|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|fetch failed|"
    r"socket hang up|network|timed out|timeout",
    re.I,
)
_STATUS = re.compile(r"\b([45]\d\d)\b")
# "resets 6:54am (UTC)", "resets 3am (Europe/Paris)", "resets 15:10": the CLI's own
# wording, the clock time in the zone it names
_RESETS = re.compile(
    r"resets? (?:at )?(\d{1,2})(?::(\d\d))?\s*(am|pm)?(?:\s*\(([\w/+-]+)\))?", re.I
)
_LATE = 3600.0  # a stated reset up to this far behind the clock is now, not tomorrow
_RESET_EPOCH = re.compile(r"\|(\d{10})\b")  # the older "Claude AI usage limit reached|<epoch>"


class Stop(NamedTuple):
    """What stopped the agent: ``kind`` (one of KINDS), the harness's own words,
    and the epoch second the harness said it may go on at (None: not said)."""

    kind: str
    message: str
    reset_epoch: float | None = None


def classify(status: int | None, error_type: str | None, text: str, now: float) -> Stop | None:
    """A failed API request as the harness reported it: the HTTP ``status`` and
    the API's error ``type`` where known, and its message."""
    message = " ".join(text.split())[:300] or f"API error {status or ''}".strip()
    kind: str | None = None
    if _USAGE.search(text) and status in (None, 429, 400, 403):
        kind = USAGE_LIMIT
    elif status == 429 or error_type in ("rate_limit_error", "rate_limit"):
        kind = RATE_LIMIT
    elif status in (529, 503, 502, 500, 504) or error_type in ("overloaded_error", "overloaded"):
        kind = OVERLOADED
    elif (
        status in (401, 403)
        or error_type in ("authentication_error", "permission_error")
        or _LOGIN.search(text)
    ):
        kind = LOGIN
    elif status is None and _NETWORK.search(text):
        kind = NETWORK
    if kind is None:
        return None  # a request the API refused for what it asked (400): the agent's
    return Stop(kind, message, reset_time(text, now) if kind == USAGE_LIMIT else None)


def reset_time(text: str, now: float) -> float | None:
    """The reset the message states, as an epoch second after ``now``: an epoch
    after ``|``, or a clock time (UTC unless the machine's zone says otherwise; a
    time already past today is tomorrow's)."""
    found = _RESET_EPOCH.search(text)
    if found:
        value = float(found.group(1))
        return value if value > now else None
    clock = _RESETS.search(text)
    if clock is None:
        return None
    hour, minute = int(clock.group(1)), int(clock.group(2) or 0)
    half = (clock.group(3) or "").lower()
    if half == "pm" and hour < 12:
        hour += 12
    elif half == "am" and hour == 12:
        hour = 0
    if hour > 23 or minute > 59:
        return None
    at = _today_at(hour, minute, clock.group(4), now)
    if at <= now - _LATE:  # the time of day comes next tomorrow
        at += 86400
    return max(at, now)


def _today_at(hour: int, minute: int, zone: str | None, now: float) -> float:
    """Today's ``hour:minute`` in ``zone`` (the machine's when it names none, or
    one this Python does not know), as an epoch second."""
    import datetime

    tz: datetime.tzinfo | None = None
    if zone:
        try:
            from zoneinfo import ZoneInfo

            tz = datetime.timezone.utc if zone.upper() == "UTC" else ZoneInfo(zone)
        except (ImportError, ValueError, OSError, KeyError):
            tz = None
    today = datetime.datetime.fromtimestamp(now, tz).astimezone(tz)
    return today.replace(hour=hour, minute=minute, second=0, microsecond=0).timestamp()


def from_agent(exit_code: int, stdout: str, stderr: str, now: float) -> Stop | None:
    """A headless agent's end. Exit 0 is the agent's own end, whatever it printed."""
    if exit_code == 0:
        return None
    if exit_code == AGENT_TIMED_OUT:
        return Stop(TIMED_OUT, "the agent ran past cycle.agent_timeout_minutes and was killed")
    if exit_code > 128:
        return Stop(KILLED, f"the agent was killed by signal {exit_code - 128}")
    result = _json_result(stdout)
    if result is not None:
        if not (result.get("is_error") and result.get("terminal_reason") == "api_error"):
            return None
        status = result.get("api_error_status")
        kind = result.get("api_error_type")
        # `api_error`: "usage_limit_reached" for a subscription past its limit
        said = str(result.get("result") or "")
        if "usage_limit" in str(result.get("api_error") or "") and not _USAGE.search(said):
            said += " (usage limit reached)"
        return classify(
            status if isinstance(status, int) else None,
            kind if isinstance(kind, str) else None,
            said,
            now,
        )
    for text in (stdout, stderr):
        last = next((x.strip() for x in reversed(text.splitlines()) if x.strip()), "")
        stop = _from_line(last, now)
        if stop is not None:
            return stop
    return None


def _from_line(line: str, now: float) -> Stop | None:
    """The CLI's text-mode last line: ``API Error: …`` (or its usage-limit and
    login messages, which lack that prefix)."""
    if line.startswith("API Error:"):
        found = _STATUS.search(line)
        return classify(int(found.group(1)) if found else None, None, line, now)
    if _USAGE.search(line) or _LOGIN.search(line):
        return classify(None, None, line, now)
    return None


def _json_result(stdout: str) -> dict[str, object] | None:
    """The `result` object of `--output-format json` (one object) or of
    `stream-json` (its last line)."""
    for raw in reversed(stdout.strip().splitlines()[-50:]):
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("type") == "result":
            return data
    return None


# -- in a Claude Code session: the transcripts ----------------------------------------


def session_id() -> str | None:
    """The Claude Code session the command runs in: Claude Code 2.1.332 names it
    in the Bash tool's environment (``CLAUDE_CODE_SESSION_ID``)."""
    value = os.environ.get("CLAUDE_CODE_SESSION_ID", "")
    return value if re.fullmatch(r"[A-Za-z0-9_-]{8,128}", value) else None


def config_dir(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    found = env.get("CLAUDE_CONFIG_DIR")
    return Path(found) if found else Path(env.get("HOME", "~")).expanduser() / ".claude"


def transcripts(
    session: str, since: float, base: Path | None = None, brief: str | None = None
) -> tuple[Path | None, Path | None]:
    """The session's own transcript, and its newest subagent transcript written
    since ``since`` (None where there is none); with ``brief``, the newest whose
    prompt names it (a wave's task: its own implementer, not another task's)."""
    projects = (base or config_dir()) / "projects"
    try:
        folders = [projects / name for name in os.listdir(projects)]
    except OSError:
        return None, None
    main: Path | None = None
    newest: tuple[float, Path] | None = None
    for folder in folders:
        own = folder / f"{session}.jsonl"
        if own.is_file():
            main = own
        sub = folder / session / "subagents"
        try:
            names = os.listdir(sub)
        except OSError:
            continue
        for name in names:
            if not (name.startswith("agent-") and name.endswith(".jsonl")):
                continue
            try:
                mtime = (sub / name).stat().st_mtime
            except OSError:
                continue
            if mtime >= since and (newest is None or mtime > newest[0]):
                if brief is not None and brief not in prompt(sub / name):
                    continue
                newest = (mtime, sub / name)
    return main, newest[1] if newest else None


_PROMPT_BYTES = 64 * 1024  # a subagent's first entry: its prompt and the entry's fields


def prompt(path: Path) -> str:
    """The prompt a subagent's transcript opens with (its first entry, the user
    turn the Agent call gave: ``Read <brief> and follow it exactly.``); "" when
    it cannot be read. Only the file's head is read."""
    try:
        with open(path, "rb") as handle:
            head = handle.readline(_PROMPT_BYTES)
        entry = json.loads(head)
    except (OSError, ValueError):
        return ""
    message = entry.get("message") if isinstance(entry, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (b.get("text") for b in content if isinstance(b, dict))
        return " ".join(t for t in texts if isinstance(t, str))
    return ""


def from_entries(lines: Iterable[str], since: float, now: float, *, last_only: bool) -> Stop | None:
    """The API error a transcript records since ``since``: its last assistant
    entry's (``last_only``: a subagent's conversation ends there), or its latest
    (the session's: a turn that died, even if a later turn began)."""
    found: Stop | None = None
    for line in lines:
        if '"assistant"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") != "assistant":
            continue
        if _epoch(entry.get("timestamp")) < since:
            continue
        if not entry.get("isApiErrorMessage"):
            if last_only:
                found = None
            continue
        status = entry.get("apiErrorStatus")
        kind = entry.get("apiErrorType") or entry.get("error")
        found = (
            classify(
                status if isinstance(status, int) else None,
                kind if isinstance(kind, str) else None,
                _text(entry),
                now,
            )
            or found
        )
    return found


def from_transcripts(
    session: str, since: float, now: float, base: Path | None = None, brief: str | None = None
) -> Stop | None:
    """What stopped the cycle begun at ``since`` in Claude Code session ``session``,
    as its transcripts say: the newest implementer's conversation (with ``brief``:
    the one given that brief) ending in an API error, or the session's own turn
    dying of one."""
    main, agent = transcripts(session, since, base, brief)
    if agent is not None:
        stop = from_entries(_tail(agent), since, now, last_only=True)
        if stop is not None:
            return stop
    if main is not None:
        return from_entries(_tail(main), since, now, last_only=False)
    return None


def _tail(path: Path) -> list[str]:
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - _TAIL_BYTES))
            raw = handle.read(_TAIL_BYTES)
    except OSError:
        return []
    lines = raw.decode("utf-8", "replace").splitlines()
    return lines[1:] if size > _TAIL_BYTES else lines  # the first may be cut


def _text(entry: dict[str, object]) -> str:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return " ".join(str(t) for t in texts)
    return ""


def _epoch(stamp: object) -> float:
    """An ISO-8601 UTC timestamp (``2026-12-07T05:21:24.541Z``) as an epoch second;
    0 for anything else."""
    if not isinstance(stamp, str):
        return 0.0
    found = re.match(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z$", stamp)
    if found is None:
        return 0.0
    parts = tuple(int(x) for x in found.groups()[:6])
    return calendar.timegm((*parts, 0, 0, 0)) + float(found.group(7) or 0)
