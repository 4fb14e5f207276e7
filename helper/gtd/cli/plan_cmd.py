"""`gtd plan check` and `gtd plan next`.

`plan next` runs on every tick of the unattended loop through the typer-free fast
path in gtd.cli, so this module imports only the plan core, its file edge and the
output helpers."""

from __future__ import annotations

from typing import Any

from gtd.auto import plan_file
from gtd.auto.plan import Plan, Task, pick
from gtd.cli.output import emit, root


def _counts(plan: Plan) -> dict[str, int]:
    statuses = [t.status for t in plan.tasks]
    return {
        "tasks": len(statuses),
        "done": statuses.count("done"),
        "pending": statuses.count("todo"),
        "skipped": statuses.count("skipped"),
    }


def check(as_json: bool) -> int:
    """Exit 0 for a clean plan, 1 with every problem as ``PLAN.md:<line>: <message>``."""
    _, plan = plan_file.load(root())
    counts = _counts(plan)
    problems = [{"line": p.line, "message": p.message} for p in plan.problems]
    name = plan_file.PLAN_NAME
    if not problems:
        text = (
            f"{name}: ok, {counts['tasks']} tasks "
            f"({counts['done']} done, {counts['pending']} pending, {counts['skipped']} skipped)"
        )
        emit({"status": "ok", **counts, "problems": []}, text, as_json)
        return 0
    lines = [f"{name}:{p['line']}: {p['message']}" for p in problems]
    noun = "problem" if len(problems) == 1 else "problems"
    lines.append(f"{name}: invalid, {len(problems)} {noun}")
    emit({"status": "invalid", **counts, "problems": problems}, "\n".join(lines), as_json)
    return 1


def _task_json(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "title": task.title,
        "files": list(task.files),
        "blocked_by": list(task.blocked_by),
        "spike": task.spike,
        "spec": task.spec,
        "line": task.line,
    }


def next_task(as_json: bool) -> int:
    """The next ready task, or why there is none. Exit 0 for all three answers: a
    blocked or complete plan is a normal state, not a failure of the command."""
    _, plan = plan_file.load_valid(root())
    choice = pick(plan)
    status = {t.id: t.status for t in reversed(plan.tasks)}  # first occurrence wins

    if choice.kind == "task" and choice.task is not None:
        task = choice.task
        remaining = len(plan.pending)
        lines = [f"Next ready task: {task.id} — {task.title}"]
        if task.spike:
            lines.append("  Spike: yes")
        if task.files:
            lines.append(f"  Files: {', '.join(task.files)}")
        blockers = ", ".join(f"{b} (done)" for b in task.blocked_by)
        lines.append(f"  Blocked by: {blockers}" if blockers else "  No blockers")
        if task.spec:
            lines.append(f"  Spec: {task.spec}")
        lines.append(f"{remaining} {'task' if remaining == 1 else 'tasks'} remaining")
        payload = {"status": "task", "task": _task_json(task), "remaining": remaining}
        emit(payload, "\n".join(lines), as_json)
        return 0

    if choice.kind == "blocked":
        lines = ["All remaining tasks are blocked."]
        entries = []
        for task, unfinished in choice.blocked:
            why = ", ".join(
                f"{b} ({'skipped' if status.get(b) == 'skipped' else 'incomplete'})"
                for b in unfinished
            )
            lines.append(f"  [ ] {task.id} — blocked by: {why}")
            entries.append({"id": task.id, "title": task.title, "blocked_by": list(unfinished)})
        emit({"status": "blocked", "blocked": entries}, "\n".join(lines), as_json)
        return 0

    counts = _counts(plan)
    text = f"All tasks complete: {counts['done']} done"
    if counts["skipped"]:
        text += f", {counts['skipped']} skipped"
    payload = {"status": "complete", "done": counts["done"], "skipped": counts["skipped"]}
    emit(payload, text + ".", as_json)
    return 0
