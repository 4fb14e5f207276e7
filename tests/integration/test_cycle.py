"""The cycle protocol end to end: real git repositories, real pytest runs, the real
CLI in subprocesses. A scripted "agent" edits files between begin and end."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration.calc_project import (
    CALC,
    CONFTEST,
    MUL,
    MUL_TEST,
    PLAN,
    PYTEST,
    TESTS,
    gtd_json,
    make_project,
    run_cli,
)


def tree_state(root: Path) -> dict[str, bytes]:
    """Every file outside .git and gtd's own state directory, with its bytes."""
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith((".git/", ".deepflow/")) or rel == ".git" or not path.is_file():
            continue
        if "__pycache__" in rel:
            continue
        out[rel] = path.read_bytes()
    return out


def memory(repo: Repo) -> dict[str, object]:
    import yaml

    data = yaml.safe_load((repo.path / ".deepflow/auto-memory.yaml").read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture
def project(repo: Repo) -> Repo:
    make_project(repo)
    assert repo.status() == ""
    return repo


def begin(repo: Repo) -> dict[str, object]:
    return gtd_json(repo, "cycle", "begin")


def end(repo: Repo, *extra: str) -> dict[str, object]:
    return gtd_json(repo, "cycle", "end", *extra)


def test_good_change_lands_as_attributable_commits(project: Repo) -> None:
    base = project.git("rev-parse", "HEAD").strip()
    answer = begin(project)
    assert answer["status"] == "task"
    assert answer["task"] == "T1"
    brief = (project.path / ".deepflow/cycle-brief.md").read_text()
    assert "T1" in brief
    assert "Add mul" in brief
    assert "calc.py" in brief

    project.write("calc.py", MUL)
    project.write("tests/test_mul.py", MUL_TEST)
    result = end(project)

    assert result["status"] == "passed", result
    assert result["next"] == "continue"
    commit = str(result["commit"])
    subjects = project.git("log", "--format=%s", f"{base}..HEAD").splitlines()
    assert subjects == [f"T1: mark done in PLAN.md ({commit})", "T1: Add mul"]
    body = project.git("log", "-1", "--format=%B", "HEAD~1")
    assert "Gtd-Task: T1" in body
    assert "Gtd-Cycle: 1" in body
    assert project.git("rev-parse", "--short", "HEAD~1").strip() == commit
    assert f"- [x] **T1**: Add mul ✓ ({commit})" in (project.path / "PLAN.md").read_text()
    assert project.status() == ""
    mem = memory(project)
    assert mem["task_results"] == {"T1": {"status": "success", "commit": commit, "cycle": 1}}
    assert mem["consecutive_reverts"] == {"T1": 0}
    report = (project.path / ".deepflow/auto-report.md").read_text()
    assert f"| 1 | T1 | Add mul | passed | {commit} | — |" in report
    assert "| Tasks committed | 1 |" in report
    # the new test is protected from the next cycle on
    assert "tests/test_mul.py" in (project.path / ".deepflow/auto-snapshot.txt").read_text()
    assert begin(project)["task"] == "T2"


def test_breaking_change_is_reverted_byte_for_byte(project: Repo) -> None:
    base = project.git("rev-parse", "HEAD").strip()
    before = tree_state(project.path)
    begin(project)
    project.write("calc.py", "def add(a, b):\n    return a - b\n")
    project.write("scratch/notes.txt", "agent notes\n")
    # a new passing test cannot rescue the broken baseline tests
    project.write("tests/test_extra.py", "def test_extra():\n    assert True\n")
    # a new folder of tests the agent ran: the bytecode its run left (ignored) is
    # the cycle's litter, and the folder goes with the modules
    project.write("tests/more/test_more.py", "def test_more():\n    assert True\n")
    project.write("tests/more/__pycache__/test_more.cpython-311-pytest-8.pyc", "bytecode")

    result = end(project)

    assert result["status"] == "reverted"
    assert str(result["reason"]).startswith("tests failed: 2 of ")
    assert "test_add" in str(result["reason"])
    assert project.git("rev-parse", "HEAD").strip() == base
    assert tree_state(project.path) == before
    assert not (project.path / "scratch").exists()
    assert not (project.path / "tests/more").exists()
    assert project.status() == ""
    # nothing is lost: the reverted work is kept under a ref
    kept = project.git("show", "refs/gtd/reverted/cycle-1:scratch/notes.txt")
    assert kept == "agent notes\n"
    mem = memory(project)
    assert mem["consecutive_reverts"] == {"T1": 1}
    history = mem["revert_history"]
    assert isinstance(history, list)
    assert history[0]["task"] == "T1"
    report = (project.path / ".deepflow/auto-report.md").read_text()
    assert (
        "| 1 | T1 | Add mul | reverted | work kept at `refs/gtd/reverted/cycle-1` | "
        "tests failed: 2 of"
    ) in report


def test_a_cycle_that_changed_nothing_is_reverted_with_nothing_kept(project: Repo) -> None:
    base = project.git("rev-parse", "HEAD").strip()
    begin(project)

    res = run_cli(project, "cycle", "end", "--learning", "the task was already done upstream")

    assert res.code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[:4] == [
        "status: reverted",
        "cycle: 1",
        "task: T1",
        "remaining: 3",
    ]
    assert "reason: no changes: the implementer left the tree as it was" in lines
    assert "message: Cycle reverted. 3 tasks remaining." in lines
    assert not [line for line in lines if line.startswith("kept:")]  # no empty ref to open
    assert project.git("for-each-ref", "refs/gtd/reverted/") == ""
    assert project.git("rev-parse", "HEAD").strip() == base
    cycles = memory(project)["cycles"]
    assert isinstance(cycles, list)
    assert cycles[0]["status"] == "reverted"
    report = (project.path / ".deepflow/auto-report.md").read_text()
    assert "| 1 | T1 | Add mul | reverted | nothing to keep | no changes:" in report
    assert "- Cycle 1 (T1: Add mul, reverted): the task was already done upstream" in report


# Slow: the same guarantee as tests/redteam/test_git_tricks.py::
# test_agent_commits_the_broken_work (the agent's own commit of broken code reverted to
# the base, the tree the base's byte for byte), which keeps it in the quick loop.
@pytest.mark.slow
def test_agent_commits_are_reverted_too(project: Repo) -> None:
    base = project.git("rev-parse", "HEAD").strip()
    begin(project)
    project.write("calc.py", "def add(a, b):\n    return 0\n")
    project.commit_all("agent committed against the rules")
    result = end(project)
    assert result["status"] == "reverted"
    assert project.git("rev-parse", "HEAD").strip() == base
    assert project.status() == ""


def test_three_reverts_trip_the_breaker_until_reset(project: Repo) -> None:
    for attempt in range(1, 4):
        answer = begin(project)
        assert answer["task"] == "T1"
        if attempt > 1:  # the brief lists the earlier failures
            brief = (project.path / ".deepflow/cycle-brief.md").read_text()
            assert "cycle 1: tests failed" in brief
        project.write("calc.py", "def add(a, b):\n    return None\n")
        result = end(project)
        assert result["status"] == "reverted"
        assert result["next"] == ("halt" if attempt == 3 else "continue")
    assert str(result["message"]).startswith(
        "Circuit breaker tripped: T1 failed 3 consecutive times. Reason: tests failed:"
    )
    halts = memory(project)["halts"]
    assert isinstance(halts, list)
    [halt] = halts
    assert (halt["cycle"], halt["task"], halt["count"]) == (3, "T1", 3)
    assert str(halt["reason"]).startswith("tests failed:")
    halted = begin(project)
    assert halted["status"] == "halted"
    assert halted["task"] == "T1"
    assert not (project.path / ".deepflow/cycle.json").exists()
    assert begin(project)["status"] == "halted"

    reset = gtd_json(project, "cycle", "reset")
    assert reset["status"] == "reset"
    assert reset["tasks"] == ["T1"]
    assert begin(project)["status"] == "task"


# `rename`, `skip` and `pytest-ini` run in the slow set: variants of the same check
# as `delete` (a snapshot test gone from its path), `edit` (a snapshot test's bytes
# changed) and `conftest` (a committed pytest configuration file changed), which the
# quick loop keeps.
WEAKENINGS = [
    pytest.param(
        "edit", "a protected test was changed: tests/test_calc.py::test_add (line 5)", id="edit"
    ),
    pytest.param("delete", "tests/test_calc.py", id="delete"),
    pytest.param("rename", "tests/test_calc.py", id="rename", marks=pytest.mark.slow),
    pytest.param(
        "skip",
        "a protected test was changed: tests/test_calc.py::test_add (line 4)",
        id="skip",
        marks=pytest.mark.slow,
    ),
    pytest.param("conftest", "conftest.py", id="conftest"),
    pytest.param("pytest-ini", "pytest.ini", id="pytest-ini", marks=pytest.mark.slow),
    pytest.param("plan", "PLAN.md", id="plan"),
    pytest.param("config", ".deepflow/config.yaml", id="config"),
]


@pytest.mark.parametrize(("how", "named"), WEAKENINGS)
def test_weakened_tests_are_caught(project: Repo, how: str, named: str) -> None:
    if how == "pytest-ini":
        project.write("pytest.ini", "[pytest]\naddopts = -q\n")
        project.commit_all("pytest config")
        gtd_json(project, "ratchet", "snapshot")
    base = project.git("rev-parse", "HEAD").strip()
    before = tree_state(project.path)
    begin(project)
    test_file = project.path / "tests/test_calc.py"
    if how == "edit":
        test_file.write_text(TESTS.replace("== 5", "is not None"))
    elif how == "delete":
        test_file.unlink()
    elif how == "rename":
        test_file.rename(project.path / "tests/test_calc_renamed.py")
    elif how == "skip":
        test_file.write_text(
            "import pytest\n"
            + TESTS.replace("def test_add():", "@pytest.mark.skip\ndef test_add():")
        )
    elif how == "conftest":
        project.write("conftest.py", "collect_ignore = ['tests']\n")
    elif how == "pytest-ini":
        project.write("pytest.ini", "[pytest]\naddopts = -q -k 'not add'\n")
    elif how == "plan":
        project.write("PLAN.md", PLAN.replace("- [ ] **T1**", "- [x] **T1**"))
    elif how == "config":
        project.write(".deepflow/config.yaml", "ratchet:\n  test_command: 'true'\n")
    project.write("calc.py", MUL)

    result = end(project)

    assert result["status"] == "reverted"
    assert named in str(result["reason"]), result["reason"]
    # refused before any test ran, yet the check took its time: never a bare 0.0
    took = result["duration_s"]
    assert isinstance(took, float)
    assert took > 0
    assert project.git("rev-parse", "HEAD").strip() == base
    assert tree_state(project.path) == before
    assert project.status() == ""


def test_human_work_is_reported_dirty_and_left_alone(project: Repo) -> None:
    project.write("calc.py", CALC + "# human edit\n")
    project.write("notes.md", "human notes\n")
    before = tree_state(project.path)
    answer = begin(project)
    assert answer["status"] == "dirty"
    paths = answer["paths"]
    assert isinstance(paths, list)
    assert sorted(paths) == ["calc.py", "notes.md"]
    assert tree_state(project.path) == before
    assert not (project.path / ".deepflow/cycle.json").exists()


def test_ten_simultaneous_begins_give_one_task(project: Repo) -> None:
    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(lambda _: str(begin(project)["status"]), range(10)))
    assert sorted(answers) == ["busy"] * 9 + ["task"]


