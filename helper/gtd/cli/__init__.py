"""The `gtd` entry point.

Command bodies live in the ``*_cmd`` modules as plain functions; ``gtd.cli.app``
declares them to typer. The per-tick commands (`gtd cycle begin`, `gtd cycle end`,
`gtd plan next`, the PreToolUse hook) run every minute or every tool call of an
unattended loop, `gtd auto status` is a glance, and `gtd ratchet run` is measured
against the bare test command, so when argv is exactly one of them main() calls
the body directly and typer (about 90 ms of imports) is never loaded. Any other
argv, including --help, goes through typer."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from gtd.cli.reply import Reply, fail
from gtd.errors import GtdError
from gtd.exits import EXIT_BUG, EXIT_INTERRUPTED

if TYPE_CHECKING:
    from typing import NoReturn


# The argvs main() runs without typer, each with the flags it may carry (any other
# flag, or one given twice, goes through typer). tests/test_cli.py checks that
# typer declares each of these commands with these options.
_JSON = frozenset({"--json"})
FAST_COMMANDS: dict[tuple[str, ...], frozenset[str]] = {
    ("cycle", "begin"): frozenset({"--json", "--tick"}),
    ("cycle", "end"): _JSON,
    ("ratchet", "run"): _JSON,
    ("hook", "pre-tool-use"): frozenset(),
    ("plan", "next"): _JSON,
    ("auto", "status"): _JSON,
    ("step",): _JSON,
    ("step", "human"): _JSON,
    ("step", "agent"): _JSON,
    ("step", "check"): _JSON,
    ("step-agent",): _JSON,
    ("next",): _JSON,
    ("status",): _JSON,
    ("run",): _JSON,
}
# The options with a value the fast path reads, by the kind of value: "text" any
# string (typer's `str`), "count" a whole number of at least 1 (typer's `int,
# min=1`). A value the fast path cannot read exactly as typer would (one
# that starts with "-", a number with a sign, a leading zero, spaces or more than
# nine digits) sends the argv through typer. tests/test_cli.py checks these
# options' types against typer's and parses argvs both ways.
FAST_VALUES: dict[tuple[str, ...], dict[str, str]] = {
    ("cycle", "end"): {"--learning": "text", "--cycle": "count", "--review": "text"},
}
# Step mode (the gtd 2.x surface): its errors answer {"state":"error","prompt":...}
# under --json instead of auto mode's envelope. The same test checks these are the
# commands gtd.cli.step_app declares.
STEP_COMMANDS = frozenset({"step", "step-agent", "next", "status", "review", "format", "run"})
# A bug (an exception that is not a GtdError) exits with its own code, after
# writing a crash log (docs/errors.md).
CRASH_EXIT = EXIT_BUG


def reply_for(args: list[str]) -> Reply:
    return Reply("--json" in args, bool(args) and args[0] in STEP_COMMANDS)


def _fast_path(args: list[str]) -> Callable[[], int] | None:
    for size in (2, 1):
        words = tuple(args[:size])
        allowed = FAST_COMMANDS.get(words) if len(words) == size else None
        if allowed is None:
            continue
        parsed = fast_options(args[size:], allowed, FAST_VALUES.get(words, {}))
        if parsed is None:
            return None
        flags, values = parsed
        return _fast_body(words, flags, values)
    return None


def fast_options(
    rest: list[str], allowed: frozenset[str], kinds: dict[str, str]
) -> tuple[set[str], dict[str, str | int]] | None:
    """The flags and option values of ``rest`` as typer would read them, or None
    for anything else (typer then answers it, errors included): an unknown
    token, an option given twice, a missing or unusual value."""
    flags: set[str] = set()
    values: dict[str, str | int] = {}
    at = 0
    while at < len(rest):
        token = rest[at]
        at += 1
        name, eq, inline = token.partition("=")
        if not eq and token in allowed:
            if token in flags:
                return None
            flags.add(token)
            continue
        kind = kinds.get(name)
        if kind is None or name in values:
            return None
        if eq:  # `--opt=value`: click takes the value after "=" as it is
            raw = inline
        elif at < len(rest) and not rest[at].startswith("-"):
            raw = rest[at]
            at += 1
        else:  # no value, or one starting with "-" (typer would take `--json` as
            return None  # the value: a slip more likely than a meaning)
        value = _value(raw, kind)
        if value is None:
            return None
        values[name] = value
    return flags, values


def _value(raw: str, kind: str) -> str | int | None:
    if kind == "text":  # typer's `str` keeps it as it is (spaces, lone surrogates)
        return raw
    # "count": plain ASCII digits, no leading zero (so at least 1), few enough
    # that int() reads them as typer's `int, min=1` does (typer itself also takes
    # " 3", "01" or "3.0": those go through it).
    if raw.isascii() and raw.isdigit() and raw[0] != "0" and len(raw) <= 9:
        return int(raw)
    return None


def _fast_body(
    words: tuple[str, ...], flags: set[str], values: dict[str, str | int]
) -> Callable[[], int]:
    as_json = "--json" in flags
    if words == ("cycle", "end"):  # once a tick, after the implementer's turn
        import gtd.cli.cycle_cmd as cycle_cmd

        learning, review = values.get("--learning"), values.get("--review")
        cycle = values.get("--cycle")
        return lambda: cycle_cmd.end(
            as_json,
            learning if isinstance(learning, str) else None,
            cycle if isinstance(cycle, int) else None,
            review if isinstance(review, str) else None,
        )
    if words == ("cycle", "begin"):
        import gtd.cli.cycle_cmd as cycle_cmd

        tick = "--tick" in flags
        return lambda: cycle_cmd.begin(as_json, tick)
    if words == ("hook", "pre-tool-use"):
        import gtd.cli.hook_cmd as hook_cmd

        return hook_cmd.pre_tool_use
    if words == ("ratchet", "run"):
        import gtd.cli.ratchet_cmd as ratchet_cmd

        return lambda: ratchet_cmd.run(as_json)
    if words == ("plan", "next"):
        import gtd.cli.plan_cmd as plan_cmd

        return lambda: plan_cmd.next_task(as_json)
    if words == ("auto", "status"):  # a glance: answers in well under 150 ms
        import gtd.cli.auto_cmd as auto_cmd

        return lambda: auto_cmd.status(as_json)
    # `gtd next` and its kin run once per step-mode loop beat.
    from gtd.cli import step_cmd

    if len(words) == 2:
        actor = words[1]
        return lambda: step_cmd.step_as(actor, as_json)
    if words == ("run",):
        return lambda: step_cmd.run_check(as_json)
    if words == ("next",):
        return lambda: step_cmd.next_prompt(as_json)
    if words == ("status",):
        return lambda: step_cmd.status(as_json)
    agent = words == ("step-agent",)
    return lambda: step_cmd.step(agent, as_json)


def _short_flags(args: list[str]) -> list[str]:
    """The 2.x short forms: `-h` anywhere is --help, a leading `-v` is --version."""
    out = ["--help" if a == "-h" else a for a in args]
    if out[:1] == ["-v"]:
        out[0] = "--version"
    return out


def main(argv: list[str] | None = None) -> None:
    if argv is None:  # a process of its own: its streams are the helper's
        _never_raise_on_names()
    args = _short_flags(sys.argv[1:] if argv is None else argv)
    reply = reply_for(args)
    try:
        fast = _fast_path(args)
        if fast is not None:
            if argv is None:
                # A process of its own that lives one tick or one test run: the
                # cyclic collector's passes while the helper loads find nothing
                # to free (~4 M instructions of `gtd ratchet run`'s ~225 M,
                # docs/performance.md); reference counting frees what it makes.
                gc.disable()
            code = fast()
            if argv is None:  # a process of its own, not a caller's interpreter
                _exit_now(code)
            sys.exit(code)
        from gtd.cli.app import run

        sys.exit(run(args, reply))
    except GtdError as exc:
        fail(exc.render(), reply, exc.exit_code, raw=exc.raw)
    except KeyboardInterrupt:
        fail("interrupted", reply, EXIT_INTERRUPTED)
    except Exception as exc:  # a bug, not the user's mistake
        from gtd.cli.crash import report

        fail(report(exc, args), reply, CRASH_EXIT)


def _never_raise_on_names() -> None:
    """A file name that is not UTF-8 (git's bytes, a lone surrogate here) that no
    answer made readable (see gtd.names) is printed as an escape rather than
    raising while the answer is half written: the loop reads every answer."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _exit_now(code: int) -> NoReturn:
    """End the process without the interpreter's teardown (freeing every module
    and object: ~15 ms). The fast path leaves nothing to finalize: its files are
    written and closed, its subprocesses reaped; only stdio needs flushing."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # the reader went away (`gtd next | head`): nothing to say to it
        pass
    os._exit(code)
