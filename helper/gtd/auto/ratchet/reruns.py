"""The runs made only to excuse a result, each on a tree synced afresh and
believed only when trustworthy (gtd.auto.ratchet.trust): failing tests run again
(flaky), skipped ones run on the base commit (the environment changed), doctests
whose docstring changed at run time run on the base commit."""

from __future__ import annotations

from collections.abc import Callable

from gtd.auto.config import AutoConfig
from gtd.auto.ratchet import commands, room, room_run, trust
from gtd.auto.ratchet.candidate import tree_of
from gtd.auto.ratchet.model import RunResult, Snapshot
from gtd.auto.ratchet.results import Report
from gtd.auto.ratchet.verdict import skipped_now
from gtd.git import Git
from gtd.tuples import NamedTuple


class Context(NamedTuple):
    """Where these runs are made: the room ``rm`` of ``git``, with ``config`` and
    the test environment ``env``, against ``snapshot``; ``submodules``: the judged
    tree's submodule paths (a run that wrote a file of the tree is not believed:
    gtd.auto.ratchet.trust.untrusted)."""

    git: Git
    rm: room.Room
    config: AutoConfig
    env: dict[str, str]
    snapshot: Snapshot
    submodules: frozenset[str] = frozenset()


def flaky(
    ctx: Context,
    run: RunResult,
    tolerated: frozenset[str],
    tree: str,
    excusable: Callable[[], bool] = lambda: True,
    guarded: tuple[str, ...] | None = None,
    company: tuple[str, ...] | None = None,
) -> tuple[str, ...]:
    """Tests that passed at the baseline, failed now, and passed when run again
    — alone, then in the first run's company (``company``: the files its
    session collected, None for the whole command) — each at most
    ``ratchet.rerun_failures`` times.

    Alone first, where a real flake costs least; a test that passes alone and
    fails beside the rest of the suite again depends on its company — an
    order or state dependence the change brought, or code under test that
    knows when its tests run alone — and is no flake. Each run again starts
    from the judged ``tree`` synced afresh: what the run before left in the
    checkout (an untracked conftest.py, bytecode the code under test forged for
    itself: nothing the stat check of tracked files sees) would otherwise
    decide the next run. A run again whose report is not trustworthy, or that
    wrote a file of the judged tree, passes nothing."""
    rm, config, env = ctx.rm, ctx.config, ctx.env
    suspects = failing_now(ctx.snapshot, run, tolerated)
    alone = _passing_again(
        ctx, tree, suspects, excusable,
        lambda tests: room_run.run(
            rm, config, env, only_ids=tuple(tests), only=_TEST, guarded=guarded
        ),
    )  # fmt: skip
    return _passing_again(
        ctx, tree, list(alone), excusable,
        lambda _: room_run.run(rm, config, env, only_files=company, only=_TEST, guarded=guarded),
    )  # fmt: skip


_TEST = frozenset({"test"})  # of the configured commands, only the test command


def _passing_again(
    ctx: Context,
    tree: str,
    suspects: list[str],
    excusable: Callable[[], bool],
    again: Callable[[list[str]], commands.Run],
) -> tuple[str, ...]:
    """Of ``suspects``, those that pass in one of up to ``ratchet.rerun_failures``
    runs ``again`` makes of the ones still failing, each from ``tree`` synced
    afresh; an untrustworthy run ends the search."""
    git, rm, config, _, snapshot, submodules = ctx
    flipped: list[str] = []
    for _ in range(config.rerun_failures):
        if not suspects or not excusable():
            break
        room.sync(git, rm, tree, config.links)
        ran = again(suspects)
        if trust.untrusted(git, rm, snapshot, ran.report, submodules):
            break
        passed = [t for t in suspects if (ran.result.tests or {}).get(t) in room_run.PASSING]
        flipped.extend(passed)
        suspects = [t for t in suspects if t not in passed]
    return tuple(sorted(flipped))


def failing_now(snapshot: Snapshot, run: RunResult, excused: frozenset[str]) -> list[str]:
    """Tests that passed at the baseline and fail (or error) in ``run``, less the
    ``excused`` ones (quarantined, or found flaky)."""
    base = snapshot.baseline.tests or {}
    return sorted(
        t
        for t, o in (run.tests or {}).items()
        if o in ("failed", "error") and base.get(t) in room_run.PASSING and t not in excused
    )


def skipped_by_environment(
    ctx: Context,
    run: RunResult,
    excusable: Callable[[], bool] = lambda: True,
) -> tuple[str, ...]:
    """Baseline-passing tests the candidate's run skipped that the base commit's
    code skips too when run now: the environment changed (the network is gone, an
    optional dependency went), not the code. Runs only those tests, on the base;
    a run that is not trustworthy (a process left running may rewrite the base's
    code in the checkout while it runs) excuses nothing."""
    git, rm, config, env, snapshot, submodules = ctx
    base = snapshot.baseline.tests or {}
    suspects = sorted(
        t
        for t, o in (run.tests or {}).items()
        if base.get(t) in room_run.PASSING and skipped_now(base[t], o)
    )
    if not suspects or not excusable():
        return ()
    room.sync(git, rm, tree_of(git, snapshot.head), config.links)
    again = room_run.run(rm, config, env, only_ids=tuple(suspects), only=frozenset({"test"}))
    if trust.untrusted(git, rm, snapshot, again.report, submodules):
        return ()
    return tuple(t for t in suspects if skipped_now(base[t], (again.result.tests or {}).get(t)))


def doctests_rewritten(ctx: Context, report: Report) -> list[str]:
    """Snapshot doctests that ran from another docstring than their source holds.
    Code can assign ``__doc__`` at import (``f.__doc__ = ...``, from any module):
    the source's docstring and its digest stay as they were while pytest runs
    rewritten examples. Where the docstring differs at the base commit too (a
    decorator that fills it in), that is the project's own doing: those doctests
    run on the base commit, and only a docstring that differs from that run's
    counts."""
    git, rm, config, env, snapshot, submodules = ctx
    suspects: dict[str, str] = {}
    for item in report.items:
        if item.kind != "doctest-module" or item.docstring is None or item.deselected:
            continue
        file, _, name = item.node_id.partition("::")
        known = snapshot.doctests.get(file, {}).get(name)
        if known is not None and known != item.docstring:
            suspects[item.node_id] = item.docstring
    if not suspects:
        return []
    first = min(suspects)
    reason = (
        f"a protected test was changed at run time: {first} (its doctest ran another docstring)"
    )
    room.sync(git, rm, tree_of(git, snapshot.head), config.links)
    again = room_run.run(
        rm, config, env, only_ids=tuple(sorted(suspects)), only=frozenset({"test"})
    )
    if trust.untrusted(git, rm, snapshot, again.report, submodules):
        return [reason]
    before = {i.node_id: i.docstring for i in again.report.items}
    changed = sorted(t for t, digest in suspects.items() if before.get(t) != digest)
    return [reason.replace(first, changed[0])] if changed else []