def test_abandoned_agent_is_reverted_after_the_timeout(project: Repo) -> None:
    base = project.git("rev-parse", "HEAD").strip()
    begin(project)
    project.write("calc.py", "half-done work\n")
    busy = begin(project)
    assert (busy["status"], busy["phase"]) == ("busy", "agent")
    # the person reading it learns how to have it judged before the timeout
    hint = busy["next"]
    assert isinstance(hint, str)
    assert "`gtd cycle end` judges it" in hint

    later = run_cli(project, "cycle", "begin", "--json", env={"GTD_CLOCK_OFFSET_S": str(46 * 60)})
    answer = json.loads(later.stdout)

    assert answer["status"] == "task"
    assert "reverted" in str(answer["recovered"])
    assert "abandoned" in str(answer["recovered"])
    assert project.git("rev-parse", "HEAD").strip() == base
    assert (project.path / "calc.py").read_text() == CALC
    assert memory(project)["consecutive_reverts"] == {"T1": 1}


# The quick loop keeps one crash point of each kind (before the verdict, between the
# verdict and the sealed record, after it); the others are variants of the middle one
# and run in the slow set, as do the kill trials (tests/kill) at random moments.
_VARIANT = pytest.mark.slow
CRASH_POINTS = [
    "checking",
    pytest.param("verdict", marks=_VARIANT),
    "work-commit",
    pytest.param("plan-ticked", marks=_VARIANT),
    pytest.param("tick-commit", marks=_VARIANT),
    "recorded",
]


