"""The check's wrapper script, run by real bash with hostile test commands: the
command receives exactly the argv gtd 2.x's inline run would give it (the command
split like a shell word list), nothing in the command can escape its quotes — not
in the command line, the comment or the empty-output sentinel — and the script's
effect is FEEDBACK.md on red, nothing on green (docs/step-mode.md, "Scripted
checks")."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gtd.step.actions import silent_failure_message
from gtd.step.prompts import render
from gtd.step.script import argv_of, quote, script_context
from gtd.step.settings import StepConfig

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="the check script needs bash")

# Prints nothing; writes the argv it received (as JSON) where $GTD_ARGV_OUT says,
# then exits with $GTD_EXIT_CODE.
DUMP = """\
import json, os, sys
with open(os.environ["GTD_ARGV_OUT"], "w", encoding="utf-8") as out:
    json.dump(sys.argv[1:], out)
sys.exit(int(os.environ.get("GTD_EXIT_CODE", "0")))
"""

# Words a shell would do something with, mixed into generated arguments.
HOSTILE = [
    "'",
    '"',
    "\\",
    "$HOME",
    "${IFS}",
    "$(touch PWNED)",
    "`touch PWNED`",
    "; touch PWNED",
    "&& touch PWNED",
    "| tee PWNED",
    "> PWNED",
    "*",
    "?",
    "[a]",
    "~",
    "!!",
    "#",
    "A=1",
    "time",
    "if",
    "{",
    "}",
    "-n",
    "--",
    "\n",
    "\ntouch PWNED\n",
    "\r",
    "\t",
    " ",
    "",
    "%s%n",
    "{{ state }}",
    "é ü 漢字 🙂",
]
word = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(
        # A list, not the 1-tuple ("Cs",): mypy infers that as tuple[str], not the
        # category literal characters() takes.
        alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
        max_size=12,
    ),
)
argvs = st.lists(word, max_size=6)


def _workspace(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    if not (repo / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (tmp_path / "dump.py").write_text(DUMP, encoding="utf-8")
    return repo


def _run(repo: Path, command: str, code: int) -> tuple[list[str] | None, str | None, set[str]]:
    """Run the script for ``command``; (argv the command got, FEEDBACK.md, new files)."""
    for leftover in (repo / ".gtd", repo / "PWNED"):
        shutil.rmtree(leftover, ignore_errors=True) if leftover.is_dir() else leftover.unlink(
            missing_ok=True
        )
    out = repo.parent / "argv.json"
    out.unlink(missing_ok=True)
    before = {p.name for p in repo.iterdir()}
    script = render("check", script_context(StepConfig(test_command=command), "testing"))
    env = {"PATH": "/usr/bin:/bin", "GTD_ARGV_OUT": str(out), "GTD_EXIT_CODE": str(code)}
    res = subprocess.run(
        [BASH or "bash", "-c", script], cwd=repo, env=env, capture_output=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == b""  # the command's output goes to FEEDBACK.md, not the driver
    feedback = repo / ".gtd" / "FEEDBACK.md"
    got = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    after = {p.name for p in repo.iterdir()} - before
    return got, feedback.read_bytes().decode("utf-8") if feedback.exists() else None, after


@pytest.mark.slow
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(args=argvs, code=st.sampled_from([0, 0, 1, 3]))
def test_the_command_gets_exactly_its_argv(tmp_path: Path, args: list[str], code: int) -> None:
    repo = _workspace(tmp_path)
    argv = [sys.executable, str(tmp_path / "dump.py"), *args]
    command = shlex.join(argv)
    assert argv_of(command) == argv  # what the inline run would run
    got, feedback, new = _run(repo, command, code)
    assert got == args
    assert "PWNED" not in new
    if code == 0:
        assert feedback is None
        assert new == set()
    else:
        # Red and silent: the sentinel names the command verbatim, whatever it holds.
        assert feedback == silent_failure_message(command, code) + "\n"
        assert new == {".gtd"}


@pytest.mark.slow
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=st.text(alphabet=st.sampled_from(list("ab '\"\\$`;|&<>()*?~#\n\t{}=!")), max_size=30))
def test_any_parseable_command_string_is_split_as_the_inline_run_splits_it(
    tmp_path: Path, raw: str
) -> None:
    """A raw ``testCommand`` string, not built with shlex.join: the script runs the
    same argv :func:`shlex.split` gives the inline run — never shell syntax."""
    try:
        words = shlex.split(raw)
    except ValueError:
        return  # unbalanced quotes: gtd refuses such a command in both modes
    repo = _workspace(tmp_path)
    prefix = f"{shlex.quote(sys.executable)} {shlex.quote(str(tmp_path / 'dump.py'))} "
    got, feedback, new = _run(repo, prefix + raw, 0)
    assert got == words
    assert (feedback, new) == (None, set())


def test_red_output_goes_to_feedback_and_a_stale_feedback_never_survives(tmp_path: Path) -> None:
    repo = _workspace(tmp_path)
    (repo / ".gtd").mkdir()
    (repo / ".gtd" / "FEEDBACK.md").write_text("stale findings\n")
    before = {p.name for p in repo.iterdir()}
    command = f"{shlex.quote(sys.executable)} -c \"import sys; print('out'); sys.exit(2)\""
    script = render("check", script_context(StepConfig(test_command=command), "health-check"))
    subprocess.run(["bash", "-c", script], cwd=repo, check=True, timeout=60)
    assert (repo / ".gtd" / "FEEDBACK.md").read_text() == "out\n"
    green = render("check", script_context(StepConfig(test_command="true"), "testing"))
    subprocess.run(["bash", "-c", green], cwd=repo, check=True, timeout=60)
    assert not (repo / ".gtd" / "FEEDBACK.md").exists()
    assert {p.name for p in repo.iterdir()} == before  # no temp file left behind


def test_a_missing_command_is_red_never_green(tmp_path: Path) -> None:
    repo = _workspace(tmp_path)
    script = render(
        "check", script_context(StepConfig(test_command="no-such-runner -q"), "testing")
    )
    subprocess.run(["bash", "-c", script], cwd=repo, check=True, timeout=60)
    assert "no-such-runner" in (repo / ".gtd" / "FEEDBACK.md").read_text()


def test_the_script_runs_from_the_repository_root(tmp_path: Path) -> None:
    repo = _workspace(tmp_path)
    (repo / "sub").mkdir()
    script = render("check", script_context(StepConfig(test_command="false"), "testing"))
    subprocess.run(["bash", "-c", script], cwd=repo / "sub", check=True, timeout=60)
    assert (repo / ".gtd" / "FEEDBACK.md").is_file()
    assert not (repo / "sub" / ".gtd").exists()


def test_quote_refuses_a_nul() -> None:
    from gtd.errors import GtdError

    with pytest.raises(GtdError):
        quote("a\0b")
