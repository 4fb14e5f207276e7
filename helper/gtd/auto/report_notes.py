"""Parts of the morning report that say what a person would otherwise have to dig
for: a title that names the work, the tests already failing when the loop began
(tolerated, and which), and what each cycle learned.

Pure: values in, markdown lines out. gtd.auto.report places them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gtd.auto.memory import CycleRecord
from gtd.auto.shorten import shorten

# A PLAN.md heading that names no work: "Auto Mode Report — Plan" tells a person
# nothing, so the project's folder name stands in for it.
_GENERIC = frozenset(
    {
        "plan",
        "plan.md",
        "the plan",
        "tasks",
        "task list",
        "todo",
        "to do",
        "implementation plan",
        "project plan",
        "work plan",
        "backlog",
    }
)
SHOWN_FAILING = 5  # failing baseline tests named in the State (the rest counted)
_MAX_LEARNING = 400  # characters of one learning in the report


def title(plan_title: str | None, spec: str | None, project: str) -> str:
    """The report's title: PLAN.md's own heading when it names the work, else the
    first spec the plan names, else the project's folder name."""
    for candidate in (plan_title, spec):
        text = " ".join((candidate or "").split())
        if text and text.strip("#:- ").lower() not in _GENERIC:
            return text
    return project


def failing_at_baseline(summary: Mapping[str, object] | None) -> tuple[int, list[str]]:
    """(how many tests failed at the baseline, the first few of them) from the
    sealed summary (gtd.auto.baseline.summary); (0, []) when it has none."""
    found = (summary or {}).get("baseline_failing")
    if not isinstance(found, Mapping):
        return 0, []
    count, first = found.get("count"), found.get("first")
    if not isinstance(count, int) or not isinstance(first, list):
        return 0, []
    return count, [t for t in first if isinstance(t, str)]


def failing_line(count: int, first: Sequence[str]) -> str:
    """``2 tests already failed at the baseline and are tolerated (a cycle is not
    reverted for them): tests/a.py::test_x, tests/b.py::test_y.``"""
    if not count:
        return ""
    shown = ", ".join(shorten(t, 120) for t in first[:SHOWN_FAILING])
    more = count - min(len(first), SHOWN_FAILING)
    if more > 0:
        shown += f" and {more} more"
    if count == 1:
        return (
            "1 test already failed at the baseline and is tolerated (no cycle is "
            f"reverted for it while it keeps failing): {shown}."
        )
    return (
        f"{count} tests already failed at the baseline and are tolerated (no cycle is "
        f"reverted for them while they keep failing): {shown}."
    )


def learnings(cycles: Sequence[CycleRecord], named: Mapping[str, str]) -> list[str]:
    """One bullet per cycle that recorded a learning (`gtd cycle end --learning`),
    oldest first; ``named``: task id → ``T2: Add div`` for the line's head. A
    spike's learning is its Probe Results row's note already: not repeated."""
    lines: list[str] = []
    for rec in cycles:
        text = " ".join((rec.learning or "").split())
        if not text or rec.spike:
            continue
        what = named.get(rec.task, rec.task)
        lines.append(f"- Cycle {rec.cycle} ({what}, {rec.status}): {shorten(text, _MAX_LEARNING)}")
    return lines