def crash_end(repo: Repo, point: str) -> None:
    """`gtd cycle end` whose worker (the process that judges and finishes) is killed
    at ``point``, as a power cut would: `end` says the check stopped — unless the
    worker died after sealing the cycle's record, when `end` reports the verdict
    (only the rendering of memory and report was left, which `begin` redoes)."""
    crashed = run_cli(repo, "cycle", "end", "--json", env={"GTD_CRASH_AT": point})
    if point == "recorded":
        assert crashed.code == 0, crashed.stderr
        assert json.loads(crashed.stdout)["status"] in ("passed", "reverted")
        return
    assert crashed.code == 1, crashed.stdout
    assert "stopped before its verdict" in crashed.stderr


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_crash_during_a_passing_end_is_recovered(project: Repo, point: str) -> None:
    base = project.git("rev-parse", "HEAD").strip()
    begin(project)
    project.write("calc.py", MUL)
    project.write("tests/test_mul.py", MUL_TEST)
    crash_end(project, point)

    answer = begin(project)

    assert answer["status"] == "task", answer
    assert ("recovered" in answer) == (point != "recorded")
    assert project.status() == "", project.status()
    if point == "checking":
        # no verdict was reached: the cycle is reverted, nothing is lost
        assert project.git("rev-parse", "HEAD").strip() == base
        assert answer["task"] == "T1"
        assert project.git("show", "refs/gtd/reverted/cycle-1:calc.py") == MUL
    else:
        subjects = project.git("log", "--format=%s", f"{base}..HEAD").splitlines()
        assert len(subjects) == 2, subjects
        assert subjects[1] == "T1: Add mul"
        assert answer["task"] == "T2"
        mem = memory(project)
        results = mem["task_results"]
        assert isinstance(results, dict)
        assert results["T1"]["status"] == "success"
        cycles = mem["cycles"]
        assert isinstance(cycles, list)
        assert len(cycles) == 1


