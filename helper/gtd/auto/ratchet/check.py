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
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from gtd.auto.config import Config
from gtd.auto.ratchet import files as files_mod
from gtd.auto.ratchet import protect, room, runner
from gtd.auto.ratchet.model import (
    CommandRun,
    Environment,
    FileHashes,
    Outcome,
    RunResult,
    Snapshot,
)
from gtd.auto.ratchet.verdict import Verdict, integrity, judge
from gtd.git import Change, Git, TreeEntry

_GITLINK = "160000"


class Judgement(NamedTuple):
    verdict: Verdict
    run: RunResult  # old and new tests together: what the baseline advances to
    duration_s: float
    flaky: tuple[str, ...] = ()


class Baseline(NamedTuple):
    run: RunResult
    environment: Environment
    collected: tuple[str, ...]  # test files the runner collected (empty: unknown)


def tree_of(git: Git, commit: str) -> str:
    return git.run("rev-parse", f"{commit}^{{tree}}").strip()


# -- the candidate's view ---------------------------------------------------------------


def commands_of(run: RunResult) -> list[str]:
    """The commands a snapshot was taken with: which of them may run a task runner
    decides what configuration is protected (gtd.auto.ratchet.invocation)."""
    return [c.command for c in run.commands]


def config_commands(config: Config) -> list[str]:
    found = (config.build_command, config.test_command, config.typecheck_command)
    return [c for c in (*found, config.lint_command) if c]


