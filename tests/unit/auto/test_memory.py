"""gtd.auto.memory: deepflow's auto-memory rules as pure functions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gtd.auto import memory as m
from gtd.auto.memory import CycleRecord, Memory, ProbeLearning, Revert, TaskResult
from gtd.errors import StateError
from gtd.paths import BOOTSTRAP

AT = "2026-01-15T10:00:00Z"


def rec(cycle: int, task: str = "T1", status: str = "passed", **kw: Any) -> CycleRecord:
    defaults: dict[str, Any] = {
        "title": f"title of {task}",
        "commit": "abc1234" if status == "passed" else None,
        "reason": "tests failed: 2 of 24" if status == "reverted" else None,
        "at": AT,
        "tests_passed": 24,
        "tests_total": 24,
        "build_ok": True,
    }
    defaults.update(kw)
    return CycleRecord(cycle=cycle, task=task, status=status, **defaults)  # type: ignore[arg-type]


def fold(*records: CycleRecord, start: Memory | None = None) -> Memory:
    mem = start or Memory()
    for r in records:
        mem = m.record_cycle(mem, r)
    return mem


@pytest.mark.parametrize(
    ("records", "task_results", "reverts", "counters"),
    [
        pytest.param(
            [rec(3)],
            {"T1": TaskResult("success", 3, commit="abc1234")},
            [],
            {"T1": 0},
            id="success",
        ),
        pytest.param(
            [rec(4, "T2", "reverted")],
            {"T2": TaskResult("reverted", 4, reason="tests failed: 2 of 24")},
            [Revert("T2", 4, "tests failed: 2 of 24")],
            {"T2": 1},
            id="revert",
        ),
        pytest.param(
            [rec(4, "T2", "reverted"), rec(5, "T2", "reverted", reason="build error")],
            {"T2": TaskResult("reverted", 5, reason="build error")},
            [Revert("T2", 4, "tests failed: 2 of 24"), Revert("T2", 5, "build error")],
            {"T2": 2},
            id="two-reverts-count-up",
        ),
        pytest.param(
            [rec(1, "T2", "reverted"), rec(2, "T2", "passed", commit="def5678")],
            {"T2": TaskResult("success", 2, commit="def5678")},
            [Revert("T2", 1, "tests failed: 2 of 24")],
            {"T2": 0},
            id="success-resets-counter-keeps-history",
        ),
        pytest.param(
            [rec(1, "T1", "reverted"), rec(2, "T2", "passed")],
            {
                "T1": TaskResult("reverted", 1, reason="tests failed: 2 of 24"),
                "T2": TaskResult("success", 2, commit="abc1234"),
            },
            [Revert("T1", 1, "tests failed: 2 of 24")],
            {"T1": 1, "T2": 0},
            id="counters-are-per-task",
        ),
        pytest.param([rec(1, "T1", "skipped")], {}, [], {}, id="skipped-only-logged"),
        pytest.param([rec(1, BOOTSTRAP)], {}, [], {}, id="bootstrap-pass-only-logged"),
        pytest.param(
            [rec(1, BOOTSTRAP, "reverted"), rec(2, BOOTSTRAP)],
            {},
            [Revert(BOOTSTRAP, 1, "tests failed: 2 of 24")],
            {BOOTSTRAP: 0},
            id="bootstrap-failure-counted-then-cleared",
        ),
        pytest.param(
            [rec(1, "T1", "reverted", reason=None)],
            {"T1": TaskResult("reverted", 1, reason="")},
            [Revert("T1", 1, "")],
            {"T1": 1},
            id="revert-without-reason",
        ),
    ],
)
def test_record_cycle_applies_deepflow_rules(
    records: list[CycleRecord],
    task_results: dict[str, TaskResult],
    reverts: list[Revert],
    counters: dict[str, int],
) -> None:
    mem = fold(*records)
    assert dict(mem.task_results) == task_results
    assert list(mem.revert_history) == reverts
    assert dict(mem.consecutive_reverts) == counters
    assert mem.cycles == tuple(records)


@pytest.mark.parametrize(
    ("record", "learned"),
    [
        pytest.param(
            rec(1, "T1", spike=True, title="streaming", learning="fs.watch is needed"),
            [ProbeLearning("T1", "streaming", "fs.watch is needed")],
            id="passed-spike",
        ),
        pytest.param(
            rec(1, "T1", "reverted", spike=True, title="streaming", learning="  dead end\n"),
            [ProbeLearning("T1", "streaming", "dead end")],
            id="failed-spike-still-teaches",
        ),
        pytest.param(rec(1, "T1", spike=True, learning=None), [], id="spike-without-learning"),
        pytest.param(rec(1, "T1", spike=True, learning="  "), [], id="blank-learning"),
        pytest.param(rec(1, "T1", learning="not a spike"), [], id="learning-needs-spike"),
    ],
)
def test_spike_learnings(record: CycleRecord, learned: list[ProbeLearning]) -> None:
    mem = m.record_cycle(Memory(), record)
    assert m.learnings(mem) == learned


def test_same_cycle_twice_changes_nothing() -> None:
    once = fold(rec(1, "T1", "reverted"), rec(2, "T1", "reverted"))
    assert m.record_cycle(once, rec(2, "T1", "reverted")) is once
    # A replay after a crash may carry a later timestamp: still the same cycle.
    assert m.record_cycle(once, rec(2, "T1", "reverted", at="2026-01-15T11:00:00Z")) is once
    assert once.consecutive_reverts["T1"] == 2


def test_a_different_outcome_for_a_recorded_cycle_is_refused() -> None:
    mem = fold(rec(1, "T1", "passed"))
    with pytest.raises(StateError, match="cycle 1 is already recorded as T1 passed"):
        m.record_cycle(mem, rec(1, "T1", "reverted"))
    with pytest.raises(StateError):
        m.record_cycle(mem, rec(1, "T2", "passed"))


def test_deepflow_era_revert_is_not_duplicated() -> None:
    legacy = Memory(revert_history=(Revert("T2", 4, "tests failed"),))
    mem = m.record_cycle(legacy, rec(4, "T2", "reverted"))
    assert mem.revert_history == (Revert("T2", 4, "tests failed"),)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (rec(0), "cycle numbers start at 1"),
        (rec(1, status="bogus"), "unknown cycle status"),
    ],
)
def test_invalid_records_are_bugs(bad: CycleRecord, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        m.record_cycle(Memory(), bad)


def test_reset_breaker_for_one_task() -> None:
    mem = Memory(consecutive_reverts={"T1": 3, "T2": 1})
    new, reset = m.reset_breaker(mem, "T2")
    assert reset == ["T2"]
    assert dict(new.consecutive_reverts) == {"T1": 3, "T2": 0}


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [(3, ["T1", "T3"]), (2, ["T1", "T2", "T3"]), (5, [])],
)
def test_reset_breaker_for_tripped_tasks(threshold: int, expected: list[str]) -> None:
    mem = Memory(consecutive_reverts={"T1": 3, "T2": 2, "T3": 4, "T4": 0})
    new, reset = m.reset_breaker(mem, None, threshold)
    assert reset == expected
    assert all(new.consecutive_reverts[t] == 0 for t in expected)
    if not expected:
        assert new is mem


@pytest.mark.parametrize("task", ["T4", "T9"])
def test_reset_breaker_with_nothing_to_reset(task: str) -> None:
    mem = Memory(consecutive_reverts={"T4": 0})
    assert m.reset_breaker(mem, task) == (mem, [])


@pytest.mark.parametrize(
    ("mem", "expected"),
    [
        (Memory(), 1),
        (fold(rec(1), rec(2), rec(7)), 8),
        # A deepflow-era file knows cycle numbers only from its results and history.
        (Memory(task_results={"T1": TaskResult("success", 3, commit="abc")}), 4),
        (Memory(revert_history=(Revert("T2", 5, "x"),)), 6),
        (Memory(task_results={"T1": TaskResult("success")}), 1),
        (Memory(halts=(m.Halt(9, "T1", 3, "x", AT),)), 10),
    ],
)
def test_next_cycle_number(mem: Memory, expected: int) -> None:
    assert m.next_cycle_number(mem) == expected


def test_failures_for_lists_one_task_oldest_first() -> None:
    mem = Memory(
        revert_history=(
            Revert("T2", 5, "build error"),
            Revert("T1", 2, "other"),
            Revert("T2", 4, "tests failed"),
        )
    )
    assert m.failures_for(mem, "T2") == [(4, "tests failed"), (5, "build error")]
    assert m.failures_for(mem, "T3") == []


def test_record_halt_is_idempotent() -> None:
    halt = m.Halt(7, "T3", 3, "2 tests regressed", AT)
    once = m.record_halt(Memory(), halt)
    assert once.halts == (halt,)
    assert m.record_halt(once, halt) is once


def test_latest_ratchet_record_skips_skipped_cycles() -> None:
    mem = fold(rec(2, "T1", "reverted"), rec(1, "T0"), rec(3, "T2", "skipped"))
    latest = m.latest_ratchet_record(mem)
    assert latest is not None
    assert latest.cycle == 2
    assert m.latest_ratchet_record(Memory()) is None


def test_memory_cannot_be_changed_behind_its_back() -> None:
    counters = {"T1": 1}
    mem = Memory(consecutive_reverts=counters, cycles=[rec(1)])
    counters["T1"] = 99
    assert mem.consecutive_reverts["T1"] == 1
    assert isinstance(mem.cycles, tuple)
    with pytest.raises(TypeError):
        mem.consecutive_reverts["T1"] = 5  # type: ignore[index]
    with pytest.raises(AttributeError):
        mem.cycles = ()  # type: ignore[misc]
    assert Memory(task_results={}) == Memory()


# -- properties ----------------------------------------------------------------------

outcomes = st.lists(
    st.tuples(st.sampled_from(["T1", "T2", "T3", BOOTSTRAP]), st.sampled_from(m.CYCLE_STATUSES)),
    max_size=25,
)


def _records(plan: list[tuple[str, str]]) -> list[CycleRecord]:
    return [rec(i, task, status) for i, (task, status) in enumerate(plan, start=1)]


@given(outcomes)
def test_recording_twice_equals_recording_once(plan: list[tuple[str, str]]) -> None:
    once = Memory()
    for r in _records(plan):
        once = m.record_cycle(once, r)
        assert m.record_cycle(once, r) == once
    # Replaying the whole history (crash recovery after the last save) is a no-op too.
    assert fold(*_records(plan), start=once) == once


@given(outcomes)
def test_counter_is_failures_since_last_pass(plan: list[tuple[str, str]]) -> None:
    mem = fold(*_records(plan))
    for task in {task for task, _ in plan}:
        # neither a skipped cycle nor a paused one (the harness stopped the agent) ran
        # the ratchet: neither moves the breaker
        statuses = [s for t, s in plan if t == task and s not in ("skipped", "paused")]
        trailing = 0
        for status in reversed(statuses):
            if status != "reverted":
                break
            trailing += 1
        assert mem.consecutive_reverts.get(task, 0) == trailing
        assert len(m.failures_for(mem, task)) == statuses.count("reverted")
    assert m.next_cycle_number(mem) == len(plan) + 1
    assert len(mem.cycles) == len(plan)


@given(outcomes)
def test_task_results_mirror_the_last_ratcheted_outcome(plan: list[tuple[str, str]]) -> None:
    mem = fold(*_records(plan))
    for task in {t for t, _ in plan if t != BOOTSTRAP}:
        last = [
            (i, s)
            for i, (t, s) in enumerate(plan, start=1)
            if t == task and s not in ("skipped", "paused")
        ]
        if not last:
            assert task not in mem.task_results
            continue
        cycle, status = last[-1]
        want = "success" if status == "passed" else "reverted"
        assert mem.task_results[task].status == want
        assert mem.task_results[task].cycle == cycle
    assert BOOTSTRAP not in mem.task_results


@given(outcomes)
def test_the_pause_is_the_paused_cycles_since_the_last_judged_one(
    plan: list[tuple[str, str]],
) -> None:
    mem = fold(*_records(plan))
    judged = [i for i, (_, s) in enumerate(plan) if s in ("passed", "reverted")]
    streak = [s for _, s in plan[(judged[-1] + 1 if judged else 0) :] if s == "paused"]
    if not streak:
        assert mem.pause is None
    else:
        assert mem.pause is not None
        assert mem.pause.attempts == len(streak)
        assert m.reset_breaker(mem, None)[0].pause is None


def test_replace_keeps_the_model_frozen() -> None:
    mem = Memory()._replace(consecutive_reverts={"T1": 2})
    with pytest.raises(TypeError):
        mem.consecutive_reverts["T1"] = 0  # type: ignore[index]


def test_a_pause_holds_through_its_wave_and_ends_with_the_next_verdict() -> None:
    paused = rec(1, "T1", "paused", wave=1, until="2030-01-01T00:00:00Z", harness="rate limit")
    same_wave = fold(paused, rec(2, "T2", "passed", wave=1), rec(3, "T3", "reverted", wave=1))
    assert same_wave.pause is not None
    assert (same_wave.pause.task, same_wave.pause.attempts) == ("T1", 1)
    assert fold(paused, rec(2, "T2", "passed", wave=1), rec(4, "T1", "passed")).pause is None
    assert fold(paused, rec(2, "T2", "passed", wave=2)).pause is None
    alone = rec(1, "T1", "paused", until="2030-01-01T00:00:00Z")
    assert fold(alone, rec(2, "T2", "passed")).pause is None  # no wave: as before
