"""The circuit breaker: stop the loop when one task keeps getting reverted.

Pure. The decision is always re-derived from memory + PLAN.md rather than read from a
stored "halted" flag, so resetting a counter, raising the threshold or finishing the
task by hand resumes the loop without a second piece of state to keep in sync.
"""

from __future__ import annotations

from collections.abc import Collection

from gtd.auto.defaults import THRESHOLD as DEFAULT_THRESHOLD
from gtd.auto.memory import Halt, Memory, failures_for
from gtd.tuples import NamedTuple

__all__ = [
    "DEFAULT_THRESHOLD",
    "Trip",
    "check",
    "forced_halt",
    "forced_message",
    "halt_record",
    "message",
]


class Trip(NamedTuple):
    task: str
    failures: int  # consecutive reverts (not "count": that is a tuple method)
    reason: str
    message: str


def message(task: str, count: int, reason: str) -> str:
    # Verbatim deepflow wording: people (and their scripts) grep for it.
    return f"Circuit breaker tripped: {task} failed {count} consecutive times. Reason: {reason}"


def forced_message(task: str, reason: str) -> str:
    return f"Loop halted at {task}: {reason}"


def _last_reason(mem: Memory, task: str) -> tuple[int, str]:
    failures = failures_for(mem, task)
    if failures:
        return failures[-1]
    # A counter set by hand (or by deepflow) without history: fall back to the result.
    result = mem.task_results.get(task)
    if result is not None and result.reason:
        return (result.cycle or 0, result.reason)
    return (0, "unknown")


def check(mem: Memory, threshold: int, pending_ids: Collection[str]) -> Trip | None:
    """The trip, if any still-pending task has `threshold` or more consecutive reverts.

    Only pending tasks count: a task finished since (by a later pass or by hand)
    never halts the loop. With several tripped tasks the one that failed most
    recently is named, because that is the failure that just happened; ties go to
    file order so the answer is stable.
    """
    if threshold < 1:
        raise ValueError(f"circuit_breaker_threshold must be at least 1, got {threshold}")
    if mem.stop is not None:
        stop = mem.stop
        return Trip(stop.task, stop.failures, stop.reason, forced_message(stop.task, stop.reason))
    best: tuple[int, Trip] | None = None
    for task, count in mem.consecutive_reverts.items():
        if count < threshold or task not in pending_ids:
            continue
        cycle, reason = _last_reason(mem, task)
        if best is None or cycle > best[0]:
            best = (cycle, Trip(task, count, reason, message(task, count, reason)))
    return best[1] if best else None


def halt_record(trip: Trip, cycle: int, at: str) -> Halt:
    """The `halts` entry to log for a trip found after `cycle`."""
    return Halt(cycle=cycle, task=trip.task, failures=trip.failures, reason=trip.reason, at=at)


def forced_halt(task: str, cycle: int, reason: str, at: str) -> Halt:
    """A halt that holds until `gtd cycle reset`, whatever the counters say."""
    return Halt(cycle=cycle, task=task, failures=0, reason=reason, at=at, forced=True)
