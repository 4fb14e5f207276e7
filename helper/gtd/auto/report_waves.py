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

from typing import TYPE_CHECKING

from gtd.auto.memory import CycleRecord
from gtd.auto.report_text import DASH, cell, duration, flat, named_task, row, table
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from gtd.auto import wave_journal
    from gtd.auto.journal import Journal


class TaskTime(NamedTuple):
    rec: CycleRecord
    own_s: float | None  # its own time (see the module's doc); None: not timed


class Wave(NamedTuple):
    number: int
    tasks: tuple[TaskTime, ...]  # in cycle (plan) order
    flying: tuple[str, ...] = ()  # its tasks not recorded yet (the wave is in flight)

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


def waves(cycles: list[CycleRecord], flying: wave_journal.Wave | None = None) -> list[Wave]:
    """Each wave of ``cycles``, in the order of its number; ``flying``: the wave
    in flight (its journal), whose tasks not recorded yet are named so."""
    grouped: dict[int, list[CycleRecord]] = {}
    for rec in sorted(cycles, key=lambda r: r.cycle):
        if rec.wave is not None:
            grouped.setdefault(rec.wave, []).append(rec)
    pending: dict[int, tuple[str, ...]] = {}
    if in_flight(flying):
        assert flying is not None
        recorded = {r.cycle for r in grouped.get(flying.wave, [])}
        grouped.setdefault(flying.wave, [])
        pending[flying.wave] = tuple(t.task for t in flying.tasks if t.cycle not in recorded)
    return [
        Wave(number, _timed(recs), pending.get(number, ()))
        for number, recs in sorted(grouped.items())
    ]


def in_flight(wave: wave_journal.Wave | None) -> bool:
    """A wave is in flight once sealed ready (one that is not was cut short as
    it began: nobody works on it) until its last task is recorded."""
    return wave is not None and wave.ready and not wave.over


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


def _so_far(wave: Wave, seconds: float | None) -> str:
    said = duration(seconds)
    return f"{said} so far" if wave.flying and said != DASH else said


def _saved(wave: Wave) -> str:
    wall, serial = wave.wall_s, wave.one_by_one_s
    if wave.flying or wall is None or serial is None or serial <= wall:
        return DASH
    return f"{duration(serial - wall)} ({round(100 * (serial - wall) / serial)}%)"


INTRO = (
    "Tasks of one wave were implemented at the same time, each in a worktree of its "
    "own, then judged and landed one by one in plan order. A task's time is its "
    "implementer's and its own check and landing (docs/report.md#waves); the wall "
    "time runs from the wave's start to its last verdict."
)


def summary(cycles: list[CycleRecord], flying: wave_journal.Wave | None = None) -> list[str]:
    """The Summary's Waves part; nothing for a night with no wave."""
    found = waves(cycles, flying)
    if not found:
        return []
    rows = [
        row(
            str(wave.number),
            cell("; ".join([*map(_task, wave.tasks), *(f"{t}: in flight" for t in wave.flying)])),
            _so_far(wave, wave.wall_s),
            _so_far(wave, wave.one_by_one_s),
            _saved(wave),
        )
        for wave in found
    ]
    header = ("Wave", "Ran together", "Wall time", "One by one", "Saved")
    return ["", "### Waves", "", INTRO, "", *table(header, rows)]


def log_cell(rec: CycleRecord) -> str:
    """The Cycle Log's Wave cell: the wave's number, a dash for a cycle run alone."""
    return DASH if rec.wave is None else str(rec.wave)


_PHASE = {
    "agent": "being implemented",
    "ending": "being judged",
    "landed": "landed",
    "reverted": "reverted",
    "queued": "back to the queue",
}
_JUDGING = {
    "checking": "the ratchet is checking its work",
    "committing": "its work is being committed",
    "reverting": "its work is being reverted",
}


def running(wave: wave_journal.Wave, journal: Journal | None) -> list[str]:
    """The State while a wave is in flight: each of its tasks and where it is."""
    said = []
    for task in wave.tasks:
        phase = _PHASE.get(task.phase, task.phase)
        if journal is not None and journal.cycle == task.cycle:
            phase = _JUDGING.get(journal.phase, phase)
        said.append(f"{named_task(task.task, task.title)}, {phase}")
    return [f"**Running** — wave {wave.wave} (since {flat(wave.started_at)}): {'; '.join(said)}."]
