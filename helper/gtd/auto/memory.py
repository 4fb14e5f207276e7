"""Cross-cycle memory of auto mode: the model behind `.deepflow/auto-memory.yaml`.

Pure: values in, values out, no IO and no clock (timestamps arrive as ISO-8601 UTC
strings). The four deepflow keys (`task_results`, `revert_history`,
`consecutive_reverts`, `probe_learnings`) follow the deepflow 0.1.73 rules exactly;
`cycles` (one record per cycle, the source of the report) and `halts` (breaker trips)
are our additions. `gtd.auto.memory_file` maps this model to and from the YAML file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from gtd.auto.defaults import THRESHOLD as DEFAULT_THRESHOLD
from gtd.errors import StateError
from gtd.paths import BOOTSTRAP
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Any, Literal

    from gtd.auto.usage import Usage

    CycleStatus = Literal["passed", "reverted", "skipped", "paused"]
else:
    CycleStatus = str
# One word for one outcome in the answer, the report and this file: a cycle whose
# work the ratchet refused is `reverted` (what `gtd cycle end` answers). Files and
# sealed records written before that say `failed`; they read as `reverted`.
# "paused": the harness stopped the agent (a usage limit, an overloaded API, a
# killed agent): the work is kept like a revert's, the breaker never counts it.
CYCLE_STATUSES: tuple[CycleStatus, ...] = ("passed", "reverted", "skipped", "paused")
LEGACY_STATUSES: dict[str, CycleStatus] = {"failed": "reverted"}


def cycle_status(value: object) -> object:
    """``value`` with a legacy spelling replaced by today's (anything else as is,
    for the caller's own check to refuse)."""
    return LEGACY_STATUSES.get(value, value) if isinstance(value, str) else value


class CycleRecord(NamedTuple):
    """What one cycle did. `task` is a PLAN.md task id or ``BOOTSTRAP``."""

    cycle: int
    task: str
    title: str
    status: CycleStatus
    commit: str | None  # short hash when passed
    reason: str | None  # ratchet failure reason when failed
    at: str  # ISO-8601 UTC, e.g. 2026-01-15T10:00:00Z
    tests_passed: int | None
    tests_total: int | None
    build_ok: bool | None
    spike: bool = False
    learning: str | None = None
    # Added with the sealed records; None where an older memory file had no such field.
    tests_failed: int | None = None
    tests_skipped: int | None = None
    duration_s: float | None = None  # the test run's wall time
    kept: str | None = None  # the ref holding a reverted cycle's work
    agent_exit: int | None = None  # the headless agent's exit status, when known
    agent_tail: str | None = None  # the end of its output, when it failed
    flaky: tuple[str, ...] = ()  # tests that failed, then passed on a re-run
    # baseline-passing tests skipped in the cycle's run that the base commit's code
    # skips too when run again: the environment changed, not the code
    env_skipped: tuple[str, ...] = ()
    # the diff reader's flagged findings (`file:line: pattern: why`), for a person
    look_at: tuple[str, ...] = ()
    review: str | None = None  # the reviewer's verdict, when one ran
    review_s: float | None = None  # the seconds it took
    # what was done for the person's refs, stash, worktrees and ignored files
    # (gtd.auto.cycle.yours): a sentence each
    yours: tuple[str, ...] = ()
    # A paused cycle: when the task may be tried again (ISO-8601 UTC), and what
    # stopped the agent (gtd.auto.harness kinds: "usage limit", "overloaded", ...).
    until: str | None = None
    harness: str | None = None
    new_tests: str | None = None  # how the tests the cycle added did ("3 ran, 3 passed")
    # the tokens and cost of the cycle's model calls (gtd.auto.usage), when known
    usage: Usage | None = None
    # its shares: the loop's own tick turns (the main conversation, in a Claude
    # Code session) and the reviewer's (review.agent); the rest is the implementer's
    usage_tick: Usage | None = None
    usage_review: Usage | None = None
    # the wave it ran in (docs/parallel.md); None for a cycle run alone
    wave: int | None = None
    # A wave's task, when its verdict was recorded: seconds from the wave's start
    # to its record, and of its own turn (its judging and landing, from the start
    # of its check). The report's Waves part is built from them
    # (gtd.auto.report_waves); None for a cycle run alone, or a task sent back
    # to the queue, which had no judging.
    wave_s: float | None = None
    turn_s: float | None = None


