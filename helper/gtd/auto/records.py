"""The sealed history of auto mode: one JSON line per event, folded into Memory.

Pure. The lines live in the helper's sealed state (gtd.auto.state, a git ref), not
in a file an agent can edit: `auto-memory.yaml` is a rendering of the fold, and the
breaker reads the fold. Events, each a JSON object with a ``kind``:

- ``cycle``: what one cycle did (gtd.auto.memory.CycleRecord's fields);
- ``halt``: a breaker trip, or a forced halt (``forced``) that holds until a reset;
- ``reset``: `gtd cycle reset` (``task`` or every tripped task);
- ``refresh``: the snapshot was re-taken from a person's commit;
- ``quarantine`` / ``release``: a flaky test taken out of, or put back into, the
  ratchet's judgement;
- ``budget``: a budget warning or halt told, or a reset that begins a new night
  (gtd.auto.budget.BudgetEvent; memory does not change).

A line that does not parse is an error naming its number: the history is the
only record of what the loop tried, and is never silently dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gtd.auto import budget, memory, usage
from gtd.auto.budget import BudgetEvent
from gtd.auto.memory import (
    CYCLE_STATUSES,
    CycleRecord,
    Halt,
    Memory,
    Quarantine,
    Refresh,
    cycle_status,
)
from gtd.auto.usage import Usage
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Any


class Reset(NamedTuple):
    task: str | None  # None: every tripped task
    at: str
    threshold: int


class Release(NamedTuple):
    test: str
    at: str


Record = CycleRecord | Halt | Reset | Refresh | Quarantine | Release | BudgetEvent


class RecordError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


_KINDS: dict[type, str] = {
    CycleRecord: "cycle",
    Halt: "halt",
    Reset: "reset",
    Refresh: "refresh",
    Quarantine: "quarantine",
    Release: "release",
    BudgetEvent: "budget",
}
_TYPES = {kind: cls for cls, kind in _KINDS.items()}


def encode(record: Record) -> str:
    """One line of JSON (no newline), fields with their default value left out."""
    fields: dict[str, Any] = {"kind": _KINDS[type(record)]}
    defaults = type(record)._field_defaults
    for name, value in record._asdict().items():
        if name in defaults and value == defaults[name]:
            continue
        if isinstance(value, Usage):
            fields[name] = usage.to_json(value)
        else:
            fields[name] = list(value) if isinstance(value, tuple) else value
    return json.dumps(fields, ensure_ascii=False, sort_keys=False)


def decode(text: str) -> list[Record]:
    out: list[Record] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            out.append(_decode_line(number, line))
    return out


def _decode_line(number: int, line: str) -> Record:
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise RecordError(number, f"not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise RecordError(number, "not a JSON object")
    kind = data.pop("kind", None)
    cls: Any = _TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise RecordError(number, f"unknown kind {kind!r}")
    unknown = set(data) - set(cls._fields)
    if unknown:
        fields = "field" if len(unknown) == 1 else "fields"
        raise RecordError(number, f"unknown {fields} {', '.join(sorted(unknown))}")
    missing = [f for f in cls._fields if f not in data and f not in cls._field_defaults]
    if missing:
        raise RecordError(number, f"{kind} lacks {', '.join(missing)}")
    if cls is CycleRecord:
        data["status"] = cycle_status(data.get("status"))
        if data.get("status") not in CYCLE_STATUSES:
            raise RecordError(number, f"unknown cycle status {data.get('status')!r}")
        data["flaky"] = tuple(data.get("flaky") or ())
        data["env_skipped"] = tuple(data.get("env_skipped") or ())
        data["look_at"] = tuple(data.get("look_at") or ())
        data["yours"] = tuple(data.get("yours") or ())
        for name in ("usage", "usage_tick", "usage_review"):
            if data.get(name) is not None:
                try:
                    data[name] = usage.from_json(data[name])
                except ValueError as exc:
                    # from_json names its fields `usage.…`: this one's name instead
                    raise RecordError(number, str(exc).replace("usage", name, 1)) from None
    if cls is BudgetEvent:
        wrong = budget.check_event(data.get("event"))
        if wrong is not None:
            raise RecordError(number, wrong)
    try:
        return cls(**data)  # type: ignore[no-any-return]
    except TypeError as exc:  # pragma: no cover - the field checks above cover it
        raise RecordError(number, str(exc)) from None


def fold(records: Iterable[Record]) -> Memory:
    """Memory as the events say, in order."""
    mem = Memory()
    for rec in records:
        mem = apply(mem, rec)
    return mem


def apply(mem: Memory, rec: Record) -> Memory:
    if isinstance(rec, CycleRecord):
        return memory.record_cycle(mem, rec)
    if isinstance(rec, Halt):
        return memory.record_halt(mem, rec)
    if isinstance(rec, Reset):
        return memory.reset_breaker(mem, rec.task, rec.threshold)[0]
    if isinstance(rec, Refresh):
        return memory.record_refresh(mem, rec)
    if isinstance(rec, Quarantine):
        return memory.quarantine(mem, rec)
    if isinstance(rec, BudgetEvent):
        return mem  # the budget folds the cycles' usage itself (gtd.auto.budget)
    return memory.release(mem, rec.test)


def from_memory(mem: Memory) -> list[Record]:
    """Events that fold to ``mem``'s cycle log and halts: how a memory file written
    before the sealed records is imported once, at `gtd auto setup`. (Counters that
    a deepflow-era file holds without a cycle log behind them are not carried.)"""
    out: list[Record] = list(mem.cycles)
    out.extend(mem.halts)
    return out
