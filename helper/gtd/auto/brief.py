"""The implementer brief: a pure rendering of the task, its history and the rules
(whose words live in gtd.auto.ratchet.rules, the one source of them)."""

from __future__ import annotations

from collections.abc import Sequence
from string import Template

from gtd.auto.plan import Task

_SPIKE_RULE = (
    "- This is a spike: find out whether the approach works. End your final reply\n"
    "  with one line `Learning: <what you found>`; it is recorded for later tasks.\n"
)


def render_task(
    template_text: str,
    *,
    cycle: int,
    task: Task,
    failures: Sequence[tuple[int, str]],
    learnings: Sequence[str],
    test_command: str,
) -> str:
    from gtd.auto.readable import readable

    history = ""
    if failures:
        lines = "\n".join(f"- cycle {c}: {readable(reason)}" for c, reason in failures)
        history += (
            "\n## Earlier attempts at this task were reverted\n\n"
            f"Do not repeat these mistakes:\n\n{lines}\n"
        )
    if learnings:
        lines = "\n".join(f"- {item}" for item in learnings)
        history += f"\n## What spikes have learned so far\n\n{lines}\n"
    from gtd.auto.ratchet import rules

    return Template(template_text).safe_substitute(
        cycle=cycle,
        task_id=task.id,
        title=task.title,
        task_text=task.text.rstrip(),
        files=_files(task.files),
        history=history,
        test_command=test_command,
        spike_rule=_SPIKE_RULE if task.spike else "",
        rules=rules.task_rules(),
    )


def render_bootstrap(
    template_text: str, *, cycle: int, files: Sequence[str], test_command: str
) -> str:
    from gtd.auto.ratchet import rules

    return Template(template_text).safe_substitute(
        cycle=cycle, files=_files(files), test_command=test_command, rules=rules.bootstrap_rules()
    )


def _files(files: Sequence[str]) -> str:
    if not files:
        return "(not listed: keep the change as small as the task allows)"
    return "\n".join(f"- `{f}`" for f in files)