class Pause(NamedTuple):
    """The loop's pause in force: consecutive paused cycles since the last judged
    one (or reset). ``since``: when the first of them was recorded."""

    task: str
    since: str
    until: str
    reason: str
    attempts: int


class TaskResult(NamedTuple):
    """deepflow's `task_results[T]`: `success` (with commit) or `reverted` (with reason)."""

    status: str
    cycle: int | None = None
    commit: str | None = None
    reason: str | None = None


class Revert(NamedTuple):
    """One `revert_history` entry."""

    task: str
    cycle: int
    reason: str


class ProbeLearning(NamedTuple):
    """One `probe_learnings` entry: what a spike taught, fed to later implementer briefs."""

    spike: str
    probe: str
    insight: str


class Halt(NamedTuple):
    """A recorded breaker trip (history only: whether the loop is halted *now* is always
    re-derived from `consecutive_reverts`, so a reset or a raised threshold resumes),
    or, ``forced``, a stop that holds until `gtd cycle reset` whatever the counters say
    (the agent tampered with the helper's state, a commit git cannot write)."""

    cycle: int
    task: str
    failures: int  # consecutive reverts (not "count": that is a tuple method)
    reason: str
    at: str
    forced: bool = False


class Quarantine(NamedTuple):
    """A test that flipped between failing and passing on the same code: its
    failures are reported, never alone the reason for a revert."""

    test: str
    cycle: int  # 0: found at the baseline
    at: str
    evidence: str
    by: str = "gtd"  # "gtd" (found by a re-run) or "person" (`gtd ratchet quarantine`)


class Refresh(NamedTuple):
    """The snapshot was re-taken from a commit that no cycle made (a person's)."""

    commit: str
    at: str
    reason: str


def _frozen_map(value: Mapping[str, object]) -> MappingProxyType[str, object]:
    # Copy, then wrap read-only: a caller keeping the dict it passed in cannot change
    # a Memory behind our back, and a Memory cannot be mutated through its attribute.
    return MappingProxyType(dict(value))


class _MemoryFields(NamedTuple):
    task_results: Mapping[str, TaskResult] = MappingProxyType({})
    revert_history: tuple[Revert, ...] = ()
    consecutive_reverts: Mapping[str, int] = MappingProxyType({})
    probe_learnings: tuple[ProbeLearning, ...] = ()
    cycles: tuple[CycleRecord, ...] = ()
    halts: tuple[Halt, ...] = ()
    quarantined: Mapping[str, Quarantine] = MappingProxyType({})
    refreshes: tuple[Refresh, ...] = ()
    stop: Halt | None = None  # a forced halt in force (cleared by a reset)
    pause: Pause | None = None  # the harness stopped the agent: wait (cleared by a reset)


class Memory(_MemoryFields):
    """Frozen all the way down: every construction (including ``_replace``) copies the
    mappings into read-only proxies and the sequences into tuples."""

    __slots__ = ()

    def __new__(
        cls,
        *,
        task_results: Mapping[str, TaskResult] = MappingProxyType({}),
        revert_history: Iterable[Revert] = (),
        consecutive_reverts: Mapping[str, int] = MappingProxyType({}),
        probe_learnings: Iterable[ProbeLearning] = (),
        cycles: Iterable[CycleRecord] = (),
        halts: Iterable[Halt] = (),
        quarantined: Mapping[str, Quarantine] = MappingProxyType({}),
        refreshes: Iterable[Refresh] = (),
        stop: Halt | None = None,
        pause: Pause | None = None,
    ) -> Memory:
        return super().__new__(
            cls,
            _frozen_map(task_results),  # type: ignore[arg-type]
            tuple(revert_history),
            _frozen_map(consecutive_reverts),  # type: ignore[arg-type]
            tuple(probe_learnings),
            tuple(cycles),
            tuple(halts),
            _frozen_map(quarantined),  # type: ignore[arg-type]
            tuple(refreshes),
            stop,
            pause,
        )

    @classmethod
    def _make(cls, iterable: Iterable[Any]) -> Memory:  # type: ignore[override]
        # NamedTuple's _replace builds through _make, which would skip __new__.
        return cls(**dict(zip(cls._fields, iterable, strict=True)))


