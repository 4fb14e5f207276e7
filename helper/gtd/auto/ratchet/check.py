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

import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from gtd import proc
from gtd.auto.config import AutoConfig
from gtd.auto.ratchet import box, checklog, contract, leftovers, protect, reports, room, runner
from gtd.auto.ratchet import files as files_mod
from gtd.auto.ratchet.held import Held, hold
from gtd.auto.ratchet.model import (
    CommandRun,
    Environment,
    FileHashes,
    Outcome,
    RunResult,
    Snapshot,
)
from gtd.auto.ratchet.results import Item, Report
from gtd.auto.ratchet.verdict import Verdict, integrity, judge, module_stem, skipped_now
from gtd.git import Change, Git, TreeEntry
from gtd.tuples import NamedTuple

_GITLINK = "160000"


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


class Baseline(NamedTuple):
    run: RunResult
    environment: Environment
    collected: tuple[str, ...] = ()  # test files the runner collected (empty: unknown)
    doctest_modules: tuple[str, ...] = ()  # source modules whose only tests are doctests
    flaky: tuple[str, ...] = ()  # failed, then passed when run again


def tree_of(git: Git, commit: str) -> str:
    return git.run("rev-parse", f"{commit}^{{tree}}").strip()


# -- the candidate's view ---------------------------------------------------------------


def commands_of(run: RunResult) -> list[str]:
    """The commands a snapshot was taken with: which of them may run a task runner
    decides what configuration is protected (gtd.auto.ratchet.invocation)."""
    return [c.command for c in run.commands]


def config_commands(config: AutoConfig) -> list[str]:
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
    doctests_now = _doctests_now(git, snapshot, listing, changed)
    inits = {p.rpartition("/")[0] for p in listing if _is_init(p)}
    # Any file Python imports as a module counts, not only source: a sourceless
    # ``pytest.pyc`` (a `.gitignore` negation lets git see it) is found in the
    # working directory before the installed pytest, as ``pytest.py`` would be.
    new_modules = tuple(
        c.path
        for c in changes
        if c.status == "A"
        and module_stem(c.path.rpartition("/")[2]) is not None
        and _folder_of_module(c.path) not in inits
    )
    submodules = tuple(sorted({c.path for c in changes if _GITLINK in (c.old_mode, c.new_mode)}))
    return FileHashes(files, new_files, protected, doctests_now, new_modules, submodules)


def _doctests_now(
    git: Git, snapshot: Snapshot, listing: Mapping[str, TreeEntry], changed: set[str]
) -> dict[str, Mapping[str, str] | None]:
    """The doctest digests of the snapshot's doctest modules the candidate changed
    (None: the module is gone)."""
    out: dict[str, Mapping[str, str] | None] = {}
    paths = [p for p in snapshot.doctests if p in changed or p not in listing]
    if not paths:
        return out
    from gtd.auto.ratchet import doctests  # ast and its kin: only when there is work

    present = [p for p in paths if p in listing]
    packages = {p.rpartition("/")[0] for p in listing if p.endswith("/__init__.py")}
    for path in paths:
        out[path] = None
    for path, obj in zip(present, git.objects([listing[p].oid for p in present]), strict=True):
        if obj is not None:
            out[path] = doctests.doctest_digests(obj.data, doctests.module_name(path, packages))
    return out


def _folder_of_module(path: str) -> str:
    """The folder that must be on the import path for ``path`` to be a top-level
    module: its own folder, or its package's parent for an ``__init__.py``."""
    folder = path.rpartition("/")[0]
    if _is_init(path):
        folder = folder.rpartition("/")[0]
    return folder


def _is_init(path: str) -> bool:
    """A package's ``__init__`` in any form Python imports (source, bytecode...)."""
    return module_stem(path.rpartition("/")[2]) == "__init__"


# -- symbolic links ----------------------------------------------------------------------

_SYMLINK = "120000"
_LINK_HOPS = 40  # as many links as the kernel follows in one path


