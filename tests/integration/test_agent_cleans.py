"""The agent's own clean-up commands against the helper's files, where no
sandbox fences them: `git clean -fdX` (every ignored file: the whole of
`.deepflow/` but the config), `rm -rf .deepflow` but the config, and pieces of
the helper's own folders in the git directory. The sealed state
(`refs/gtd/state`) is the source of truth for the cycle in flight, so the next
`gtd cycle end` or `begin` rebuilds what it mirrors and the loop goes on; a
lost pin of the person's refs is said, never silent. Real git (the agent's
very commands), real pytest, the real CLI."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration.calc_project import MUL, MUL_TEST, gtd_json, make_project

MIRROR = ".deepflow/cycle.json"


@pytest.fixture
def project(repo: Repo) -> Repo:
    make_project(repo)
    assert repo.status() == ""
    return repo


def git_clean(repo: Repo) -> list[str]:
    """The agent's `git clean -fdX`, run for real: what it removed."""
    out = subprocess.run(
        ["git", "clean", "-fdX"], cwd=repo.path, capture_output=True, text=True, check=True
    ).stdout
    return [line.removeprefix("Removing ") for line in out.splitlines()]


def remove_deepflow_but_config(repo: Repo) -> None:
    """`rm -rf .deepflow` with the config kept (the agent's tidy-up)."""
    for entry in (repo.path / ".deepflow").iterdir():
        if entry.name == "config.yaml":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def work(repo: Repo) -> None:
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)


def assert_goes_on(repo: Repo) -> None:
    """T1 committed, the next `begin` hands out T2, the mirrors are back."""
    assert "T1: Add mul" in repo.subjects()[1], repo.subjects()
    nxt = gtd_json(repo, "cycle", "begin")
    assert nxt["status"] == "task", nxt
    assert nxt["task"] == "T2"
    for name in (
        MIRROR,
        ".deepflow/auto-snapshot.json",
        ".deepflow/auto-snapshot.txt",
        ".deepflow/auto-memory.yaml",
        ".deepflow/auto-report.md",
        ".deepflow/cycle-brief.md",
    ):
        assert (repo.path / name).is_file(), name


def test_git_clean_fdX_during_a_cycle_then_end(project: Repo) -> None:
    assert gtd_json(project, "cycle", "begin")["task"] == "T1"
    work(project)
    removed = git_clean(project)
    assert ".deepflow/cycle.json" in removed  # the attack is real
    assert (project.path / ".deepflow/config.yaml").is_file()

    answer = gtd_json(project, "cycle", "end")

    assert answer["status"] == "passed", (answer, answer.get("reason"))
    assert_goes_on(project)


def test_git_clean_fdX_during_a_cycle_then_begin(project: Repo) -> None:
    """The tick's `end` never came: the next `begin` finds the sealed cycle and
    judges it (no session is recorded under the test suite: the cycle is still
    in its agent phase until its timeout, so `end` is what a person runs)."""
    assert gtd_json(project, "cycle", "begin")["task"] == "T1"
    work(project)
    git_clean(project)

    again = gtd_json(project, "cycle", "begin")

    assert again["status"] in ("busy", "task"), again
    assert "halt" not in str(again).lower(), again
    answer = gtd_json(project, "cycle", "end")
    assert answer["status"] == "passed", (answer, answer.get("reason"))
    assert_goes_on(project)


def test_deepflow_removed_but_the_config_then_end(project: Repo) -> None:
    assert gtd_json(project, "cycle", "begin")["task"] == "T1"
    work(project)
    remove_deepflow_but_config(project)
    assert sorted(p.name for p in (project.path / ".deepflow").iterdir()) == ["config.yaml"]

    answer = gtd_json(project, "cycle", "end")

    assert answer["status"] == "passed", (answer, answer.get("reason"))
    assert_goes_on(project)


