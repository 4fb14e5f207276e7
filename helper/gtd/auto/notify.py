"""What a person is told about: the events of auto mode, derived from the sealed
records (gtd.auto.records), never from prose a report or an answer printed.

Pure. Each event has an id made of its kind and the index of the record it comes
from (the records are append-only, so an index names the same record for ever):
the notifier (gtd.auto.notifier) delivers each id once, whoever asks and however
often. A new kind of event is one entry in ``_DERIVED``:
a function from (index, record, the cycle record before it) to an event or None.

Kinds: ``breaker`` (a task reverted too many times in a row), ``halted`` (a
forced halt: tampering, the environment changed, a commit git refused),
``paused`` and ``resumed`` (the harness stopped the agent, and the first cycle
after), ``budget-warning`` and ``budget-halt`` (the night's spend crossed the
warning share; a task was not started for the ceiling: gtd.auto.budget),
``complete`` (no task left, with `gtd verify`'s verdict; not a record, its id is
the number of records it follows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gtd.auto.budget import BudgetEvent
from gtd.auto.memory import CycleRecord, Halt
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Any

    from gtd.auto.records import Record

KINDS = ("breaker", "halted", "paused", "resumed", "budget-warning", "budget-halt", "complete")


class Event(NamedTuple):
    id: str  # kind:index, unique over the repository's history
    kind: str
    at: str  # ISO-8601 UTC, the record's own time
    message: str  # one line, for a person
    cycle: int | None = None
    task: str | None = None
    title: str | None = None
    reason: str | None = None
    verdict: str | None = None  # `complete`: gtd verify's verdict

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in self._asdict().items() if v is not None}


def _halt(index: int, rec: Record, _last: CycleRecord | None) -> Event | None:
    if not isinstance(rec, Halt):
        return None
    if rec.forced:
        message = f"Loop halted at {rec.task}: {rec.reason}"
        kind = "halted"
    else:
        message = (
            f"Circuit breaker tripped: {rec.task} failed {rec.failures} consecutive "
            f"times. Reason: {rec.reason}"
        )
        kind = "breaker"
    return Event(f"{kind}:{index}", kind, rec.at, message, rec.cycle, rec.task, reason=rec.reason)


def _paused(index: int, rec: Record, _last: CycleRecord | None) -> Event | None:
    # `paused` is the cycle status of a harness stop (a usage limit, an overload).
    if not isinstance(rec, CycleRecord) or str(rec.status) != "paused":
        return None
    why = rec.reason or "the agent's harness stopped it"
    message = f"Loop paused at {rec.task}: {why}"
    return Event(f"paused:{index}", "paused", rec.at, message, rec.cycle, rec.task, rec.title, why)


def _resumed(index: int, rec: Record, last: CycleRecord | None) -> Event | None:
    """The first cycle that is not a pause after one that was."""
    if not isinstance(rec, CycleRecord) or str(rec.status) == "paused":
        return None
    if last is None or str(last.status) != "paused":
        return None
    message = f"Loop resumed with {rec.task} (cycle {rec.cycle})"
    return Event(f"resumed:{index}", "resumed", rec.at, message, rec.cycle, rec.task, rec.title)


def _budget(index: int, rec: Record, _last: CycleRecord | None) -> Event | None:
    if not isinstance(rec, BudgetEvent) or rec.event == "reset":
        return None
    kind = f"budget-{rec.event}"
    message = rec.message or kind
    return Event(f"{kind}:{index}", kind, rec.at, message, task=rec.task, reason=message)


# One line per kind of event a record makes.
_DERIVED: tuple[Callable[[int, Record, CycleRecord | None], Event | None], ...] = (
    _halt,
    _paused,
    _resumed,
    _budget,
)


def events(history: Sequence[Record]) -> list[Event]:
    """Every event the records make, oldest first."""
    out: list[Event] = []
    last: CycleRecord | None = None
    for index, rec in enumerate(history):
        for derive in _DERIVED:
            found = derive(index, rec, last)
            if found is not None:
                out.append(found)
        if isinstance(rec, CycleRecord):
            last = rec
    return out


def complete(history: Sequence[Record], verdict: str, done: int, at: str) -> Event:
    """All tasks are done and `gtd verify` said ``verdict``: one event per point
    in the history (a plan that grows and completes again is told again)."""
    return Event(
        f"complete:{len(history)}",
        "complete",
        at,
        f"All tasks complete ({done} done); gtd verify: {verdict}",
        verdict=verdict,
    )
