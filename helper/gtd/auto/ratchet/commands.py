"""The configured commands (build, test, typecheck, lint), each run once through
the one subprocess seam; where they run and what they may see is the caller's
(gtd.auto.ratchet.room_run for the clean room).

Each command runs from the directory it is given (a clean room's checkout, see
gtd.auto.ratchet.room) with the config's timeout, in its own process group
(gtd.proc). The test command runs with the environment of
gtd.auto.ratchet.report_listener, so any pytest it ends up starting (plain, ``python -m
pytest``, make, a shell pipeline) reports per-test outcomes; other runners report
through ``ratchet.junit_xml``; a ``<python> -m unittest`` command runs through
the helper's own unittest runner, which reports as the plugin does
(gtd.auto.ratchet.unittest_channel). Nothing is run twice.

Limits: where the plugin cannot load (the command replaces ``PYTHONPATH``), the
JUnit fallback applies: a pytest command line that passes its own ``--junitxml``
wins over ours (last option wins), and a command that starts pytest twice keeps
only the last report — name the file in ``ratchet.junit_xml`` in such set-ups.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import proc
from gtd.auto.config import AutoConfig
from gtd.auto.ratchet import checklog, leftovers, report_listener
from gtd.auto.ratchet.model import CommandRun, Kind, Outcome, RunResult
from gtd.auto.ratchet.results import NO_REPORT, Report
from gtd.errors import InputError
from gtd.paths import CONFIG as CONFIG_PATH
from gtd.spawned import Spawned, start_logged
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from collections.abc import Callable

    from gtd.auto.ratchet.box import Box
    from gtd.auto.ratchet.held import Held

TAIL_LINES = 60
_LINE_MAX = 500
_SHELL_NOT_FOUND = re.compile(r"([^\s:]+): (?:command )?not found")


def planned(config: AutoConfig) -> list[tuple[Kind, str]]:
    """The configured commands in run order (build, test, typecheck, lint)."""
    pairs: list[tuple[Kind, str | None]] = [
        ("build", config.build_command),
        ("test", config.test_command),
        ("typecheck", config.typecheck_command),
        ("lint", config.lint_command),
    ]
    return [(kind, command) for kind, command in pairs if command]


class Run(NamedTuple):
    """One run of the configured commands: the results the verdict compares, and
    everything the plugin reported (tamper evidence, collection, sessions)."""

    result: RunResult
    report: Report


def run_all(
    cwd: Path,
    config: AutoConfig,
    *,
    env: dict[str, str] | None = None,
    reports_dir: Path | None = None,
    only: frozenset[str] = frozenset({"build", "test", "typecheck", "lint"}),
    request: report_listener.Request | None = None,
    held: Held | None = None,
    ended: Callable[[], None] | None = None,
    box: Box | None = None,
    readable: tuple[str, ...] = (),
    writable: tuple[str, ...] = (),
) -> Run:
    """Run every configured command (of the kinds in ``only``) once from ``cwd``;
    never raises for a command's failure. ``env`` adds to each command's
    environment; ``reports_dir`` is where the test run's report files go (a clean
    room's slot; by default the repository's cache); ``request`` what the test run
    asks of the plugin (a selection, roots no module may come from, a redirect);
    ``held`` the test command already started in ``cwd`` (gtd.auto.ratchet.held),
    run by this call or, where no test command runs, called off. ``ended``:
    called once the last command that runs has ended — when it is the test
    command, before its report is read, so that work on what the commands left
    (a git call) overlaps with reading it. ``box``: the commands run in it
    (gtd.auto.ratchet.box), ``cwd``, the report folder and ``writable`` writable,
    ``readable`` visible."""
    commands: list[CommandRun] = []
    tests: dict[str, Outcome] | None = None
    skips: dict[str, str] = {}
    report = NO_REPORT
    plan = [(kind, command) for kind, command in planned(config) if kind in only]
    for kind, command in plan:
        if kind == "test":
            last = ended if (kind, command) == plan[-1] else None
            run, report = run_tests(
                cwd, command, config, env, reports_dir, request, held, last, box, readable,
                writable,
            )  # fmt: skip
            if last is not None:
                ended = None
            held = None
            if report.complete:
                tests = report.outcomes
                skips = {
                    t: r.where for t, r in report.tests.items() if r.where and r.outcome != "passed"
                }
        else:
            run = run_command(
                cwd, kind, command, config.timeout_s, env, box=box, readable=readable,
                writable=writable,
            )  # fmt: skip
        commands.append(run)
    if held is not None:
        held.cancel()
    if ended is not None:
        ended()
    return Run(RunResult(tuple(commands), tests, skips), report)


def run_tests(
    cwd: Path,
    command: str,
    config: AutoConfig,
    env: dict[str, str] | None = None,
    reports_dir: Path | None = None,
    request: report_listener.Request | None = None,
    held: Held | None = None,
    ended: Callable[[], None] | None = None,
    box: Box | None = None,
    readable: tuple[str, ...] = (),
    writable: tuple[str, ...] = (),
) -> tuple[CommandRun, Report]:
    """The test command, with the plugin set up to report into this process
    (``held``: started already, see gtd.auto.ratchet.held); ``ended`` called
    once it has ended, before its report is read."""
    asked = (request or report_listener.Request(cwd))._replace(root=cwd, junit_xml=config.junit_xml)
    if held is not None:
        if held.command != command or held.listener.request.root != cwd:
            held.cancel()
        else:
            released = held.release(asked, config.timeout_s, ended)
            if released is not None:
                argv, via_shell = proc.command_argv(command)
                ran = _command_run(
                    "test", command, config.timeout_s, argv, via_shell, released.result,
                    released.left,
                )  # fmt: skip
                return ran, released.report
    listener = report_listener.start(asked, where=reports_dir)
    try:
        run = run_command(
            cwd,
            "test",
            command,
            config.timeout_s,
            {**(env or {}), **listener.env},
            pass_fds=listener.pass_fds,
            box=box,
            writable=(str(listener.files.folder), *writable),
            readable=readable,
        )
    except BaseException:
        listener.abort()
        raise
    if ended is not None:
        ended()
    return run, listener.finish()


def run_command(
    cwd: Path,
    kind: Kind,
    command: str,
    timeout_s: float,
    env: dict[str, str] | None = None,
    *,
    pass_fds: tuple[int, ...] = (),
    box: Box | None = None,
    writable: tuple[str, ...] = (),
    readable: tuple[str, ...] = (),
) -> CommandRun:
    try:
        argv, via_shell = proc.command_argv(command)
    except ValueError as exc:
        raise InputError(
            CONFIG_PATH, f"ratchet.{kind}_command: cannot split the command: {exc}"
        ) from None
    if not argv:
        raise InputError(CONFIG_PATH, f"ratchet.{kind}_command is empty")
    # A long command (gtd.Spawned): the run is not held up by a process it
    # left running, and its output does not wake this one at every write.
    spawned = argv
    listed: tuple[int, int] | None = None  # what the test command leaves running
    if kind == "test":  # `<python> -m unittest`: through the runner that reports per test
        from gtd.auto.ratchet.unittest_channel import wrapped

        spawned = wrapped(argv, env)
    if box is not None and box.boxed and proc.which(argv[0], _path(env)) is not None:
        # (a missing program is found missing unboxed, and named: see _missing)
        from gtd.auto.ratchet.box import wrap

        listed = leftovers.channel() if kind == "test" else None
        spawned = wrap(
            box, spawned, str(cwd), writable=(str(cwd), *writable), readable=readable,
            environ={**os.environ, **(env or {})}, left_fd=listed[1] if listed else None,
        )  # fmt: skip
        pass_fds = (*pass_fds, *listed[1:]) if listed else pass_fds
    try:
        child = start_logged(spawned, cwd, env=env, pass_fds=pass_fds)
    finally:
        if listed:
            os.close(listed[1])
    if isinstance(child, Spawned):
        child.args = tuple(argv)  # named as configured, not as boxed
    result = child if isinstance(child, proc.Result) else child.finish(timeout_s)
    left = leftovers.collect(listed[0]) if listed else None
    return _command_run(kind, command, timeout_s, argv, via_shell, result, left)


def _path(env: dict[str, str] | None) -> str | None:
    return (env or {}).get("PATH", os.environ.get("PATH"))


def _command_run(
    kind: Kind,
    command: str,
    timeout_s: float,
    argv: list[str],
    via_shell: bool,
    result: proc.Result,
    left: tuple[str, ...] | None = None,
) -> CommandRun:
    output = result.output
    checklog.record(kind, command, result)
    if left:
        checklog.note(f"{kind}: {leftovers.described(left)}")
    return CommandRun(
        kind=kind,
        command=command,
        exit_code=result.returncode,
        duration_s=round(result.duration_s, 3),
        timeout_s=timeout_s,
        timed_out=result.timed_out,
        missing=_missing(argv, via_shell, command, result, output),
        output_tail=tail(output),
        left=left,
    )


def _missing(
    argv: list[str], via_shell: bool, command: str, result: proc.Result, output: str
) -> str | None:
    """The name of the executable (or python module) that does not exist, if any."""
    if result.not_found:
        return argv[0]
    if result.timed_out or result.returncode == 0:
        return None
    if via_shell and result.returncode == 127:
        found = _SHELL_NOT_FOUND.findall(output)
        return found[-1] if found else command.split(maxsplit=1)[0]
    # `python3 -m pytest` without pytest installed: the tests never ran.
    if "-m" in argv[1:-1]:
        module = argv[argv.index("-m", 1) + 1]
        if f"No module named {module}" in output:
            return module
    return None


def tail(text: str, lines: int = TAIL_LINES) -> str:
    kept = text.rstrip("\n").splitlines()[-lines:]
    return "\n".join(line if len(line) <= _LINE_MAX else line[:_LINE_MAX] + "…" for line in kept)
