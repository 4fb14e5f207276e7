from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gtd import __version__
from gtd.exits import EXIT_BUG, EXIT_STUCK, EXIT_USAGE
from tests.conftest import Repo, run_gtd


def test_version(tmp_path: Path) -> None:
    res = run_gtd(tmp_path, "--version")
    assert res.code == 0
    assert res.stdout.strip() == f"gtd {__version__}"


def test_unknown_option_is_a_clear_error(tmp_path: Path) -> None:
    res = run_gtd(tmp_path, "--bogus")
    assert res.code == EXIT_STUCK == 1  # bare `gtd`: gtd 2.x's contract
    assert "gtd: unknown option '--bogus'" in res.stderr
    assert "Traceback" not in res.stderr


def test_group_without_command_prints_usage_and_fails(tmp_path: Path) -> None:
    res = run_gtd(tmp_path, "plan")
    assert res.code == EXIT_USAGE == 2
    assert "Usage:" in res.stderr


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (("cycle", "end", "--bogus"), 2, "gtd: unknown option '--bogus' — see `gtd --help`"),
        (("loop", "--max-cycles", "x"), 2, "gtd: Invalid value for '--max-cycles'"),
        (("nosuch",), 2, "gtd: No such command 'nosuch'."),
        (("next", "--jsn"), 1, "gtd: unknown option '--jsn' — see `gtd --help`"),
        (("step", "--bogus"), 1, "gtd: unknown option '--bogus' — see `gtd --help`"),
        ((), 1, "Usage: gtd [OPTIONS] COMMAND"),
    ],
    ids=["auto-option", "auto-value", "command", "step-next", "step", "bare"],
)
def test_a_usage_mistake_exits_2_but_where_gtd_2x_says_1(
    tmp_path: Path, args: tuple[str, ...], code: int, said: str
) -> None:
    """docs/errors.md: 2 is the command line's own mistake; bare `gtd` and step
    mode's commands keep gtd 2.x's 1 (docs/step-mode.md)."""
    res = run_gtd(tmp_path, *args)
    assert (res.code, res.stdout) == (code, ""), res
    assert res.stderr.startswith(said), res.stderr
    assert "Traceback" not in res.stderr


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


def _options(command: Any) -> dict[str, Any]:
    return {o: p for p in command.params if p.param_type_name == "option" for o in p.opts}


def test_every_fast_path_argv_is_a_typer_command_with_those_options() -> None:
    from gtd.cli import FAST_COMMANDS, FAST_VALUES

    assert set(FAST_VALUES) <= set(FAST_COMMANDS)
    for words, flags in FAST_COMMANDS.items():
        command, rest = _typer_command(words)
        assert command.name == words[len(words) - len(rest) - 1], words
        options = _options(command)
        assert flags <= set(options), (words, flags - set(options))
        assert all(options[f].is_flag for f in flags), words  # no value expected
        for name, kind in FAST_VALUES.get(words, {}).items():
            option = options.get(name)
            assert option is not None, (words, name)
            assert not option.is_flag, name
            assert (option.nargs, option.multiple, option.envvar) == (1, False, None), name
            assert option.callback is None, name
            info = option.type_descriptor.parameter_info  # typer's own: no parser of ours
            assert (info.parser, info.clamp, info.count) == (None, False, False), name
            wanted = (str, None, None) if kind == "text" else (int, 1, None)
            assert kind in {"text", "count"}, (name, kind)
            got = (option.type_descriptor.annotation, option.min, option.max)
            assert got == wanted, (name, got)
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        assert len(arguments) >= len(rest), words  # `step human`: the actor argument