@pytest.mark.parametrize(
    "point",
    [
        pytest.param("verdict", marks=_VARIANT),
        "reverted-kept",
        pytest.param("recorded", marks=_VARIANT),  # as a passing end's, above
    ],
)
def test_crash_during_a_revert_is_recovered(project: Repo, point: str) -> None:
    base = project.git("rev-parse", "HEAD").strip()
    before = tree_state(project.path)
    begin(project)
    project.write("calc.py", "def add(a, b):\n    return None\n")
    project.write("extra.py", "x = 1\n")
    crash_end(project, point)

    answer = begin(project)

    assert answer["status"] == "task"
    assert project.git("rev-parse", "HEAD").strip() == base
    assert tree_state(project.path) == before
    assert memory(project)["consecutive_reverts"] == {"T1": 1}


def test_end_killed_with_its_worker_between_two_seals_is_a_crash_not_tampering(
    project: Repo,
) -> None:
    """`end` seals the check, then the worker's pid: a kill of both right after the
    second seal (the kill harness caught one at that `git update-ref`) must leave
    the journal's mirror one seal behind at most, so the next `begin` reverts the
    cycle as interrupted instead of halting the loop for tampering."""
    base = project.git("rev-parse", "HEAD").strip()
    before = tree_state(project.path)
    begin(project)
    project.write("calc.py", MUL)
    crashed = run_cli(project, "cycle", "end", "--json", env={"GTD_CRASH_AT": "worker-named"})
    assert crashed.code != 0

    answer = begin(project)

    assert answer["status"] == "task", answer
    assert "interrupted" in str(answer["recovered"]), answer
    assert "helper state modified" not in str(answer["recovered"])
    assert project.git("rev-parse", "HEAD").strip() == base
    assert tree_state(project.path) == before
    assert project.git("show", "refs/gtd/reverted/cycle-1:calc.py") == MUL


def test_end_killed_before_its_last_mirror_leaves_its_worker_to_pass_the_cycle(
    project: Repo,
) -> None:
    """`end` killed after sealing the worker's pid and before that seal's mirror
    (the kill harness met it): the worker finds the journal's mirror one seal
    behind, the helper's own content, and judges the work, not tampering."""
    base = project.git("rev-parse", "HEAD").strip()
    begin(project)
    project.write("calc.py", MUL)
    project.write("tests/test_mul.py", MUL_TEST)
    crashed = run_cli(project, "cycle", "end", "--json", env={"GTD_CRASH_AT": "worker-running"})
    assert crashed.code != 0

    deadline = time.monotonic() + 60
    answer = begin(project)
    while answer["status"] == "busy" and time.monotonic() < deadline:
        time.sleep(0.2)
        answer = begin(project)

    assert answer["status"] == "task", answer
    assert str(answer["previous"]).startswith("cycle 1 T1 passed"), answer
    subjects = project.git("log", "--format=%s", f"{base}..HEAD").splitlines()
    assert subjects[1] == "T1: Add mul", subjects


