"""Running the configured commands once, through the one subprocess seam.

Each command runs from the repository root with the config's timeout, in its own
process group (gtd.proc). The test command runs with the environment of
gtd.auto.ratchet.reports, so any pytest it ends up starting (plain, ``python -m
pytest``, make, a shell pipeline) reports per-test outcomes; other runners report
through ``ratchet.junit_xml``. Nothing is run twice.

Limits: where the plugin cannot load (the command replaces ``PYTHONPATH``), the
JUnit fallback applies: a pytest command line that passes its own ``--junitxml``
wins over ours (last option wins), and a command that starts pytest twice keeps
only the last report — name the file in ``ratchet.junit_xml`` in such set-ups.
"""

from __future__ import annotations

import re
from pathlib import Path

from gtd import proc
from gtd.auto.config import CONFIG_PATH, Config
from gtd.auto.ratchet import reports
from gtd.auto.ratchet.model import CommandRun, Kind, Outcome, RunResult
from gtd.errors import GitError, InputError

TAIL_LINES = 60
_LINE_MAX = 500
_SHELL_NOT_FOUND = re.compile(r"([^\s:]+): (?:command )?not found")


def planned(config: Config) -> list[tuple[Kind, str]]:
    """The configured commands in run order (build, test, typecheck, lint)."""
    pairs: list[tuple[Kind, str | None]] = [
        ("build", config.build_command),
        ("test", config.test_command),
        ("typecheck", config.typecheck_command),
        ("lint", config.lint_command),
    ]
    return [(kind, command) for kind, command in pairs if command]


def run_all(root: Path, config: Config, untracked: set[str] | None = None) -> RunResult:
    """Run every configured command once; never raises for a command's failure.

    Untracked files the commands leave behind (bytecode or reports in a
    repository that does not ignore them) are removed afterwards: they are
    neither the agent's work, to be committed, nor the human's, to make the next
    tick answer `dirty`. Ignored caches stay, so pytest keeps its speed.
    ``untracked`` is the untracked files now, when the caller has listed them."""
    from gtd.git import Git, sweep_created

    git = Git(root)
    before = untracked
    if before is None:
        try:
            before = git.untracked()
        except GitError:  # not a repository (a bare directory in tests): nothing to sweep
            before = None
    commands: list[CommandRun] = []
    tests: dict[str, Outcome] | None = None
    for kind, command in planned(config):
        if kind == "test":
            run, tests = run_tests(root, command, config)
        else:
            run = run_command(root, kind, command, config.timeout_s)
        commands.append(run)
    if before is not None:
        sweep_created(git, root, before)
    return RunResult(tuple(commands), tests)


def run_tests(
    root: Path, command: str, config: Config
) -> tuple[CommandRun, dict[str, Outcome] | None]:
    for stale in reports.configured(root, config.junit_xml):
        stale.unlink(missing_ok=True)
    listener = reports.start(reports.Request(root, config.junit_xml))
    try:
        run = run_command(
            root, "test", command, config.timeout_s, listener.env, pass_fds=listener.pass_fds
        )
    except BaseException:
        listener.abort()
        raise
    return run, listener.finish().junit_outcomes


def run_command(
    root: Path,
    kind: Kind,
    command: str,
    timeout_s: float,
    env: dict[str, str] | None = None,
    *,
    pass_fds: tuple[int, ...] = (),
) -> CommandRun:
    try:
        argv, via_shell = proc.command_argv(command)
    except ValueError as exc:
        raise InputError(
            CONFIG_PATH, f"ratchet.{kind}_command: cannot split the command: {exc}"
        ) from None
    if not argv:
        raise InputError(CONFIG_PATH, f"ratchet.{kind}_command is empty")
    result = proc.run(argv, root, timeout=timeout_s, env=env, pass_fds=pass_fds)
    output = result.output
    return CommandRun(
        kind=kind,
        command=command,
        exit_code=result.returncode,
        duration_s=round(result.duration_s, 3),
        timeout_s=timeout_s,
        timed_out=result.timed_out,
        missing=_missing(argv, via_shell, command, result, output),
        output_tail=tail(output),
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