def links_out(
    git: Git, listing: Mapping[str, TreeEntry], changes: Sequence[Change], links: Sequence[str]
) -> list[str]:
    """Symbolic links the candidate adds or changes that lead out of the tree it
    commits: an absolute target, one that climbs above the repository (through
    other links of the tree too), or one into ``.git`` or a ``ratchet.link`` path.
    In the clean room such a link reaches files git does not hold (a copy of the
    good code kept elsewhere, an ignored file), so the tests would judge code that
    is not committed."""
    if not any(c.new_mode == _SYMLINK for c in changes):
        return []
    paths = sorted(p for p, e in listing.items() if e.mode == _SYMLINK)
    found = git.objects([listing[p].oid for p in paths])
    targets = {
        p: obj.data.decode("utf-8", "surrogateescape")
        for p, obj in zip(paths, found, strict=True)
        if obj is not None
    }
    linked = [link.strip("/") for link in links]
    out: list[str] = []
    for change in changes:
        target = targets.get(change.path)
        if change.new_mode != _SYMLINK or target is None:
            continue
        where = _resolve(change.path.rpartition("/")[0], target, targets, _LINK_HOPS)
        if where is None or any(
            where == top or where.startswith(top + "/") for top in (".git", *linked) if top
        ):
            out.append(f"symbolic link leads outside the repository: {change.path} → {target}")
    return out


