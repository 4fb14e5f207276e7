"""The report's cost parts (gtd.auto.report_cost, rendered by gtd.auto.report):
the Cycle Log's columns, the Summary's rows, the chart, and how a subscription's
cost and an unknown one are said."""

from __future__ import annotations

from gtd.auto import report
from gtd.auto.memory import CycleRecord, Memory
from gtd.auto.memory_schema import task_cost_fields
from gtd.auto.report_cost import chart, per_task, summary_rows
from gtd.auto.usage import Usage

NOW = "2026-01-15T12:00:00Z"
OPUS = ("claude-opus-5-5",)


def cycle(
    n: int, task: str, status: str, used: Usage | None, tick: Usage | None = None
) -> CycleRecord:
    return CycleRecord(
        cycle=n, task=task, title=f"Task {task}", status=status,  # type: ignore[arg-type]
        commit="abc1234" if status == "passed" else None,
        reason=None if status == "passed" else "tests failed: 1 of 3",
        at=f"2026-01-15T1{n}:00:00Z", tests_passed=3, tests_total=3, build_ok=True,
        usage=used, usage_tick=tick,
    )  # fmt: skip


def night() -> list[CycleRecord]:
    return [
        cycle(1, "T1", "reverted", Usage(1000, 100, 0, 0, 0.25, OPUS), Usage(100, 10, usd=0.05)),
        cycle(2, "T1", "passed", Usage(2000, 200, 0, 0, 0.5, OPUS), Usage(100, 10, usd=0.05)),
        cycle(3, "T2", "passed", Usage(3000, 300, 10, 20, 1.25, OPUS), Usage(100, 10, usd=0.1)),
    ]


def test_the_summary_says_the_nights_cost() -> None:
    rows = dict(summary_rows(night(), "api"))
    assert rows["Total cost"] == "$2.00 for 6,630 tokens"
    assert rows["Cost per committed task"] == "$1.00 (2 tasks, all cycles)"  # (0.75 + 1.25) / 2
    assert rows["Cost of reverted work"] == "$0.2500 (12%)"
    assert rows["Tick overhead vs agent work"] == "$0.2000 (10%) vs $1.80 (90%)"


def test_a_subscription_sees_the_api_equivalent_cost() -> None:
    text = report.render("night", Memory(cycles=night()), NOW, billing="subscription")
    assert "| Total cost (API-equivalent) | $2.00 for 6,630 tokens |" in text
    assert "| Tokens | Cost (API-equivalent) |" in text
    assert "title Cost (API-equivalent) per task (USD)" in text


def test_the_cycle_log_has_tokens_and_cost_columns() -> None:
    text = report.render("night", Memory(cycles=night()), NOW)
    row = next(line for line in text.splitlines() if line.startswith("| 3 | T2 |"))
    assert row.endswith("| 3,330 | $1.25 |"), row


def test_unknown_tokens_and_unknown_prices_are_said_plainly() -> None:
    none = [cycle(1, "T1", "passed", None)]
    assert summary_rows(none, "api") == [
        ("Tokens", "unknown: the harness reported none (docs/cost.md)")
    ]
    text = report.render("night", Memory(cycles=none), NOW)
    assert "| Tokens | Cost |" not in text  # no columns of dashes
    mixed = [
        cycle(1, "T1", "passed", Usage(10, 1, usd=None, models=("local-llm",))),
        cycle(2, "T2", "passed", None),
    ]
    rows = dict(summary_rows(mixed, "api"))
    assert rows["Total cost"] == (
        "unknown for 11 tokens (1 of 2 cycles reported none) (no price for local-llm)"
    )
    assert chart(mixed, "api") == []


def test_the_chart_and_the_memory_keep_per_task_totals() -> None:
    lines = chart(night(), "api")
    assert '  "T2" : 1.2500' in lines
    assert '  "T1" : 0.7500' in lines
    assert per_task(night())["T1"].tokens == 3300
    fields = dict(task_cost_fields(Memory(cycles=night()))["T1"])
    assert (fields["cycles"], fields["tokens"], fields["usd"]) == (2, 3300, 0.75)