def protected_digests(
    git: Git,
    listing: Mapping[str, TreeEntry],
    commands: Sequence[str],
    *,
    unchanged: Callable[[str], bool] = lambda _: False,
    previous: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Protected configuration in a tree: key → digest (gtd.auto.ratchet.protect),
    read from git objects. A file ``unchanged`` says is the same as when
    ``previous`` was taken keeps its keys from there instead of being read again."""
    from gtd.auto.ratchet import invocation

    seen = invocation.read(commands)
    named = {p for p in map(invocation.repo_path, seen.named) if p is not None and p in listing}
    wanted = sorted(
        p
        for p, e in listing.items()
        if e.kind == "blob"
        and (
            protect.is_protected_path(p)
            or (not seen.plain and protect.is_runner_file(p))
            or p in named
        )
    )
    out: dict[str, str] = {}
    to_read: list[str] = []
    by_path: dict[str, list[str]] = {}
    for key in previous or {}:
        by_path.setdefault(protect.split_key(key)[0], []).append(key)
    for path in wanted:
        if previous is not None and unchanged(path):
            out.update({k: previous[k] for k in by_path.get(path, [])})
        else:
            to_read.append(path)
    for path, obj in zip(to_read, git.objects([listing[p].oid for p in to_read]), strict=True):
        if obj is None:
            continue
        if protect.is_protected_path(path) or (not seen.plain and protect.is_runner_file(path)):
            out.update(protect.digests(path, obj.data, plain=seen.plain))
        if path in named:
            out[f"{path} {protect.NAMED}"] = protect.digest(path, obj.data)
    return out


def hashes(
    git: Git,
    snapshot: Snapshot,
    listing: Mapping[str, TreeEntry],
    changes: Sequence[Change],
) -> FileHashes:
    """The candidate as the integrity check sees it, from its tree listing; file
    contents are read (one batch) only for protected files that changed."""
    changed = {c.path for c in changes}
    files = {p: (listing[p].oid if p in listing else None) for p in snapshot.files}
    new_files = {
        p: e.oid
        for p, e in listing.items()
        if files_mod.is_test_file(p) and p not in snapshot.files and e.kind == "blob"
    }
    protected = protected_digests(
        git,
        listing,
        commands_of(snapshot.baseline),
        unchanged=lambda p: p not in changed,
        previous=snapshot.protected,
    )
    inits = {p.rpartition("/")[0] for p in listing if p.endswith("/__init__.py")}
    inits |= {"" for p in listing if p == "__init__.py"}
    new_modules = tuple(
        c.path
        for c in changes
        if c.status == "A" and c.path.endswith(".py") and _folder_of_module(c.path) not in inits
    )
    submodules = tuple(sorted({c.path for c in changes if _GITLINK in (c.old_mode, c.new_mode)}))
    return FileHashes(files, new_files, protected, {}, new_modules, submodules)


def _folder_of_module(path: str) -> str:
    """The folder that must be on the import path for ``path`` to be a top-level
    module: its own folder, or its package's parent for an ``__init__.py``."""
    folder = path.rpartition("/")[0]
    if path.endswith("/__init__.py") or path == "__init__.py":
        folder = folder.rpartition("/")[0]
    return folder


# -- composing the judged trees ------------------------------------------------------


def judged_trees(
    git: Git,
    scratch: Path,
    candidate: str,
    base_listing: Mapping[str, TreeEntry],
    listing: Mapping[str, TreeEntry],
    *,
    guarded: Mapping[str, protect.Protection],
) -> tuple[str, str]:
    """(old-tests tree, new-tests tree) for ``candidate``: every wholly protected
    file as the base has it; in the old-tests tree, the protected files the
    candidate adds (new tests in a test folder, a new conftest...) left out."""
    whole = {p for p, why in guarded.items() if why.whole}
    from_base: dict[str, TreeEntry | None] = {
        p: base_listing[p] for p in whole if p in base_listing and base_listing[p] != listing.get(p)
    }
    new_tests_tree = _replace(git, scratch, candidate, from_base)
    dropped: dict[str, TreeEntry | None] = {
        p: None for p in listing if p not in base_listing and p in whole
    }
    old_tests_tree = _replace(git, scratch, new_tests_tree, dropped)
    return old_tests_tree, new_tests_tree


def _replace(git: Git, scratch: Path, tree: str, entries: Mapping[str, TreeEntry | None]) -> str:
    """``tree`` with each path set to the entry given (None: removed)."""
    if not entries:
        return tree
    index = scratch / "compose.index"
    env = {"GIT_INDEX_FILE": str(index)}
    zero = "0" * len(tree)
    lines = "".join(
        f"{e.mode} {e.oid}\t{p}\0" if e is not None else f"0 {zero}\t{p}\0"
        for p, e in sorted(entries.items())
    )
    try:
        git.run("read-tree", tree, env=env)
        git.run("update-index", "-z", "--index-info", input_text=lines, env=env)
        return git.run("write-tree", env=env).strip()
    finally:
        index.unlink(missing_ok=True)


# -- running ------------------------------------------------------------------------------


def judge_candidate(
    git: Git,
    rm: room.Room,
    config: Config,
    snapshot: Snapshot,
    *,
    base: str,
    candidate: str,
    tolerated: frozenset[str] = frozenset(),
) -> Judgement:
    """The verdict on ``candidate`` (a tree) against ``snapshot``, whose tests and
    protected files are those of commit ``base``, in the room ``rm``."""
    start = time.monotonic()
    base_tree = tree_of(git, base)
    changes = git.diff_trees(base_tree, candidate) if base_tree != candidate else []
    listing = git.ls_tree(candidate)
    violations = integrity(snapshot, hashes(git, snapshot, listing, changes))
    if violations:
        return Judgement(judge(snapshot.baseline, RunResult(), violations), RunResult(), 0.0)
    base_listing = git.ls_tree(base_tree) if changes else listing
    guarded = protect.protection(
        {*base_listing, *listing}, commands_of(snapshot.baseline), snapshot.files
    )
    expected = {
        p: e.oid
        for p, e in base_listing.items()
        if e.kind == "blob" and p in guarded and guarded[p].whole
    }
    old_tree, new_tree = judged_trees(
        git, rm.slot, candidate, base_listing, listing, guarded=guarded
    )
    split = snapshot.environment.plugin
    room.sync(git, rm, old_tree if split else new_tree, config.links)
    altered = room.altered(rm, expected)
    if altered:
        reason = f"snapshot test modified in the clean room: {altered[0]}"
        return Judgement(judge(snapshot.baseline, RunResult(), [reason]), RunResult(), 0.0)
    env = room.environment(rm)
    run = runner.run_all(rm.tree, config, env=env, reports_dir=rm.slot / "reports")
    new_run: RunResult | None = None
    if split and _has_new_code(changes, snapshot, guarded):
        room.sync(git, rm, new_tree, config.links)
        new_run = runner.run_all(
            rm.tree, config, env=env, reports_dir=rm.slot / "reports", only=frozenset({"test"})
        )
    altered = room.altered(rm, expected)
    merged = merge_runs(run, new_run, snapshot)
    found = [f"snapshot test modified during the test run: {altered[0]}"] if altered else []
    verdict = judge(snapshot.baseline, merged, found, tolerated)
    return Judgement(verdict, merged, round(time.monotonic() - start, 3))


def _has_new_code(
    changes: Sequence[Change], snapshot: Snapshot, guarded: Mapping[str, protect.Protection]
) -> bool:
    """Whether the candidate adds or changes anything but the snapshot's tests and
    the base's protected files: then it may hold new tests for the second session."""
    return any(
        c.status == "A" or (c.path not in snapshot.files and c.path not in guarded) for c in changes
    )


def merge_runs(old: RunResult, new: RunResult | None, snapshot: Snapshot) -> RunResult:
    """The old-tests run with the new-tests session's outcomes for tests the first
    session did not run; the test command counts as failed when either failed."""
    if new is None:
        return old
    tests: dict[str, Outcome] | None = dict(old.tests) if old.tests is not None else None
    if new.tests is not None:
        tests = tests if tests is not None else {}
        for test_id, outcome in new.tests.items():
            tests.setdefault(test_id, outcome)
    commands: list[CommandRun] = []
    extra = new.command("test")
    for cmd in old.commands:
        merged = cmd
        if cmd.kind == "test" and extra is not None:
            worse = extra if cmd.ok and not extra.ok else cmd
            merged = worse._replace(duration_s=round(cmd.duration_s + extra.duration_s, 3))
        commands.append(merged)
    return RunResult(tuple(commands), tests)


def run_baseline(git: Git, config: Config, tree: str) -> Baseline:
    """Every configured command on ``tree`` in the room: the baseline."""
    with room.acquire(git) as rm:
        room.sync(git, rm, tree, config.links)
        run = runner.run_all(
            rm.tree, config, env=room.environment(rm), reports_dir=rm.slot / "reports"
        )
    environment = Environment(plugin=run.tests is not None)
    return Baseline(run, environment, ())


def snapshot_of(
    git: Git, commit: str, tree: str, baseline: Baseline, *, accepted: str | None = None
) -> Snapshot:
    """The snapshot of ``tree`` (to be, or being, ``commit``'s) with ``baseline``:
    its test files (by name, and as the runner collected them) with their blob ids,
    and its protected configuration."""
    listing = git.ls_tree(tree)
    collected = set(baseline.collected)
    files = {
        p: e.oid
        for p, e in listing.items()
        if e.kind == "blob" and (files_mod.is_test_file(p) or p in collected)
    }
    protected = protected_digests(git, listing, commands_of(baseline.run))
    return Snapshot(
        head=commit,
        files=files,
        protected=protected,
        baseline=baseline.run,
        collected=bool(collected),
        environment=baseline.environment,
        accepted=accepted,
    )


# -- library entry points (what the CLI's ratchet commands and the tests call) --------


def snapshot_head(root: Path, config: Config) -> Snapshot:
    """The snapshot of HEAD with a fresh baseline, sealed nowhere."""
    git = Git(root, hardened=True)
    head = git.head()
    if head is None:
        from gtd.errors import RepoError

        raise RepoError("the repository has no commits", "commit once, then take the snapshot")
    tree = tree_of(git, head)
    return snapshot_of(git, head, tree, run_baseline(git, config, tree))


def check_worktree(
    root: Path,
    config: Config,
    snapshot: Snapshot,
    tolerated: frozenset[str] = frozenset(),
) -> tuple[Verdict, RunResult]:
    """The verdict on the working tree as it is now against ``snapshot``."""
    git = Git(root, hardened=True)
    with room.acquire(git) as rm:
        candidate = git.worktree_tree(rm.slot / "candidate.index")
        judged = judge_candidate(
            git, rm, config, snapshot, base=snapshot.head, candidate=candidate, tolerated=tolerated
        )
    return judged.verdict, judged.run


def advance(root: Path, snapshot: Snapshot, run: RunResult) -> Snapshot:
    """The snapshot after a passing check of the working tree: its test files now
    protected, ``run`` the baseline (the head stays until the work is committed)."""
    git = Git(root, hardened=True)
    with room.acquire(git) as rm:
        candidate = git.worktree_tree(rm.slot / "candidate.index")
    base = Baseline(run, snapshot.environment, ())
    return snapshot_of(git, snapshot.head, candidate, base)._replace(doctests=snapshot.doctests)