def _resolve(folder: str, target: str, targets: Mapping[str, str], hops: int) -> str | None:
    """Where ``target``, read in ``folder``, leads inside the tree whose links are
    ``targets`` (path → target); None when it leaves the tree (or loops)."""
    if target.startswith("/") or hops <= 0:
        return None
    parts = folder.split("/") if folder else []
    for name in target.split("/"):
        if name in ("", "."):
            continue
        if name == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(name)
        here = "/".join(parts)
        if here in targets:
            inner = _resolve("/".join(parts[:-1]), targets[here], targets, hops - 1)
            if inner is None:
                return None
            parts = inner.split("/") if inner else []
    return "/".join(parts)


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
    index = scratch / room.COMPOSE_INDEX
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
    config: AutoConfig,
    snapshot: Snapshot,
    *,
    base: str,
    candidate: str,
    base_tree: str | None = None,
    base_files: Mapping[str, TreeEntry] | None = None,
    tolerated: frozenset[str] = frozenset(),
    trust_until: float | None = None,
    held: Held | None = None,
    environment: Callable[[], list[str]] | None = None,
) -> Judgement:
    """The verdict on ``candidate`` (a tree) against ``snapshot``, whose tests and
    protected files are those of commit ``base`` (its tree ``base_tree`` and that
    tree's listing ``base_files``, where the caller has them), in the room ``rm``;
    ``trust_until``: when an agent may have started writing (nothing of the room
    changed since is trusted). The first test run is started at once and held
    until the room is ready (gtd.auto.ratchet.held), unless ``held`` is one the
    caller started earlier still. ``environment``: what changed in the test
    interpreter's environment since the cycle began (none where nothing is
    sealed), asked before each run made only to excuse a result."""
    start = time.monotonic()
    if trust_until is not None:
        rm = rm._replace(began=trust_until)
    if held is None:
        held = hold(rm, config, room.environment(rm))
    # A candidate refused before its run: the held process ends at the gate.
    with held or contextlib.nullcontext():
        if base_tree is None:
            base_tree = tree_of(git, base)
        changes: list[Change]
        if base_tree == candidate:
            changes = []
            listing = base_listing = (
                base_files if base_files is not None else git.ls_tree(candidate)
            )
        elif base_files is not None:
            was = base_tree
            changes, listing = proc.both(
                lambda: git.diff_trees(was, candidate), lambda: git.ls_tree(candidate)
            )
            base_listing = base_files if changes else listing
        else:
            # Three reads of different things, side by side.
            was = base_tree  # (a name the lambdas see as a str)
            (changes, base_listing), listing = proc.both(
                lambda: proc.both(lambda: git.diff_trees(was, candidate), lambda: git.ls_tree(was)),
                lambda: git.ls_tree(candidate),
            )
            if not changes:
                base_listing = listing
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
        # What the run wrote (one git call, before a sync could write over the
        # evidence), asked as soon as the commands have ended, while the report
        # is read and judged: it is on the run's critical path.
        written = proc.Later(lambda: _written(git, rm, submodules))
        try:
            first = _run(
                rm, config, env, only_files=only_old, held=held, guarded=protected,
                ended=written.start,
            )  # fmt: skip
        except BaseException:
            written.wait()  # a git call at work in the room ends before the room is let go
            raise
        # (a new site folder first, and a plugin's new hooks: they are the cause
        # of what its `.pth` files, or the hooks, did to the reports)
        found = _new_site_folders(first.report, rm, snapshot)
        found += _new_plugins(first.report, rm, snapshot)
        found += _report_problems(
            first.report, rm, snapshot, test=first.result.command("test"), config=config
        )
        found += leftovers.reasons(first.result, snapshot.baseline)
        found += written.result()
        if split and not found:
            found += _doctests_rewritten(git, rm, config, env, snapshot, first.report, submodules)
        flaky: tuple[str, ...] = ()
        if not found:
            judged = old_tree if split else new_tree
            flaky = _flaky(
                git, rm, config, env, snapshot, first.result, tolerated, judged, submodules,
                excusable=lambda: _excusable(environment, found), guarded=protected,
                company=only_old,
            )  # fmt: skip
        second: runner.Run | None = None
        new_files = _new_test_candidates(changes, snapshot)
        # A baseline test that still fails is a refusal whatever the new tests do:
        # their session would only lengthen the revert (~0.5 s a refused cycle).
        regressed = _failing_now(snapshot, first.result, tolerated | frozenset(flaky))
        if split and new_files and not found and not regressed:
            room.sync(git, rm, new_tree, config.links)
            second = _run(rm, config, env, only_files=new_files, only=frozenset({"test"}))
            found += _report_problems(
                second.report, rm, snapshot, new_tests=True,
                test=second.result.command("test"), config=config,
            )  # fmt: skip
            found += leftovers.reasons(second.result, snapshot.baseline)
            found += _written(git, rm, submodules)
        altered = room.altered(git, rm, expected)
        found += [f"a protected test was changed during the test run: {p}" for p in altered[:1]]
        if not found and not regressed:
            runs = (first.report, *((second.report,) if second else ()))
            found += _unrun_new_tests(git, rm, listing, changes, snapshot, runs)
        environmental = (
            ()
            if found
            else _skipped_by_environment(
                git, rm, config, env, snapshot, first.result, submodules,
                excusable=lambda: _excusable(environment, found),
            )
        )  # fmt: skip
        merged = merge_runs(first.result, None if second is None else second.result, snapshot)
        verdict = judge(
            snapshot.baseline, merged, found, tolerated | frozenset(flaky), frozenset(environmental)
        )
        verdict = _memory_named(verdict, merged, config)
        items = [*first.report.items, *(second.report.items if second else ())]
        whole, modules = _collected(items)
        if flaky and merged.tests is not None:
            # What a pass advances the baseline to: a test that passed when run again
            # is a passing test (recorded as failed, it would lose its protection).
            merged = merged._replace(tests={**merged.tests, **dict.fromkeys(flaky, "passed")})
        elapsed = round(time.monotonic() - start, 3)
        return Judgement(verdict, merged, elapsed, flaky, whole, modules, tuple(environmental))


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
    code, may be what a person changes."""
    note = None if verdict.passed else box.wall_note(run.command("test"), box.plan(config))
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


def _written(git: Git, rm: room.Room, submodules: frozenset[str]) -> list[str]:
    """A file of the judged tree written in the room while the commands ran: the
    code under test swapped under the tests' feet (by a process the agent left
    running, say), or a suite that rewrites its own tracked files. Either way
    the run did not judge the candidate."""
    return [
        f"file changed in the clean room during the test run: {p}"
        for p in room.touched(git, rm, submodules)[:1]
    ]


def _doctests_rewritten(
    git: Git,
    rm: room.Room,
    config: AutoConfig,
    env: dict[str, str],
    snapshot: Snapshot,
    report: Report,
    submodules: frozenset[str],
) -> list[str]:
    """Snapshot doctests that ran from another docstring than their source holds.
    Code can assign ``__doc__`` at import (``f.__doc__ = ...``, from any module):
    the source's docstring and its digest stay as they were while pytest runs
    rewritten examples. Where the docstring differs at the base commit too (a
    decorator that fills it in), that is the project's own doing: those doctests
    run on the base commit, and only a docstring that differs from that run's
    counts."""
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
    again = _run(rm, config, env, only_ids=tuple(sorted(suspects)), only=frozenset({"test"}))
    if _untrusted(git, rm, snapshot, again.report, submodules):
        return [reason]
    before = {i.node_id: i.docstring for i in again.report.items}
    changed = sorted(t for t, digest in suspects.items() if before.get(t) != digest)
    return [reason.replace(first, changed[0])] if changed else []


def _collected(items: Sequence[Item]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(files holding tests, source modules whose only tests are doctests)."""
    whole = {i.file for i in items if i.kind != "doctest-module" and i.file}
    modules = {i.file for i in items if i.kind == "doctest-module" and i.file} - whole
    return tuple(sorted(whole)), tuple(sorted(modules))