def test_end_can_be_rerun_after_a_crash(project: Repo) -> None:
    begin(project)
    project.write("calc.py", MUL)
    project.write("tests/test_mul.py", MUL_TEST)
    crash_end(project, "work-commit")
    result = end(project)
    assert result["status"] == "passed"
    assert project.status() == ""


def test_blocked_and_complete(repo: Repo) -> None:
    repo.write("calc.py", CALC)
    repo.write("tests/test_calc.py", TESTS)
    repo.write("conftest.py", CONFTEST)
    repo.write(
        "PLAN.md",
        "- [x] **T1**: done ✓ (abc1234)\n- [~] **T2**: skipped\n"
        "- [ ] **T3**: waits\n  - Blocked by: T2\n",
    )
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {PYTEST}\n")
    repo.commit_all("initial")
    gtd_json(repo, "auto", "setup")
    answer = begin(repo)
    assert answer["status"] == "blocked"
    assert answer["blocked"] == [{"id": "T3", "title": "waits", "blocked_by": ["T2"]}]
    repo.write("PLAN.md", "- [x] **T1**: done ✓ (abc1234)\n")
    repo.commit_all("plan done")
    assert begin(repo)["status"] == "complete"


def test_spike_learning_is_recorded(project: Repo) -> None:
    plan = PLAN.replace("- [ ] **T1**: Add mul", "- [x] **T1**: Add mul ✓ (abc1234)")
    plan = plan.replace("  - Blocked by: T1\n", "  - Blocked by: T3\n")
    project.write("PLAN.md", plan)
    project.commit_all("T1 done by hand")
    answer = begin(project)
    assert answer["task"] == "T3"
    assert answer["spike"] is True
    project.write("parse.py", "def parse(s):\n    return s.split()\n")
    result = end(project, "--learning", "str.split is enough for the grammar")
    assert result["status"] == "passed"
    mem = memory(project)
    learnings = mem["probe_learnings"]
    assert isinstance(learnings, list)
    assert learnings[0]["spike"] == "T3"
    assert learnings[0]["insight"] == "str.split is enough for the grammar"
    report = (project.path / ".deepflow/auto-report.md").read_text()
    assert "str.split is enough for the grammar" in report
    assert "_(empty until a probe/spike task runs)_" not in report
    assert begin(project)["task"] == "T2"
    assert "str.split is enough" in (project.path / ".deepflow/cycle-brief.md").read_text()


def test_bootstrap_cycle_writes_the_first_tests(repo: Repo) -> None:
    repo.write("calc.py", CALC)
    repo.write("conftest.py", CONFTEST)
    repo.write("PLAN.md", PLAN)
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {PYTEST}\n")
    repo.commit_all("initial")
    gtd_json(repo, "auto", "setup")
    answer = begin(repo)
    assert answer["task"] == "BOOTSTRAP"
    assert "calc.py" in (repo.path / ".deepflow/cycle-brief.md").read_text()
    repo.write("tests/test_calc.py", TESTS)
    result = end(repo)
    assert result["status"] == "passed", result
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "| 1 | BOOTSTRAP | baseline tests | passed |" in report
    assert "- [ ] **T1**" in (repo.path / "PLAN.md").read_text()
    assert begin(repo)["task"] == "T1"


def test_bootstrap_may_not_change_implementation(repo: Repo) -> None:
    repo.write("calc.py", CALC)
    repo.write("PLAN.md", PLAN)
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {PYTEST}\n")
    repo.commit_all("initial")
    gtd_json(repo, "auto", "setup")
    begin(repo)
    repo.write("calc.py", MUL)
    repo.write("tests/test_calc.py", TESTS)
    result = end(repo)
    assert result["status"] == "reverted"
    assert "calc.py" in str(result["reason"])


