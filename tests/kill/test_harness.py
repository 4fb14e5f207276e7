"""The harness's checks can fail: each test runs a trial whose command is not
killed (its moment lies past its end), breaks one thing the way a crash bug
would, and requires the trial to report exactly that. Without these, a harness
that checked nothing would pass every kill trial too."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.kill import scene
from tests.kill.trial import Outcome, Runner, Trial

Templates = tuple[scene.Templates, int]


def unkilled(
    templates: Templates, tmp_path: Path, kind: str, stage: str, act: Callable[[Path], None]
) -> Outcome:
    def hook(at: str, repo: Path) -> None:
        if at == stage:
            act(repo)

    trial = Trial(0, 0, kind, "tree", 50.0)  # the moment comes long after the end
    outcome = Runner(templates[0], tmp_path).run(trial, attempts=1, hook=hook)
    assert not outcome.landed
    return outcome


def said(outcome: Outcome, *words: str) -> bool:
    text = "\n".join(outcome.problems)
    return all(w in text for w in words)


@pytest.mark.slow
def test_an_untouched_trial_passes(kill_setup: Templates, tmp_path: Path) -> None:
    outcome = unkilled(kill_setup, tmp_path, "end-pass", "check", lambda repo: None)
    assert outcome.problems == []
    assert outcome.final == "committed"


@pytest.mark.slow
def test_a_lost_ignored_file_of_the_user_is_caught(kill_setup: Templates, tmp_path: Path) -> None:
    outcome = unkilled(
        kill_setup, tmp_path, "end-fail", "check", lambda repo: (repo / "data/cache.bin").unlink()
    )
    assert said(outcome, "missing: data/cache.bin"), outcome.problems


@pytest.mark.slow
def test_a_file_left_behind_by_a_revert_is_caught(kill_setup: Templates, tmp_path: Path) -> None:
    def leave(repo: Path) -> None:
        scene.write_files(repo, {"notes/agent.md": "still here\n"})

    outcome = unkilled(kill_setup, tmp_path, "end-fail", "check", leave)
    assert said(outcome, "left behind: notes/agent.md"), outcome.problems


@pytest.mark.slow
def test_work_missing_from_the_kept_ref_is_caught(kill_setup: Templates, tmp_path: Path) -> None:
    def drop(repo: Path) -> None:
        # Point the kept ref at the base: the agent's work is then kept nowhere.
        scene.git(repo, "update-ref", "refs/gtd/reverted/cycle-1", "HEAD")

    outcome = unkilled(kill_setup, tmp_path, "end-fail", "check", drop)
    assert said(outcome, "is not kept in refs/gtd/reverted/cycle-1"), outcome.problems


@pytest.mark.slow
def test_a_half_commit_is_caught(kill_setup: Templates, tmp_path: Path) -> None:
    """The work commit without the PLAN.md tick (as if the tick were lost)."""

    def untick(repo: Path) -> None:
        scene.git(repo, "reset", "-q", "--hard", "HEAD~1")

    outcome = unkilled(kill_setup, tmp_path, "end-pass", "check", untick)
    assert said(outcome, "not the cycle's two commits"), outcome.problems


@pytest.mark.slow
def test_memory_that_disagrees_with_the_tree_is_caught(
    kill_setup: Templates, tmp_path: Path
) -> None:
    def forget(repo: Path) -> None:
        memory = repo / ".deepflow/auto-memory.yaml"
        memory.write_text(memory.read_text().replace("status: passed", "status: reverted"))

    outcome = unkilled(kill_setup, tmp_path, "end-pass", "check", forget)
    assert said(outcome, "the memory records cycle 1"), outcome.problems


@pytest.mark.slow
def test_a_begin_that_never_settles_is_a_stall(kill_setup: Templates, tmp_path: Path) -> None:
    """An untracked file that no cycle made: `begin` answers dirty for good."""

    def litter(repo: Path) -> None:
        scene.write_files(repo, {"stray.txt": "nobody's\n"})

    outcome = unkilled(kill_setup, tmp_path, "end-pass", "settle", litter)
    assert said(outcome, "stall", "answers dirty with nothing left running"), outcome.problems


@pytest.mark.slow
def test_no_process_of_a_trial_outlives_it(kill_setup: Templates, tmp_path: Path) -> None:
    """Whatever still runs in a trial's folder when it ends is killed (a stray
    worker must not touch the next trial, nor outlive the suite)."""
    sleepers: list[subprocess.Popen[bytes]] = []

    def linger(repo: Path) -> None:
        sleepers.append(subprocess.Popen(["sleep", "300"], cwd=repo))

    try:
        outcome = unkilled(kill_setup, tmp_path, "begin", "check", linger)
        assert outcome.problems == []
        assert sleepers[0].wait(timeout=10) == -9
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()


@pytest.mark.slow
def test_an_untouched_session_trial_passes(kill_setup: Templates, tmp_path: Path) -> None:
    """The session that began cycle 1 asks again: its `begin` judges the agent's
    work, commits it and begins the next task, and every later `begin` runs in
    that session too."""
    outcome = unkilled(kill_setup, tmp_path, "begin-same-pass", "check", lambda repo: None)
    assert outcome.problems == []
    assert outcome.final == "committed"
    # the harness's begin after it judged the empty cycle 2 its own session left
    assert outcome.answers[0].startswith("task [previous: cycle 2 T2 reverted"), outcome.answers


@pytest.mark.slow
def test_a_session_cycle_left_to_the_agent_timeout_is_caught(
    kill_setup: Templates, tmp_path: Path
) -> None:
    """A cycle whose session is gone must be judged, never reverted as abandoned."""

    def abandon(repo: Path) -> None:
        memory = repo / ".deepflow/auto-memory.yaml"
        # cycle 1's line only (cycle 2, begun outside any session, is abandoned)
        judged = 'status: reverted, reason: "tests failed'
        text = memory.read_text()
        assert text.count(judged) == 1, text
        memory.write_text(text.replace(judged, 'status: reverted, reason: "abandoned: no end'))

    outcome = unkilled(kill_setup, tmp_path, "begin-gone-fail", "check", abandon)
    assert said(outcome, "cycle 1 waited for the agent's timeout"), outcome.problems
