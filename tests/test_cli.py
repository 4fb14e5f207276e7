from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from gtd import __version__
from gtd.exits import EXIT_BUG
from tests.conftest import Repo, run_gtd


def test_version(tmp_path: Path) -> None:
    res = run_gtd(tmp_path, "--version")
    assert res.code == 0
    assert res.stdout.strip() == f"gtd {__version__}"


def test_unknown_option_is_a_clear_error(tmp_path: Path) -> None:
    res = run_gtd(tmp_path, "--bogus")
    assert res.code == 1
    assert "gtd: unknown option '--bogus'" in res.stderr
    assert "Traceback" not in res.stderr


def test_group_without_command_prints_usage_and_fails(tmp_path: Path) -> None:
    res = run_gtd(tmp_path, "plan")
    assert res.code == 1
    assert "Usage:" in res.stderr


def test_outside_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    res = run_gtd(tmp_path, "plan", "next", "--json")
    assert res.code == 1
    assert "not a git repository" in res.stderr
    assert res.json["status"] == "error"


def test_subdirectory_is_refused(repo: Repo) -> None:
    sub = repo.path / "pkg"
    sub.mkdir()
    res = run_gtd(sub, "plan", "next")
    assert res.code == 1
    assert "not the repository root" in res.stderr


# -- errors: a bug is not a user error -------------------------------------------------


def _crash(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run main() with a fault injected into `gtd plan next`'s body: the crash
    handling around it is the real one."""
    code = (
        "import sys, gtd.cli, gtd.cli.plan_cmd as p\n"
        "def broken(as_json):\n"
        "    raise ZeroDivisionError('a bug')\n"
        "p.next_task = broken\n"
        f"gtd.cli.main({list(args)!r})\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env
    )


def test_a_bug_exits_3_with_a_crash_log(tmp_path: Path) -> None:
    res = _crash(tmp_path, "plan", "next")
    log = tmp_path / "cache" / "gtd" / "gtd.log"
    assert res.returncode == EXIT_BUG == 3
    assert "gtd: an unexpected error occurred: ZeroDivisionError: a bug" in res.stderr
    assert str(log) in res.stderr
    assert "Traceback" not in res.stderr
    text = log.read_text()
    assert f"gtd: {__version__}" in text
    assert "gtd plan next" in text
    assert "Traceback" in text
    assert "ZeroDivisionError: a bug" in text


def test_a_bug_under_json_answers_the_error_envelope(tmp_path: Path) -> None:
    res = _crash(tmp_path, "plan", "next", "--json")
    assert res.returncode == EXIT_BUG == 3
    assert json.loads(res.stdout)["status"] == "error"


def test_a_user_error_exits_1_with_file_and_line(repo: Repo) -> None:
    repo.write("PLAN.md", "# Plan\n\n- [ ] **T1**: a\n- [ ] **T1**: again\n")
    res = run_gtd(repo.path, "plan", "check")
    assert res.code == 1
    assert "PLAN.md:4:" in res.stdout + res.stderr


# -- the fast path and typer agree ---------------------------------------------------


def _typer_command(words: tuple[str, ...]) -> tuple[Any, list[str]]:
    """The (vendored click) command typer runs for ``words``, and the words left as
    arguments."""
    import typer

    from gtd.cli.app import app

    command: Any = typer.main.get_command(app)
    rest = list(words)
    while rest and hasattr(command, "commands"):
        sub = command.commands.get(rest[0])
        if sub is None:
            break
        command, rest = sub, rest[1:]
    return command, rest


def test_every_fast_path_argv_is_a_typer_command_with_those_options() -> None:
    from gtd.cli import FAST_COMMANDS

    for words, flags in FAST_COMMANDS.items():
        command, rest = _typer_command(words)
        assert command.name == words[len(words) - len(rest) - 1], words
        params = command.params
        options = {o for p in params if p.param_type_name == "option" for o in p.opts}
        assert flags <= options, (words, flags - options)
        arguments = [p for p in params if p.param_type_name == "argument"]
        assert len(arguments) >= len(rest), words  # `step human`: the actor argument


def test_the_step_commands_are_the_ones_step_mode_declares() -> None:
    import typer

    from gtd.cli import STEP_COMMANDS
    from gtd.cli.step_app import register

    app = typer.Typer()
    register(app)
    assert {c.name for c in app.registered_commands} == STEP_COMMANDS
