"""What each prompt inlines, read from git and disk: the edge around
:mod:`gtd.step.prompts` (which decides the template and its fixed values, and
renders).

Per template: the captured sketch or human edit (grilling), the plan (TODO.md),
the package's task files, the feedback or test output, the package's or the
cycle's diff (``.gtd/`` left out, capped at :data:`gtd.step.prompts.DIFF_CAP`) and
the plan a squashed cycle settled.
"""

from __future__ import annotations

from pathlib import Path

from gtd.git import Git
from gtd.step.events import Commit
from gtd.step.gather import read_changes, read_file
from gtd.step.machine import Resolution
from gtd.step.prompts import (
    base_context,
    cap,
    cycle_log,
    fenced,
    newest,
    notes_step,
    package_start,
    prompt_name,
    render,
    sketch_notes,
)
from gtd.step.settings import StepConfig
from gtd.step.steering import ERRORS, FEEDBACK, GTD_DIR, HEALTH, TODO
from gtd.step.subjects import Turn

__all__ = ["build_prompt", "prompt_context"]


def _diff(git: Git, base: str | None, head: str) -> str:
    """The change since ``base`` (or ``head``'s own), outside .gtd/."""
    pathspec = [".", f":(exclude){GTD_DIR}"]
    if base is None:
        raw = git.run("show", "--no-color", "--format=", head, "--", *pathspec)
    else:
        raw = git.run("diff", "--no-color", f"{base}..{head}", "--", *pathspec)
    return cap(raw)


def _added(git: Git, commit: Commit) -> list[str]:
    """The paths ``commit`` added that are still in the working tree (a note the
    agent already deleted is not asked about again)."""
    from gtd.step.sketch import added_by

    return [p for p in added_by(git, commit.sha) if (git.root / p).is_file()]


def _commit_diff(git: Git, commit: Commit) -> str:
    raw = git.run("show", "--no-color", "--format=", commit.sha)
    return cap(raw)


def _todo_section(root: Path) -> str:
    text = read_file(root, TODO)
    if text is None:
        return ""
    return fenced(f"The plan (`{TODO}`)", text)


def _package_tasks(root: Path, resolution: Resolution) -> tuple[str, str]:
    package = resolution.package
    if package is None:
        return "(none)", "(no package is left)"
    parts: list[str] = []
    for task in package.tasks:
        rel = f"{package.path}/{task}"
        text = (read_file(root, rel) or "").rstrip()
        parts.append(f"### `{rel}`\n\n````markdown\n{text}\n````")
    return package.name, "\n\n".join(parts) if parts else "(the package has no task files)"


def _last_plan(git: Git, commits: tuple[Commit, ...]) -> str:
    """The plan as it was when gtd consumed it (the parent of the commit that
    deleted TODO.md), for the squash message's record of decisions."""
    for commit in reversed(read_changes(git, commits, len(commits))):
        if commit.deleted(TODO) and commit.parent:
            text = git.run("show", f"{commit.parent}:{TODO}", check=False)
            if text.strip():
                return fenced("The plan this cycle settled", text)
    return ""


def prompt_context(
    git: Git,
    commits: tuple[Commit, ...],
    resolution: Resolution,
    config: StepConfig,
    *,
    plain: bool,
) -> tuple[str, dict[str, str]]:
    """The template name and everything it inlines for ``resolution``'s rest."""
    root = git.root
    name = prompt_name(resolution, config)
    if name == "check":
        from gtd.step.script import script_context

        return name, script_context(config, resolution.state)
    head = commits[-1].sha if commits else "HEAD"
    ctx = base_context(name, resolution, config, plain=plain)
    if name == "grilling-agent":
        source = newest(commits, Turn("human", "grilling"), Turn("human", "review"))
        ctx["diff_title"] = "What the human captured" + (
            f" (`{source.subject.strip()}`, {source.sha[:10]})" if source else ""
        )
        ctx["diff"] = _commit_diff(git, source) if source else "(no captured change)"
        ctx["todo_section"] = _todo_section(root)
        if source is not None and source.subject.strip() == "gtd(human): grilling":
            ctx["notes_step"] = notes_step(sketch_notes(_added(git, source)))
    elif name in ("grilling-human", "grilled"):
        ctx["todo_section"] = _todo_section(root)
    elif name in ("building", "fixing", "agentic-review"):
        ctx["package"], ctx["package_tasks"] = _package_tasks(root, resolution)
        if name == "fixing":
            ctx["feedback_title"] = "Findings"
            ctx["feedback_path"] = FEEDBACK
            ctx["feedback"] = (read_file(root, FEEDBACK) or "").rstrip() or "(empty)"
        if name == "agentic-review":
            ctx["diff_title"] = "The package's diff (`.gtd/` left out)"
            ctx["diff"] = _diff(git, package_start(commits), head)
    elif name == "review":
        base = resolution.review_base or (commits[0].parent if commits else None)
        ctx["review_base"] = base or "root"
        ctx["head_short"] = head[:7]
        ctx["diff_title"] = f"The change under review ({(base or 'root')[:10]}..HEAD)"
        ctx["diff"] = _diff(git, base, head)
    elif name in ("escalate", "escalate-scripted", "health-fixing"):
        path = HEALTH if name == "health-fixing" else ERRORS
        ctx["feedback_title"] = "Test output"
        ctx["feedback_path"] = path
        ctx["feedback"] = (read_file(root, path) or "").rstrip() or "(empty)"
    elif name == "squashing":
        base = resolution.squash_base
        ctx["plan_section"] = _last_plan(git, commits)
        ctx["cycle_log"] = cycle_log(commits, base)
        ctx["diff_title"] = "The cycle's change (`.gtd/` left out)"
        ctx["diff"] = _diff(git, base, head)
    return name, ctx


def build_prompt(
    git: Git,
    commits: tuple[Commit, ...],
    resolution: Resolution,
    config: StepConfig,
    *,
    plain: bool,
) -> str:
    name, context = prompt_context(git, commits, resolution, config, plain=plain)
    return render(name, context)