def _run(
    rm: room.Room,
    config: AutoConfig,
    env: dict[str, str],
    *,
    only_files: tuple[str, ...] | None = None,
    only_ids: tuple[str, ...] | None = None,
    only: frozenset[str] = frozenset({"build", "test", "typecheck", "lint"}),
    held: Held | None = None,
    guarded: tuple[str, ...] | None = None,
    ended: Callable[[], None] | None = None,
) -> runner.Run:
    """The configured commands in the room: the plugin collects only ``only_files``
    (or runs only ``only_ids``), no module may load from the live repository, and
    editable installs of the project load from the room instead. ``held``: the
    test command already started (gtd.auto.ratchet.held); ``guarded``: the
    protected Python files whose values the plugin guards (:func:`guarded_files`);
    ``ended``: called when the last command has ended (runner.run_all)."""
    request = reports.Request(
        rm.tree,
        only_files=only_files,
        only_ids=only_ids,
        forbidden=(rm.live,),
        redirect=reports.Redirect(rm.live, rm.tree),
        guarded=guarded,
        env_since_ns=None if rm.began is None else int(rm.began * 1e9),
    )
    boxed = box.plan(config)
    checklog.note(boxed.described)
    return runner.run_all(
        rm.tree,
        config,
        env=env,
        reports_dir=rm.slot / "reports",
        only=only,
        request=request,
        held=held,
        ended=ended,
        box=boxed,
        readable=(str(rm.live),),
    )


def guarded_files(
    guarded: Mapping[str, protect.Protection],
    base: Mapping[str, TreeEntry],
    declared: Sequence[str] = (),
) -> tuple[str, ...]:
    """The Python files among the wholly protected ones the judged tree takes from
    the base (``base``: its listing): test modules, conftests, the tests' helpers.
    The plugin records the values their modules hold (globals, class attributes,
    default arguments, closures) and what they read of builtins and libraries,
    and names each one changed by the end of the session: the change cannot edit
    these files, and must not change what they read either. The baseline's run
    is given the same files, so what the tests themselves change (a cache, a
    counter) is evidence there too and is not held against a change.

    A module outside the test folders is guarded only when ``declared``
    (``ratchet.protect``) names it: one the snapshot holds because the tests
    import it and it asserts (gtd.auto.ratchet.leaned) is held by its content,
    as its own code may change its values while the tests run (pyparsing's
    ``pyparsing.testing``), which no baseline run recorded."""
    candidates = [
        p
        for p, why in guarded.items()
        if why.whole and p.endswith(".py") and p in base and base[p].kind == "blob"
    ]
    plain = [p for p in candidates if files_mod.is_test_path(p) or protect.is_protected_path(p)]
    others = [p for p in candidates if p not in plain]
    if others and declared:
        plain += [p for p in others if _declared(declared, p)]
    return tuple(sorted(plain))


