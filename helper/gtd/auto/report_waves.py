"""The report's waves (docs/parallel.md): which tasks ran together, how each
ended and how long it took, and the wave's wall time against the time its tasks
would have taken one by one.

Pure: the cycle records in, markdown lines out. A night with no wave renders
nothing here, and the Cycle Log keeps its columns (gtd.auto.report).

The times come from each task's record (gtd.auto.memory.CycleRecord): ``wave_s``,
from the wave's start to the task's verdict, and ``turn_s``, its own turn (its
check, then its commit or revert). Tasks are judged one after another in plan
order, so a task's ``wave_s`` also holds the turns of the tasks before it; less
those, it is the task's own time: its implementer's (until its work was taken
for judging) and its turn. That is what the task would have taken alone, the
implementer counted until the wave's work was handed in (the slowest
implementer's time when the tasks are ended together, as the loop ends them).
A task sent back to the queue was never judged: its record has no times."""

from __future__ import annotations

from gtd.auto.memory import CycleRecord
from gtd.auto.report_text import DASH, cell, duration, row, table
from gtd.tuples import NamedTuple


class TaskTime(NamedTuple):
    rec: CycleRecord
    own_s: float | None  # its own time (see the module's doc); None: not timed


class Wave(NamedTuple):
    number: int
    tasks: tuple[TaskTime, ...]  # in cycle (plan) order

    @property
    def wall_s(self) -> float | None:
        """From the wave's start to its last timed verdict."""
        timed = [t.rec.wave_s for t in self.tasks if t.rec.wave_s is not None]
        return max(timed) if timed else None

    @property
    def one_by_one_s(self) -> float | None:
        """The sum of its tasks' own times: the wave's tasks one after another."""
        own = [t.own_s for t in self.tasks if t.own_s is not None]
        return sum(own) if own else None


def any_wave(cycles: list[CycleRecord]) -> bool:
    return any(rec.wave is not None for rec in cycles)


def waves(cycles: list[CycleRecord]) -> list[Wave]:
    """Each wave of ``cycles``, in the order of its number."""
    grouped: dict[int, list[CycleRecord]] = {}
    for rec in sorted(cycles, key=lambda r: r.cycle):
        if rec.wave is not None:
            grouped.setdefault(rec.wave, []).append(rec)
    return [Wave(number, _timed(recs)) for number, recs in sorted(grouped.items())]


def _timed(recs: list[CycleRecord]) -> tuple[TaskTime, ...]:
    out: list[TaskTime] = []
    turns_before = 0.0
    for rec in recs:
        own = None if rec.wave_s is None else max(0.0, rec.wave_s - turns_before)
        out.append(TaskTime(rec, own))
        turns_before += rec.turn_s or 0.0
    return tuple(out)


def outcome(rec: CycleRecord) -> str:
    """The word the Status column uses; a task the wave sent back to the queue
    is ``skipped`` there (the breaker does not count it), said so here."""
    if rec.status == "skipped" and "back to the queue" in (rec.reason or ""):
        return "skipped (queued)"
    return rec.status


def _task(time: TaskTime) -> str:
    said = f"{time.rec.task}: {outcome(time.rec)}"
    return said + (f", {duration(time.own_s)}" if time.own_s is not None else "")


def _saved(wave: Wave) -> str:
    wall, serial = wave.wall_s, wave.one_by_one_s
    if wall is None or serial is None or serial <= wall:
        return DASH
    return f"{duration(serial - wall)} ({round(100 * (serial - wall) / serial)}%)"


INTRO = (
    "Tasks of one wave were implemented at the same time, each in a worktree of its "
    "own, then judged and landed one by one in plan order. A task's time is its "
    "implementer's and its own check and landing (docs/report.md#waves); the wall "
    "time runs from the wave's start to its last verdict."
)


def summary(cycles: list[CycleRecord]) -> list[str]:
    """The Summary's Waves part; nothing for a night with no wave."""
    found = waves(cycles)
    if not found:
        return []
    rows = [
        row(
            str(wave.number),
            cell("; ".join(_task(t) for t in wave.tasks)),
            duration(wave.wall_s),
            duration(wave.one_by_one_s),
            _saved(wave),
        )
        for wave in found
    ]
    header = ("Wave", "Ran together", "Wall time", "One by one", "Saved")
    return ["", "### Waves", "", INTRO, "", *table(header, rows)]


def log_cell(rec: CycleRecord) -> str:
    """The Cycle Log's Wave cell: the wave's number, a dash for a cycle run alone."""
    return DASH if rec.wave is None else str(rec.wave)
