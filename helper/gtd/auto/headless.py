"""The headless loop behind `gtd loop --agent CMD`: what `/loop 1m /gtd:auto-cycle`
does inside Claude Code, for any command-line agent (`claude -p`, a script).

Each cycle: `Cycle.begin()`; on a task, run the agent command from the repository
root with the brief on stdin (its own process group, killed after
``agent_timeout_minutes``); a last stdout line ``Learning: …`` is passed on as the
cycle's learning; then `Cycle.end()`, which judges, commits or reverts. The agent's
last output is kept in ``.deepflow/agent-output.log`` (git-ignored). One progress
line per cycle goes to stdout::

    cycle 3 T2 passed abc1234 (2 remaining)
    cycle 4 T3 reverted: tests failed: 1 of 5 (tests/test_calc.py::test_div)

Stops, with one final line, and exit codes:

- ``complete`` / ``halted`` (circuit breaker) / ``blocked``: the loop is done,
  exit 0 — the final line says which (`gtd cycle begin` answers the same later).
- ``--max-cycles N`` reached: exit 0.
- ``dirty`` (uncommitted changes no cycle made) and ``busy`` (another cycle is in
  flight — a second driver, or a tick in Claude Code): exit 1; the loop cannot
  make progress until a human acts, and it never waits on or touches that work.
- the agent command does not exist: exit 1 before any cycle starts.
- Ctrl-C (SIGINT): the agent's process group is killed (gtd.proc), the journal
  stays, the resume hint is printed, exit 130. Interrupted while the agent ran, the
  work is still in the tree: `gtd cycle end` judges it; interrupted while checking,
  the next `begin` reverts the cycle. This holds however the loop was started (see
  `_take_sigint`).
"""

from __future__ import annotations

import re
import shutil
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gtd import paths, proc
from gtd.auto.config import load_auto_config
from gtd.clock import now
from gtd.errors import GtdError
from gtd.fsio import atomic_write

AGENT_LOG = f"{paths.STATE_DIR}/agent-output.log"
_LEARNING = re.compile(r"^\s*Learning:\s*(.+?)\s*$")

Say = Callable[[str], None]


def learning_from(output: str) -> str | None:
    """The text of the last non-empty stdout line when it reads ``Learning: …``."""
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        return None
    match = _LEARNING.match(lines[-1])
    return match.group(1) if match else None


def run_loop(root: Path, agent: str, max_cycles: int | None, say: Say) -> int:
    from gtd.auto.cycle import Cycle

    try:
        argv, via_shell = proc.command_argv(agent)
    except ValueError as exc:
        raise GtdError(f"cannot split the agent command: {exc}") from None
    if not argv:
        raise GtdError("the agent command is empty")
    if not via_shell and shutil.which(argv[0]) is None:
        raise GtdError(f"agent command not found: {argv[0]}")
    timeout_s = load_auto_config(root).agent_timeout_minutes * 60
    _take_sigint()

    cycles = 0
    while True:
        if max_cycles is not None and cycles >= max_cycles:
            say(f"stopped after {cycles} cycle(s) (--max-cycles); run `gtd loop` again to go on")
            return 0
        answer = Cycle(root, now()).begin()
        if answer.get("recovered"):
            say(f"recovered: {answer['recovered']}")
        status = answer["status"]
        if status != "task":
            return _stop(status, answer, say)
        cycles += 1
        phase = "agent"
        try:
            result = proc.run(argv, root, timeout=timeout_s, input_text=answer["brief_text"])
            _keep_output(root, result)
            phase = "checking"
            end = Cycle(root, now()).end(learning_from(result.stdout), detach=False)
        except KeyboardInterrupt:
            say(_interrupted(answer, phase))
            return 130
        say(_progress(end))


def _take_sigint() -> None:
    """Make SIGINT raise KeyboardInterrupt in this process. A non-interactive shell
    starts a background job (`gtd loop ... &` in a script, a CI step) with SIGINT
    ignored, and Python then installs no handler: Ctrl-C or `kill -INT` would do
    nothing and the loop would wait for the agent to finish on its own."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _progress(end: Mapping[str, Any]) -> str:
    head = f"cycle {end['cycle']} {end['task']}"
    if end["status"] == "passed":
        return f"{head} passed {end.get('commit', '')} ({end['remaining']} remaining)"
    return f"{head} reverted: {end.get('reason') or 'no reason given'}"


def _stop(status: str, answer: Mapping[str, Any], say: Say) -> int:
    message = str(answer.get("message", ""))
    if status == "complete":
        say(f"complete: {message} Next: run `gtd verify`.")
        return 0
    if status in ("halted", "blocked"):
        say(f"{status}: {message} Next: {answer.get('next', '')}")
        return 0
    say(f"{status}: {message} Next: {answer.get('next', '')}")
    return 1


def _interrupted(answer: Mapping[str, Any], phase: str) -> str:
    where = f"cycle {answer['cycle']} ({answer['task']})"
    if phase == "agent":
        return (
            f"interrupted: {where} stopped with the agent's work left uncommitted; "
            "run `gtd cycle end` to judge it (commit or revert), then `gtd loop` again"
        )
    return f"interrupted: {where} stopped while checking; `gtd loop` again reverts it and goes on"


def _keep_output(root: Path, result: proc.Result) -> None:
    note = ""
    if result.timed_out:
        note = "(agent timed out)\n"
    elif result.not_found:
        note = "(agent command not found)\n"
    text = f"$ {' '.join(result.argv)}\n{note}exit {result.returncode}\n--- stdout\n"
    atomic_write(root / AGENT_LOG, f"{text}{result.stdout}\n--- stderr\n{result.stderr}")