def _declared(patterns: Sequence[str], path: str) -> bool:
    """Whether ``ratchet.protect`` names ``path``: plain folder or file names
    (`fixtures/`, `pkg/testing.py`) read here, anything else by gitignore's
    rules (pathspec, ~35 ms of imports a run does without where it can)."""
    if any(ch in pat for pat in patterns for ch in "*?[!\\"):
        return protect.declared(patterns)(path)
    for pat in patterns:
        name = pat.strip().strip("/")
        if not name:
            continue
        if "/" in name:  # anchored at the top, as gitignore reads it
            if path == name or path.startswith(name + "/"):
                return True
        elif f"/{name}/" in f"/{path}/" or path.endswith("/" + name) or path == name:
            return True
    return False


def _new_test_candidates(changes: Sequence[Change], snapshot: Snapshot) -> tuple[str, ...]:
    """The files new tests can be in: the ones the candidate adds or changes,
    except the snapshot's own (their tests ran in the first session)."""
    old = set(snapshot.test_paths)
    return tuple(
        sorted(c.path for c in changes if c.status in ("A", "M", "T") and c.path not in old)
    )


# Evidence a new test may make of itself in its session, which the old tests' is
# not: code loaded from outside (a test of a plugin loader writes a module to its
# temporary folder), its own item handed another function to run (a project's
# conftest may wrap the tests it collects).
_NEW_TESTS_OWN = frozenset({"outside-module", "replaced-test"})


def _report_problems(
    report: Report,
    rm: room.Room,
    snapshot: Snapshot,
    *,
    new_tests: bool = False,
    test: CommandRun | None = None,
    config: AutoConfig | None = None,
) -> list[str]:
    """What the plugin saw that makes its results untrustworthy: tampering with the
    reporting (not seen at the baseline), configuration or conftests read from
    outside the room, a report that did not finish. In the new tests' session,
    code loaded from outside is theirs to load (a test of a plugin loader writes
    a module to its temporary folder): it cannot reach the old tests."""
    out: list[str] = []
    known = set(snapshot.environment.evidence)
    # A file of the room is named as the repository's: the room is gone by the
    # time a person reads the reason.
    room_tree, live = f"{rm.tree}{os.sep}", f"{rm.live}{os.sep}"
    for ev in report.evidence:
        if f"{ev.kind}|{ev.subject}" in known or (new_tests and ev.kind in _NEW_TESTS_OWN):
            continue
        where = f" ({ev.detail.replace(room_tree, live)})" if ev.detail else ""
        if ev.kind == "outside-module":
            out.append(
                "the tests ran code from outside the repository and the test "
                f"environment: {ev.subject}{where}"
            )
        elif ev.kind == "environment-file":
            out.append(
                f"test environment changed since the cycle began: {ev.detail} "
                f"(module {ev.subject}), run as code by the tests"
            )
        else:
            out.append(f"test reporting tampered with: {ev.subject}{where}")
    for session in report.sessions:
        for path in (session.inipath, *session.conftests):
            if path and os.path.isabs(path) and not _inside(path, rm.tree):
                out.append(f"pytest read configuration outside the clean room: {path}")
    if report.source == "plugin" and report.problems:
        ended = f": {box.cause(test, box.plan(config))}" if test and config is not None else ""
        out.append(f"test results incomplete: {report.problems[0]}{_stopped_at(report)}{ended}")
    return out