EMPTY = Memory()


def find_cycle(mem: Memory, cycle: int) -> CycleRecord | None:
    return next((rec for rec in mem.cycles if rec.cycle == cycle), None)


def record_cycle(mem: Memory, rec: CycleRecord) -> Memory:
    """Fold one cycle's outcome into memory, by deepflow's rules (its auto-cycle,
    steps 3.5 and 3.6).

    Idempotent by cycle number: crash recovery may replay the bookkeeping of a cycle
    that was already recorded, and that must change nothing. A *different* outcome
    under a number already used is a contradiction we refuse to paper over.
    """
    if rec.status not in CYCLE_STATUSES:
        raise ValueError(f"unknown cycle status {rec.status!r}")
    if rec.cycle < 1:
        raise ValueError(f"cycle numbers start at 1, got {rec.cycle}")
    seen = find_cycle(mem, rec.cycle)
    if seen is not None:
        if (seen.task, seen.status) == (rec.task, rec.status):
            return mem
        raise StateError(
            f"cycle {rec.cycle} is already recorded as {seen.task} {seen.status}, "
            f"not {rec.task} {rec.status}",
            "inspect .deepflow/auto-memory.yaml; the cycle journal and memory disagree",
        )

    task_results = dict(mem.task_results)
    counters = dict(mem.consecutive_reverts)
    reverts = list(mem.revert_history)
    learned = list(mem.probe_learnings)
    is_bootstrap = rec.task == BOOTSTRAP

    if rec.status == "passed":
        # A bootstrap is not a PLAN.md task: keep it out of task_results (which other
        # code reads as "PLAN task → outcome"), but clear a counter a failed bootstrap
        # left behind so the breaker forgets it.
        if not is_bootstrap:
            task_results[rec.task] = TaskResult("success", rec.cycle, commit=rec.commit)
        if not is_bootstrap or rec.task in counters:
            counters[rec.task] = 0
    elif rec.status == "reverted":
        reason = rec.reason or ""
        if not is_bootstrap:
            task_results[rec.task] = TaskResult("reverted", rec.cycle, reason=reason)
        # A deepflow-era file has no cycle log to dedupe by; don't double its history.
        revert = Revert(rec.task, rec.cycle, reason)
        if not any((r.task, r.cycle) == (revert.task, revert.cycle) for r in reverts):
            reverts.append(revert)
        counters[rec.task] = counters.get(rec.task, 0) + 1
    # "skipped" (the task was already done): logged, nothing else changes.
    # "paused": logged and the pause noted; no counter, result or revert changes.
    pause = None if rec.status in ("passed", "reverted") else mem.pause
    if pause is None and mem.pause is not None and _same_wave(mem, rec):
        pause = mem.pause  # its implementer finished before the limit; the limit holds
    if rec.status == "paused":
        earlier = mem.pause
        pause = Pause(
            rec.task,
            earlier.since if earlier is not None else rec.at,
            rec.until or rec.at,
            rec.harness or rec.reason or "the harness stopped the agent",
            (earlier.attempts if earlier is not None else 0) + 1,
        )

    if rec.spike and rec.learning and rec.learning.strip():
        learning = ProbeLearning(rec.task, rec.title, rec.learning.strip())
        if learning not in learned:
            learned.append(learning)

    return mem._replace(
        task_results=task_results,
        revert_history=tuple(reverts),
        consecutive_reverts=counters,
        probe_learnings=tuple(learned),
        cycles=(*mem.cycles, rec),
        pause=pause,
    )


