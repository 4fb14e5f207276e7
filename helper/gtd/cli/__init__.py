"""The `gtd` entry point.

Command bodies live in the ``*_cmd`` modules as plain functions; ``gtd.cli.app``
declares them to typer. The per-tick commands (`gtd cycle begin`, `gtd plan next`)
run every minute of an unattended loop, and `gtd ratchet run` is measured against
the bare test command, so when argv is exactly one of them main() calls the body
directly and typer (about 90 ms of imports) is never loaded. Any
other argv, including --help, goes through typer."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from gtd.errors import GtdError

if TYPE_CHECKING:
    from typing import NoReturn


def _fast_path(args: list[str]) -> Callable[[], int] | None:
    flags = args[2:]
    if len(args) < 2 or len(set(flags)) != len(flags):
        return None
    as_json = "--json" in flags
    if args[:2] == ["cycle", "begin"] and set(flags) <= {"--json", "--tick"}:
        import gtd.cli.cycle_cmd as cycle_cmd

        tick = "--tick" in flags
        return lambda: cycle_cmd.begin(as_json, tick)
    if args == ["hook", "pre-tool-use"]:
        import gtd.cli.hook_cmd as hook_cmd

        return hook_cmd.pre_tool_use
    if set(flags) - {"--json"}:
        return None
    if args[:2] == ["ratchet", "run"]:
        import gtd.cli.ratchet_cmd as ratchet_cmd

        return lambda: ratchet_cmd.run(as_json)
    if args[:2] == ["plan", "next"]:
        import gtd.cli.plan_cmd as plan_cmd

        return lambda: plan_cmd.next_task(as_json)
    return _step_fast_path(args)


# Step mode (the gtd 2.x surface): its errors answer {"state":"error","prompt":...}
# under --json instead of auto mode's envelope.
STEP_COMMANDS = frozenset({"step", "step-agent", "next", "status", "review", "format", "run"})
_envelope = {"step": False}  # set per invocation by main()


def _step_fast_path(args: list[str]) -> Callable[[], int] | None:
    """`gtd next` runs once per loop beat: exact step-mode argvs skip typer."""
    if not args or args[0] not in ("step", "step-agent", "next", "status", "run"):
        return None
    rest = args[1:]
    if args[0] == "step" and rest[:1] in (["human"], ["agent"], ["check"]):
        actor, rest = rest[0], rest[1:]
        if rest not in ([], ["--json"]):
            return None
        from gtd.cli import step_cmd

        return lambda: step_cmd.step_as(actor, bool(rest))
    if rest not in ([], ["--json"]):
        return None
    as_json = bool(rest)
    from gtd.cli import step_cmd

    if args[0] == "run":
        return lambda: step_cmd.run_check(as_json)
    if args[0] == "next":
        return lambda: step_cmd.next_prompt(as_json)
    if args[0] == "status":
        return lambda: step_cmd.status(as_json)
    agent = args[0] == "step-agent"
    return lambda: step_cmd.step(agent, as_json)


def _short_flags(args: list[str]) -> list[str]:
    """The 2.x short forms: `-h` anywhere is --help, a leading `-v` is --version."""
    out = ["--help" if a == "-h" else a for a in args]
    if out[:1] == ["-v"]:
        out[0] = "--version"
    return out


def main(argv: list[str] | None = None) -> None:
    args = _short_flags(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in args
    _envelope["step"] = bool(args) and args[0] in STEP_COMMANDS
    try:
        fast = _fast_path(args)
        if fast is not None:
            code = fast()
            if argv is None:  # a process of its own, not a caller's interpreter
                _exit_now(code)
            sys.exit(code)
        from gtd.cli.app import run

        sys.exit(run(args, json_mode))
    except GtdError as exc:
        fail(exc.render(), json_mode, exc.exit_code, raw=getattr(exc, "raw", False))
    except KeyboardInterrupt:
        fail("interrupted", json_mode, 130)


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


def fail(message: str, json_mode: bool, code: int, *, raw: bool = False) -> None:
    """Print ``gtd: <message>`` on stderr (``raw``: the message carries its own
    prefix) and, under --json, the command's error envelope on stdout; exit."""
    print(message if raw else f"gtd: {message}", file=sys.stderr)
    if json_mode and _envelope["step"]:
        print(json.dumps({"state": "error", "prompt": message}, ensure_ascii=False))
    elif json_mode:
        print(json.dumps({"status": "error", "error": message}, ensure_ascii=False))
    sys.exit(code)
