"""Judging a candidate tree in the clean room against the snapshot: the edge
around the pure verdict (the trees it runs in: gtd.auto.ratchet.check)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence

from gtd import threads
from gtd.auto.config import AutoConfig
from gtd.auto.ratchet import (
    box,
    commands,
    hooks_seen,
    leftovers,
    protect,
    reruns,
    room,
    room_run,
    sites,
    trust,
)
from gtd.auto.ratchet.candidate import commands_of, hashes, judged_trees, links_out, tree_of
from gtd.auto.ratchet.held import Held, hold
from gtd.auto.ratchet.model import CommandRun, Outcome, RunResult, Snapshot
from gtd.auto.ratchet.results import Report
from gtd.auto.ratchet.room_run import guarded_files
from gtd.auto.ratchet.verdict import Verdict, integrity, judge
from gtd.git import Git
from gtd.git_parse import Change, TreeEntry
from gtd.tuples import NamedTuple


class Judgement(NamedTuple):
    verdict: Verdict
    run: RunResult  # old and new tests together: what the baseline advances to
    duration_s: float
    flaky: tuple[str, ...] = ()
    collected: tuple[str, ...] = ()  # test files the runner collected, both sessions
    doctest_modules: tuple[str, ...] = ()
    # baseline-passing tests skipped now that the base commit's code, run now,
    # skips too (the environment changed): excused, and named
    env_skipped: tuple[str, ...] = ()


class JudgeRequest(NamedTuple):
    """What a candidate is judged on: the tree ``candidate`` against ``snapshot``,
    whose tests and protected files are those of commit ``base`` (its tree
    ``base_tree`` and that tree's listing ``base_files``, where the caller has
    them). ``tolerated``: tests whose failure alone refuses nothing
    (quarantined); ``trust_until``: when an agent may have started writing
    (nothing of the room changed since is trusted); ``held``: the first test run,
    started by the caller earlier still (gtd.auto.ratchet.held); ``environment``:
    what changed in the test interpreter's environment since the cycle began
    (none where nothing is sealed), asked before each run made only to excuse a
    result."""

    snapshot: Snapshot
    base: str
    candidate: str
    base_tree: str | None = None
    base_files: Mapping[str, TreeEntry] | None = None
    tolerated: frozenset[str] = frozenset()
    trust_until: float | None = None
    held: Held | None = None
    environment: Callable[[], list[str]] | None = None


def judge_candidate(git: Git, rm: room.Room, config: AutoConfig, job: JudgeRequest) -> Judgement:
    """The verdict on ``job.candidate`` (a tree) in the room ``rm``. The first test
    run is started at once and held until the room is ready
    (gtd.auto.ratchet.held), unless ``job.held`` is one the caller started."""
    snapshot, candidate, tolerated = job.snapshot, job.candidate, job.tolerated
    trust_until, environment, held = job.trust_until, job.environment, job.held
    start = time.monotonic()
    if trust_until is not None:
        rm = rm._replace(began=trust_until)
    if held is None:
        held = hold(rm, config, room.environment(rm))
    # A candidate refused before its run: the held process ends at the gate.
    with held or contextlib.nullcontext():
        changes, listing, base_listing = _listings(git, job)
        violations = integrity(snapshot, hashes(git, snapshot, listing, changes))
        violations += links_out(git, listing, changes, config.links)
        if violations:
            violations[0] = _named_test(git, snapshot, listing, violations[0])
            verdict = judge(snapshot.baseline, RunResult(), violations)
            # what the check took (no test ran): a 0.0 reads as if nothing was done
            return Judgement(verdict, RunResult(), round(time.monotonic() - start, 3))
        guarded = protect.protection(
            {*base_listing, *listing},
            commands_of(snapshot.baseline),
            snapshot.files,
            protect.new_paths_declared(config.protect, base_listing, listing),
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
        room.sync(git, rm, old_tree if split else new_tree, config.links, trust_until=trust_until)
        altered = room.altered(git, rm, expected)
        if altered:
            reason = f"a protected test was changed in the clean room: {altered[0]}"
            verdict = judge(snapshot.baseline, RunResult(), [reason])
            return Judgement(verdict, RunResult(), round(time.monotonic() - start, 3))
        env = room.environment(rm)
        only_old = tuple(snapshot.test_paths) if split else None
        submodules = frozenset(p for p, e in listing.items() if e.kind == "commit")
        protected = guarded_files(guarded, base_listing, config.protect)
        again = reruns.Context(git, rm, config, env, snapshot, submodules)  # runs to excuse
        # What the run wrote (one git call, before a sync could write over the
        # evidence), asked as soon as the commands have ended, while the report
        # is read and judged: it is on the run's critical path.
        written = threads.Later(lambda: trust.written(git, rm, submodules))
        try:
            first = room_run.run(
                rm, config, env, only_files=only_old, held=held, guarded=protected,
                ended=written.start,
            )  # fmt: skip
        except BaseException:
            written.wait()  # a git call at work in the room ends before the room is let go
            raise
        # (a new site folder first, and a plugin's new hooks: they are the cause
        # of what its `.pth` files, or the hooks, did to the reports)
        found = sites.new_site_folders(first.report, rm, snapshot)
        found += hooks_seen.new_plugins(first.report, rm, snapshot)
        found += trust.report_problems(
            first.report, rm, snapshot, test=first.result.command("test"), config=config
        )
        found += leftovers.reasons(first.result, snapshot.baseline)
        found += written.result()
        if split and not found:
            found += reruns.doctests_rewritten(again, first.report)
        flaky: tuple[str, ...] = ()
        if not found:
            judged = old_tree if split else new_tree
            flaky = reruns.flaky(
                again, first.result, tolerated, judged,
                excusable=lambda: _excusable(environment, found), guarded=protected,
                company=only_old,
            )  # fmt: skip
        second: commands.Run | None = None
        new_files = _new_test_candidates(changes, snapshot)
        # A baseline test that still fails is a refusal whatever the new tests do:
        # their session would only lengthen the revert (~0.5 s a refused cycle).
        regressed = reruns.failing_now(snapshot, first.result, tolerated | frozenset(flaky))
        if split and new_files and not found and not regressed:
            room.sync(git, rm, new_tree, config.links)
            second = room_run.run(rm, config, env, only_files=new_files, only=frozenset({"test"}))
            found += trust.report_problems(
                second.report, rm, snapshot, new_tests=True,
                test=second.result.command("test"), config=config,
            )  # fmt: skip
            found += leftovers.reasons(second.result, snapshot.baseline)
            found += trust.written(git, rm, submodules)
        altered = room.altered(git, rm, expected)
        found += [f"a protected test was changed during the test run: {p}" for p in altered[:1]]
        if not found and not regressed:
            ran = (first.report, *((second.report,) if second else ()))
            found += _unrun_new_tests(git, rm, listing, changes, snapshot, ran)
        environmental = (
            ()
            if found
            else reruns.skipped_by_environment(
                again, first.result, excusable=lambda: _excusable(environment, found)
            )
        )  # fmt: skip
        merged = merge_runs(first.result, None if second is None else second.result, snapshot)
        verdict = judge(
            snapshot.baseline, merged, found, tolerated | frozenset(flaky), frozenset(environmental)
        )
        verdict = _memory_named(verdict, merged, config)
        items = [*first.report.items, *(second.report.items if second else ())]
        whole, modules = room_run.collected(items)
        if flaky and merged.tests is not None:
            # What a pass advances the baseline to: a test that passed when run again
            # is a passing test (recorded as failed, it would lose its protection).
            merged = merged._replace(tests={**merged.tests, **dict.fromkeys(flaky, "passed")})
        elapsed = round(time.monotonic() - start, 3)
        return Judgement(verdict, merged, elapsed, flaky, whole, modules, tuple(environmental))


def _listings(
    git: Git, job: JudgeRequest
) -> tuple[list[Change], Mapping[str, TreeEntry], Mapping[str, TreeEntry]]:
    """(the changes from the base tree to the candidate, the candidate's listing,
    the base tree's listing), read with as few git calls as the caller's values
    allow, side by side."""
    candidate, base_files = job.candidate, job.base_files
    base_tree = job.base_tree if job.base_tree is not None else tree_of(git, job.base)
    changes: list[Change]
    if base_tree == candidate:
        changes = []
        listing = base_listing = base_files if base_files is not None else git.ls_tree(candidate)
    elif base_files is not None:
        was = base_tree
        changes, listing = threads.both(
            lambda: git.diff_trees(was, candidate), lambda: git.ls_tree(candidate)
        )
        base_listing = base_files if changes else listing
    else:
        # Three reads of different things, side by side.
        was = base_tree  # (a name the lambdas see as a str)
        (changes, base_listing), listing = threads.both(
            lambda: threads.both(lambda: git.diff_trees(was, candidate), lambda: git.ls_tree(was)),
            lambda: git.ls_tree(candidate),
        )
        if not changes:
            base_listing = listing
    return changes, listing, base_listing


def _named_test(git: Git, snapshot: Snapshot, listing: Mapping[str, TreeEntry], reason: str) -> str:
    """``reason``, naming the test and line when it is a protected test file's edit
    (two blobs read: only for the reason shown, never for the verdict)."""
    from gtd.auto.ratchet import edits

    path = reason.removeprefix(f"{edits.CHANGED}: ")
    entry = listing.get(path)
    if path == reason or path not in snapshot.files or entry is None:
        return reason
    old, new = git.objects([snapshot.files[path], entry.oid])
    if old is None or new is None:
        return reason
    return edits.describe(path, old.data, new.data)


def _unrun_new_tests(
    git: Git,
    rm: room.Room,
    listing: Mapping[str, TreeEntry],
    changes: Sequence[Change],
    snapshot: Snapshot,
    reports: Sequence[Report],
) -> list[str]:
    """New test files no session collected (gtd.auto.ratchet.newtests): where the
    plugin reported what pytest collected. The ``testpaths`` the reason quotes is
    read from the candidate's own blob of the session's configuration file."""
    from gtd.auto.ratchet import newtests

    if not reports or any(r.source != "plugin" for r in reports):
        return []
    added = newtests.added_test_modules(
        (c.path for c in changes if c.status == "A"), snapshot.test_paths
    )
    collected: set[str] = set()
    for report in reports:
        collected |= newtests.collected_files(report.items, report.tests)
    unrun = [p for p in added if p not in collected]
    if not unrun:
        return []
    paths: list[str] = []
    ini = next((s.inipath for r in reports for s in r.sessions if s.inipath), None)
    if ini is not None:
        for top in (rm.tree, rm.tree.resolve()):
            rel = os.path.relpath(ini, top).replace(os.sep, "/")
            entry = listing.get(rel)
            if entry is not None and entry.kind == "blob":
                (blob,) = git.objects([entry.oid])
                if blob is not None:
                    paths = newtests.configured_paths(newtests.ini_name(rel), blob.data)
                break
    return newtests.reasons(unrun, paths, snapshot.test_paths)


def _memory_named(verdict: Verdict, run: RunResult, config: AutoConfig) -> Verdict:
    """A revert whose tests failed on MemoryError under the box's memory limit
    (or at another of its walls: box.wall_note) says so: the limit, not the
    code, may be what a person changes. A file that does not compile, which
    pytest met collecting the tests, is named with its line: the failed test
    file is not where the mistake is."""
    if verdict.passed:
        return verdict
    test = run.command("test")
    note = box.wall_note(test, box.plan(config))
    if note is None and test is not None:
        from gtd.auto.ratchet.diagnose import syntax_error

        note = syntax_error(test.output_tail)  # a module the tests import
    if note is None or verdict.reason is None:
        return verdict
    return verdict._replace(reason=f"{verdict.reason} ({note})")


def _excusable(environment: Callable[[], list[str]] | None, found: list[str]) -> bool:
    """Whether a run made only to excuse a result may start: the test interpreter's
    environment is still the one the cycle began with (else the change joins
    ``found``). The candidate's run could have written a ``.pth`` that the next
    test process loads, which removes itself and patches pytest there (the run
    again passes what failed, the base commit skips what the candidate skips): a
    change that is gone again when `end` looks last."""
    changed = environment() if environment is not None else []
    found.extend(f"test environment changed during the run: {c}" for c in changed[:1])
    return not changed


def _new_test_candidates(changes: Sequence[Change], snapshot: Snapshot) -> tuple[str, ...]:
    """The files new tests can be in: the ones the candidate adds or changes,
    except the snapshot's own (their tests ran in the first session)."""
    old = set(snapshot.test_paths)
    return tuple(
        sorted(c.path for c in changes if c.status in ("A", "M", "T") and c.path not in old)
    )


_NO_TESTS_COLLECTED = 5  # pytest's exit status when a session collects nothing


def merge_runs(old: RunResult, new: RunResult | None, snapshot: Snapshot) -> RunResult:
    """The old-tests run with the new-tests session's outcomes for tests the first
    session did not run; the test command counts as failed when either failed."""
    del snapshot
    if new is None:
        return old
    tests: dict[str, Outcome] | None = dict(old.tests) if old.tests is not None else None
    if new.tests is not None:
        tests = tests if tests is not None else {}
        for test_id, outcome in new.tests.items():
            tests.setdefault(test_id, outcome)
    ran: list[CommandRun] = []
    extra = new.command("test")
    if extra is not None and new.tests == {} and extra.exit_code == _NO_TESTS_COLLECTED:
        extra = extra._replace(exit_code=0)  # the changed files hold no new tests
    for cmd in old.commands:
        merged = cmd
        if cmd.kind == "test" and extra is not None:
            worse = extra if cmd.ok and not extra.ok else cmd
            merged = worse._replace(duration_s=round(cmd.duration_s + extra.duration_s, 3))
        ran.append(merged)
    return RunResult(tuple(ran), tests, {**new.skips, **old.skips})
