"""Choosing the next PLAN.md task (deepflow's rule) and the answer that names it:
what `gtd plan next --json` prints and `gtd cycle begin` answers with. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gtd.auto.plan import Plan, Task
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Literal, TypedDict

    PickKind = Literal["task", "blocked", "complete"]
else:
    PickKind = str


class Pick(NamedTuple):
    kind: PickKind
    task: Task | None
    blocked: tuple[tuple[Task, tuple[str, ...]], ...]


def pick(plan: Plan) -> Pick:
    """deepflow's rule: the first ``[ ]`` task, top to bottom, whose blockers are all
    ``[x]``. A skipped blocker does not count as finished: the work it stood for was
    never done."""
    done = {t.id for t in plan.tasks if t.status == "done"}
    pending = plan.pending
    if not pending:
        return Pick("complete", None, ())
    blocked: list[tuple[Task, tuple[str, ...]]] = []
    for task in pending:
        unfinished = tuple(b for b in task.blocked_by if b not in done)
        if not unfinished:
            return Pick("task", task, ())
        blocked.append((task, unfinished))
    return Pick("blocked", None, tuple(blocked))


# -- the answer ----------------------------------------------------------------------


# -- the answer ----------------------------------------------------------------------


if TYPE_CHECKING:

    class TaskInfo(TypedDict):
        id: str
        title: str
        files: list[str]
        blocked_by: list[str]
        spike: bool
        spec: str | None
        line: int

    class BlockedInfo(TypedDict):
        id: str
        title: str
        blocked_by: list[str]  # the unfinished blockers only

    class TaskAnswer(TypedDict):
        status: Literal["task"]
        task: TaskInfo
        remaining: int

    class BlockedAnswer(TypedDict):
        status: Literal["blocked"]
        blocked: list[BlockedInfo]

    class CompleteAnswer(TypedDict):
        status: Literal["complete"]
        done: int
        skipped: int

    PickAnswer = TaskAnswer | BlockedAnswer | CompleteAnswer
else:
    TaskInfo = dict
    BlockedInfo = dict
    TaskAnswer = dict
    BlockedAnswer = dict
    CompleteAnswer = dict
    PickAnswer = dict


def answer(plan: Plan, choice: Pick) -> PickAnswer:
    """The pick as JSON-ready values: what `gtd plan next --json` prints, and the
    blocked list and counts `gtd cycle begin` answers with."""
    if choice.kind == "task" and choice.task is not None:
        task = choice.task
        info: TaskInfo = {
            "id": task.id,
            "title": task.title,
            "files": list(task.files),
            "blocked_by": list(task.blocked_by),
            "spike": task.spike,
            "spec": task.spec,
            "line": task.line,
        }
        return {"status": "task", "task": info, "remaining": len(plan.pending)}
    if choice.kind == "blocked":
        blocked: list[BlockedInfo] = [
            {"id": t.id, "title": t.title, "blocked_by": list(b)} for t, b in choice.blocked
        ]
        return {"status": "blocked", "blocked": blocked}
    statuses = [t.status for t in plan.tasks]
    return {
        "status": "complete",
        "done": statuses.count("done"),
        "skipped": statuses.count("skipped"),
    }