def test_git_clean_fdX_between_cycles(project: Repo) -> None:
    assert gtd_json(project, "cycle", "begin")["task"] == "T1"
    work(project)
    assert gtd_json(project, "cycle", "end")["status"] == "passed"
    git_clean(project)

    nxt = gtd_json(project, "cycle", "begin")

    assert nxt["status"] == "task", nxt
    assert nxt["task"] == "T2"


def test_a_failing_cycle_after_git_clean_is_reverted_not_halted(project: Repo) -> None:
    assert gtd_json(project, "cycle", "begin")["task"] == "T1"
    project.write("calc.py", "def add(a, b):\n    return a - b\n")
    git_clean(project)

    answer = gtd_json(project, "cycle", "end")

    assert answer["status"] == "reverted", answer
    assert "tests failed" in str(answer["reason"]), answer
    assert (project.path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    again = gtd_json(project, "cycle", "begin")
    assert again["status"] == "task", again


def private_folder(repo: Repo) -> Path:
    folder = repo.path / ".git" / "gtd"
    assert folder.is_dir()
    return folder


# `gtd/pins.git` and `gtd/sealed` are pieces of `gtd`, which removes both at once
# (its case asserts what the pins' loss says): slow, kept in the quick loop by [gtd].
_PIECE = pytest.mark.slow(
    reason="a variant of test_the_helpers_folders_in_git_removed_during_a_cycle[gtd]"
)


@pytest.mark.parametrize(
    "piece",
    [
        "gtd",
        pytest.param("gtd/pins.git", marks=_PIECE),
        pytest.param("gtd/sealed", marks=_PIECE),
        "gtd-children",
    ],
)
def test_the_helpers_folders_in_git_removed_during_a_cycle(project: Repo, piece: str) -> None:
    """`rm -rf .git/gtd` or a piece of it (the pins' side repository, the copies
    of git's vital files), and the notes of the helper's git children: the
    cycle is judged and the loop goes on. A branch of the person's the agent
    deleted with the pins gone cannot be put back: the record says so, never
    silent."""
    project.git("branch", "feature")
    feature = project.git("rev-parse", "feature").strip()
    assert gtd_json(project, "cycle", "begin")["task"] == "T1"
    work(project)
    project.git("branch", "-D", "feature")
    target = project.path / ".git" / piece
    assert target.exists(), sorted(p.name for p in target.parent.iterdir())
    shutil.rmtree(target)

    answer = gtd_json(project, "cycle", "end")

    assert answer["status"] == "passed", answer
    said = " ".join(answer.get("your_work") or ())  # type: ignore[arg-type]
    # The branch's commit is still in the repository (no gc ran): put back
    # from the sealed copy of the pins' list where the pins themselves are gone.
    assert "branch feature put back" in said, answer
    assert project.git("rev-parse", "feature").strip() == feature
    if piece in ("gtd", "gtd/pins.git"):
        assert "pins.git" in said, answer
        assert "from the copy of their list in the sealed state" in said, answer
    assert_goes_on(project)


def test_pins_removed_and_the_branch_pruned_is_named_not_silent(project: Repo) -> None:
    """The worst case: the pins gone and the branch's commit pruned with `git
    gc --prune=now`. Nothing can bring it back; the record says which branch,
    and how to look for what is left."""
    project.write("side.txt", "only on feature\n")
    project.git("checkout", "-q", "-b", "feature")
    project.git("add", "side.txt")
    project.git("commit", "-q", "-m", "feature work")
    project.git("checkout", "-q", "main")
    assert gtd_json(project, "cycle", "begin")["task"] == "T1"
    work(project)
    project.git("branch", "-D", "feature")
    shutil.rmtree(private_folder(project) / "pins.git")
    project.git("reflog", "expire", "--expire-unreachable=now", "--all")
    project.git("gc", "-q", "--prune=now")

    answer = gtd_json(project, "cycle", "end")

    assert answer["status"] == "passed", answer
    said = " ".join(answer.get("your_work") or ())  # type: ignore[arg-type]
    assert "branch feature could not be put back" in said, answer
    assert "git fsck --lost-found" in said, answer
    assert_goes_on(project)
