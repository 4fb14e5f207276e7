"""Events derived from the sealed records (gtd.auto.notify) and the glance
(gtd.auto.status): values in, values out."""

from __future__ import annotations

from gtd.auto import notify, status
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord, Halt, Refresh
from gtd.auto.plan import parse
from gtd.auto.records import Record

AT = "2026-01-15T10:00:00Z"


def cycle(n: int, task: str, state: str, reason: str | None = None) -> CycleRecord:
    return CycleRecord(
        cycle=n, task=task, title=f"Do {task}", status=state,  # type: ignore[arg-type]
        commit="abc1234" if state == "passed" else None, reason=reason, at=AT,
        tests_passed=None, tests_total=None, build_ok=None,
    )  # fmt: skip


def test_a_revert_is_no_event_and_a_breaker_trip_and_a_forced_halt_are() -> None:
    history: list[Record] = [
        cycle(1, "T1", "reverted", "tests failed: 1 of 2"),
        cycle(2, "T1", "reverted", "tests failed: 1 of 2"),
        Halt(cycle=2, task="T1", failures=2, reason="tests failed: 1 of 2", at=AT),
        Refresh(commit="abc", at=AT, reason="a person's commit"),
        Halt(cycle=3, task="T2", failures=0, reason="helper state modified", at=AT, forced=True),
    ]
    got = notify.events(history)
    assert [(e.id, e.kind, e.task, e.cycle) for e in got] == [
        ("breaker:2", "breaker", "T1", 2),
        ("halted:4", "halted", "T2", 3),
    ]
    assert got[0].message == (
        "Circuit breaker tripped: T1 failed 2 consecutive times. Reason: tests failed: 1 of 2"
    )
    # Ids name records, so a longer history keeps the old ids (delivered once).
    longer = notify.events([*history, cycle(4, "T2", "passed")])
    assert [e.id for e in longer] == ["breaker:2", "halted:4"]


def test_a_pause_and_the_first_cycle_after_it_are_paused_and_resumed() -> None:
    history: list[Record] = [
        cycle(1, "T1", "passed"),
        cycle(2, "T2", "paused", "usage limit reached, resets 03:10"),
        cycle(3, "T2", "paused", "usage limit reached, resets 03:10"),
        cycle(4, "T2", "reverted", "tests failed: 1 of 3"),
        cycle(5, "T2", "passed"),
    ]
    got = notify.events(history)
    assert [(e.id, e.kind) for e in got] == [
        ("paused:1", "paused"),
        ("paused:2", "paused"),
        ("resumed:3", "resumed"),
    ]
    assert got[0].reason == "usage limit reached, resets 03:10"


def test_completion_is_one_event_per_point_in_the_history() -> None:
    history: list[Record] = [cycle(1, "T1", "passed")]
    first = notify.complete(history, "passed", 1, AT)
    assert first.id == "complete:1"
    assert first.as_json()["verdict"] == "passed"
    assert notify.complete(history, "failed", 1, AT).id == first.id
    assert notify.complete([*history, cycle(2, "T2", "passed")], "passed", 2, AT).id != first.id


PLAN = """\
# Calc

- [x] **T1**: Add mul ✓ (abc1234)
  - Blocked by: none
- [ ] **T2**: Add div
  - Blocked by: T1
- [ ] **T3**: Add pow
  - Blocked by: T2
"""


def journal(**kw: object) -> Journal:
    fields: dict[str, object] = {
        "cycle": 5, "task": "T2", "title": "Add div", "kind": "task", "spike": False,
        "base": "0" * 40, "branch": "main", "started_at": AT, "started_epoch": 1000.0,
    }  # fmt: skip
    fields.update(kw)
    return Journal(**fields)  # type: ignore[arg-type]


