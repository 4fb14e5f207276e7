"""A wave's beginning and its recovery (docs/parallel.md): `gtd cycle begin` with
``parallel: N > 1`` starts up to N tasks at once, each in a worktree of the
helper's (gtd.auto.cycle.worktrees) with a brief of its own; gtd.auto.cycle
.wave_landing judges and lands each when its `gtd cycle end --cycle N` comes.

The wave journal (gtd.auto.wave_journal) is sealed in the state as ``wave.json``
before any worktree is made, and ``ready`` once all are: a `begin` killed before
that left a wave nobody works on, which the next `begin` drops (its worktrees
removed, its tasks still open in the plan). A wave whose implementers are gone
(its session asks again or is gone, or the agent timeout passed) has each task
not yet ended sent back to the queue, its work kept under
``refs/gtd/queued/<task>``. With ``parallel: 1`` nothing here runs but a look
for a worktree folder a killed wave left."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import paths, session
from gtd.auto import harness, state
from gtd.auto import wave_journal as wj
from gtd.auto.cycle import answers, worktrees
from gtd.auto.faults import crash_point
from gtd.auto.memory import CycleRecord
from gtd.auto.state import State, sealed_config
from gtd.auto.wave_journal import Wave, WaveTask
from gtd.errors import GtdError, StateError
from gtd.fsio import atomic_write
from gtd.git import Git

if TYPE_CHECKING:
    from gtd.auto.cycle.answers import Answer
    from gtd.auto.cycle.steps import Steps
    from gtd.auto.memory import Memory
    from gtd.auto.plan import Plan

WAVE = state.WAVE
BRIEFS = f"{paths.STATE_DIR}/wave"


def read(git: Git, st: State) -> Wave | None:
    """The wave in flight, as sealed; None when there is none."""
    raw = state.read_blob(git, st, WAVE)
    if raw is None:
        return None
    try:
        return wj.loads(raw)
    except (ValueError, TypeError) as exc:
        name = f"{state.ref(git)}:{WAVE}"
        raise StateError(
            f"{name}: unreadable wave journal ({exc})", f"see `git log {state.ref(git)}`"
        ) from None


def sealed(wave: Wave | None) -> dict[str, bytes | None]:
    """The ``others`` of a state write that seals ``wave`` (None: drops it)."""
    return {WAVE: None if wave is None else wj.dumps(wave)}


def queued_prefix(git: Git) -> str:
    return f"{paths.refs_of(git.worktree_id())}queued/"


def queued(git: Git) -> set[str]:
    """The tasks whose work waits under ``refs/gtd/queued/``: each runs only first
    in its wave (gtd.auto.wave.choose's ``alone``)."""
    prefix = queued_prefix(git)
    return {ref.removeprefix(prefix) for ref in git.refs(prefix, check=False)}


def sweep(git: Git) -> list[str]:
    """What a killed wave left of the helper's worktrees, removed (with no wave in
    flight none is anyone's); a look for the folder when there is nothing."""
    home = worktrees.home(git)
    if not os.path.lexists(home):  # (made before any of its branches: worktrees.create)
        return []
    removed = worktrees.remove_all(git)
    with contextlib.suppress(OSError):
        os.rmdir(home)
    briefs = git.root / BRIEFS  # read by the implementers, which are done
    with contextlib.suppress(OSError):
        for name in os.listdir(briefs):
            if name.endswith("-brief.md"):
                os.unlink(briefs / name)
    return removed


def start(
    steps: Steps, st: State, the_plan: Plan, mem: Memory, head: str, branch: str
) -> Answer | None:
    """Begin a wave when ``parallel`` allows more than one task and more than one
    may run: its answer; None for the serial cycle of today (one task, a
    bootstrap cycle, ``parallel: 1``)."""
    from gtd.auto import budget, memory
    from gtd.auto import wave as waves

    config = sealed_config(st)
    width = steps.parallel or config.parallel
    if width < 2:
        return None
    assert st.summary is not None
    if st.summary.get("bootstrap") and not any(
        r.task == paths.BOOTSTRAP and r.status == "passed" for r in mem.cycles
    ):
        return None
    if mem.pause is not None:
        # The harness stopped an implementer and the wait is over (`begin`
        # answered `paused` while it lasted): one task tries the limit first, so
        # a limit still in force stops one implementer, not a wave of them.
        return None
    git = steps.git
    chosen = list(waves.choose(the_plan, width, alone=queued(git)).tasks)
    ceiling = budget.ceiling_of(config)
    if ceiling is not None and len(chosen) > 1:
        fit = waves.affordable(st.records, ceiling, [t.id for t in chosen])
        chosen = chosen[: max(fit, 1)]  # the first was let through by the gate
    if len(chosen) < 2:
        return None
    sweep(git)
    from gtd.auto.cycle import seals, yours

    first = memory.next_cycle_number(mem)
    number = max((r.wave or 0 for r in mem.cycles), default=0) + 1
    taken = seals.take(git, st.summary.get("environment_dirs") or [])
    pinned = yours.begin(git, taken)
    home = worktrees.home(git)
    folder = steps.root / BRIEFS
    tasks = tuple(
        WaveTask(
            task=t.id,
            title=t.title,
            cycle=first + i,
            spike=t.spike,
            worktree=str(home / f"{worktrees.PREFIX}{t.id}"),
            brief=str(folder / f"{t.id}-brief.md"),
        )
        for i, t in enumerate(chosen)
    )
    asker = steps._asker
    wave = Wave(
        wave=number,
        tip=head,
        branch=branch,
        started_at=steps.now.iso,
        started_epoch=steps.now.epoch,
        tasks=tasks,
        seals=taken,
        session=None if asker is None else session.to_json(asker),
        claude_session=None if asker is None else harness.session_id(),
    )
    message = f"wave {number} ({', '.join(t.task for t in tasks)}): begin"
    others = {**sealed(wave), yours.COPY: pinned}
    st = state.write(git, st, message, others=others, pin=head)
    crash_point("wave-sealed")
    for entry, task in zip(tasks, chosen, strict=True):
        place = worktrees.create(git, entry.task, head)
        atomic_write(Path(entry.brief), _brief(st, mem, task, entry, place.path, steps.root))
    crash_point("wave-made")
    wave = wave.evolve(ready=True)
    st = state.write(git, st, f"wave {number}: ready", others=sealed(wave))
    steps._show(st, the_plan, mem)
    return answers.wave(
        number,
        [t.cycle for t in tasks],
        [t.task for t in tasks],
        [t.brief for t in tasks],
        [t.worktree for t in tasks],
    )


def _brief(st: State, mem: Memory, task: object, entry: WaveTask, where: Path, root: Path) -> str:
    from gtd.auto import brief, memory
    from gtd.auto.plan import Task
    from gtd.templates import template

    assert isinstance(task, Task)
    config = sealed_config(st)
    text = brief.render_task(
        template("brief.md"),
        cycle=entry.cycle,
        task=task,
        failures=memory.failures_for(mem, task.id),
        learnings=[f"{item.spike}: {item.insight}" for item in memory.learnings(mem)],
        test_command=config.test_command or "(no test command detected)",
        declared=config.protect,
    )
    where_s = os.path.realpath(where)
    return (
        f"## Where you work\n\nYour worktree: `{where_s}`. Every file you read, "
        "write or run is there: work with absolute paths under it, run the tests "
        f"from it. Do not touch `{root}` (the person's tree) nor any other "
        "worktree; the helper judges your worktree's files when your turn ends.\n\n" + text
    )


def settle(steps: Steps, st: State) -> tuple[State, Answer | None, str | None]:
    """Before `begin` chooses: a wave in flight answered ``busy`` while its
    implementers may still be at work; otherwise what a kill or an abandoned
    tick left, put right: the state, the busy answer (or None), and what was
    recovered (or None). The helper's worktrees go whenever no wave is in flight."""
    git = steps.git
    wave = read(git, st)
    if wave is None:
        sweep(git)
        return st, None, None
    if wave.ready and not wave.over and _live(steps, st, wave):
        return st, _busy(wave), None
    told: list[str] = []
    records: list[CycleRecord] = []
    for entry in wave.tasks:
        if entry.phase != "agent":
            continue
        if wave.ready:
            stopped = _stopped(steps, st, wave, entry, records)
            if stopped is not None:
                told.append(f"{entry.task} paused ({stopped.harness}), back to the queue")
            else:
                why = f"abandoned: no `gtd cycle end --cycle {entry.cycle}` came"
                stopped = queue(steps, wave, entry, why)
                told.append(f"{entry.task} back to the queue")
            rec, wave = charged(steps, st, wave, stopped)
            records.append(rec)
    st = state.write(git, st, f"wave {wave.wave}: settled", others=sealed(None), append=records)
    sweep(git)
    if records or not wave.ready:
        from gtd.auto import plan_file
        from gtd.auto.rendering import render

        render(steps.root, st, plan_file.load(steps.root)[1], steps.now)
    if not wave.ready:
        return st, None, f"wave {wave.wave} was cut short as it began; its tasks run again"
    if not told:
        return st, None, None
    return st, None, f"wave {wave.wave} was abandoned: {', '.join(told)}"


def _stopped(
    steps: Steps, st: State, wave: Wave, entry: WaveTask, before: list[CycleRecord]
) -> CycleRecord | None:
    """``entry``'s record as ``paused`` when the harness stopped its implementer
    or the tick's own turn (a usage limit ends the whole conversation, and no
    `end` came): its work back to the queue, kept, the pause noted as a single
    cycle's is (docs/harness-failures.md). None when its transcripts say nothing."""
    from gtd.auto import records as folding
    from gtd.auto.cycle import paused

    if wave.claude_session is None:
        return None
    now = steps.now.epoch
    stop = harness.from_transcripts(wave.claude_session, wave.started_epoch, now, brief=entry.brief)
    if stop is None:
        return None
    mem = folding.fold([*st.records, *before])
    rec = queue(steps, wave, entry, f"{stop.kind}: {stop.message}")
    return paused.record(rec, stop, mem, sealed_config(st), now)


def charged(steps: Steps, st: State, wave: Wave, rec: CycleRecord) -> tuple[CycleRecord, Wave]:
    """``rec`` of a task no `end` judged, with what its session's transcripts say
    it spent (gtd.auto.cycle.spent.from_wave), and the wave with the tick's turns
    charged up to now (each message once, whichever task is recorded next)."""
    from gtd.auto.cycle import spent

    now = steps.now.epoch
    if wave.split_epoch is None:
        wave = wave.evolve(split_epoch=now)
    used = spent.from_wave(wave, rec.cycle, now, sealed_config(st))
    if used is None:
        return rec, wave
    rec = rec._replace(usage=used.total, usage_tick=used.tick, usage_review=used.review)
    return rec, wave.evolve(charged=now)


def _live(steps: Steps, st: State, wave: Wave) -> bool:
    """Whether the wave's implementers may still be at work: within the agent
    timeout, and its Claude Code session neither gone nor the one asking (its
    ticks run one after another: the tick that began it is over)."""
    recorded = session.from_json(wave.session)
    if recorded is not None and session.relation(recorded, steps._asker) in ("gone", "same"):
        return False
    minutes = sealed_config(st).agent_timeout_minutes
    return steps.now.epoch - wave.started_epoch < minutes * 60


def _busy(wave: Wave) -> Answer:
    waiting = [t for t in wave.tasks if t.phase == "agent"]
    return {
        "status": "busy",
        "phase": "agent",
        "since": wave.started_at,
        "cycles": [t.cycle for t in waiting],
        "tasks": [t.task for t in waiting],
        "message": f"wave {wave.wave} is in flight",
        "next": "end this tick; each implementer's `gtd cycle end --cycle N` ends its task",
    }


def queue(steps: Steps, wave: Wave, entry: WaveTask, why: str) -> CycleRecord:
    """``entry`` back to the queue, its worktree's work kept under
    ``refs/gtd/queued/<task>`` (a commit on the wave's tip; none when it changed
    nothing): the record to seal, ``skipped``, which the breaker does not count."""
    git = steps.git
    kept: str | None = None
    try:
        tree = worktree_tree(git, entry, wave.tip)
    except GtdError:
        tree = None  # the checkout is unreadable: nothing to keep
    if tree is not None and tree != git.rev(f"{wave.tip}^{{tree}}"):
        kept = keep(git, f"{queued_prefix(git)}{entry.task}", tree, wave.tip, entry, why)
    return CycleRecord(
        cycle=entry.cycle, task=entry.task, title=entry.title, status="skipped", commit=None,
        reason=f"{why}; back to the queue" + (f", its work kept as {kept}" if kept else ""),
        at=steps.now.iso, tests_passed=None, tests_total=None, build_ok=None, spike=entry.spike,
        kept=kept or "", wave=wave.wave,
    )  # fmt: skip


def keep(git: Git, ref: str, tree: str, parent: str, entry: WaveTask, why: str) -> str:
    """``tree`` as a commit on ``parent`` under ``ref`` (moved to it whatever it
    held: an earlier try's queued work is replaced by the newer one)."""
    message = (
        f"gtd: work of cycle {entry.cycle} ({entry.task})\n\n{why}\n\n"
        f"Gtd-Task: {entry.task}\nGtd-Cycle: {entry.cycle}\n"
    )
    commit = git.commit_tree(tree, [parent], message)
    git.update_refs([(ref, commit, None)])
    return ref


def worktree_tree(git: Git, entry: WaveTask, tip: str) -> str | None:
    """The tree git would commit from ``entry``'s worktree on ``tip`` (its files as
    they are, untracked ones it does not ignore), built in a private index; None
    when its checkout is gone."""
    from gtd.own_files import own_folder, private_dir

    where = Path(entry.worktree)
    place = worktrees.entry_of(git, where)
    if place is None or not where.is_dir():
        return None
    scratch = own_folder(private_dir(git.git_dir()))
    index = scratch / f"wave-{entry.task}-{os.getpid()}.index"
    # git told where its folder is: the checkout's `.git` file (the implementer's
    # to rewrite) is not read, so no configuration of the agent's is obeyed.
    pinned = {"GIT_DIR": str(place), "GIT_WORK_TREE": str(where)}
    try:
        return Git(where, hardened=True, env=pinned).worktree_tree(index, tip)
    finally:
        with contextlib.suppress(OSError):
            index.unlink()
