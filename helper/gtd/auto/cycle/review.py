"""The optional reviewer (``review.agent: true``): a read-only second opinion on a
cycle's change before its tests run.

`gtd cycle end` answers ``status: review`` once, with a brief: the task as the
plan stated it at the cycle's base, the diff reader's findings on the change,
and the change itself. The loop runs the ``gtd:reviewer`` subagent (Read, Grep
and Glob only) on it and passes its last line to `gtd cycle end --review`. An
objection reverts the cycle with the reviewer's reason and counts as a failed
attempt; an approval decides nothing: the tests still judge the change.

The verdict reaches the helper through the loop, so it is data: only
``approve`` or ``object: <reason>`` count, on one line, and anything else is
recorded as no verdict (the cycle goes on to its tests).
"""

from __future__ import annotations

import re
from pathlib import Path

from gtd import paths
from gtd.auto.journal import Journal
from gtd.git import Git
from gtd.names import one_line

BRIEF = ".deepflow/review-brief.md"
_VERDICT = re.compile(r"^\s*(?:verdict:\s*)?(approve|object)\b[:\s-]*(.*)$", re.IGNORECASE)
_MAX_DIFF = 60_000  # characters of the change the brief quotes
_MAX_REASON = 300


def verdict(text: str) -> str:
    """``approve``, ``object: <reason>``, or ``none: <what was given>``."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    match = _VERDICT.match(lines[-1]) if lines else None
    if match is None:
        return f"none: {one_line(text.strip())[:_MAX_REASON] or 'no verdict given'}"
    if match.group(1).lower() == "approve":
        return "approve"
    reason = one_line(match.group(2).strip())[:_MAX_REASON] or "no reason given"
    return f"object: {reason}"


def objection(review: str | None) -> str | None:
    """The reviewer's reason, when it objected."""
    if review is not None and review.startswith("object: "):
        return review.removeprefix("object: ")
    return None


def write_brief(root: Path, git: Git, journal: Journal, tests: list[str]) -> str:
    """Write the reviewer's brief for the cycle in flight; its path."""
    from gtd.fsio import atomic_write

    task = _task_text(git, journal)
    changed, diff = _change(root, git, journal.base)
    findings = _findings(root, git, journal.base, changed, tests)
    listed = "\n".join(f"- `{f}`" for f in findings) or "- none"
    text = (
        f"# Review of cycle {journal.cycle}: {journal.task} — {one_line(journal.title)}\n\n"
        "You are the reviewer of one change an implementer made, unattended. Read the "
        "task, the diff reader's findings and the change below; open any file you need. "
        "Object when the change does not do the task, or passes the tests without "
        "doing it (special-cased inputs, code that detects tests, weakened checks). "
        "Approve otherwise: the tests still decide a pass.\n\n"
        "End your reply with exactly one line: `Verdict: approve` or "
        "`Verdict: object: <one sentence why>`.\n\n"
        f"## Task\n\n{task}\n\n## Diff reader findings\n\n{listed}\n\n"
        f"## The change\n\n````diff\n{diff}\n````\n"
    )
    atomic_write(root / BRIEF, text)
    return BRIEF


def _task_text(git: Git, journal: Journal) -> str:
    """The task as PLAN.md stated it at the cycle's base."""
    from gtd.auto import plan

    found = git.objects([f"{journal.base}:{paths.PLAN}"])
    if found and found[0] is not None:
        try:
            the_plan = plan.parse(found[0].data.decode("utf-8", "replace"))
        except Exception:  # a plan the cycle's base could not parse: the title will do
            the_plan = None
        if the_plan is not None:
            for task in the_plan.tasks:
                if task.id == journal.task:
                    return task.text.rstrip()
    return f"{journal.task}: {journal.title}"


def _change(root: Path, git: Git, base: str) -> tuple[list[str], str]:
    """The paths the change touches and its diff against the base (new files
    whole), cut at ``_MAX_DIFF`` characters."""
    tracked = git.run("diff", "--no-color", "--no-ext-diff", base, "--")
    changed = git.run("diff", "--name-only", "--no-renames", base, "--").splitlines()
    new = [e.path for e in git.state().entries if e.untracked]
    parts = [tracked]
    for path in new:
        try:
            body = (root / path).read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            parts.append(f"(new file {path}: not text)\n")
            continue
        added = "".join(f"+{line}\n" for line in body.splitlines())
        parts.append(f"--- /dev/null\n+++ b/{path}\n{added}")
    diff = "".join(parts)
    if len(diff) > _MAX_DIFF:
        diff = diff[:_MAX_DIFF] + f"\n… (cut: the change is {len(diff)} characters)\n"
    return changed + new, diff.replace("````", "` ` ` `")


def _findings(root: Path, git: Git, base: str, changed: list[str], tests: list[str]) -> list[str]:
    from gtd.auto.diffread.reader import Source, read

    py = [p for p in changed if p.endswith(".py") and (root / p).is_file()]
    if not py:
        return []
    olds = git.objects([f"{base}:{p}" for p in py])
    sources = []
    for path, old in zip(py, olds, strict=True):
        try:
            new = (root / path).read_text("utf-8", "replace")
        except OSError:
            continue
        sources.append(Source(path, old.data.decode("utf-8", "replace") if old else None, new))
    texts = (
        o.data.decode("utf-8", "replace")
        for o in git.objects([f"{base}:{t}" for t in tests])
        if o is not None
    )
    return [one_line(f.text()) for f in read(sources, texts, tests)]
