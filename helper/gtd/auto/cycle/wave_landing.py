"""A wave's task judged and landed (docs/parallel.md): `gtd cycle end --cycle N`
for a task of the wave in flight (gtd.auto.cycle.waves).

Landing is in plan order: ending a task while one before it in the wave is
still in its agent phase is refused (exit 1, nothing changed). When its turn
comes, the task's candidate is its worktree's tree, laid onto the branch's tip
as it is now (gtd.auto.cycle.replay): the tip the wave began at, or the one a
task landed before it moved it to. A replay that conflicts sends the task back
to the queue (its work kept under ``refs/gtd/queued/<task>``, recorded
``skipped``: the breaker does not count it). Otherwise the tree to commit is
sealed as the cycle's journal, with the wave's number, and from there the
task is judged and finished as a single cycle is (gtd.auto.cycle.end, .recovery):
the same worker, seals, reviewer, ratchet and diff reader, on exactly the tree
that will be committed: no combination is committed that no ratchet run has
seen. A task judged on a moved tip says so in its reason, naming the tasks
landed before it. The differences, here: the candidate is that tree, not the
person's working tree; a pass brings the person's tree to the new commit
(:func:`bring`); a revert keeps the tree under ``refs/gtd/reverted/cycle-N``
and leaves the person's tree alone (it never held the work)."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gtd.auto import records, state
from gtd.auto.cycle import waves
from gtd.auto.faults import crash_point
from gtd.auto.journal import Journal
from gtd.auto.state import State, sealed_config
from gtd.errors import GtdError
from gtd.fsio import read_bytes
from gtd.git import Git

if TYPE_CHECKING:
    from typing import Any

    from gtd.auto.cycle.answers import Answer
    from gtd.auto.cycle.judging import Decision
    from gtd.auto.cycle.spent import Said
    from gtd.auto.cycle.steps import Steps
    from gtd.auto.wave_journal import Wave, WaveTask

# What gtd.auto.cycle.recovery says of a cycle no verdict was reached for: a
# wave's task so cut short goes back to the queue, not to the breaker.
_CUT_SHORT = ("abandoned:", "interrupted:")


def take_turn(steps: Steps, cycle: int, spent: Said | None = None) -> Answer | None:
    """Under the lock, before `end` judges: cycle ``cycle`` of the wave in flight
    sealed as the cycle's journal (None returned: `end` goes on as for any
    cycle), or its answer when it needs no judging (its replay conflicted). None
    too when ``cycle`` is no wave's: `end` answers it as today. ``spent``: what
    its agent printed (`gtd loop`), for a task queued here."""
    git = steps.git
    st = state.read(git)
    wave = waves.read(git, st)
    entry = None if wave is None else wave.of(cycle)
    if wave is None or entry is None or entry.phase != "agent" or not wave.ready:
        return None  # no wave's, or one cut short as it began: `end` answers as today
    if st.journal is not None:
        if st.journal.wave is None or st.journal.cycle == cycle:
            return None
        raise GtdError(
            f"cycle {st.journal.cycle} ({st.journal.task}) of wave {wave.wave} is still "
            f"being judged ({st.journal.phase}); cycle {cycle} lands after it",
            f"run `gtd cycle end --cycle {cycle}` again once cycle {st.journal.cycle} has "
            "its verdict (`gtd cycle begin` reports it)",
        )
    earlier = wave.waiting_before(cycle)
    if earlier is not None:
        raise GtdError(
            f"cycle {cycle} ({entry.task}) lands after cycle {earlier.cycle} ({earlier.task}) "
            f"of wave {wave.wave}, which has not ended",
            f"run `gtd cycle end --cycle {earlier.cycle}` first; a wave lands in plan order",
        )
    assert st.summary is not None
    tip = str(st.summary.get("head") or "")
    branch_tip = git.rev(f"refs/heads/{wave.branch}")
    landed = [t.task for t in wave.tasks if t.phase == "landed"]
    if branch_tip != tip:
        return _queued(
            steps, st, wave, entry, f"the branch {wave.branch} moved under the wave", spent
        )
    tree = waves.worktree_tree(git, entry, wave.tip)
    base_tree = git.rev(f"{wave.tip}^{{tree}}")
    tip_tree = git.rev(f"{tip}^{{tree}}")
    assert base_tree is not None
    assert tip_tree is not None
    candidate = base_tree if tree is None else tree
    if tip != wave.tip:
        from gtd.auto.cycle import replay

        laid = replay.replay(git, base_tree, candidate, tip_tree)
        if laid.tree is None:
            shown = ", ".join(laid.conflicts[:5])
            why = f"its change conflicts with {', '.join(landed)} landed before it ({shown})"
            return _queued(steps, st, wave, entry, why, spent)
        candidate = laid.tree
    # A kill after the record of the task before this one left its snapshot's
    # mirror one seal behind: put right now, as `begin` does before a cycle, or
    # this seal would leave it two behind, which reads as tampering.
    state.mend_snapshot_mirror(steps.root, git, st)
    journal = Journal(
        cycle=entry.cycle, task=entry.task, title=entry.title, kind="task", spike=entry.spike,
        base=tip, branch=wave.branch, started_at=wave.started_at,
        started_epoch=wave.started_epoch, seals=wave.seals, candidate=candidate,
        pid=os.getpid(), wave=wave.wave, claude_session=wave.claude_session,
    )  # fmt: skip
    wave = wave.with_phase(cycle, "ending")
    if wave.split_epoch is None:  # the first `end`: the tick launched every implementer
        wave = wave.evolve(split_epoch=steps.now.epoch)
    staged = state.stage_journal(steps.root, journal)
    st = state.write(
        git, st, f"cycle {cycle} ({entry.task}): wave {wave.wave} ends it", journal=journal,
        others=waves.sealed(wave),
    )  # fmt: skip
    state.write_mirrors(steps.root, st, staged=staged)
    crash_point("wave-turn")
    return None


def _queued(
    steps: Steps, st: State, wave: Wave, entry: WaveTask, why: str, spent: Said | None
) -> Answer:
    from gtd.auto import breaker, plan_file
    from gtd.auto.cycle import answers
    from gtd.auto.cycle import spent as spending
    from gtd.auto.rendering import render

    rec = waves.queue(steps, wave, entry, why)
    # Its implementer spent tokens too: charged to it as to a judged task.
    if spent is None:
        rec, wave = waves.charged(steps, st, wave, rec)
    else:
        used = spending.from_agent(spent.agent, sealed_config(st))
        rec = rec if used is None else rec._replace(usage=used.total)
    after = wave.with_phase(entry.cycle, "queued")
    st = state.write(
        steps.git, st, f"cycle {entry.cycle} ({entry.task}): queued",
        others=waves.sealed(None if after.over else after), append=[rec],
    )  # fmt: skip
    if after.over:
        waves.sweep(steps.git)
    _, the_plan = plan_file.load(steps.root)
    render(steps.root, st, the_plan, steps.now)
    pending = [t.id for t in the_plan.pending]
    trip = breaker.check(
        records.fold(st.records), sealed_config(st).circuit_breaker_threshold, pending
    )
    steps._mark_reported(entry.cycle)
    return answers.ended(rec, len(pending), trip)


def judge(root: Path, git: Git, st: State) -> Decision:
    """The verdict on the wave's task in the cycle's journal: the guards that need
    no working tree, the diff reader and the ratchet, as gtd.auto.cycle.judging
    judges a cycle, on the sealed candidate (the tree that will be committed)."""
    from gtd.auto.cycle import diff_reading, forged, judging, large, review, seals
    from gtd.auto.ratchet import check, newtests, room
    from gtd.auto.ratchet.held import hold

    checked = time.time()
    current = st.journal
    assert current is not None
    assert current.candidate is not None
    assert st.summary is not None
    config = sealed_config(st)
    head = current.base
    restored = seals.restore(git, current.seals or {})
    since = current.started_epoch
    if current.objects_since is not None:
        since = min(since, current.objects_since)
    done = judging.Decision
    fake = forged.check(git, since, current.cycle)
    if fake is not None:
        return done(False, fake, head=head, halt=True, objects_checked=checked)
    tampered = state.tampered(root, git, st) or judging._rewound(git, st)
    if tampered:
        why = f"helper state modified: {tampered[0]}"
        return done(False, why, head=head, halt=True, objects_checked=checked)
    objected = review.objection(current.review)
    if objected is not None:
        return done(False, f"the reviewer objected: {objected}", head=head)
    outside = seals.outside_changes(git, current.seals or {})
    if outside:
        return done(False, outside[0], head=head, halt=True)
    sealed, env_dirs = current.seals or {}, st.summary.get("environment_dirs") or []
    broken = restored + seals.broken(git, sealed, env_dirs)
    if broken:
        return done(False, broken[0], head=head)
    candidate = current.candidate
    base_tree = check.tree_of(git, current.base)
    changed = [c.path for c in git.diff_trees(base_tree, candidate) if c.status != "D"]
    wave = waves.read(git, st)
    entry = None if wave is None else wave.of(current.cycle)
    if entry is not None:
        found = large.too_large(Path(entry.worktree), changed, config.max_file_mb)
        if found:
            where = large.where(git, current.cycle)
            return done(False, large.reason(found, config.max_file_mb, where, root), head=head)
    snapshot = judging.sealed_snapshot(git, st)
    taken = time.time()
    with room.acquire(git) as rm:
        held = hold(rm, config, room.environment(rm))
        with held or contextlib.nullcontext():
            guard = judging._guard(git, current, head, base_tree, candidate)
            refused: str | None = None
            look_at: tuple[str, ...] = ()
            if guard is None:
                refused, look_at = diff_reading.read(git, base_tree, candidate, snapshot, config)
            if guard is not None or refused is not None:
                return done(
                    False, guard or refused, candidate=candidate, head=head, taken_epoch=taken
                )
            job = judging.request(
                st, current, snapshot, base_tree, candidate, held, sealed, env_dirs
            )
            judged = check.judge_candidate(git, rm, config, job)
    verdict = judged.verdict
    pending = judging.advanced(git, config, current.base, candidate, snapshot, judged)
    reason = verdict.reason
    if not verdict.passed and reason and wave is not None and current.base != wave.tip:
        landed = [t.task for t in wave.tasks if t.phase == "landed"]
        reason = f"{reason} (judged on the tip with {', '.join(landed)} landed before it)"
    return done(
        verdict.passed, reason, verdict, candidate, head, judged.duration_s,
        pending=pending, taken_epoch=taken, flaky=judged.flaky,
        env_skipped=judged.env_skipped, look_at=look_at, objects_checked=checked,
        new_tests=newtests.tally(snapshot.baseline.tests, judged.run.tests),
    )  # fmt: skip


def bring(root: Path, git: Git, journal: Journal, final: str) -> None:
    """After the branch moved to ``final``: the person's tree brought to it where
    the task's commits changed it. A path is written only where the file holds
    what the old tip had (or already what ``final`` has, or is absent where the
    old tip had none): a person's edit made during the wave is left as it is.
    Idempotent, so a rerun after a kill finishes it."""
    old = git.rev(f"{journal.base}^{{tree}}")
    new = git.rev(f"{final}^{{tree}}")
    assert old is not None
    assert new is not None
    write: list[str] = []
    for change in git.diff_trees(old, new):
        on_disk = _disk(root / change.path)
        was = None if change.status == "A" else _blob(git, change.old_oid)
        if on_disk is not None and on_disk != was:
            continue  # a person's, or already brought
        if change.status == "D":
            if on_disk is not None:
                os.unlink(root / change.path)
        else:
            write.append(change.path)
    if not write:
        return
    from gtd.own_files import own_folder, private_dir

    scratch = own_folder(private_dir(git.git_dir()))
    env = {"GIT_INDEX_FILE": str(scratch / f"bring-{os.getpid()}.index")}
    try:
        git.run("read-tree", new, env=env)
        listed = "\0".join(write)
        git.run("checkout-index", "-u", "-f", "-q", "-z", "--stdin", input_text=listed, env=env)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(env["GIT_INDEX_FILE"])


def _disk(path: Path) -> bytes | None:
    """A file's bytes (a link's target), None when absent."""
    try:
        if path.is_symlink():
            return os.readlink(path).encode("utf-8", "surrogateescape")
        return read_bytes(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        return b"\0(a folder)"  # never a blob's bytes: left as it is


def _blob(git: Git, oid: str) -> bytes | None:
    found = git.objects([oid])[0]
    return None if found is None else found.data


def set_aside(git: Git, current: Journal) -> tuple[str, str | None, str]:
    """A wave's task not committed: its tree kept, the person's tree left as it is
    (it never held the work). (status, commit, kept ref) for the record: queued
    (``skipped``) when no verdict was reached (a kill, an abandoned end), else
    reverted as any cycle."""
    tree = current.candidate
    cut_short = current.passed is False and (current.reason or "").startswith(_CUT_SHORT)
    if cut_short and current.tests_total is None:
        ref = f"{waves.queued_prefix(git)}{current.task}"
        status = "skipped"
    else:
        ref = f"{state.reverted_ref(git)}{current.cycle}"
        status = "reverted"
    if tree is None:
        return status, None, ""
    existing = git.rev(ref)
    if existing is None or git.rev(f"{existing}^{{tree}}") != tree:
        from gtd.auto.wave_journal import WaveTask

        entry = WaveTask(current.task, current.title, current.cycle, current.spike, "", "")
        waves.keep(git, ref, tree, current.base, entry, current.reason or "reverted")
    crash_point("wave-kept")
    return status, None, ref


def after_record(git: Git, st: State, current: Journal, status: str) -> dict[str, Any]:
    """The wave journal once ``current``'s record is sealed: its task's phase, or
    the wave dropped when it was the last (the caller then removes the
    worktrees: :func:`finished`)."""
    wave = waves.read(git, st)
    if wave is None or current.wave is None:
        return {}
    phase = {"passed": "landed", "skipped": "queued"}.get(status, "reverted")
    after = wave.with_phase(current.cycle, phase)  # type: ignore[arg-type]
    if current.usage_until is not None:  # the next task's tick turns start there
        after = after.evolve(charged=max(current.usage_until, after.charged or 0.0))
    return waves.sealed(None if after.over else after)


def finished(git: Git, st: State, current: Journal, status: str) -> None:
    """After the record: a landed task's queued work is no longer waiting; the
    wave's worktrees removed once it is over."""
    if status == "passed" and sealed_config(st).parallel > 1:
        ref = f"{waves.queued_prefix(git)}{current.task}"
        oid = git.rev(ref)
        if oid is not None:
            git.update_refs([(ref, None, oid)])
    if current.wave is not None and waves.read(git, st) is None:
        waves.sweep(git)
