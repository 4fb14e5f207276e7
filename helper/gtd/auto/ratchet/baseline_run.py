"""Taking a baseline in the clean room (every configured command on a tree, with
what the plugin said about the test interpreter), and the snapshot of a tree
with it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gtd.auto.config import AutoConfig
from gtd.auto.ratchet import contract, hooks_seen, protect, room, room_run, sites
from gtd.auto.ratchet import files as files_mod
from gtd.auto.ratchet.candidate import commands_of, config_commands, protected_digests
from gtd.auto.ratchet.model import Environment, RunResult, Snapshot
from gtd.auto.ratchet.room_run import guarded_files
from gtd.git import Git
from gtd.git_parse import TreeEntry
from gtd.tuples import NamedTuple


class Baseline(NamedTuple):
    run: RunResult
    environment: Environment
    collected: tuple[str, ...] = ()  # test files the runner collected (empty: unknown)
    doctest_modules: tuple[str, ...] = ()  # source modules whose only tests are doctests
    flaky: tuple[str, ...] = ()  # failed, then passed when run again


def run_baseline(
    git: Git, config: AutoConfig, tree: str, listing: Mapping[str, TreeEntry] | None = None
) -> Baseline:
    """Every configured command on ``tree`` (``listing``: its files, where the
    caller has them) in the room: the baseline, with what the plugin said about
    the test interpreter and the tests it collected."""
    with room.acquire(git) as rm:
        room.sync(git, rm, tree, config.links)
        env = room.environment(rm)
        if listing is None:
            listing = git.ls_tree(tree)
        guarded = protect.protection(listing, config_commands(config), patterns=config.protect)
        run = room_run.run(rm, config, env, guarded=guarded_files(guarded, listing, config.protect))
        result, report = run.result, run.report
        failing = sorted(t for t, o in (result.tests or {}).items() if o in ("failed", "error"))
        flipped: list[str] = []
        for _ in range(config.rerun_failures if failing else 0):
            again = room_run.run(rm, config, env, only_ids=tuple(failing), only=frozenset({"test"}))
            passed = [t for t in failing if (again.result.tests or {}).get(t) in room_run.PASSING]
            flipped.extend(passed)
            failing = [t for t in failing if t not in passed]
            if not failing:
                break
        dirs = sites.environment_dirs(report, rm, config.links)
    labels, hooks = hooks_seen.plugin_hooks(report, rm)
    environment = Environment(
        dirs=tuple(dirs),
        shadowable=tuple(sorted(sites.module_names(dirs))),
        plugin=report.source == "plugin" and result.tests is not None,
        evidence=tuple(sorted({f"{ev.kind}|{ev.subject}" for ev in report.evidence})),
        plugins=(tuple(sorted(labels)) if report.source == "plugin" else None),
        hooks=(tuple(sorted(hooks)) if report.source == "plugin" else None),
        kinds=tuple(contract.EVIDENCE_KINDS),
    )
    whole, doctest_modules = room_run.collected(report.items)
    return Baseline(result, environment, whole, doctest_modules, tuple(flipped))


def snapshot_of(
    git: Git,
    commit: str,
    tree: str,
    baseline: Baseline,
    *,
    accepted: str | None = None,
    listing: Mapping[str, TreeEntry] | None = None,
    declared: Sequence[str] = (),
) -> Snapshot:
    """The snapshot of ``tree`` (to be, or being, ``commit``'s; ``listing``: its
    files, where the caller has them) with ``baseline``: its test files (by name,
    and as the runner collected them) and the files ``declared`` (the config's
    ``ratchet.protect`` patterns) with their blob ids, the doctests of modules
    whose only tests are doctests, and its protected configuration."""
    from gtd.auto.ratchet import doctests

    if listing is None:
        listing = git.ls_tree(tree)
    collected = set(baseline.collected)
    golden = protect.declared(declared)
    files = {
        p: e.oid
        for p, e in listing.items()
        if e.kind == "blob"
        and (
            files_mod.is_test_file(p)
            or p in collected
            or (golden(p) and not protect.is_protected_path(p))
        )
    }
    files.update(_leaned_on(git, listing, files))
    modules = [p for p in baseline.doctest_modules if p in listing and p not in files]
    packages = {p.rpartition("/")[0] for p in listing if p.endswith("/__init__.py")}
    found = git.objects([listing[p].oid for p in modules])
    digests = {
        p: doctests.doctest_digests(obj.data, doctests.module_name(p, packages))
        for p, obj in zip(modules, found, strict=True)
        if obj is not None
    }
    protected = protected_digests(git, listing, commands_of(baseline.run))
    return Snapshot(
        head=commit,
        files=files,
        protected=protected,
        baseline=baseline.run,
        doctests=digests,
        collected=bool(collected),
        environment=baseline.environment,
        accepted=accepted,
    )


def _leaned_on(
    git: Git, listing: Mapping[str, TreeEntry], files: Mapping[str, str]
) -> dict[str, str]:
    """The files outside the test folders the snapshot's tests lean on
    (gtd.auto.ratchet.leaned): the modules they import that assert, the data
    files they open; with their blob ids."""
    from gtd.auto.ratchet import leaned

    tests = [p for p in files if p.endswith(".py")]
    if not tests:
        return {}
    sources = {
        p: o.data for p, o in zip(tests, git.objects([files[p] for p in tests]), strict=True) if o
    }
    others = [
        p
        for p, e in listing.items()
        if e.kind == "blob" and p not in files and not protect.is_protected_path(p)
    ]
    found = leaned.leaned_on(sources, others)
    modules = [p for p in found if p.endswith(".py")]
    asserting = {
        p
        for p, o in zip(modules, git.objects([listing[p].oid for p in modules]), strict=True)
        if o is not None and leaned.asserts(o.data)
    }
    return {p: listing[p].oid for p in found if not p.endswith(".py") or p in asserting}
