"""The headless loop behind `gtd loop --agent CMD`: what `/loop 1m /gtd:auto-cycle`
does inside Claude Code, for any command-line agent (`claude -p`, a script).

Each cycle: `Cycle.begin()`; on a task, run the agent command from the repository
root with the brief on stdin (its own process group, killed after
``agent_timeout_minutes``); a last stdout line ``Learning: …`` is passed on as the
cycle's learning; then `Cycle.end()`, which judges, commits or reverts. How the
agent ended is recorded with the cycle: its exit status, and when that is not 0
the last lines of its output (stderr, or stdout when stderr is empty); memory and
the report show both. Each cycle's whole agent output is kept in
``.deepflow/agent-logs/cycle-N.log`` (ignored by git, never overwritten by a later
cycle); the logs of the newest ``KEEP_LOGS`` cycles are kept, and of older ones
only those of agents that failed (the report names them). One progress line per
cycle goes to stdout::

    cycle 3 T2 passed abc1234 (2 remaining)
    cycle 4 T3 reverted: tests failed: 1 of 5 (tests/test_calc.py::test_div)
    cycle 5 T3 reverted: no changes: … (the agent exited 3: oops)

With ``parallel`` (`--parallel N`, else the config's ``parallel:``) a ``wave``
answer runs one agent per task at once, each in its worktree, then ends each
cycle in plan order (gtd.auto.headless_wave, docs/parallel.md).

While another process is judging a cycle (a `gtd cycle end` whose tests outlived
its wait) or taking a new baseline after a person's commit, `begin` answers busy:
the loop says ``waiting: …`` once and asks again every few seconds, rather than
stopping; the verdict that comes in is reported as ``previous: …``.

Stops, with one final line, and exit codes (``gtd.exits``):

- ``complete``: every task is done, exit 0 (then run `gtd verify`);
  ``--max-cycles N`` reached: exit 0.
- ``halted``: the circuit breaker tripped, or a forced halt (the agent changed the
  helper's state, a broken baseline after a person's commit, a cycle that could not
  finish): exit 5 (3 is kept for a bug in gtd: docs/errors.md). The final line
  names the task and the command that resumes.
- ``paused``: the harness stopped the last agent (a usage or rate limit, an
  overloaded API, a network drop, an expired login, a killed agent; read from its
  exit and output by gtd.auto.harness): its work is kept, the breaker does not
  count it, and the loop sleeps until the time `begin` answers, then goes on. A
  pause longer than ``pause.longest_pause_minutes`` is a halt.
- ``blocked``: every remaining task waits on an unfinished blocker: exit 4.
- ``dirty`` (uncommitted changes no cycle made), ``busy`` with a cycle whose agent
  is still at work (a second driver, a tick in Claude Code, a loop stopped with
  Ctrl-C), an operational error, or an agent command that does not exist: exit 1;
  the loop cannot make progress until a person acts, and it never touches that work.
- Ctrl-C (SIGINT): the agent's process group is killed (gtd.proc), the journal
  stays, the resume hint is printed, exit 130. Interrupted while the agent ran, the
  work is still in the tree: `gtd cycle end` judges it; interrupted while checking,
  the next `begin` reverts the cycle. This holds however the loop was started (see
  `_take_sigint`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gtd import exits, paths, proc
from gtd.auto.config import load_auto_config
from gtd.clock import now
from gtd.errors import GtdError
from gtd.fsio import atomic_write, read_bytes

# The loop's outcomes, from the one table of exit codes (gtd.exits, docs/errors.md).
EXIT_DONE = exits.EXIT_DONE
EXIT_STUCK = exits.EXIT_STUCK
EXIT_HALTED = exits.EXIT_HALTED
EXIT_BLOCKED = exits.EXIT_BLOCKED
EXIT_INTERRUPTED = exits.EXIT_INTERRUPTED
AGENT_TIMED_OUT = 124  # the status recorded for an agent killed at its timeout (as timeout(1))
POLL_S = 1.0  # how often a waiting loop asks `begin` again
KEEP_LOGS = 100  # the newest cycles whose agent logs are all kept
TAIL_LINES = 20
TAIL_CHARS = 2000
_LOG_NAME = re.compile(r"^cycle-(\d+)\.log$")
_LEARNING = re.compile(r"^\s*Learning:\s*(.+?)\s*$")

Say = Callable[[str], None]


def agent_log(cycle: int) -> str:
    """Where cycle ``cycle``'s agent output is kept, relative to the root."""
    return f"{paths.AGENT_LOGS}/cycle-{cycle}.log"


