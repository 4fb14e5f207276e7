"""The budget ceiling's pure core (gtd.auto.budget): the config section, the fold of
the night's spend, the expected cost of the next task, the decision, the events
sealed once, and what the report, the status and the notifier make of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gtd.auto import budget, notify, records, status
from gtd.auto.budget import BudgetEvent, Ceiling
from gtd.auto.config import load_auto_config
from gtd.auto.memory import CycleRecord
from gtd.auto.plan import parse
from gtd.auto.records import Record
from gtd.auto.usage import Usage
from gtd.errors import InputError

AT = "2026-01-15T10:00:00Z"
LATER = "2026-01-15T11:00:00Z"


def cycle(
    n: int, task: str, usd: float | None = 0.0, tokens: int = 0, *, measured: bool = True
) -> CycleRecord:
    used = Usage(input=tokens, usd=usd, models=("m",)) if measured else None
    return CycleRecord(
        cycle=n, task=task, title=f"Do {task}", status="passed", commit="abc1234", reason=None,
        at=AT, tests_passed=None, tests_total=None, build_ok=None, usage=used,
    )  # fmt: skip


# -- config -------------------------------------------------------------------------------


def write(tmp_path: Path, text: str) -> None:
    (tmp_path / ".deepflow").mkdir(exist_ok=True)
    (tmp_path / ".deepflow/config.yaml").write_text(text)


def test_the_config_reads_both_ceilings_and_the_share(tmp_path: Path) -> None:
    write(tmp_path, "budget:\n  usd: 12.5\n  tokens: 5_000_000\n  warn_at: 0.9\n")
    cfg = load_auto_config(tmp_path)
    assert budget.ceiling_of(cfg) == Ceiling(12.5, 5_000_000, 0.9)
    write(tmp_path, "budget:\n  tokens: 1000\n")
    assert budget.ceiling_of(load_auto_config(tmp_path)) == Ceiling(None, 1000, 0.8)


def test_no_ceiling_is_no_budget_even_with_a_share(tmp_path: Path) -> None:
    # The template states the default share beside null ceilings.
    write(tmp_path, "budget:\n  usd: null\n  tokens: null\n  warn_at: 0.8\n")
    assert budget.ceiling_of(load_auto_config(tmp_path)) is None


@pytest.mark.parametrize(
    ("text", "line", "fragment", "hint"),
    [
        ("budget:\n  usd: -1\n", 2, "budget.usd must be a number of US dollars > 0", None),
        ("budget:\n  usd: ten\n", 2, "budget.usd must be a number of US dollars", None),
        ("budget:\n  tokens: 5e6\n", 2, "budget.tokens must be an integer ≥ 1", "in full"),
        ("budget:\n  tokens: 0\n", 2, "budget.tokens must be an integer ≥ 1", None),
        ("budget:\n\n  warn_at: 80\n", 3, "budget.warn_at must be a share", "write 0.8 for 80 %"),
        ("budget:\n  warn_at: 0\n", 2, "budget.warn_at must be a share", None),
        ("budget:\n  dollars: 5\n", 2, "unknown key budget.dollars", "budget.usd"),
        ("budget: 5\n", 1, "budget must be a mapping of keys (usd, tokens, warn_at)", None),
    ],
)
def test_a_wrong_budget_names_the_file_the_line_and_the_fix(
    tmp_path: Path, text: str, line: int, fragment: str, hint: str | None
) -> None:
    write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        load_auto_config(tmp_path)
    err = caught.value
    assert err.path == ".deepflow/config.yaml"
    assert err.line == line
    assert fragment in err.message
    if hint is not None:
        assert err.hint is not None
        assert hint in err.hint


# -- the fold ------------------------------------------------------------------------------


def test_the_night_is_since_the_last_reset_and_each_cycle_counts_once() -> None:
    history: list[Record] = [
        cycle(1, "T1", 5.0, 100),
        BudgetEvent("reset", AT, usd=5.0, tokens=100),
        cycle(2, "T2", 0.5, 10),
        cycle(3, "T3", None, 20),
        cycle(4, "T3", measured=False),
        cycle(3, "T3", None, 20),  # a cycle recorded twice is counted once
    ]
    cycles, since = budget.night(history)
    assert [r.cycle for r in cycles] == [2, 4, 3]
    assert since == AT
    spent = budget.spend(cycles, since)
    assert (spent.usd, spent.tokens, spent.cycles) == (0.5, 30, 3)
    assert spent.unmeasured == (4,)
    assert spent.unpriced == (3,)
    assert spent.unpriced_models == ("m",)


def test_the_expected_cost_is_the_tasks_own_average_else_the_nights() -> None:
    history: list[Record] = [
        cycle(1, "T1", 1.0, 100),
        cycle(2, "T2", 3.0, 300),
        cycle(3, "T2", 5.0, 500),
        BudgetEvent("reset", AT),
        cycle(4, "T3", 0.25, 40),
        cycle(5, "T4", 0.75, 60),
    ]
    cycles, _ = budget.night(history)
    # T2's own earlier cycles, though they were before the reset
    assert budget.expected(history, cycles, "T2") == budget.Expected(4.0, 400, "task", "task")
    # T5 has no history: the night's average per cycle (not the earlier nights')
    assert budget.expected(history, cycles, "T5") == budget.Expected(0.5, 50, "night", "night")
    # a task whose cycles measured nothing falls back per kind
    unmeasured: list[Record] = [*history, cycle(6, "T6", measured=False)]
    got = budget.expected(unmeasured, budget.night(unmeasured)[0], "T6")
    assert (got.usd_basis, got.tokens_basis) == ("night", "night")
    # nothing known at all: no expectation, the task starts
    assert budget.expected([], [], "T1") == budget.Expected()


# -- the decision --------------------------------------------------------------------------


def test_a_budget_below_two_tasks_cost_halts_before_the_third() -> None:
    ceiling = Ceiling(usd=1.0)
    first = budget.decide([], ceiling, "T1")
    assert (first.halt, first.warn) == (None, False)  # no history: start it
    one: list[Record] = [cycle(1, "T1", 0.1)]
    second = budget.decide(one, ceiling, "T2")
    assert second.halt is None  # 0.10 spent + 0.10 expected
    two: list[Record] = [*one, cycle(2, "T2", 1.0)]
    third = budget.decide(two, ceiling, "T3")
    assert third.halt == "usd"
    assert third.warn
    assert third.message == (
        "Budget ceiling reached: spent $1.10 of $1.00 (110 %) since setup; T3 not started"
    )
    assert budget.how(third) == (
        "raise budget.usd in .deepflow/config.yaml and commit it, or run "
        "`gtd cycle reset --budget` to start a new night"
    )


def test_a_task_expected_to_cross_the_ceiling_does_not_start() -> None:
    history: list[Record] = [cycle(1, "T1", 0.6, 1000)]
    got = budget.decide(history, Ceiling(usd=1.0), "T2")
    assert got.halt == "usd"
    assert not got.warn  # 60 % spent: under the warning share
    assert got.message == (
        "Budget ceiling would be crossed: spent $0.60 of $1.00 (60 %) since setup, and T2 "
        "is expected to cost $0.60 more (the night's average per cycle); T2 not started"
    )
    # the same with tokens, from the task's own history
    tried: list[Record] = [cycle(1, "T1", 0.01, 300), cycle(2, "T2", 0.01, 500)]
    got = budget.decide(tried, Ceiling(tokens=1200), "T2")
    assert got.halt == "tokens"
    assert "T2 is expected to cost 500 tokens more (its own earlier cycles)" in got.message
    assert budget.key(got) == "budget.tokens"


def test_exactly_at_the_ceiling_is_halted_and_exactly_fitting_starts() -> None:
    ceiling = Ceiling(usd=1.0)
    # 0.1 + 0.2 + ... floating-point sums land a hair off the ceiling
    fits: list[Record] = [cycle(1, "T1", 0.1), cycle(2, "T2", 0.2), cycle(3, "T3", 0.2)]
    assert budget.decide(fits, ceiling, "T4").halt is None  # 0.5 + 0.5 fits
    full: list[Record] = [*fits, cycle(4, "T4", 0.5)]
    assert budget.decide(full, ceiling, "T5").halt == "usd"


def test_the_warning_share() -> None:
    history: list[Record] = [cycle(n, f"T{n}", 0.1, 100) for n in range(1, 9)]
    assert not budget.decide(history, Ceiling(usd=1.01, warn_at=0.8), "T9").warn
    warned = budget.decide(history, Ceiling(usd=1.0, warn_at=0.8), "T9")
    assert warned.warn
    assert warned.halt is None
    assert warned.message == (
        "Budget warning: spent $0.80 of $1.00 (80 %) since setup (warns at 80 %)"
    )
    assert budget.decide(history, Ceiling(tokens=1600, warn_at=0.5), "T9").warn


def test_an_unknown_price_halts_a_night_whose_only_ceiling_is_dollars() -> None:
    history: list[Record] = [cycle(1, "T1", 0.1, 10), cycle(2, "T2", None, 50)]
    got = budget.decide(history, Ceiling(usd=100.0), "T3")
    assert got.halt == "unpriced"
    assert got.message.startswith(
        "Budget ceiling cannot be kept: cycle 2 used tokens of a model with no price (m)"
    )
    assert "set budget.tokens as well" in budget.how(got)
    # a token ceiling keeps the night bounded: it goes on, the dollars shown as a floor
    both = budget.decide(history, Ceiling(usd=100.0, tokens=10_000), "T3")
    assert both.halt is None
    assert budget.spent_line(both.spent, both.ceiling) == (
        "$0.10 or more of $100.00 (0 %) and 60 of 10,000 tokens (1 %)"
    )


def test_a_cycle_without_usage_counts_nothing_and_is_said() -> None:
    history: list[Record] = [cycle(1, "T1", measured=False), cycle(2, "T2", 0.2, 5)]
    got = budget.decide(history, Ceiling(usd=1.0), "T3")
    assert got.halt is None
    assert got.spent.usd == 0.2
    lines = budget.report_lines(got)
    assert lines[-1].endswith("Not counted: cycle 1 recorded no usage (counted as nothing).")


# -- events, sealed once ------------------------------------------------------------------


def test_each_event_is_due_once_per_night_and_ceiling() -> None:
    ceiling = Ceiling(usd=1.0)
    history: list[Record] = [cycle(1, "T1", 0.5), cycle(2, "T2", 0.6)]
    decision = budget.decide(history, ceiling, "T3")
    due = budget.due(history, decision, LATER)
    assert [e.event for e in due] == ["warning", "halt"]
    assert (
        due[0].message == "Budget warning: spent $1.10 of $1.00 (110 %) since setup (warns at 80 %)"
    )
    halt = due[1]
    assert (halt.task, halt.usd, halt.ceiling_usd, halt.at) == ("T3", 1.1, 1.0, LATER)
    assert halt.message is not None
    assert "To go on: raise budget.usd" in halt.message
    told = [*history, *due]
    assert budget.due(told, budget.decide(told, ceiling, "T3"), LATER) == []
    # a raised ceiling crossed again is news again
    raised = Ceiling(usd=2.0)
    more: list[Record] = [*told, cycle(3, "T3", 1.0)]
    assert [e.event for e in budget.due(more, budget.decide(more, raised, "T4"), LATER)] == [
        "warning",
        "halt",
    ]
    # a reset begins a night with nothing told
    reset = budget.reset(told, LATER)
    assert reset == BudgetEvent("reset", LATER, usd=1.1, tokens=0)
    after: list[Record] = [*told, reset, cycle(3, "T3", 0.9)]
    assert [e.event for e in budget.due(after, budget.decide(after, ceiling, "T4"), LATER)] == [
        "warning",
        "halt",
    ]
    # nothing spent since the night began: nothing to reset
    assert budget.reset([*told, reset], LATER) is None


def test_budget_records_round_trip_and_a_bad_event_is_refused() -> None:
    history: list[Record] = [
        cycle(1, "T1", 0.5, 10),
        BudgetEvent("warning", AT, usd=0.5, tokens=10, ceiling_usd=0.6, message="Budget warning"),
        BudgetEvent("halt", AT, usd=0.5, ceiling_usd=0.6, task="T2", message="halted"),
        BudgetEvent("reset", AT, usd=0.5, tokens=10),
    ]
    text = "\n".join(records.encode(r) for r in history)
    assert records.decode(text) == history
    assert records.fold(history) == records.fold(history[:1])  # memory does not change
    with pytest.raises(records.RecordError, match="line 1: unknown budget event 'raise'"):
        records.decode('{"kind": "budget", "event": "raise", "at": "x"}')


def test_the_notifier_hears_warnings_and_halts_never_resets() -> None:
    history: list[Record] = [
        cycle(1, "T1", 0.9),
        BudgetEvent("warning", AT, message="Budget warning: spent $0.90 of $1.00"),
        BudgetEvent("halt", AT, task="T2", message="Budget ceiling reached: ... To go on: x"),
        BudgetEvent("reset", LATER),
    ]
    got = notify.events(history)
    assert [(e.id, e.kind, e.task) for e in got] == [
        ("budget-warning:1", "budget-warning", None),
        ("budget-halt:2", "budget-halt", "T2"),
    ]
    assert got[1].message == "Budget ceiling reached: ... To go on: x"


# -- the glances -----------------------------------------------------------------------------

PLAN = parse(
    "# P\n\n- [x] **T1**: one ✓ (abc1234)\n- [x] **T2**: two ✓ (abc1235)\n- [ ] **T3**: three\n"
)


def test_status_and_report_say_halted_where_begin_would() -> None:
    from gtd.auto import report
    from gtd.auto.memory import Memory

    history: list[Record] = [cycle(1, "T1", 0.1), cycle(2, "T2", 1.0)]
    decision = budget.for_next(history, Ceiling(usd=1.0), PLAN)
    assert decision is not None
    assert decision.task == "T3"
    assert decision.halt == "usd"
    got = status.status(None, history, PLAN, 3, 0.0, budget=decision)
    assert got["state"] == "halted"
    assert got["detail"] == decision.message
    assert got["budget"]["usd"] == 1.1
    assert got["budget"]["ceiling_usd"] == 1.0
    assert "budget $1.10 of $1.00 (110 %)" in got["line"]
    mem = records.fold(history)
    text = report.render("t", mem, AT, plan=PLAN, budget=decision)
    state = text.split("## State", 1)[1].split("## Summary", 1)[0]
    assert f"**Halted** — {decision.message}." in state
    assert "Raise budget.usd in .deepflow/config.yaml and commit it" in state
    assert "Budget: spent $1.10 of $1.00 (110 %) since setup; warns at 80 %." in state
    # what happened in the night, in the Events table
    told: list[Record] = [
        *history,
        BudgetEvent("warning", AT, message="Budget warning: spent $0.90 of $1.00"),
        BudgetEvent("halt", LATER, message="Budget ceiling reached: x. To go on: y"),
        BudgetEvent("reset", LATER, usd=1.1, tokens=2000),
    ]
    again = budget.for_next(told, Ceiling(usd=1.0), PLAN)
    events = report.render("t", mem, AT, plan=PLAN, budget=again).split("## Events")[1]
    assert f"| {AT} | Budget warning: spent $0.90 of $1.00 |" in events
    assert f"| {LATER} | Budget ceiling reached: x |" in events
    assert f"| {LATER} | Budget reset: $1.10 and 2,000 tokens spent before it |" in events
    # no ceiling: nothing said, nothing halted
    assert budget.for_next(history, None, PLAN) is None
    assert "Budget" not in report.render("t", Memory(), AT, plan=PLAN).split("## Summary")[0]


# -- properties ------------------------------------------------------------------------------

_usd = st.one_of(st.none(), st.floats(0, 50, allow_nan=False).map(lambda x: round(x, 4)))
_cycles = st.lists(
    st.tuples(st.sampled_from(["T1", "T2", "T3"]), _usd, st.integers(0, 10_000), st.booleans()),
    max_size=12,
)


def _history(spec: list[tuple[str, float | None, int, bool]]) -> list[Record]:
    return [cycle(n, task, usd, tok, measured=m) for n, (task, usd, tok, m) in enumerate(spec, 1)]


@given(_cycles, st.floats(0.01, 100), st.integers(1, 100_000), st.sampled_from(["T1", "T4"]))
def test_a_started_task_fits_or_has_no_history(
    spec: list[tuple[str, float | None, int, bool]], limit: float, tokens: int, task: str
) -> None:
    """Whenever the decision starts a task, the spend plus its expected cost is
    within every ceiling (a dollar ceiling alone also needs every cost known)."""
    history = _history(spec)
    for ceiling in (Ceiling(usd=limit), Ceiling(tokens=tokens), Ceiling(limit, tokens)):
        got = budget.decide(history, ceiling, task)
        if got.halt is not None:
            continue
        if ceiling.usd is not None:
            assert got.spent.usd + (got.expected.usd or 0.0) <= ceiling.usd + 1e-9
            if ceiling.tokens is None:
                assert not got.spent.unpriced
        if ceiling.tokens is not None:
            assert got.spent.tokens + (got.expected.tokens or 0) <= ceiling.tokens


@given(_cycles, st.floats(0.01, 100), st.floats(0, 100))
def test_raising_the_ceiling_never_halts_what_a_lower_one_started(
    spec: list[tuple[str, float | None, int, bool]], limit: float, more: float
) -> None:
    history = _history(spec)
    low = budget.decide(history, Ceiling(usd=limit, tokens=10**9), "T2")
    high = budget.decide(history, Ceiling(usd=limit + more, tokens=10**9), "T2")
    assert low.halt is not None or high.halt is None


@given(_cycles, _cycles)
def test_the_spend_only_grows_and_never_counts_a_record_twice(
    before: list[tuple[str, float | None, int, bool]],
    after: list[tuple[str, float | None, int, bool]],
) -> None:
    history = _history(before)
    longer = _history(before + after)
    small = budget.spend(budget.night(history)[0])
    big = budget.spend(budget.night(longer)[0])
    assert big.usd >= small.usd - 1e-9
    assert big.tokens >= small.tokens
    # records sealed again (a retried write) change nothing
    again = budget.spend(budget.night(longer + longer)[0])
    assert (again.usd, again.tokens, again.cycles) == (big.usd, big.tokens, big.cycles)
