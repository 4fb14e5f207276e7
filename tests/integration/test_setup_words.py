"""What `gtd auto setup` tells a person, read as the text they see: a setup on the
main line is warned about with the commands that move it, tests already failing
at the baseline are named and said tolerated (in the answer and in the report),
a test file that does not compile is named with its line, and the report's title
names the work."""

from __future__ import annotations

import json
import subprocess
import time

from tests.conftest import CliResult, Repo, run_gtd
from tests.integration.calc_project import CALC, CONFTEST, PYTEST, SETUP_PY, TESTS, egg_info

BROKEN = "\n\ndef test_broken():\n    assert 1 == 2\n"


def setup(repo: Repo, *args: str) -> CliResult:
    res = run_gtd(repo.path, "auto", "setup", *args)
    while res.code == 0 and res.stdout.startswith("status: checking"):
        time.sleep(0.3)
        res = run_gtd(repo.path, "auto", "setup", *args)
    # A refused baseline needs a person: exit 1, with the answer that says why.
    refused = res.stdout.startswith(("status: baseline-broken", "status: baseline-red"))
    assert res.code == (1 if refused else 0), res.stderr
    return res


def answer_lines(res: CliResult) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in res.stdout.splitlines())


def project(repo: Repo, tests: str = TESTS, plan_heading: str = "Calculator") -> None:
    repo.write("calc.py", CALC)
    repo.write("conftest.py", CONFTEST)
    repo.write("tests/test_calc.py", tests)
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {PYTEST}\n")
    repo.write("PLAN.md", f"# {plan_heading}\n\n- [ ] **T1**: Add mul\n  - Files: calc.py\n")


def test_a_setup_on_main_is_warned_with_the_commands_that_move_it(repo: Repo) -> None:
    project(repo)
    repo.commit_all("initial")
    before = repo.git("rev-parse", "HEAD").strip()
    repo.write("PLAN.md", "# Calculator\n\n- [ ] **T1**: Add mul\n- [ ] **T2**: Add div\n")

    said = answer_lines(setup(repo))

    assert said["status"] == "ready"
    committed = said["committed"]
    assert repo.git("rev-parse", "--short", "HEAD").strip() == committed
    assert said["warning"] == (
        f"set up on `main`: the setup commit {committed} and every cycle's commit land on "
        f"it; `git switch -c gtd-auto && git branch -f main {committed}~1` moves it (and "
        "the loop) to a branch of its own"
    )
    # The report says it too, where a person looks in the morning.
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "Branch: the loop commits on `main`, the main line;" in report
    # The advice works as written: main is back where it was, the work on a branch.
    repo.git("switch", "-q", "-c", "gtd-auto")
    repo.git("branch", "-f", "main", f"{committed}~1")
    assert repo.git("rev-parse", "main").strip() == before
    again = answer_lines(setup(repo))
    assert again["status"] == "ready"
    assert "warning" not in again
    # The next render (a cycle's start) no longer says it.
    assert run_gtd(repo.path, "cycle", "begin").code == 0
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "**Running** — cycle 1" in report
    assert "Branch:" not in report


def test_a_setup_on_its_own_branch_says_nothing_of_branches(repo: Repo) -> None:
    project(repo)
    repo.commit_all("initial")
    repo.git("switch", "-q", "-c", "feature/mul")
    said = answer_lines(setup(repo))
    assert said["status"] == "ready"
    assert "warning" not in said
    # One test file, counted in the singular.
    assert said["message"] == "Ratchet snapshot: 1 pre-existing test file"


def test_the_branch_the_remote_calls_its_head_is_the_main_line(repo: Repo) -> None:
    project(repo)
    repo.commit_all("initial")
    repo.git("switch", "-q", "-c", "develop")
    repo.git("update-ref", "refs/remotes/origin/develop", "HEAD")
    repo.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/develop")
    said = answer_lines(setup(repo))
    assert said["warning"].startswith("set up on `develop`: every cycle's commit lands on it;")


def test_tests_failing_at_the_baseline_are_named_and_said_tolerated(repo: Repo) -> None:
    project(repo, tests=TESTS + BROKEN, plan_heading="Plan")
    repo.commit_all("initial")
    repo.git("switch", "-q", "-c", "gtd-auto")

    said = answer_lines(setup(repo))

    assert said["status"] == "ready"
    assert said["tests"] == "2 / 3 passed at baseline"
    tolerated = (
        "1 test already failed at the baseline and is tolerated (no cycle is reverted for it "
        "while it keeps failing): tests/test_calc.py::test_broken."
    )
    assert said["failing"] == tolerated
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    state = report.split("## State\n\n", 1)[1].split("\n## ", 1)[0]
    assert tolerated in state
    # PLAN.md's heading is "Plan": the title names the project instead
    assert report.splitlines()[0] == f"# Auto Mode Report — {repo.path.name}"


def test_a_test_file_that_does_not_compile_is_named_with_its_line(repo: Repo) -> None:
    project(repo)
    repo.write("tests/test_bad.py", "def test_bad(:\n    pass\n")
    repo.commit_all("initial")
    repo.git("switch", "-q", "-c", "gtd-auto")

    said = answer_lines(setup(repo))

    assert said["status"] == "baseline-broken"
    assert said["problem"] == "1 test file could not be collected (tests/test_bad.py)"
    assert said["fix"] == ("correct the SyntaxError in tests/test_bad.py at line 1: invalid syntax")
    assert said["next"].startswith(said["fix"] + "; then rerun `gtd auto setup`")