def learning_from(output: str) -> str | None:
    """The text of the last non-empty stdout line when it reads ``Learning: …``."""
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        return None
    match = _LEARNING.match(lines[-1])
    return match.group(1) if match else None


def agent_status(result: proc.Result) -> int:
    """The agent's exit status as a shell reports it: 124 when it was killed at its
    timeout, 128+N when a signal N ended it."""
    if result.timed_out:
        return AGENT_TIMED_OUT
    if result.returncode < 0:
        return 128 - result.returncode
    return result.returncode


def agent_tail(result: proc.Result, timeout_min: int) -> str | None:
    """The end of a failed agent's output (stderr, or stdout when stderr is
    empty): what a person needs to see why it failed. None when it exited 0."""
    if agent_status(result) == 0:
        return None
    text = result.stderr if result.stderr.strip() else result.stdout
    lines = text.rstrip().splitlines()[-TAIL_LINES:]
    tail = "\n".join(lines)[-TAIL_CHARS:]
    if result.timed_out:
        tail = f"(the agent timed out after {timeout_min} min)\n{tail}".rstrip()
    return tail or "(no output)"


def run_loop(
    root: Path, agent: str, max_cycles: int | None, say: Say, parallel: int | None = None
) -> int:
    """``parallel``: how many tasks a wave may start, for this loop (None: the
    sealed config's ``parallel:``; docs/parallel.md)."""
    from gtd.auto.cycle import Cycle

    try:
        argv, via_shell = proc.command_argv(agent)
    except ValueError as exc:
        raise GtdError(f"cannot split the agent command: {exc}") from None
    if not argv:
        raise GtdError("the agent command is empty")
    if not via_shell and shutil.which(argv[0]) is None:
        raise GtdError(f"agent command not found: {argv[0]}")
    config = load_auto_config(root)
    timeout_min = config.agent_timeout_minutes
    reviewer = _reviewer(config.review_command, argv)
    from gtd.auto import agent_fence, sandbox

    unfenced = agent_fence.wrap(argv, root)[1]
    if unfenced:  # a note, not a verdict: stderr keeps the loop's lines as they are
        print(f"gtd loop: {unfenced}", file=sys.stderr)
    _take_sigint()

    def end_one(cycle: int, result: proc.Result) -> tuple[Mapping[str, Any], int, str | None]:
        """End cycle ``cycle`` whose agent ran as ``result`` (with the reviewer's
        turn when review.agent asks for it)."""
        _keep_output(root, cycle, result)
        code, tail = agent_status(result), agent_tail(result, timeout_min)
        from gtd.auto import harness
        from gtd.auto.cycle.spent import Said

        clock = now()
        end = Cycle(root, clock).end(
            learning_from(result.stdout),
            cycle=cycle,
            detach=False,
            agent_exit=code,
            agent_tail=tail,
            stopped=harness.from_agent(code, result.stdout, result.stderr, clock.epoch),
            spent=Said(result.stdout),
        )
        if end["status"] == "review":  # review.agent: the reviewer's turn
            brief = (root / str(end["brief"])).read_text("utf-8")
            said = proc.run(reviewer, root, timeout=timeout_min * 60, input_text=brief)
            end = Cycle(root, now()).end(
                learning_from(result.stdout),
                cycle=cycle,
                detach=False,
                agent_exit=code,
                agent_tail=tail,
                review=said.stdout,
                spent=Said(result.stdout, said.stdout),
            )
        return end, code, tail

    cycles = 0
    waiting: str | None = None
    while True:
        if max_cycles is not None and cycles >= max_cycles:
            ran = f"{cycles} cycle" if cycles == 1 else f"{cycles} cycles"
            say(f"stopped after {ran} (--max-cycles); run `gtd loop` again to go on")
            return EXIT_DONE
        try:
            beginning = Cycle(root, now())
            beginning.parallel = parallel
            answer = beginning.begin()
        except KeyboardInterrupt:
            say("interrupted before a cycle started; run `gtd loop` again to go on")
            return EXIT_INTERRUPTED
        if answer.get("recovered"):
            say(f"recovered: {answer['recovered']}")
        if answer.get("previous"):
            say(f"previous: {answer['previous']}")
        status = answer["status"]
        if status == "busy" and answer.get("phase") == "checking":
            # A verdict or a new baseline is being worked out by a process that
            # finishes on its own: wait for it, asking again now and then.
            message = str(answer.get("message", ""))
            if message != waiting:
                say(f"waiting: {message}")
                waiting = message
            try:
                _reap()
                time.sleep(POLL_S)
            except KeyboardInterrupt:
                say(f"interrupted while waiting ({message}); run `gtd loop` again to go on")
                return EXIT_INTERRUPTED
            continue
        waiting = None
        if status == "paused":
            code = _sleep_paused(answer, say)
            if code is not None:
                return code
            continue
        if status == "wave":
            from gtd.auto import headless_wave

            cycles += len(answer["cycles"])
            try:
                ended = headless_wave.run(root, argv, answer, timeout_min, end_one)
            except KeyboardInterrupt:
                say(f"interrupted during wave {answer['wave']}; run `gtd loop` again to go on")
                return EXIT_INTERRUPTED
            for end, code, tail in ended:
                say(_progress(end, code, tail))
                if end["status"] in ("passed", "reverted", "paused", "queued"):
                    Cycle(root, now()).acknowledge(int(end["cycle"]))
            continue
        if status != "task":
            sandbox.follow(root, dict(answer))  # the loop ends: the settings go
            _release_user_settings(root)
            return _stop(status, answer, say)
        cycles += 1
        phase = "agent"
        cycle = int(answer["cycle"])
        try:
            # fenced anew each cycle: the last cycle's tests are protected now
            fenced = agent_fence.wrap(argv, root)[0]
            result = proc.run(
                fenced, root, timeout=timeout_min * 60, input_text=answer["brief_text"]
            )
            phase = "checking"
            end, code, tail = end_one(cycle, result)
        except KeyboardInterrupt:
            say(_interrupted(answer, phase))
            return EXIT_INTERRUPTED
        say(_progress(end, code, tail))
        if end["status"] in ("passed", "reverted", "paused"):
            Cycle(root, now()).acknowledge(cycle)


