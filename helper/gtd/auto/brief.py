"""The implementer brief: a pure rendering of the task, its history and the rules
(whose words live in gtd.auto.ratchet.rules, the one source of them).

The texts are templates (``brief.md``, ``brief-bootstrap.md`` and the sections in
``partials/brief-*.md``) rendered by the one strict engine, gtd.templates: this
module decides which sections a brief has and fills them."""

from __future__ import annotations

from collections.abc import Sequence

from gtd import templates
from gtd.auto.plan import Task


def render_task(
    template_text: str,
    *,
    cycle: int,
    task: Task,
    failures: Sequence[tuple[int, str]],
    learnings: Sequence[str],
    test_command: str,
    declared: tuple[str, ...] = (),
) -> str:
    from gtd.auto.shorten import shorten
    from gtd.names import one_line

    # Each reason and learning on its bullet's line: both hold text an agent chose
    # (a file name, a test id, its `Learning:`), which must not add sections of
    # its own to the next brief (a "## Rules" that allows editing tests).
    sections: list[str] = []
    if failures:
        lines = "\n".join(f"- cycle {c}: {one_line(shorten(reason))}" for c, reason in failures)
        sections.append(templates.render("partials/brief-failures.md", {"lines": lines}))
    if learnings:
        lines = "\n".join(f"- {one_line(item)}" for item in learnings)
        sections.append(templates.render("partials/brief-learnings.md", {"lines": lines}))
    from gtd.auto.ratchet import rules

    return templates.render_text(
        template_text,
        {
            "cycle": str(cycle),
            "task_id": task.id,
            "title": task.title,
            "task_text": task.text.rstrip(),
            "files": _files(task.files),
            "history": "".join("\n" + section for section in sections),
            "test_command": test_command,
            "spike_rule": templates.template("partials/brief-spike.md") if task.spike else "",
            "rules": rules.task_rules(declared),
        },
    )


def render_bootstrap(
    template_text: str, *, cycle: int, files: Sequence[str], test_command: str
) -> str:
    from gtd.auto.ratchet import rules

    return templates.render_text(
        template_text,
        {
            "cycle": str(cycle),
            "files": _files(files),
            "test_command": test_command,
            "rules": rules.bootstrap_rules(),
        },
    )


def _files(files: Sequence[str]) -> str:
    if not files:
        return "(not listed: keep the change as small as the task allows)"
    return "\n".join(f"- `{f}`" for f in files)
