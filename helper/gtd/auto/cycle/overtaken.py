"""A cycle ended before the loop ended it: what changed since.

The loop names the cycle it began when it ends it (`gtd cycle end --cycle N`).
Finding cycle N no longer in flight means a `gtd cycle end` ran during N's
agent's turn: the agent has a shell and the helper on its PATH. That end was
judged like any other; what the agent may do after it is not: with no cycle in
flight, commits read as a person's (the next `begin` takes them as the new
baseline), and a quarantine, a release, a snapshot or a cycle of its own are
all allowed. So the loop's end answers N's own verdict only where nothing
changed since N's end; anything else halts the loop naming it
(gtd.auto.cycle.end). Pure: the caller reads the state, HEAD and the tree.
"""

from __future__ import annotations

from collections.abc import Sequence

from gtd.auto.budget import BudgetEvent
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord, Halt, Quarantine, Refresh
from gtd.auto.records import Record, Release, Reset
from gtd.names import readable

_SHOWN = 3  # paths named in a reason before "and N more"


def finish_subject(rec: CycleRecord) -> str:
    """The subject of the state commit that recorded ``rec`` (gtd.auto.cycle.recovery)."""
    return f"cycle {rec.cycle} ({rec.task}): {rec.status}"


def record_of(cycle: int, records: Sequence[Record]) -> tuple[CycleRecord | None, int]:
    """The record of ``cycle`` and its index (None, -1 where it has none)."""
    for at in range(len(records) - 1, -1, -1):
        rec = records[at]
        if isinstance(rec, CycleRecord) and rec.cycle == cycle:
            return rec, at
    return None, -1


def changes(
    rec: CycleRecord,
    after: Sequence[Record],
    tip_subject: str,
    later: Journal | None,
    moved: tuple[str, str] | None,
    dirty: Sequence[str],
) -> list[str]:
    """What changed since ``rec``'s cycle ended: ``after``, the records written
    since its own; ``tip_subject``, the subject of the state's last commit;
    ``later``, a cycle in flight now; ``moved``, (HEAD, the commit the state
    expects) where they differ; ``dirty``, uncommitted changes."""
    out: list[str] = []
    if later is not None:
        out.append(f"cycle {later.cycle} ({later.task}) was begun")
    for other in after:
        if isinstance(other, Halt) and other.cycle == rec.cycle:
            continue  # written with the cycle's own record
        out.append(_described(other))
    # (a state an older gtd wrote names a reverted cycle `failed`)
    legacy = finish_subject(rec).replace(": reverted", ": failed")
    if not out and tip_subject not in (finish_subject(rec), legacy):
        out.append(f"the sealed state was written ({tip_subject})")
    if moved is not None:
        out.append(f"the branch moved to {moved[0][:12]} (the cycle left {moved[1][:12]})")
    if dirty:
        shown = ", ".join(readable(p) for p in dirty[:_SHOWN])
        more = f" and {len(dirty) - _SHOWN} more" if len(dirty) > _SHOWN else ""
        out.append(f"uncommitted changes: {shown}{more}")
    return out


def reason(cycle: int, changed: Sequence[str]) -> str:
    """Why the loop halts: cycle ``cycle`` ended during its agent's turn, then
    ``changed``."""
    return (
        f"cycle {cycle} was ended during its agent's turn (a `gtd cycle end` before the "
        f"loop's), then {'; '.join(changed)}: look at what changed (`git log`, "
        "`gtd ratchet release` for a quarantine you do not want), then `gtd cycle reset`"
    )


def _described(rec: Record) -> str:
    if isinstance(rec, Quarantine):
        return f"{readable(rec.test)} was quarantined"
    if isinstance(rec, Release):
        return f"{readable(rec.test)} was released"
    if isinstance(rec, Refresh):
        return f"the baseline was taken again from {rec.commit[:12]}"
    if isinstance(rec, Reset):
        return "the circuit breaker was reset"
    if isinstance(rec, Halt):
        return f"the loop was halted ({rec.reason})"
    if isinstance(rec, BudgetEvent):
        return f"the budget was {'reset' if rec.event == 'reset' else 'told: ' + rec.event}"
    return f"cycle {rec.cycle} ({rec.task}) {rec.status}"
