"""The sealed history: one JSON line per event, and the fold into Memory."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gtd.auto import breaker, records
from gtd.auto.memory import CycleRecord, Halt, Quarantine, Refresh
from gtd.auto.records import RecordError, Release, Reset
from gtd.auto.usage import Usage

AT = "2026-11-30T10:00:00Z"


def cycle(n: int, task: str = "T1", status: str = "reverted", **extra: object) -> CycleRecord:
    return CycleRecord(
        cycle=n, task=task, title="t", status=status,  # type: ignore[arg-type]
        commit="abc1234" if status == "passed" else None,
        reason=None if status == "passed" else "tests failed: 1 of 2 (t::a)",
        at=AT, tests_passed=1, tests_total=2, build_ok=None, **extra,  # type: ignore[arg-type]
    )  # fmt: skip


EVENTS: list[records.Record] = [
    cycle(1),
    cycle(2, flaky=("t::b",), kept="refs/gtd/reverted/cycle-2", agent_exit=3, agent_tail="oops"),
    Halt(cycle=2, task="T1", failures=2, reason="r", at=AT),
    Reset("T1", AT, 3),
    cycle(3, status="passed", duration_s=1.5, usage=Usage(10, 20, 30, 40, 0.25, ("m",))),
    Refresh("abc1234", AT, "snapshot refreshed after abc1234 by a person"),
    Quarantine("t::b", 2, AT, "failed, then passed on a re-run"),
    Release("t::b", AT),
    Halt(cycle=3, task="T2", failures=0, reason="helper state modified: x", at=AT, forced=True),
]


def test_every_event_round_trips_as_one_line() -> None:
    lines = [records.encode(e) for e in EVENTS]
    assert all("\n" not in line for line in lines)
    assert records.decode("\n".join(lines) + "\n") == EVENTS


def test_defaults_are_left_out_of_the_line() -> None:
    line = records.encode(cycle(1))
    assert '"flaky"' not in line
    assert '"spike"' not in line
    assert line.startswith('{"kind": "cycle"')


def test_the_fold_is_what_the_breaker_and_the_report_read() -> None:
    mem = records.fold(EVENTS)
    assert mem.consecutive_reverts == {"T1": 0}  # the reset, then a pass
    assert [r.cycle for r in mem.revert_history] == [1, 2]
    assert mem.quarantined == {}  # quarantined, then released
    assert mem.refreshes[0].commit == "abc1234"
    assert mem.stop is not None
    assert mem.stop.task == "T2"
    trip = breaker.check(mem, 3, ["T2"])
    assert trip is not None
    assert trip.message == "Loop halted at T2: helper state modified: x"


def test_a_reset_clears_a_forced_halt() -> None:
    mem = records.fold([*EVENTS, Reset(None, AT, 3)])
    assert mem.stop is None
    assert breaker.check(mem, 3, ["T1", "T2"]) is None


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("not json", "not JSON"),
        ("[1]", "not a JSON object"),
        ('{"kind": "party"}', "unknown kind 'party'"),
        ('{"kind": "reset", "task": null, "at": "x", "threshold": 3, "extra": 1}',
         "unknown field extra"),
        ('{"kind": "reset", "task": null, "at": "x", "threshold": 3, "a": 1, "b": 2}',
         "unknown fields a, b"),
        ('{"kind": "release", "test": "t"}', "release lacks at"),
        ('{"kind": "cycle", "cycle": 1, "task": "T1", "title": "", "status": "won", '
         '"commit": null, "reason": null, "at": "x", "tests_passed": null, '
         '"tests_total": null, "build_ok": null}', "unknown cycle status"),
    ],
)  # fmt: skip
def test_a_damaged_line_is_an_error_naming_its_number(line: str, fragment: str) -> None:
    good = records.encode(cycle(1))
    with pytest.raises(RecordError) as info:
        records.decode(f"{good}\n{line}\n")
    assert info.value.line == 2
    assert fragment in str(info.value)


@given(st.lists(st.sampled_from(["passed", "reverted"]), max_size=12), st.integers(1, 5))
def test_consecutive_reverts_count_failures_since_the_last_pass(
    outcomes: list[str], threshold: int
) -> None:
    history = [cycle(i + 1, status=o) for i, o in enumerate(outcomes)]
    mem = records.fold(history)
    tail = 0
    for outcome in outcomes:
        tail = tail + 1 if outcome == "reverted" else 0
    assert mem.consecutive_reverts.get("T1", 0) == tail
    tripped = breaker.check(mem, threshold, ["T1"]) is not None
    assert tripped == (tail >= threshold)


def test_a_sealed_record_an_older_gtd_wrote_as_failed_reads_as_reverted() -> None:
    line = (
        '{"kind": "cycle", "cycle": 3, "task": "T2", "title": "t", "status": "failed", '
        '"commit": null, "reason": "r", "at": "' + AT + '", "tests_passed": null, '
        '"tests_total": null, "build_ok": null}'
    )
    (rec,) = records.decode(line)
    assert isinstance(rec, CycleRecord)
    assert rec.status == "reverted"
    assert records.fold([rec]).consecutive_reverts == {"T2": 1}
    with pytest.raises(RecordError, match="unknown cycle status 'broken'"):
        records.decode(line.replace('"failed"', '"broken"'))


def test_a_usage_that_is_not_counts_names_its_line_and_field() -> None:
    good = records.encode(cycle(1, usage=Usage(1, 2, 3, 4, None, ("m",))))
    assert records.decode(good)[0].usage == Usage(1, 2, 3, 4, None, ("m",))  # type: ignore[union-attr]
    bad = good.replace('"input": 1', '"input": -1')
    with pytest.raises(RecordError, match=r"line 2: usage.input is not a count"):
        records.decode(good + "\n" + bad)