def _reviewer(command: str | None, agent: list[str]) -> list[str]:
    """The reviewer's command (``review.command``), else the agent's own."""
    if command is None:
        return agent
    try:
        argv, _ = proc.command_argv(command)
    except ValueError as exc:
        raise GtdError(f"cannot split review.command: {exc}") from None
    return argv or agent


def _sleep_paused(answer: Mapping[str, Any], say: Say) -> int | None:
    """Wait out a pause (the harness stopped the last agent: a usage limit, an
    overloaded API): sleep until the time `begin` answered, then ask again. None
    to go on; the exit code when Ctrl-C ends the wait."""
    from gtd.auto.pause import epoch

    say(f"paused: {answer.get('message', '')}")
    until = epoch(str(answer.get("until", "")))
    try:
        while True:
            left = until - now().epoch
            if left <= 0:
                return None
            time.sleep(min(left, 30.0))
    except KeyboardInterrupt:
        say("interrupted while paused; run `gtd loop` again to go on")
        return EXIT_INTERRUPTED


def _reap() -> None:
    """Collect our finished children: a baseline worker `begin` forked and stopped
    waiting for would stay a zombie, which looks alive, and `begin` would answer
    busy for ever."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _take_sigint() -> None:
    """Make SIGINT raise KeyboardInterrupt in this process. A non-interactive shell
    starts a background job (`gtd loop ... &` in a script, a CI step) with SIGINT
    ignored, and Python then installs no handler: Ctrl-C or `kill -INT` would do
    nothing and the loop would wait for the agent to finish on its own."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _progress(end: Mapping[str, Any], code: int, tail: str | None) -> str:
    head = f"cycle {end.get('cycle')} {end.get('task')}"
    if end["status"] == "passed":
        line = f"{head} passed {end.get('commit', '')} ({end['remaining']} remaining)"
    elif end["status"] == "reverted":
        line = f"{head} reverted: {end.get('reason') or 'no reason given'}"
    elif end["status"] == "queued":  # a wave's task whose change met another's
        line = f"{head} back to the queue: {end.get('reason') or ''}"
    elif end["status"] == "paused":
        line = f"{head} paused until {end.get('until')}: {end.get('reason') or ''}"
    else:  # the cycle could not finish (git refused the commit): the next begin says why
        line = f"{head} {end['status']}: {end.get('message', '')}"
    if code != 0:
        last = next((x.strip() for x in reversed((tail or "").splitlines()) if x.strip()), "")
        line += f" (the agent exited {code}" + (f": {last[:200]})" if last else ")")
    return line