def test_a_setup_the_install_dirtied_says_to_untrack_before_the_loop(repo: Repo) -> None:
    """`pip install -e .` rewrote a tracked egg-info before set-up: the answer says
    every tick would answer `dirty`, and `next:` puts the command before the loop;
    that command, run as written, leaves a tree the next setup starts the loop on."""
    project(repo)
    repo.write("setup.py", SETUP_PY.replace("0.1", "0.0"))
    egg_info(repo)
    repo.write("setup.py", SETUP_PY)
    repo.commit_all("initial")
    repo.git("switch", "-q", "-c", "gtd-auto")
    egg_info(repo)  # the install: PKG-INFO now says version 0.1
    assert repo.git("status", "--porcelain").strip() == "M calc.egg-info/PKG-INFO"

    said = answer_lines(setup(repo))

    assert said["status"] == "ready"
    assert said["dirty"] == "calc.egg-info/PKG-INFO"
    assert said["warning"] == (
        "calc.egg-info/ rewritten by the project's install: every tick answers `dirty` "
        "until it is untracked (the install_metadata: command)"
    )
    assert said["next"] == (
        "run the install_metadata: command, then start the loop: /loop 1m /gtd:auto-cycle"
    )
    command = said["install_metadata"].rsplit("stop tracking it: ", 1)[1].strip("`")
    subprocess.run(command, shell=True, cwd=repo.path, check=True)
    assert repo.git("status", "--porcelain").strip() == ""
    again = answer_lines(setup(repo))
    assert again["next"] == "start the loop: /loop 1m /gtd:auto-cycle"
    assert "warning" not in again
    assert "dirty" not in again
    assert json.loads(run_gtd(repo.path, "cycle", "begin", "--json").stdout)["status"] == "task"


def test_a_setup_on_a_dirty_tree_says_to_commit_before_the_loop(repo: Repo) -> None:
    project(repo)
    repo.commit_all("initial")
    repo.git("switch", "-q", "-c", "gtd-auto")
    repo.write("calc.py", CALC + "\n# half done\n")

    said = answer_lines(setup(repo))

    assert said["dirty"] == "calc.py"
    assert said["warning"] == (
        "uncommitted changes: every tick answers `dirty` until you commit or stash them"
    )
    assert said["next"] == (
        "commit or stash the uncommitted changes, then start the loop: /loop 1m /gtd:auto-cycle"
    )


def test_pytest_that_never_loaded_the_plugin_is_warned_of(repo: Repo) -> None:
    """`python -I` ignores PYTHONPATH, the way the plugin reaches pytest: the
    suite passes, judged by JUnit XML alone, and the answer says so."""
    project(repo)
    isolated = PYTEST.replace(" -m pytest", " -I -m pytest", 1)
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {isolated}\n")
    repo.commit_all("initial")
    repo.git("switch", "-q", "-c", "gtd-auto")

    said = answer_lines(setup(repo))

    assert said["status"] == "ready"
    assert said["tests"] == "2 / 2 passed at baseline"
    assert said["warning"].startswith("pytest ran without gtd's plugin at the baseline (")
    assert "every cycle is judged by pytest's JUnit XML alone" in said["warning"]
    # The command the warning points to loads it: set up again, no warning.
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {PYTEST}\n")
    repo.commit_all("the plain command")
    again = answer_lines(setup(repo))
    assert again["tests"] == "2 / 2 passed at baseline"
    assert "warning" not in again


def test_a_refused_baseline_names_its_failing_tests_and_accepted_tolerates_them(
    repo: Repo,
) -> None:
    """No test passes: setup refuses the baseline and names the failing tests (not
    tolerated yet); accepted, they are named tolerated, as the report says."""
    project(repo)
    repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    repo.commit_all("initial")
    repo.git("switch", "-q", "-c", "gtd-auto")

    said = answer_lines(setup(repo))

    assert said["status"] == "baseline-broken"
    assert said["problem"] == "no test passed (2 ran)"
    assert said["failing"] == (
        "2 tests fail at the baseline: tests/test_calc.py::test_add, "
        "tests/test_calc.py::test_add_negative."
    )
    accepted = answer_lines(setup(repo, "--accept-baseline"))
    assert accepted["status"] == "ready"
    assert accepted["failing"].startswith(
        "2 tests already failed at the baseline and are tolerated (no cycle is reverted"
    )


def test_a_refused_baseline_exits_1_with_its_answer(repo: Repo) -> None:
    # A suite failing with no per-test results: nothing can be judged, nothing is
    # sealed, and `gtd auto setup && gtd loop` must stop at setup.
    project(repo)
    repo.write(".deepflow/config.yaml", "ratchet:\n  test_command: sh -c 'exit 1'\n")
    repo.commit_all("initial")
    repo.git("switch", "-q", "-c", "gtd-auto")

    res = setup(repo)
    said = answer_lines(res)

    assert res.code == 1
    assert said["status"] == "baseline-red"
    assert said["next"].startswith("make the suite green")
    assert run_gtd(repo.path, "cycle", "begin").code == 1
