"""The gather against real git: subjects for the whole range, change lists only for
the commits the folds read (the rest on demand), and the same answers as reading
every change list."""

from __future__ import annotations

import pytest

from gtd.git import Git
from gtd.git_parse import LOG_FORMAT
from gtd.step.edge import complete, resolve_snapshot
from gtd.step.errors import ChangesNotGathered
from gtd.step.gather import gather, parse_log, read_commits
from gtd.step.inlines import _last_plan
from gtd.step.machine import changes_wanted
from gtd.step.settings import StepConfig
from tests.integration.step.conftest import StepRepo


def _full(r: StepRepo, rev: str) -> list[tuple[str, str, str | None, object]]:
    raw = r.git("log", "--first-parent", "--no-renames", "--name-status", "-z", LOG_FORMAT, rev)
    return [(c.sha, c.subject, c.parent, c.changes) for c in parse_log(raw)]


def _long_branch(r: StepRepo, plain: int = 40) -> None:
    r.git("checkout", "-q", "-b", "feature")
    for i in range(plain):
        r.write(f"src/{i % 5}.txt", f"{i}\n")
        r.commit_all(f"feat: change {i}")
    r.write("idea.md", "make it faster\n")
    r.commit_all("gtd(human): grilling")
    r.write(".gtd/TODO.md", "# Plan\n\nMake it faster.\n")
    r.commit_all("gtd(agent): grilling")


def test_subjects_for_the_range_change_lists_for_the_wanted_tail(step_repo: StepRepo) -> None:
    _long_branch(step_repo)
    commits, merge = read_commits(Git(step_repo.path))
    full = _full(step_repo, "main..HEAD")
    assert not merge
    assert [(c.sha, c.subject, c.parent) for c in commits] == [f[:3] for f in full]
    wanted = changes_wanted(commits)
    assert wanted == 2  # the cycle: its first grilling turn on
    assert all(c.changes is None for c in commits[:-wanted])
    assert [c.changes for c in commits[-wanted:]] == [f[3] for f in full[-wanted:]]


def test_whole_history_on_main_reads_the_same(step_repo: StepRepo) -> None:
    for i in range(5):
        step_repo.write("value.txt", f"{i}\n")
        step_repo.commit_all(f"feat: {i}")
    commits, _ = read_commits(Git(step_repo.path))
    assert [(c.sha, c.subject) for c in commits] == [f[:2] for f in _full(step_repo, "HEAD")]
    assert commits[-1].changes is not None


def test_a_fold_past_the_gathered_lists_reads_the_rest(step_repo: StepRepo) -> None:
    """The safety net: with every change list unread, resolving with git reads them
    and answers as the full read does; without git it refuses to guess."""
    _long_branch(step_repo)
    git = Git(step_repo.path)
    snapshot = gather(git)
    blank = snapshot._replace(commits=tuple(c._replace(changes=None) for c in snapshot.commits))
    with pytest.raises(ChangesNotGathered):
        resolve_snapshot(blank, StepConfig(), None)
    expected = resolve_snapshot(complete(git, snapshot), StepConfig(), None)
    assert resolve_snapshot(blank, StepConfig(), None, git) == expected
    assert expected.state == "grilling"
    assert expected.actor == "human"  # the agent's grilling turn changed files
    assert [c.changes for c in complete(git, blank).commits] == [
        f[3] for f in _full(step_repo, "main..HEAD")
    ]


def test_the_squash_prompt_finds_the_plan_behind_unread_lists(step_repo: StepRepo) -> None:
    step_repo.write(".gtd/TODO.md", "# Plan\n\nThe settled plan.\n")
    step_repo.commit_all("gtd(human): grilling")
    step_repo.remove(".gtd/TODO.md")
    step_repo.commit_all("gtd: planning")
    for i in range(3):
        step_repo.write("value.txt", f"{i}\n")
        step_repo.commit_all(f"feat: {i}")
    git = Git(step_repo.path)
    commits = tuple(c._replace(changes=None) for c in gather(git).commits)
    assert "The settled plan." in _last_plan(git, commits)


def test_next_and_status_on_a_long_branch(step_repo: StepRepo) -> None:
    _long_branch(step_repo, plain=60)
    out = step_repo.ok("next", "--json").json
    assert (out["state"], out["actor"], out["file"]) == ("grilling", "human", ".gtd/TODO.md")
    status = step_repo.ok("status", "--json").json
    assert (status["predictedCommit"], status["predictedState"]) == (
        "gtd(human): grilling",
        "grilling",
    )