def _new_plugins(report: Report, rm: room.Room, snapshot: Snapshot) -> list[str]:
    """Plugins the old tests' session loaded and the baseline did not: put in the
    test environment for this run (by a process the agent left running, say, and
    taken away again after), declared by a new ``*.dist-info`` the import path
    reaches, or registered by the code under test. Any hook can change what a
    test does, not only the report hooks. Then the hooks a plugin of the
    checkout's own files implements that it did not at the baseline: a support
    module of the product's that a protected conftest loads (``pytest_plugins``,
    a star import) is code the change may edit."""
    known = snapshot.environment.plugins
    if known is None or report.source != "plugin":
        return []
    labels, hooks = _plugin_hooks(report, rm)
    new = sorted(labels - set(known))
    if new:
        if new[0].startswith("./"):  # from the candidate's own files
            why = "the change's files load or register it"
        else:
            why = "installed since? take the baseline again: `gtd ratchet snapshot`"
        return [f"a pytest plugin the baseline did not load: {new[0]} ({why})"]
    had = snapshot.environment.hooks
    if had is None:
        return []
    gained = sorted(set(hooks) - set(had))
    if not gained:
        return []
    label = gained[0].split(" ", 1)[1]
    names = [h.split(" ", 1)[0] for h in gained if h.split(" ", 1)[1] == label]
    where = hooks[gained[0]]
    made = "" if where == label else f", its function from {where}"
    return [
        f"a pytest plugin implements hooks it did not at the baseline: {label} "
        f"({', '.join(names)}{made}: the change's code runs as a plugin of the old tests)"
    ]


# Hooks that cannot change which tests run or how they end: options declared,
# lines added to the terminal's header and summary, an assertion's message.
_HARMLESS_HOOKS = frozenset(
    {
        "pytest_addoption",
        "pytest_addhooks",
        "pytest_report_header",
        "pytest_report_collectionfinish",
        "pytest_terminal_summary",
        "pytest_assertrepr_compare",
        "pytest_assertion_pass",
        "pytest_warning_recorded",
        "pytest_enter_pdb",
        "pytest_leave_pdb",
    }
)


def _plugin_hooks(report: Report, rm: room.Room) -> tuple[set[str], dict[str, str]]:
    """The plugins the sessions loaded, early or late, by file: "./"-relative
    inside the room's checkout (which moves) or the repository (a virtualenv in
    it, linked into the room: the repository may move too); and, for those of
    the checkout's own files, each hook they implement that could change a test
    ("<hook> <label>"), with the file its function comes from. Installed plugins
    are left to the environment's own checks: their files cannot change, and
    some register objects by what the run meets."""
    bases = [os.path.realpath(rm.tree), os.path.realpath(rm.live)]
    folders: dict[str, str] = {}  # most plugins share a few folders: each resolved once

    def label_of(file: str) -> tuple[str, str | None]:
        folder, name = os.path.split(file)
        if name in ("", ".", "..") or os.path.islink(file):
            real = os.path.realpath(file)
        else:
            if folder not in folders:
                folders[folder] = os.path.realpath(folder)
            real = os.path.join(folders[folder], name)
        base = next((b for b in bases if real.startswith(b + os.sep)), None)
        return (real if base is None else "./" + os.path.relpath(real, base)), base

    out: set[str] = set()
    hooks: dict[str, str] = {}
    for session in report.sessions:
        for plugin in session.plugins:
            if plugin.file is None:
                out.add(f"plugin {plugin.name}")
                continue
            label, base = label_of(plugin.file)
            out.add(label)
            if base is not bases[0]:
                continue
            for entry in plugin.implements:
                hook, _, file = entry.partition("\t")
                if hook not in _HARMLESS_HOOKS:
                    hooks.setdefault(f"{hook} {label}", label_of(file)[0] if file else label)
    return out, hooks


def _stopped_at(report: Report) -> str:
    """Where a pytest that did not finish stopped: the first collected test with no
    result (the one running when the process ended), or collection itself."""
    if not report.items:
        return " (pytest stopped before it had collected the tests)"
    for item in report.items:
        if not item.deselected and item.node_id not in report.tests:
            return f" (pytest stopped at {item.node_id})"
    return ""


def _inside(path: str, folder: Path) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base + os.sep)


