"""What changed since a cycle its agent ended (gtd.auto.cycle.overtaken): the pure
reading the loop's `gtd cycle end --cycle N` halts on."""

from __future__ import annotations

from gtd.auto.cycle import overtaken
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord, Halt, Quarantine, Refresh
from gtd.auto.records import Record, Release, Reset

AT = "2026-12-06T12:00:00Z"
REC = CycleRecord(
    cycle=3, task="T2", title="Add div", status="reverted", commit=None, reason="tests failed",
    at=AT, tests_passed=7, tests_total=11, build_ok=None,
)  # fmt: skip
FINISHED = "cycle 3 (T2): reverted"


def changes(*after: object, subject: str = FINISHED, **more: object) -> list[str]:
    return overtaken.changes(
        REC,
        list(after),  # type: ignore[arg-type]
        subject,
        more.get("later"),  # type: ignore[arg-type]
        more.get("moved"),  # type: ignore[arg-type]
        more.get("dirty", []),  # type: ignore[arg-type]
    )


def test_nothing_since_the_cycles_own_end() -> None:
    assert overtaken.finish_subject(REC) == FINISHED
    assert changes() == []
    # the breaker's halt (or a forced one) is written with the cycle's own record
    assert changes(Halt(cycle=3, task="T2", failures=3, reason="tripped", at=AT)) == []


def test_each_later_record_is_named() -> None:
    said = changes(
        Quarantine(test="tests/test_a.py::test_x", cycle=0, at=AT, evidence="flaky", by="person"),
        Release(test="tests/test_a.py::test_y", at=AT),
        Refresh(commit="0123456789abcdef0123", at=AT, reason="a person's commit"),
        Reset(task=None, at=AT, threshold=3),
        Halt(cycle=4, task="T3", failures=0, reason="forced", at=AT, forced=True),
        REC._replace(cycle=4, task="T3", status="passed"),
        subject="cycle 4 (T3): passed",
    )
    assert said == [
        "tests/test_a.py::test_x was quarantined",
        "tests/test_a.py::test_y was released",
        "the baseline was taken again from 0123456789ab",
        "the circuit breaker was reset",
        "the loop was halted (forced)",
        "cycle 4 (T3) passed",
    ]


def test_a_state_write_with_no_record_is_named_by_its_commit() -> None:
    """`gtd ratchet snapshot` re-takes the baseline without a record."""
    assert changes(subject="snapshot") == ["the sealed state was written (snapshot)"]


def test_a_cycle_in_flight_the_branch_and_the_tree() -> None:
    later = Journal(
        cycle=4, task="T2", title="Add div", kind="task", spike=False, base="abc",
        branch="main", started_at=AT, started_epoch=0.0,
    )  # fmt: skip
    said = changes(
        subject="cycle 4 (T2): begin",
        later=later,
        moved=("a" * 40, "b" * 40),
        dirty=["x.py", "y.py", "z.py", "caf\udce9.txt"],
    )
    assert said == [
        "cycle 4 (T2) was begun",
        f"the branch moved to {'a' * 12} (the cycle left {'b' * 12})",
        "uncommitted changes: x.py, y.py, z.py and 1 more",
    ]
    reason = overtaken.reason(3, said)
    assert reason.startswith("cycle 3 was ended during its agent's turn")
    assert "`gtd cycle reset`" in reason


def test_the_cycles_record_is_its_last() -> None:
    rerun = REC._replace(status="passed")
    records: list[Record] = [REC, Reset(task=None, at=AT, threshold=3), rerun]
    assert overtaken.record_of(3, records) == (rerun, 2)
    assert overtaken.record_of(9, records) == (None, -1)