def _same_wave(mem: Memory, rec: CycleRecord) -> bool:
    """Whether ``rec`` is of the wave whose task's pause is in force: a wave's
    tasks end one by one, and one judged after a task the harness stopped does
    not end the pause (the next wave would meet the same limit)."""
    if rec.wave is None:
        return False
    last = next((c for c in reversed(mem.cycles) if c.status == "paused"), None)
    return last is not None and last.wave == rec.wave


def record_halt(mem: Memory, halt: Halt) -> Memory:
    """Log a breaker trip; idempotent by (cycle, task) like record_cycle. A forced
    halt also stops the loop until the next reset; one seen again after a reset
    stops it again (the same cause found anew: the test environment still not
    the baseline's), logged once."""
    if any((h.cycle, h.task, h.forced) == (halt.cycle, halt.task, halt.forced) for h in mem.halts):
        return mem._replace(stop=halt) if halt.forced and mem.stop is None else mem
    return mem._replace(halts=(*mem.halts, halt), stop=halt if halt.forced else mem.stop)


def quarantine(mem: Memory, entry: Quarantine) -> Memory:
    if entry.test in mem.quarantined:
        return mem
    return mem._replace(quarantined={**mem.quarantined, entry.test: entry})


def release(mem: Memory, test: str) -> Memory:
    """Take a test out of quarantine: its failures count again."""
    if test not in mem.quarantined:
        return mem
    return mem._replace(quarantined={t: q for t, q in mem.quarantined.items() if t != test})


def record_refresh(mem: Memory, refresh: Refresh) -> Memory:
    return mem._replace(refreshes=(*mem.refreshes, refresh))


def reset_breaker(
    mem: Memory, task_id: str | None, threshold: int = DEFAULT_THRESHOLD
) -> tuple[Memory, list[str]]:
    """Zero `consecutive_reverts` for `task_id`, or (None) for every task at or over
    `threshold`. Returns the ids actually reset (empty: nothing was tripped), in file
    order so the CLI's answer is stable."""
    counters = dict(mem.consecutive_reverts)
    if task_id is not None:
        targets = [task_id] if counters.get(task_id, 0) > 0 else []
    else:
        targets = [task for task, count in counters.items() if count >= threshold]
    stop = mem.stop
    if stop is not None and (task_id is None or task_id == stop.task):
        targets = [*targets, stop.task] if stop.task not in targets else targets
        stop = None
    pause = mem.pause
    if pause is not None and (task_id is None or task_id == pause.task):
        targets = [*targets, pause.task] if pause.task not in targets else targets
        pause = None
    if not targets:
        return mem, []
    for task in targets:
        if task in counters:
            counters[task] = 0
    return mem._replace(consecutive_reverts=counters, stop=stop, pause=pause), targets


def _all_cycle_numbers(mem: Memory) -> Iterable[int]:
    yield from (rec.cycle for rec in mem.cycles)
    # deepflow-era files carry cycle numbers only here; never reuse them.
    yield from (res.cycle for res in mem.task_results.values() if res.cycle is not None)
    yield from (rev.cycle for rev in mem.revert_history)
    yield from (halt.cycle for halt in mem.halts)


def next_cycle_number(mem: Memory) -> int:
    return max(_all_cycle_numbers(mem), default=0) + 1


def failures_for(mem: Memory, task_id: str) -> list[tuple[int, str]]:
    """(cycle, reason) of every revert of `task_id`, oldest first — the implementer
    brief's "do not repeat" list."""
    hits = [(rev.cycle, rev.reason) for rev in mem.revert_history if rev.task == task_id]
    return sorted(hits, key=lambda hit: hit[0])


def learnings(mem: Memory) -> list[ProbeLearning]:
    return list(mem.probe_learnings)


def latest_ratchet_record(mem: Memory) -> CycleRecord | None:
    """The most recent cycle that ran the ratchet (skipped cycles did not)."""
    ran = [rec for rec in mem.cycles if rec.status not in ("skipped", "paused")]
    return max(ran, key=lambda rec: rec.cycle, default=None)