def _flaky(
    git: Git,
    rm: room.Room,
    config: AutoConfig,
    env: dict[str, str],
    snapshot: Snapshot,
    run: RunResult,
    tolerated: frozenset[str],
    tree: str,
    submodules: frozenset[str],
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
    suspects = _failing_now(snapshot, run, tolerated)
    alone = _passing_again(
        git, rm, config, env, snapshot, tree, submodules, suspects, excusable,
        lambda tests: _run(rm, config, env, only_ids=tuple(tests), only=_TEST, guarded=guarded),
    )  # fmt: skip
    return _passing_again(
        git, rm, config, env, snapshot, tree, submodules, list(alone), excusable,
        lambda _: _run(rm, config, env, only_files=company, only=_TEST, guarded=guarded),
    )  # fmt: skip


_TEST = frozenset({"test"})  # of the configured commands, only the test command


def _passing_again(
    git: Git,
    rm: room.Room,
    config: AutoConfig,
    env: dict[str, str],
    snapshot: Snapshot,
    tree: str,
    submodules: frozenset[str],
    suspects: list[str],
    excusable: Callable[[], bool],
    again: Callable[[list[str]], runner.Run],
) -> tuple[str, ...]:
    """Of ``suspects``, those that pass in one of up to ``ratchet.rerun_failures``
    runs ``again`` makes of the ones still failing, each from ``tree`` synced
    afresh; an untrustworthy run ends the search."""
    flipped: list[str] = []
    for _ in range(config.rerun_failures):
        if not suspects or not excusable():
            break
        room.sync(git, rm, tree, config.links)
        ran = again(suspects)
        if _untrusted(git, rm, snapshot, ran.report, submodules):
            break
        passed = [t for t in suspects if (ran.result.tests or {}).get(t) in _PASSING]
        flipped.extend(passed)
        suspects = [t for t in suspects if t not in passed]
    return tuple(sorted(flipped))


def _failing_now(snapshot: Snapshot, run: RunResult, excused: frozenset[str]) -> list[str]:
    """Tests that passed at the baseline and fail (or error) in ``run``, less the
    ``excused`` ones (quarantined, or found flaky)."""
    base = snapshot.baseline.tests or {}
    return sorted(
        t
        for t, o in (run.tests or {}).items()
        if o in ("failed", "error") and base.get(t) in _PASSING and t not in excused
    )


def _untrusted(
    git: Git, rm: room.Room, snapshot: Snapshot, report: Report, submodules: frozenset[str]
) -> bool:
    """Whether a run made only to excuse failures or skips (run again, or on the
    base commit) cannot be taken at its word: the same reasons that refuse the
    first run, or a file of the checkout written while it ran."""
    problems = _report_problems(report, rm, snapshot) + _new_plugins(report, rm, snapshot)
    return bool(problems or room.touched(git, rm, submodules))


_PASSING = frozenset({"passed", "xpassed"})
_NO_TESTS_COLLECTED = 5  # pytest's exit status when a session collects nothing


def _skipped_by_environment(
    git: Git,
    rm: room.Room,
    config: AutoConfig,
    env: dict[str, str],
    snapshot: Snapshot,
    run: RunResult,
    submodules: frozenset[str] = frozenset(),
    excusable: Callable[[], bool] = lambda: True,
) -> tuple[str, ...]:
    """Baseline-passing tests the candidate's run skipped that the base commit's
    code skips too when run now: the environment changed (the network is gone, an
    optional dependency went), not the code. Runs only those tests, on the base;
    a run that is not trustworthy (a process left running may rewrite the base's
    code in the checkout while it runs) excuses nothing."""
    base = snapshot.baseline.tests or {}
    suspects = sorted(
        t
        for t, o in (run.tests or {}).items()
        if base.get(t) in _PASSING and skipped_now(base[t], o)
    )
    if not suspects or not excusable():
        return ()
    room.sync(git, rm, tree_of(git, snapshot.head), config.links)
    again = _run(rm, config, env, only_ids=tuple(suspects), only=frozenset({"test"}))
    if _untrusted(git, rm, snapshot, again.report, submodules):
        return ()
    return tuple(t for t in suspects if skipped_now(base[t], (again.result.tests or {}).get(t)))


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
    commands: list[CommandRun] = []
    extra = new.command("test")
    if extra is not None and new.tests == {} and extra.exit_code == _NO_TESTS_COLLECTED:
        extra = extra._replace(exit_code=0)  # the changed files hold no new tests
    for cmd in old.commands:
        merged = cmd
        if cmd.kind == "test" and extra is not None:
            worse = extra if cmd.ok and not extra.ok else cmd
            merged = worse._replace(duration_s=round(cmd.duration_s + extra.duration_s, 3))
        commands.append(merged)
    return RunResult(tuple(commands), tests, {**new.skips, **old.skips})


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
        run = _run(rm, config, env, guarded=guarded_files(guarded, listing, config.protect))
        result, report = run.result, run.report
        failing = sorted(t for t, o in (result.tests or {}).items() if o in ("failed", "error"))
        flipped: list[str] = []
        for _ in range(config.rerun_failures if failing else 0):
            again = _run(rm, config, env, only_ids=tuple(failing), only=frozenset({"test"}))
            passed = [t for t in failing if (again.result.tests or {}).get(t) in _PASSING]
            flipped.extend(passed)
            failing = [t for t in failing if t not in passed]
            if not failing:
                break
        dirs = _environment_dirs(report, rm, config.links)
    labels, hooks = _plugin_hooks(report, rm)
    environment = Environment(
        dirs=tuple(dirs),
        shadowable=tuple(sorted(_module_names(dirs))),
        plugin=report.source == "plugin" and result.tests is not None,
        evidence=tuple(sorted({f"{ev.kind}|{ev.subject}" for ev in report.evidence})),
        plugins=(tuple(sorted(labels)) if report.source == "plugin" else None),
        hooks=(tuple(sorted(hooks)) if report.source == "plugin" else None),
        kinds=tuple(contract.EVIDENCE_KINDS),
    )
    whole, doctest_modules = _collected(report.items)
    return Baseline(result, environment, whole, doctest_modules, tuple(flipped))


def _environment_dirs(report: Report, rm: room.Room, links: Sequence[str]) -> list[str]:
    paths: list[str] = []
    for session in report.sessions:
        if session.environment is not None:
            paths.extend(session.environment.site)
            paths.extend(session.environment.path)
    from gtd.auto.ratchet.environment import outside

    return outside(
        paths, [str(rm.tree), str(rm.live), str(rm.slot)], [str(rm.live / p) for p in links]
    )


def _new_site_folders(report: Report, rm: room.Room, snapshot: Snapshot) -> list[str]:
    """Site folders the candidate's interpreter read that the baseline's did not:
    a virtualenv switched to include the interpreter's own site-packages (and
    with it the user's site folder), whose ``.pth`` files run in every test
    process. No entry of a folder the baseline ran with changes; the path does."""
    known = set(snapshot.environment.dirs)
    if not known:
        return []  # a snapshot taken before the folders were recorded
    sites = [
        s for session in report.sessions if session.environment for s in session.environment.site
    ]
    from gtd.auto.ratchet.environment import outside

    # (only folders outside the repository: a virtualenv of its own, linked into
    # the room, is named by the repository's path, which moves with the
    # repository while the snapshot keeps the path it was taken at)
    roots = [str(rm.tree), str(rm.live), str(rm.slot)]
    now = outside(sites, roots)
    return [
        f"test environment changed: {folder} is a new site folder of the test interpreter"
        for folder in now
        if folder not in known and os.path.isdir(folder)
    ][:1]


def _module_names(dirs: Sequence[str]) -> set[str]:
    """Top-level module names importable from ``dirs`` and the standard library:
    a file the candidate adds must not take one of them."""
    import sys

    names = set(sys.stdlib_module_names)
    for folder in dirs:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            stem = entry.split(".", 1)[0]
            if stem.isidentifier() and not entry.endswith((".dist-info", ".egg-info", ".pth")):
                names.add(stem)
    return names


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
        judged = judge_candidate(
            git, rm, config, snapshot, base=snapshot.head, candidate=candidate, tolerated=tolerated
        )
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
