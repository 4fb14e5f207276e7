"""Taking the ratchet's baseline and sealing the snapshot: at `gtd auto setup`,
after a person's commit (a refresh, started by `cycle begin`), and after each
passing cycle (the snapshot advances to what was just judged).

A baseline run goes through the clean room like a cycle's check and may take as
long as the suite does, so setup and refresh run it in a worker process of their
own (gtd.auto.cycle.worker) and seal the result when it is in.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from gtd import paths
from gtd.auto import records, state
from gtd.auto.config import AutoConfig, load_auto_config, to_json
from gtd.auto.journal import Journal
from gtd.auto.ratchet import check
from gtd.auto.ratchet import snapshot as codec
from gtd.auto.ratchet.model import Snapshot
from gtd.auto.state import State
from gtd.clock import now
from gtd.fsio import locked, state_lock
from gtd.git import Git

TAKING = ": taking a new baseline"  # the end of a refresh's journal title


def summary(
    snap: Snapshot,
    config: AutoConfig,
    at: str,
    reverted_before: list[int] | None = None,
    environment: dict[str, str] | None = None,
) -> dict[str, Any]:
    """What every tick needs, small: the sealed config and the snapshot's facts;
    ``environment``, the test environment's fingerprint the baseline ran in
    (gtd.auto.ratchet.environment): every `begin` compares it."""
    from gtd.auto.ratchet.doctests import FORMAT as DOCTEST_DIGEST
    from gtd.auto.ratchet.environment import FORMAT

    return {
        "format": codec.FORMAT,
        "head": snap.head,
        "config": to_json(config),
        "environment_dirs": list(snap.environment.dirs),
        "bootstrap": codec.bootstrap_needed(snap),
        "test_files": len(snap.test_paths),
        "taken_at": at,
        "reverted_before_setup": reverted_before or [],
        # what `begin` compares with this gtd's plugin (Environment.kinds)
        "evidence_kinds": list(snap.environment.kinds or ()),
        # whether the baseline's plugins' hooks are recorded where a plugin
        # reported (Environment.hooks): a snapshot before they were is taken again
        "plugin_hooks": snap.environment.plugins is None or snap.environment.hooks is not None,
        # what a doctest's digest covers (gtd.auto.ratchet.doctests.FORMAT): a
        # snapshot whose digests covered the whole docstring is taken again
        "doctest_digest": DOCTEST_DIGEST,
        # the keys of a cycle's seals (gtd.auto.cycle.seals.environment_changes)
        "environment": environment,
        "environment_format": FORMAT if environment is not None else None,
        # the tests the ratchet tolerates as failing, for the report's State
        "baseline_failing": _failing(snap),
    }


def _failing(snap: Snapshot) -> dict[str, Any]:
    from gtd.auto.report_notes import SHOWN_FAILING

    tests = snap.baseline.tests or {}
    failing = sorted(t for t, o in tests.items() if o in ("failed", "error"))
    return {"count": len(failing), "first": failing[:SHOWN_FAILING]}


def take(git: Git, config: AutoConfig, head: str, accepted: str | None = None) -> Snapshot:
    """Run the baseline of ``head`` in the clean room and describe it."""
    tree = check.tree_of(git, head)
    listing = git.ls_tree(tree)  # one read for the baseline's run and the snapshot
    base = check.run_baseline(git, config, tree, listing)
    return check.snapshot_of(
        git, head, tree, base, accepted=accepted, listing=listing, declared=config.protect
    )


def seal(
    root: Path,
    git: Git,
    st: State,
    snap: Snapshot,
    config: AutoConfig,
    *,
    message: str,
    append: list[records.Record] | None = None,
    reverted_before: list[int] | None = None,
) -> State:
    from gtd.auto.ratchet.environment import fingerprint

    at = now().iso
    previous = (st.summary or {}).get("reverted_before_setup")
    measured = fingerprint(snap.environment.dirs)  # as the baseline's run left it
    new = summary(snap, config, at, reverted_before or previous, measured)
    _keep_objects_checked(st, new)
    st = state.write(
        git,
        st,
        message,
        journal=None,
        summary=new,
        snapshot=codec.dumps(snap),
        pending=None,
        append=append or [],
    )
    state.write_mirrors(root, st, snapshot_paths=snap.test_paths)
    return st


def advanced(git: Git, st: State, final: str) -> tuple[bytes, dict[str, Any], list[str]]:
    """The snapshot after a passing cycle: the pending one (judged on the
    candidate) now describing ``final``, whose PLAN.md carries the tick."""
    raw = state.read_blob(git, st, state.PENDING)
    assert raw is not None
    assert st.summary is not None
    pending = codec.loads(raw, f"{state.ref(git)}:{state.PENDING}")
    from gtd.auto.ratchet import protect

    protected = dict(pending.protected)
    found = git.objects([f"{final}:{paths.PLAN}"])[0]
    if found is not None:
        protected[paths.PLAN] = protect.digest(paths.PLAN, found.data)
    snap = pending._replace(head=final, protected=protected)
    from gtd.auto.config import from_json

    config = from_json(st.summary.get("config") or {})
    reverted = st.summary.get("reverted_before_setup") or []
    # The environment is the one the baseline ran in: the cycle began only if it
    # was (gtd.auto.cycle.begin), and passed only if it did not change.
    from gtd.auto.ratchet.environment import FORMAT

    measured = st.summary.get("environment")
    same = st.summary.get("environment_format") == FORMAT and isinstance(measured, dict)
    new = summary(snap, config, now().iso, reverted, measured if same else None)
    _keep_objects_checked(st, new)
    return codec.dumps(snap), new, snap.test_paths


def _keep_objects_checked(st: State, new: dict[str, Any]) -> None:
    """Carry over when git's object files were last checked (gtd.auto.cycle.forged):
    a new snapshot (a refresh, a set-up again) does not make what was written
    since trusted. A first set-up takes the repository as the person hands it
    over: its object files as they are now."""
    checked = state.objects_checked(st)
    new["objects_checked"] = checked if checked is not None else time.time()


def claim(git: Git, lock: Path) -> Journal | None:
    """The baseline run in flight when it is this process's to do (its pid is the
    one the starter sealed), else None: the starter died first, or it was recovered."""
    with locked(lock):
        current = state.read(git).journal
    if current is None or current.kind != "baseline" or current.pid != os.getpid():
        return None
    return current


def refresh_worker(root: Path) -> None:
    """The worker `cycle begin` starts after a person's commit: a new baseline of
    HEAD, sealed with a ``refresh`` record (the report says whose commit it was)."""
    from gtd.auto.memory import Refresh
    from gtd.auto.rendering import render

    git = Git(root, hardened=True)
    lock = state_lock(root)
    current = claim(git, lock)
    if current is None:
        return
    from gtd.auto import breaker
    from gtd.auto.ratchet.diagnose import diagnose
    from gtd.errors import GtdError

    short = git.short(current.base)
    problem: str | None = None
    snap: Snapshot | None = None
    config = AutoConfig()
    try:
        config = load_auto_config(root)
        snap = take(git, config, current.base)
        from gtd.auto.ratchet import box

        found = diagnose(
            snap.baseline,
            config.test_command,
            pytest=snap.environment.plugin,
            has_tests=bool(snap.test_paths),
            ended=box.killed(snap.baseline.command("test"), box.plan(config)),
        )
        if snap.baseline_reason is not None:
            problem = snap.baseline_reason
        elif found is not None:
            problem = f"{found.problem}; {found.fix}"
    except GtdError as exc:
        problem = exc.render().replace("\n", " ")
    with locked(lock):
        st = state.read(git)
        if st.journal is None or st.journal.pid != os.getpid():
            return
        at = now().iso
        # why, as `begin` put it in the journal's title (a person's commit, or a
        # gtd whose plugin looks for more than the one that took the baseline)
        why = current.title.removesuffix(TAKING) or f"snapshot refreshed after {short} by a person"
        refresh = Refresh(short, at, why)
        new: list[records.Record] = [refresh]
        if problem is not None:
            reason = f"the baseline after {short} is broken: {problem}"
            new.append(breaker.forced_halt("baseline", 0, reason, at))
        if snap is None:
            st = state.write(git, st, f"refresh after {short} failed", journal=None, append=new)
        else:
            st = seal(root, git, st, snap, config, message=f"refresh after {short}", append=new)
        from gtd.auto import plan_file

        _, the_plan = plan_file.load(root)
        render(root, st, the_plan, now())