def _fast_and_typer(words: tuple[str, ...], rest: list[str]) -> tuple[Any, Any]:
    """What the fast path reads from ``rest`` (None: it hands the argv to typer)
    and the parameters typer reads (None: a usage error), each as
    {parameter: value}."""
    import typer

    from gtd.cli import FAST_COMMANDS, FAST_VALUES, fast_options

    command, _ = _typer_command(words)
    try:
        typer_params = command.make_context(words[-1], list(rest)).params
    except (typer.TyperException, typer.Exit):  # a usage error; --help
        typer_params = None
    got = fast_options(list(rest), FAST_COMMANDS[words], FAST_VALUES.get(words, {}))
    if got is None:
        return None, typer_params
    flags, values = got
    options = _options(command)
    fast = {p.name: p.default for p in command.params}
    fast.update({options[f].name: True for f in flags})
    fast.update({options[o].name: v for o, v in values.items()})
    return fast, typer_params


_END = ("cycle", "end")


def test_cycle_end_reads_its_options_as_typer_does() -> None:
    taken = [
        [],
        ["--json"],
        ["--cycle", "7"],
        ["--cycle=12", "--json"],
        ["--json", "--cycle", "3", "--learning", "a spike: x = 1 works"],
        ["--cycle", "3", "--review", "Verdict: object: the test asserts nothing"],
        ["--review=Verdict: approve", "--cycle", "999999999"],
        ["--learning=-starts with a dash", "--json"],
        ["--learning", ""],
        ["--learning", "ünïcode, \udcff a lone surrogate"],
    ]
    handed_on = [
        ["--help"],
        ["--json", "--json"],
        ["--cycle", "3", "--cycle", "4"],
        ["--cycle"],
        ["--cycle", "0"],
        ["--cycle", "007"],
        ["--cycle", "-3"],
        ["--cycle", "+3"],
        ["--cycle", " 3"],
        ["--cycle", "1_000"],
        ["--cycle", "1234567890"],
        ["--cycle", "٣"],
        ["--learning", "--json"],
        ["--learning", "-x"],
        ["--json=yes"],
        ["--tick"],
        ["extra"],
        ["--", "--json"],
        ["--lear", "x"],
    ]
    for rest in taken:
        fast, typer_params = _fast_and_typer(_END, rest)
        assert fast is not None, rest
        assert fast == typer_params, rest
    for rest in handed_on:
        fast, _ = _fast_and_typer(_END, rest)
        assert fast is None, rest


def test_cycle_end_argvs_the_fast_path_hands_on_read_as_typer_errors(tmp_path: Path) -> None:
    # Outside a repository: typer's usage error comes before the body would fail.
    for args, said in (
        (("--cycle", "0"), "greater than or equal to 1"),
        (("--cycle",), "requires an argument"),
        (("--bogus",), "unknown option '--bogus'"),
    ):
        res = run_gtd(tmp_path, "cycle", "end", *args)
        assert res.code == EXIT_USAGE, (args, res)
        assert "gtd: " in res.stderr, (args, res.stderr)
        assert said in res.stderr, (args, res.stderr)
        assert "not a git repository" not in res.stderr, args  # typer answered first
        assert "Traceback" not in res.stderr, args
    res = run_gtd(tmp_path, "cycle", "end", "--cycle", "3", "--json")  # the fast path
    assert res.code == 1, res
    assert "not a git repository" in res.stderr, res
    assert res.json["status"] == "error"


_TOKENS = [
    "--json", "--tick", "--cycle", "--learning", "--review", "--help", "--", "-x",
    "1", "2", "0", "01", "-1", " 5", "x", "", "=", "--cycle=4", "--cycle=",
    "--learning=a=b", "--review=-", "--json=1", "Verdict: approve",
]  # fmt: skip


@given(st.lists(st.sampled_from(_TOKENS), max_size=6))
def test_what_the_fast_path_reads_typer_reads_the_same(rest: list[str]) -> None:
    from gtd.cli import FAST_COMMANDS

    for words in FAST_COMMANDS:
        if words in {_END, ("cycle", "begin"), ("ratchet", "run")}:
            fast, typer_params = _fast_and_typer(words, rest)
            if fast is not None:
                assert fast == typer_params, (words, rest)


def test_the_step_commands_are_the_ones_step_mode_declares() -> None:
    import typer

    from gtd.cli import STEP_COMMANDS
    from gtd.cli.step_app import register

    app = typer.Typer()
    register(app)
    assert {c.name for c in app.registered_commands} == STEP_COMMANDS