@pytest.mark.parametrize(
    ("path", "content", "where"),
    [
        ("PLAN.md", "- [ ] **T1**: a\n- [ ] **T1**: b\n", "PLAN.md:2"),
        (".deepflow/config.yaml", "circuit_breaker_threshold: many\n", ".deepflow/config.yaml:1"),
    ],
    ids=["plan", "config"],
)
def test_bad_input_is_a_clear_error_that_changes_nothing(
    project: Repo, path: str, content: str, where: str
) -> None:
    project.write(path, content)
    project.commit_all("bad input")
    before = tree_state(project.path)
    state_before = (project.path / ".deepflow/auto-memory.yaml").exists()

    res = run_cli(project, "cycle", "begin")

    assert res.code == 1
    assert where in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert tree_state(project.path) == before
    assert not (project.path / ".deepflow/cycle.json").exists()
    assert (project.path / ".deepflow/auto-memory.yaml").exists() == state_before


def test_memory_file_is_a_rendering_of_the_sealed_records(project: Repo) -> None:
    """auto-memory.yaml is written from the records sealed in git: a broken or
    edited copy never stops the loop and never changes what the breaker counts."""
    (project.path / ".deepflow/auto-memory.yaml").write_text("task_results: [1, 2\n")
    assert begin(project)["status"] == "task"
    project.write("calc.py", "def add(a, b):\n    return None\n")
    assert end(project)["status"] == "reverted"
    assert memory(project)["consecutive_reverts"] == {"T1": 1}


def test_end_without_a_cycle_is_an_operational_error(project: Repo) -> None:
    res = run_cli(project, "cycle", "end")
    assert res.code == 1
    assert "no cycle in flight" in res.stderr


def test_setup_without_plan_answers_needs_plan(repo: Repo) -> None:
    repo.write("README.md", "x\n")
    repo.commit_all("initial")
    repo.write("specs/calc.md", "# Calculator\n")
    repo.commit_all("a spec")
    answer = gtd_json(repo, "auto", "setup")
    assert answer["status"] == "needs-plan"
    assert answer["specs"] == ["specs/calc.md"]
    assert not (repo.path / ".deepflow").exists()


def test_setup_writes_config_and_ignores_and_commits_them(repo: Repo) -> None:
    repo.write("calc.py", CALC)
    repo.write("tests/test_calc.py", TESTS)
    repo.write("conftest.py", CONFTEST)
    repo.commit_all("initial")
    repo.write("PLAN.md", PLAN)  # the planner's fresh, uncommitted plan
    answer = gtd_json(repo, "auto", "setup")
    assert answer["status"] == "ready", answer
    assert answer["loop"] == "/loop 1m /gtd:auto-cycle"
    assert repo.subjects()[0] == "chore(gtd): set up auto mode"
    tracked = repo.git("ls-files", ".deepflow", "PLAN.md").split()
    assert sorted(tracked) == [".deepflow/config.yaml", "PLAN.md"]
    exclude = (repo.path / ".git/info/exclude").read_text()
    assert "/.deepflow/*" in exclude  # helper files are ignored on every branch
    assert "!/.deepflow/config.yaml" in exclude
    config = (repo.path / ".deepflow/config.yaml").read_text()
    assert "circuit_breaker_threshold: 3" in config
    assert "#" in config
    assert repo.status() == ""
    again = gtd_json(repo, "auto", "setup")
    assert again["status"] == "ready"
    assert again["committed"] is None


def test_tick_form_answers_errors_instead_of_failing(project: Repo) -> None:
    project.write("PLAN.md", "- [ ] **T1**: a\n- [ ] **T1**: b\n")
    project.commit_all("broken plan")
    res = run_cli(project, "cycle", "begin", "--tick")
    assert res.code == 0
    lines = res.stdout.splitlines()
    assert lines[0] == "status: error"
    assert "PLAN.md:2" in res.stdout
    assert not (project.path / ".deepflow/cycle.json").exists()


def test_test_run_litter_is_neither_committed_nor_dirty(repo: Repo) -> None:
    # A repository that ignores nothing, and a suite that writes a file when it runs.
    suite = TESTS + ("\n\ndef test_writes_a_report():\n    open('report.txt', 'w').write('ran')\n")
    make_project(repo, plan=PLAN)
    repo.write("tests/test_calc.py", suite)
    repo.commit_all("suite writes a report")
    gtd_json(repo, "ratchet", "snapshot")
    assert repo.status() == ""
    begin(repo)
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    result = end(repo)
    assert result["status"] == "passed", result
    assert repo.status() == ""
    committed = repo.git("show", "--name-only", "--format=", "HEAD~1").split()
    assert sorted(committed) == ["calc.py", "tests/test_mul.py"]
    assert begin(repo)["status"] == "task"
