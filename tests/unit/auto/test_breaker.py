"""gtd.auto.breaker: when the loop must stop, and what it says."""

from __future__ import annotations

import pytest

from gtd.auto import breaker
from gtd.auto import memory as m
from gtd.auto.memory import CycleRecord, Memory, Revert, TaskResult

AT = "2026-01-15T10:00:00Z"


def failed(cycle: int, task: str, reason: str = "2 tests regressed") -> CycleRecord:
    return CycleRecord(cycle, task, "t", "reverted", None, reason, AT, 22, 24, True)


def passed(cycle: int, task: str) -> CycleRecord:
    return CycleRecord(cycle, task, "t", "passed", "abc1234", None, AT, 24, 24, True)


def fold(*records: CycleRecord) -> Memory:
    mem = Memory()
    for r in records:
        mem = m.record_cycle(mem, r)
    return mem


@pytest.mark.parametrize(
    ("failures", "threshold", "trips"),
    [(0, 3, False), (2, 3, False), (3, 3, True), (4, 3, True), (1, 1, True), (4, 5, False)],
)
def test_threshold(failures: int, threshold: int, trips: bool) -> None:
    mem = fold(*(failed(i, "T3") for i in range(1, failures + 1)))
    trip = breaker.check(mem, threshold, ["T3"])
    assert (trip is not None) is trips
    if trip:
        assert (trip.task, trip.failures) == ("T3", failures)


def test_message_is_deepflows_exactly() -> None:
    mem = fold(failed(1, "T3", "flaky"), failed(2, "T3", "flaky"), failed(3, "T3"))
    trip = breaker.check(mem, 3, ["T3", "T4"])
    assert trip == breaker.Trip(
        task="T3",
        failures=3,
        reason="2 tests regressed",
        message="Circuit breaker tripped: T3 failed 3 consecutive times. Reason: 2 tests regressed",
    )


def test_a_pass_in_between_resets_the_run() -> None:
    mem = fold(failed(1, "T1"), failed(2, "T1"), passed(3, "T1"), failed(4, "T1"))
    assert mem.consecutive_reverts["T1"] == 1
    assert breaker.check(mem, 2, ["T1"]) is None


@pytest.mark.parametrize("pending", [[], ["T1", "T2"], set(), ("T9",)])
def test_done_tasks_never_halt(pending: list[str]) -> None:
    # T3 tripped, then was finished by hand: it is no longer pending.
    mem = fold(failed(1, "T3"), failed(2, "T3"), failed(3, "T3"))
    assert breaker.check(mem, 3, pending) is None


def test_reset_clears_the_trip() -> None:
    mem = fold(failed(1, "T3"), failed(2, "T3"), failed(3, "T3"))
    mem, reset = m.reset_breaker(mem, None, 3)
    assert reset == ["T3"]
    assert breaker.check(mem, 3, ["T3"]) is None


def test_raising_the_threshold_resumes() -> None:
    mem = fold(failed(1, "T3"), failed(2, "T3"), failed(3, "T3"))
    assert breaker.check(mem, 3, {"T3"}) is not None
    assert breaker.check(mem, 4, {"T3"}) is None


def test_the_task_that_failed_last_is_named() -> None:
    mem = fold(
        failed(1, "T1", "old"),
        failed(2, "T2", "newer"),
        failed(3, "T1", "old"),
        failed(4, "T2", "newest"),
    )
    trip = breaker.check(mem, 2, ["T1", "T2"])
    assert trip is not None
    assert (trip.task, trip.reason) == ("T2", "newest")


@pytest.mark.parametrize(
    ("mem", "reason"),
    [
        pytest.param(
            Memory(
                consecutive_reverts={"T3": 3},
                task_results={"T3": TaskResult("reverted", 9, reason="from results")},
            ),
            "from results",
            id="no-history-uses-task-result",
        ),
        pytest.param(Memory(consecutive_reverts={"T3": 3}), "unknown", id="nothing-known"),
        pytest.param(
            Memory(
                consecutive_reverts={"T3": 3},
                revert_history=(Revert("T3", 5, "late"), Revert("T3", 2, "early")),
            ),
            "late",
            id="latest-cycle-not-list-order",
        ),
    ],
)
def test_reason_falls_back(mem: Memory, reason: str) -> None:
    trip = breaker.check(mem, 3, ["T3"])
    assert trip is not None
    assert trip.reason == reason
    assert trip.message.endswith(f"Reason: {reason}")


def test_threshold_below_one_is_a_bug() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        breaker.check(Memory(), 0, [])


def test_halt_record() -> None:
    trip = breaker.Trip("T3", 3, "r", breaker.message("T3", 3, "r"))
    assert breaker.halt_record(trip, 7, AT) == m.Halt(7, "T3", 3, "r", AT)
    assert breaker.DEFAULT_THRESHOLD == 3
