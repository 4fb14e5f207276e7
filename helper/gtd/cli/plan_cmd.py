"""`gtd plan check` and `gtd plan next`.

`plan next` runs on every tick of the unattended loop through the typer-free fast
path in gtd.cli, so this module imports only the plan core, its file edge and the
output helpers."""

from __future__ import annotations

from gtd import paths
from gtd.auto import plan_file
from gtd.auto.next_task import answer, pick
from gtd.auto.plan import Plan
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
    name = paths.PLAN
    if not problems:
        text = (
            f"{name}: ok, {counts['tasks']} {'task' if counts['tasks'] == 1 else 'tasks'} "
            f"({counts['done']} done, {counts['pending']} pending, {counts['skipped']} skipped)"
        )
        emit({"status": "ok", **counts, "problems": []}, text, as_json)
        return 0
    lines = [f"{name}:{p['line']}: {p['message']}" for p in problems]
    noun = "problem" if len(problems) == 1 else "problems"
    lines.append(f"{name}: invalid, {len(problems)} {noun}")
    emit({"status": "invalid", **counts, "problems": problems}, "\n".join(lines), as_json)
    return 1


def next_task(as_json: bool) -> int:
    """The next ready task, or why there is none. Exit 0 for all three answers: a
    blocked or complete plan is a normal state, not a failure of the command."""
    _, plan = plan_file.load_valid(root())
    shaped = answer(plan, pick(plan))

    if shaped["status"] == "task":
        task = shaped["task"]
        remaining = shaped["remaining"]
        lines = [f"Next ready task: {task['id']} — {task['title']}"]
        if task["spike"]:
            lines.append("  Spike: yes")
        if task["files"]:
            lines.append(f"  Files: {', '.join(task['files'])}")
        blockers = ", ".join(f"{b} (done)" for b in task["blocked_by"])
        lines.append(f"  Blocked by: {blockers}" if blockers else "  No blockers")
        if task["spec"]:
            lines.append(f"  Spec: {task['spec']}")
        lines.append(f"{remaining} {'task' if remaining == 1 else 'tasks'} remaining")
        emit(dict(shaped), "\n".join(lines), as_json)
        return 0

    if shaped["status"] == "blocked":
        status = {t.id: t.status for t in reversed(plan.tasks)}  # first occurrence wins
        lines = ["All remaining tasks are blocked."]
        for entry in shaped["blocked"]:
            why = ", ".join(
                f"{b} ({'skipped' if status.get(b) == 'skipped' else 'incomplete'})"
                for b in entry["blocked_by"]
            )
            lines.append(f"  [ ] {entry['id']} — blocked by: {why}")
        emit(dict(shaped), "\n".join(lines), as_json)
        return 0

    text = f"All tasks complete: {shaped['done']} done"
    if shaped["skipped"]:
        text += f", {shaped['skipped']} skipped"
    emit(dict(shaped), text + ".", as_json)
    return 0
