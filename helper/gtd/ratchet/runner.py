"""Running the configured commands once, through the one subprocess seam.

Each command runs from the repository root with the config's timeout, in its own
process group (gtd.proc). The test command gets per-test outcomes for free from
any pytest it ends up starting (plain, ``python -m pytest``, make, a shell
pipeline): ``--junitxml=<temp file>`` is appended to ``PYTEST_ADDOPTS``. Other
runners report through ``ratchet.junit_xml`` (a file or glob they write; stale
matches are deleted before the run). Nothing is run twice: the overhead over the
bare command is one temp file and one XML parse.

Limits: a pytest command line that passes its own ``--junitxml`` wins over ours
(last option wins), and a command that starts pytest twice keeps only the last
report — name the file in ``ratchet.junit_xml`` in such set-ups.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path

from gtd import proc
from gtd.config import CONFIG_PATH, Config
from gtd.errors import GitError, InputError
from gtd.ratchet import junit
from gtd.ratchet.model import CommandRun, Kind, Outcome, RunResult

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


def run_all(root: Path, config: Config) -> RunResult:
    """Run every configured command once; never raises for a command's failure.

    Untracked files the commands leave behind (bytecode or reports in a
    repository that does not ignore them) are removed afterwards: they are
    neither the agent's work, to be committed, nor the human's, to make the next
    tick answer `dirty`. Ignored caches stay, so pytest keeps its speed."""
    from gtd.git import Git, sweep_created

    git = Git(root)
    try:
        before = git.status()
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
    configured = _configured_reports(root, config.junit_xml)
    for stale in configured:
        stale.unlink(missing_ok=True)
    tmpdir = Path(tempfile.mkdtemp(prefix="gtd-junit-"))
    try:
        ours = tmpdir / "pytest.xml"
        existing = os.environ.get("PYTEST_ADDOPTS", "").strip()
        addopts = f"--junitxml={shlex.quote(str(ours))}"
        env = {"PYTEST_ADDOPTS": f"{existing} {addopts}" if existing else addopts}
        run = run_command(root, "test", command, config.timeout_s, env)
        reports = [ours, *_configured_reports(root, config.junit_xml)]
        resolver = ModuleResolver(root)
        parsed: list[dict[str, Outcome]] = []
        for report in reports:
            try:
                parsed.append(junit.parse(report.read_bytes(), resolver))
            except (OSError, junit.JunitError):
                continue  # absent, or cut short by a timeout: judged by exit code
        return run, junit.merge(parsed) if parsed else None
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def run_command(
    root: Path, kind: Kind, command: str, timeout_s: float, env: dict[str, str] | None = None
) -> CommandRun:
    try:
        argv, via_shell = proc.command_argv(command)
    except ValueError as exc:
        raise InputError(
            CONFIG_PATH, f"ratchet.{kind}_command: cannot split the command: {exc}"
        ) from None
    if not argv:
        raise InputError(CONFIG_PATH, f"ratchet.{kind}_command is empty")
    result = proc.run(argv, root, timeout=timeout_s, env=env)
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


def _configured_reports(root: Path, pattern: str | None) -> list[Path]:
    """Files matching ``ratchet.junit_xml``, inside the repository only."""
    if not pattern:
        return []
    base = os.path.realpath(root)
    out: list[Path] = []
    for match in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
        real = os.path.realpath(match)
        if os.path.isfile(real) and (real == base or real.startswith(base + os.sep)):
            out.append(Path(match))
    return out


class ModuleResolver:
    """Maps a JUnit ``classname`` (``tests.test_api.TestX``) to the test file it
    names (``tests/test_api.py``) and the rest (``TestX``) by looking on disk, with
    a cache: a suite of 500 tests in 40 files costs about 100 stat calls."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, tuple[str, str] | None] = {}

    def __call__(self, classname: str) -> tuple[str, str] | None:
        if classname in self._cache:
            return self._cache[classname]
        found: tuple[str, str] | None = None
        parts = classname.split(".")
        if all(p and " " not in p and "/" not in p for p in parts):
            for i in range(len(parts), 0, -1):
                candidate = "/".join(parts[:i]) + ".py"
                if (self.root / candidate).is_file():
                    found = (candidate, ".".join(parts[i:]))
                    break
        self._cache[classname] = found
        return found
