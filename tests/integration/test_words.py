"""Answers a person can act on, read as the text they see: a module that does not
compile is named with its file and line, at setup and in a cycle's revert; counts
read in the singular when there is one (the set-up's snapshot message is checked
in test_setup_words.py); the answer docs/report.md shows is the one a real cycle
prints."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Repo
from tests.integration.calc_project import MUL, TESTS, make_project, run_cli
from tests.integration.test_setup_words import answer_lines, project, setup

BROKEN_CALC = "def add(a, b):\n    return a +\n"


def test_a_baseline_whose_module_does_not_compile_names_the_module_and_line(
    repo: Repo,
) -> None:
    project(repo)
    repo.write("calc.py", BROKEN_CALC)
    repo.commit_all("initial")
    repo.git("switch", "-q", "-c", "gtd-auto")

    said = answer_lines(setup(repo))

    assert said["status"] == "baseline-broken"
    assert said["fix"] == (
        "correct the SyntaxError in calc.py at line 2: invalid syntax "
        "(found while collecting tests/test_calc.py)"
    )
    assert said["next"].startswith(said["fix"] + "; then rerun `gtd auto setup`")


def test_a_baseline_whose_test_process_is_killed_names_the_signal(repo: Repo) -> None:
    project(repo)
    repo.write(
        "tests/test_dies.py",
        "import os, signal\n\n\ndef test_dies():\n    os.kill(os.getpid(), signal.SIGKILL)\n",
    )
    repo.commit_all("initial")
    repo.git("switch", "-q", "-c", "gtd-auto")

    said = answer_lines(setup(repo))

    assert said["status"] == "baseline-broken"
    assert said["problem"].startswith("the test process was killed by SIGKILL (exit status ")
    assert (
        "likely killed from outside: the system's out-of-memory killer or a person"
        in said["problem"]
    )
    assert said["next"] == (
        "if nothing outside ended it (no person, memory to spare), run the test command by "
        "hand to see which test ends the process; then rerun `gtd auto setup`"
    )
    assert "no per-test results" not in said["message"]


def test_a_revert_for_a_module_that_does_not_compile_names_it(repo: Repo) -> None:
    make_project(repo)
    assert run_cli(repo, "cycle", "begin").code == 0
    repo.write("calc.py", BROKEN_CALC)

    res = run_cli(repo, "cycle", "end")

    assert res.code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "status: reverted" in lines
    [reason] = [line for line in lines if line.startswith("reason: ")]
    assert reason.startswith("reason: tests failed: ")
    assert reason.endswith("(SyntaxError in calc.py at line 2: invalid syntax)"), reason
    # the cycle added no test: the old file failing whole is not one
    assert not [line for line in lines if line.startswith("new_tests:")], lines
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "| reverted |" in report
    assert "(SyntaxError in calc.py at line 2: invalid syntax)" in report


DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_answer_the_report_page_shows_is_what_end_prints(repo: Repo) -> None:
    page = (DOCS / "report.md").read_text()
    shown = page.split("## What `gtd cycle end` prints\n\n```text\n", 1)[1].split("```", 1)[0]
    make_project(repo)
    assert run_cli(repo, "cycle", "begin").code == 0
    repo.write("tests/test_calc.py", TESTS.replace("== 5", "is not None"))
    repo.write("calc.py", MUL)

    res = run_cli(repo, "cycle", "end")

    assert res.code == 0, res.stderr
    printed = res.stdout.splitlines()
    assert [line.split(": ", 1)[0] for line in printed] == [
        line.split(": ", 1)[0] for line in shown.splitlines()
    ]
    for got, documented in zip(printed, shown.splitlines(), strict=True):
        if got.startswith("duration_s: "):
            # the judging's wall time, never a bare 0.0 (no test ran)
            assert float(got.split(": ", 1)[1]) > 0
        else:
            assert got == documented


def test_a_baseline_whose_test_file_does_not_import_says_so_in_its_tests_line(
    repo: Repo,
) -> None:
    # pytest counts the file as one errored "test": `0 / 1 passed` would read as
    # one test failing, where nothing ran at all.
    project(repo)
    repo.write("tests/test_other.py", "import nosuchmodule\n\n\ndef test_x():\n    pass\n")
    repo.commit_all("initial")
    repo.git("switch", "-q", "-c", "gtd-auto")

    res = setup(repo)
    said = answer_lines(res)

    assert res.code == 1  # refused: a person must act before any loop
    assert said["status"] == "baseline-broken"
    assert said["problem"] == "1 test file could not be collected (tests/test_other.py)"
    assert said["tests"] == (
        "none ran at baseline: 1 test file could not be collected (tests/test_other.py)"
    )
    assert "passed" not in said["tests"]
