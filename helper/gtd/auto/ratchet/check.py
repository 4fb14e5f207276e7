"""Judging a candidate in the clean room, and taking a baseline there (the edge
around the pure verdict).

A candidate is a *tree*: what git would commit from the working tree (tracked
files as they are, untracked ones it does not ignore), written as objects once.
From then on nothing reads the live working tree: the integrity check compares
blob ids and the protected parts of configuration read from git objects, and
the commands run in a room (gtd.auto.ratchet.room) checked out from trees made
of the candidate:

- the *old-tests* tree: the candidate with every protected file taken from the
  base commit (test configuration, conftest.py anywhere, `.deepflow/config.yaml`,
  PLAN.md) and every file the candidate adds under a test folder left out. The
  snapshot's tests run there, in a pytest session that collects only them, so no
  new test module, conftest or shadowing package can reach them;
- the *new-tests* tree: the candidate with protected files from the base. New
  tests run there in a second session that leaves the snapshot's tests out; they
  must pass, and can never rescue an old one.

Without per-test reports (a runner other than pytest, or a pytest that does not
load the plugin) there is one session, in the new-tests tree.

The parts, by job: gtd.auto.ratchet.candidate (the candidate's files, links and
judged trees), .judge (judging a candidate), .baseline_run (taking a baseline and
the snapshot of a tree), .runs (the commands in the room), .trust (whether a
run's results can be believed), .hooks_seen (the plugins and hooks a session
loaded), .sites (the test interpreter's folders), .reruns (the runs made only to
excuse a result). This module holds the library entry points the CLI's ratchet
commands and the tests call, and names the parts' entry points for callers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gtd.auto.config import AutoConfig
from gtd.auto.ratchet import room
from gtd.auto.ratchet.baseline_run import Baseline, run_baseline, snapshot_of
from gtd.auto.ratchet.candidate import tree_of
from gtd.auto.ratchet.judge import Judgement, JudgeRequest, judge_candidate
from gtd.auto.ratchet.model import RunResult, Snapshot
from gtd.auto.ratchet.verdict import Verdict
from gtd.git import Git

__all__ = [
    "Baseline",
    "JudgeRequest",
    "Judgement",
    "advance",
    "check_worktree",
    "judge_candidate",
    "run_baseline",
    "snapshot_head",
    "snapshot_of",
    "tree_of",
]


# -- library entry points (what the CLI's ratchet commands and the tests call) --------


def snapshot_head(root: Path, config: AutoConfig) -> Snapshot:
    """The snapshot of HEAD with a fresh baseline, sealed nowhere."""
    git = Git(root, hardened=True)
    head = git.head()
    if head is None:
        from gtd.errors import RepoError

        raise RepoError("the repository has no commits", "commit once, then take the snapshot")
    tree = tree_of(git, head)
    listing = git.ls_tree(tree)
    base = run_baseline(git, config, tree, listing)
    return snapshot_of(git, head, tree, base, listing=listing, declared=config.protect)


def check_worktree(
    root: Path,
    config: AutoConfig,
    snapshot: Snapshot,
    tolerated: frozenset[str] = frozenset(),
) -> tuple[Verdict, RunResult]:
    """The verdict on the working tree as it is now against ``snapshot``."""
    git = Git(root, hardened=True)
    with room.acquire(git) as rm:
        candidate = git.worktree_tree(room.candidate_index(rm), git.head())
        job = JudgeRequest(snapshot, snapshot.head, candidate, tolerated=tolerated)
        judged = judge_candidate(git, rm, config, job)
    return judged.verdict, judged.run


def advance(
    root: Path, snapshot: Snapshot, run: RunResult, declared: Sequence[str] = ()
) -> Snapshot:
    """The snapshot after a passing check of the working tree: its test files (and
    the files ``declared`` names) now protected, ``run`` the baseline (the head
    stays until the work is committed)."""
    git = Git(root, hardened=True)
    with room.acquire(git) as rm:
        candidate = git.worktree_tree(room.candidate_index(rm), git.head())
    base = Baseline(run, snapshot.environment, (), tuple(snapshot.doctests))
    return snapshot_of(git, snapshot.head, candidate, base, declared=declared)