def _stop(status: str, answer: Mapping[str, Any], say: Say) -> int:
    message = str(answer.get("message", ""))
    if status == "complete":
        say(f"complete: {message} Next: run `gtd verify`.")
        return EXIT_DONE
    say(f"{status}: {message} Next: {answer.get('next', '')}")
    if status == "halted":
        return EXIT_HALTED
    if status == "blocked":
        return EXIT_BLOCKED
    return EXIT_STUCK


def _interrupted(answer: Mapping[str, Any], phase: str) -> str:
    where = f"cycle {answer['cycle']} ({answer['task']})"
    if phase == "agent":
        return (
            f"interrupted: {where} stopped with the agent's work left uncommitted; "
            "run `gtd cycle end` to judge it (commit or revert), then `gtd loop` again"
        )
    return f"interrupted: {where} stopped while checking; `gtd loop` again reverts it and goes on"


def _keep_output(root: Path, cycle: int, result: proc.Result) -> None:
    note = ""
    if result.timed_out:
        note = "(agent timed out)\n"
    elif result.not_found:
        note = "(agent command not found)\n"
    text = f"$ {' '.join(result.argv)}\n{note}exit {agent_status(result)}\n--- stdout\n"
    log = root / agent_log(cycle)
    log.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(log, f"{text}{result.stdout}\n--- stderr\n{result.stderr}")
    prune_logs(log.parent, cycle)


def prune_logs(folder: Path, newest: int, keep: int = KEEP_LOGS) -> list[Path]:
    """Remove the logs of agents that exited 0 in cycles older than the newest
    ``keep``; a failed agent's log stays (the report points at it). Returns what
    was removed. Only ``cycle-N.log`` files are looked at: nothing else there is
    the helper's."""
    removed: list[Path] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        match = _LOG_NAME.match(name)
        if match is None or int(match.group(1)) > newest - keep:
            continue
        path = folder / name
        try:
            # fsio's: a named pipe given a log's name would wait for a writer
            start = read_bytes(path, limit=4096).decode("utf-8", "replace")
            head = start.splitlines(keepends=True)[:3]
        except OSError:
            continue
        if "exit 0\n" in head:
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
    return removed


def _release_user_settings(root: Path) -> None:
    """The night's no-prompt key of the person's user settings, if this loop
    held it (gtd.auto.user_settings), goes with the loop."""
    from gtd.auto import user_settings
    from gtd.errors import GtdError

    with contextlib.suppress(OSError, GtdError):
        user_settings.release(root)
