"""The wave journal: the record of a wave in flight (docs/parallel.md). Pure: the
value and its JSON form; gtd.auto.state keeps it sealed in git beside the
cycle's journal (``wave.json``), gtd.auto.cycle.waves acts on it.

It is sealed before any worktree is made, and again at every step of a task, so
after a kill the next `begin` knows for each task how far it got. A task moves
through phases ``agent`` (its implementer works) → ``ending`` (its `gtd cycle
end` took it: the cycle's journal holds it while it is judged and finished) →
``landed`` | ``reverted`` | ``queued`` (back to the queue: its replay conflicted,
or it was interrupted; its work kept under ``refs/gtd/queued/<task>``). ``ready``
is sealed once every worktree and brief is made: a wave that is not was cut
short in its `begin`, and nobody works on it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Any, Literal

    TaskPhase = Literal["agent", "ending", "landed", "reverted", "queued"]
else:
    TaskPhase = str

DONE: tuple[TaskPhase, ...] = ("landed", "reverted", "queued")


class WaveTask(NamedTuple):
    task: str
    title: str
    cycle: int
    spike: bool
    worktree: str  # the absolute path of its checkout
    brief: str  # the absolute path of its brief
    phase: TaskPhase = "agent"


class Wave(NamedTuple):
    wave: int  # the wave's number (1 for the loop's first)
    tip: str  # the commit every worktree was made at
    branch: str
    started_at: str
    started_epoch: float
    tasks: tuple[WaveTask, ...]  # in plan order
    seals: dict[str, Any] | None = None  # as a cycle's (gtd.auto.cycle.seals), taken once
    session: dict[str, Any] | None = None  # the Claude Code session that began it
    ready: bool = False
    # What its tasks spent, read from the session's transcripts (gtd.auto.cycle.
    # spent): Claude Code's id of that session; when the first task's `end` came
    # (the tick's turns before it launched every implementer: shared evenly);
    # up to when the tick's turns are charged to a task already recorded.
    claude_session: str | None = None
    split_epoch: float | None = None
    charged: float | None = None

    def evolve(self, **changes: Any) -> Wave:
        return self._replace(**changes)

    def of(self, cycle: int) -> WaveTask | None:
        return next((t for t in self.tasks if t.cycle == cycle), None)

    def with_phase(self, cycle: int, phase: TaskPhase) -> Wave:
        return self._replace(
            tasks=tuple(t._replace(phase=phase) if t.cycle == cycle else t for t in self.tasks)
        )

    def waiting_before(self, cycle: int) -> WaveTask | None:
        """The first task before ``cycle``'s in plan order still in its agent
        phase: landing is in plan order, so ``cycle`` waits for it."""
        for t in self.tasks:
            if t.cycle == cycle:
                return None
            if t.phase == "agent":
                return t
        return None

    @property
    def over(self) -> bool:
        return all(t.phase in DONE for t in self.tasks)


def dumps(wave: Wave) -> bytes:
    data = wave._asdict()
    data["tasks"] = [t._asdict() for t in wave.tasks]
    return (json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def loads(raw: bytes) -> Wave:
    """Raises ValueError or TypeError for anything that is not a wave journal."""
    data = json.loads(raw)
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
        raise ValueError("not a wave journal")
    data["tasks"] = tuple(WaveTask(**t) for t in data["tasks"])
    return Wave(**data)
