"""The dependency graph of a PLAN.md's tasks checked: duplicate ids, blockers that
name no task, and dependency cycles (each reported once, from the task that comes
first). Pure: tasks in, (line, message) pairs out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gtd.auto.plan import Task


def graph_problems(tasks: Sequence[Task], blocked_lines: dict[int, int]) -> list[tuple[int, str]]:
    """Duplicate ids, blockers naming unknown tasks and dependency cycles: (line,
    message) each, which gtd.auto.plan makes its Problems."""
    problems: list[tuple[int, str]] = []
    first: dict[str, int] = {}  # id -> index of its first task
    for i, task in enumerate(tasks):
        if task.id in first:
            earlier = tasks[first[task.id]].line
            problems.append((task.line, f"duplicate task id {task.id} (first at line {earlier})"))
        else:
            first[task.id] = i

    def where(i: int) -> int:
        return blocked_lines.get(i, tasks[i].line)

    for i, task in enumerate(tasks):
        for blocker in task.blocked_by:
            if blocker not in first:
                problems.append((where(i), f"{task.id}: blocked by unknown task {blocker}"))

    # Iterative DFS over the first occurrence of each id (a long chain of blockers
    # must not hit the recursion limit). Each back edge closes one cycle; report it
    # rotated to start at the task that comes first in the plan, once.
    graph = {tid: [b for b in tasks[i].blocked_by if b in first] for tid, i in first.items()}
    color = dict.fromkeys(first, 0)  # 0 unseen, 1 on the path, 2 done
    seen_cycles: set[tuple[str, ...]] = set()
    for start in first:
        if color[start]:
            continue
        path = [start]
        stack = [iter(graph[start])]
        color[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                color[path.pop()] = 2
                stack.pop()
                continue
            if color[nxt] == 0:
                color[nxt] = 1
                path.append(nxt)
                stack.append(iter(graph[nxt]))
            elif color[nxt] == 1:
                cycle = path[path.index(nxt) :]
                pivot = min(range(len(cycle)), key=lambda k: first[cycle[k]])
                cycle = cycle[pivot:] + cycle[:pivot]
                key = tuple(cycle)
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    names = " → ".join([*cycle, cycle[0]])
                    problems.append((where(first[cycle[0]]), f"dependency cycle: {names}"))
    return problems
