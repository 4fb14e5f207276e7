"""A wave: the tasks a `parallel: N` loop starts at once (docs/parallel.md). Pure:
the parsed plan and what is in flight in, the chosen tasks out.

The rule extends `plan.pick`'s (the first ready task, top to bottom) to N tasks:
walk the ready tasks in plan order and take each one that

- is not in flight already (``busy``),
- has no ``Blocked by`` path, in either direction and through any number of
  tasks, to a task already taken or in flight: such a pair is ordered by the
  plan, even where a task in between was ticked by hand,
- names no file that a task already taken or in flight names (a file, or a
  folder holding it). A task that names no files is not held back by files:
  the plan says nothing about what it touches, and the landing's replay is what
  catches an overlap (a conflict goes back to the queue, not to the breaker),
- may share a wave (``alone``: a task that goes back to the queue after its
  replay conflicted runs only first in its wave, where nothing lands before it),

until N are taken. A task that failed its tests is chosen again as `pick` would
choose it: the breaker, not the wave, decides when a failing task halts the loop.
With N = 1 and nothing in flight the wave is exactly `plan.pick`'s task.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from gtd.auto import budget
from gtd.auto.next_task import Pick, pick
from gtd.auto.plan import Plan, Task
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Literal

    from gtd.auto.records import Record

    Why = Literal["busy", "depends", "files", "alone", "full"]
else:
    Why = str


class Wave(NamedTuple):
    """What `choose` decided. ``pick`` is the serial choice the wave extends
    (its kind says ``task``, ``blocked`` or ``complete``); ``tasks`` the tasks to
    start, in plan order, empty unless the kind is ``task``; ``held`` every other
    ready task with the reason it waits (``busy``: in flight; ``depends``: a
    Blocked by path to a task taken or in flight; ``files``: a file shared with
    one; ``alone``: runs only first in a wave; ``full``: N were taken)."""

    pick: Pick
    tasks: tuple[Task, ...]
    held: tuple[tuple[Task, Why], ...]


def choose(
    plan: Plan,
    n: int,
    *,
    busy: Collection[str] = (),
    alone: Collection[str] = (),
    files: Mapping[str, Iterable[str]] | None = None,
) -> Wave:
    """Up to ``n`` ready tasks that may run at once (module docstring).
    ``busy``: ids of tasks in flight; ``alone``: ids that run only first in a
    wave; ``files``: the files of a task where the caller knows better than the
    plan's ``Files:`` line (a task not in it keeps its line)."""
    if n < 1:
        raise ValueError(f"a wave holds at least one task, not {n}")
    serial = pick(plan)
    if serial.kind == "complete":
        return Wave(serial, (), ())
    done = {t.id for t in plan.tasks if t.status == "done"}
    ready = [t for t in plan.pending if all(b in done for b in t.blocked_by)]
    reach = _reachable(plan)
    in_flight = [t for t in plan.tasks if t.id in busy]
    taken: list[Task] = []
    held: list[tuple[Task, Why]] = []
    claimed = [_files(t, files) for t in in_flight]
    ordered = {t.id for t in in_flight}
    for task in ready:
        why = _why_not(task, taken, ordered, reach, claimed, files, n, busy, alone)
        if why is not None:
            held.append((task, why))
            continue
        taken.append(task)
        ordered.add(task.id)
        claimed.append(_files(task, files))
    if not taken:
        # Nothing ready but what is in flight or must wait for it: the serial
        # choice stands (blocked, or the task in flight).
        return Wave(serial, (), tuple(held))
    return Wave(Pick("task", taken[0], ()), tuple(taken), tuple(held))


def _why_not(
    task: Task,
    taken: list[Task],
    ordered: set[str],
    reach: Mapping[str, frozenset[str]],
    claimed: list[frozenset[str]],
    files: Mapping[str, Iterable[str]] | None,
    n: int,
    busy: Collection[str],
    alone: Collection[str],
) -> Why | None:
    if task.id in busy:
        return "busy"
    if len(taken) >= n:
        return "full"
    if taken and (task.id in alone or taken[0].id in alone):
        return "alone"
    if ordered and not ordered.isdisjoint(reach.get(task.id, frozenset())):
        return "depends"
    if ordered and any(task.id in reach.get(other, frozenset()) for other in ordered):
        return "depends"
    mine = _files(task, files)
    if mine and any(_overlap(mine, theirs) for theirs in claimed):
        return "files"
    return None


def _reachable(plan: Plan) -> dict[str, frozenset[str]]:
    """Every task id's transitive blockers (ids it waits on through any chain),
    over the whole plan whatever each task's status. Iterative, and safe on a
    cycle (which `plan check` reports; a task on one reaches itself)."""
    graph: dict[str, tuple[str, ...]] = {}
    for task in plan.tasks:
        graph.setdefault(task.id, task.blocked_by)  # the first of a duplicated id, as get()
    out: dict[str, frozenset[str]] = {}
    for start, blockers in graph.items():
        seen: set[str] = set()
        stack = list(blockers)
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            stack.extend(graph.get(node, ()))
        out[start] = frozenset(seen)
    return out


def _files(task: Task, files: Mapping[str, Iterable[str]] | None) -> frozenset[str]:
    named = task.files if files is None or task.id not in files else files[task.id]
    out = set()
    for raw in named:
        path = posixpath.normpath(raw.strip().replace("\\", "/")).lstrip("/")
        if path and path != ".":
            out.add(path)
    return frozenset(out)


def _overlap(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two file sets share a file, or one names a folder the other's file
    is in (``src/`` and ``src/a.py``)."""
    if not a.isdisjoint(b):
        return True
    return any(_inside(x, y) or _inside(y, x) for x in a for y in b)


def _inside(path: str, folder: str) -> bool:
    return path.startswith(folder + "/")


def affordable(history: Sequence[Record], ceiling: budget.Ceiling, tasks: Sequence[str]) -> int:
    """How many of a wave's ``tasks`` (in plan order) may start under ``ceiling``:
    none when `budget.decide` would not start the first (the loop halts as
    today); then each next one while the spend so far and the expected cost of
    every task taken, its own included, stays under each ceiling set. A task with
    no cost to go by (no history at all) is expected to cost nothing, as
    `decide` expects it."""
    if not tasks:
        return 0
    first = budget.decide(history, ceiling, tasks[0])
    if first.halt is not None:
        return 0
    usd = first.spent.usd + (first.expected.usd or 0.0)
    tokens = first.spent.tokens + (first.expected.tokens or 0)
    cycles, _ = budget.night(history)
    count = 1
    for task in tasks[1:]:
        guess = budget.expected(history, cycles, task)
        more_usd = usd + (guess.usd or 0.0)
        more_tokens = tokens + (guess.tokens or 0)
        if _past(more_usd, ceiling.usd) or _past(more_tokens, ceiling.tokens):
            break
        usd, tokens, count = more_usd, more_tokens, count + 1
    return count


def _past(amount: float, limit: float | None) -> bool:
    return limit is not None and amount > limit + 1e-9  # budget's own tolerance