def test_the_glance_says_what_runs_how_far_and_the_last_verdict() -> None:
    plan = parse(PLAN)
    history = [cycle(4, "T1", "reverted", "tests failed: 1 of 24")]
    got = status.status(journal(), history, plan, 3, 1000.0 + 6 * 60 + 5)
    assert got["line"] == (
        "running: the agent on T2 (Add div) for 6 min · 1 of 3 tasks done · cost unknown"
        " · last: cycle 4 T1 reverted (tests failed: 1 of 24)"
    )
    assert (got["state"], got["done"], got["left"], got["cost"]) == ("running", 1, 2, None)
    checking = status.status(journal(phase="checking", pid=1), history, plan, 3, 0)
    assert checking["detail"] == "the tests of T2 (Add div) (cycle 5)"


def test_the_glance_says_the_cost_so_far_as_sealed() -> None:
    from gtd.auto.usage import Usage

    plan = parse(PLAN)
    history = [
        cycle(1, "T1", "passed")._replace(usage=Usage(1000, 200, 0, 50_000, 0.25, ("m",))),
        cycle(2, "T2", "reverted", "tests failed")._replace(usage=Usage(300, 10, usd=0.01)),
    ]
    got = status.status(None, history, plan, 3, 0)
    assert got["cost"] == {"usd": 0.26, "tokens": 51_510, "api_equivalent": False}
    assert " · cost $0.26 (51,510 tokens) · " in got["line"]
    sub = status.status(None, history, plan, 3, 0, billing="subscription")
    assert " · cost (API-equivalent) $0.26 (51,510 tokens) · " in sub["line"]
    unpriced = [cycle(1, "T1", "passed")._replace(usage=Usage(5, usd=None, models=("x",)))]
    assert " · cost unknown (5 tokens) · " in status.status(None, unpriced, plan, 3, 0)["line"]


def test_the_glance_halted_complete_blocked_and_idle_as_begin_decides() -> None:
    plan = parse(PLAN)
    reverts = [cycle(n, "T2", "reverted", "tests failed: 1 of 3") for n in (1, 2)]
    halted = status.status(None, reverts, plan, 2, 0)
    assert halted["state"] == "halted"
    assert halted["detail"].startswith("Circuit breaker tripped: T2 failed 2 consecutive times")
    # The same reverts under a higher threshold: not halted, the next task named.
    idle = status.status(None, reverts, plan, 3, 0)
    assert (idle["state"], idle["detail"]) == ("idle", "next: T2 (Add div)")
    done = parse(PLAN.replace("[ ] **T2**: Add div", "[x] **T2**: Add div ✓ (abc1235)")
                 .replace("[ ] **T3**: Add pow", "[x] **T3**: Add pow ✓ (abc1236)"))  # fmt: skip
    complete = status.status(None, [], done, 3, 0)
    assert (complete["state"], complete["detail"]) == ("complete", "all 3 tasks done")
    stuck = parse(PLAN.replace("Blocked by: T1", "Blocked by: T3"))
    blocked = status.status(None, [], stuck, 3, 0)
    assert blocked["state"] == "blocked"
    assert "T2 on T3" in blocked["detail"]
    told = status.status(None, [], plan, 3, 0, "breaker (x): notifier exited 1")
    assert told["line"].endswith("· notifier failed: breaker (x): notifier exited 1")


def test_the_glance_says_paused_until_the_next_cycle() -> None:
    plan = parse(PLAN)
    paused = [cycle(6, "T2", "paused", "usage limit reached, resets 03:10")]
    got = status.status(None, paused, plan, 3, 0)
    assert (got["state"], got["detail"]) == ("paused", "usage limit reached, resets 03:10")
    assert got["last"] == "cycle 6 T2 paused (usage limit reached, resets 03:10)"


def test_the_glance_counts_one_task_in_the_singular() -> None:
    one = parse("# Plan\n\n- [ ] **T1**: Add mul\n  - Files: calc.py\n")
    got = status.status(None, [], one, 3, 0)
    assert "0 of 1 task done" in got["line"], got["line"]
    assert "1 tasks" not in got["line"]
    done = parse("# Plan\n\n- [x] **T1**: Add mul ✓ (abc1234)\n  - Files: calc.py\n")
    assert status.status(None, [], done, 3, 0)["detail"] == "its one task done"
