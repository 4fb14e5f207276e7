"""The prompts ``gtd next`` prints (step-mode.md, "Prompts"; README "Prompt
templates").

One template per prompt-bearing state in ``gtd/templates/step/`` and shared partials
in ``partials/`` (header, diff, feedback, package and the pinned agent tail). The
engine is deliberately tiny: ``{{ name }}`` inserts a context value, ``{{> name }}``
renders a partial with the same context; an unknown name is an error, so a template
typo fails the tests instead of printing a hole. After rendering, runs of three or
more blank lines collapse to two and the text ends with exactly one newline.

:func:`render` is pure (context in, text out); :func:`prompt_context` is the edge
that reads what a state inlines — the captured sketch or human edit, the package's
task files, the feedback, the review diff.

The validation loop: the grilling and review prompts quote the format rules of
:mod:`gtd.steering.questions` and :mod:`gtd.steering.review` (partials
``qa-format`` and ``review-format``, pinned to those docstrings by the tests), and
when the agent's draft was refused they open with every finding the machine
handed back (:attr:`Resolution.findings`) as ``path:line: message``.

Decisions: ``planning`` (package files amended while the agent is awaited) renders
the building prompt, since the agent's answer there is its building turn; the
model named in a prompt is ``models.states.<key>`` else the tier's model.

Scripted checks: the check actor's prompt is the wrapper script (template
``check``, values from :func:`gtd.step.script.script_context`); agent prompts in
plain mode end with the tail that also says what to do with a check script;
``escalate`` says the re-test is the check's turn. A test command that was not
configured is named with where it came from (detected, or gtd's default) in the
prompts that mention it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from gtd.git import Git
from gtd.step.config import Config
from gtd.step.events import Commit
from gtd.step.gather import read_changes, read_file
from gtd.step.machine import Resolution
from gtd.step.states import State
from gtd.step.steering import ERRORS, FEEDBACK, GTD_DIR, HEALTH, TODO
from gtd.step.subjects import Party, Routing, Turn

__all__ = [
    "NO_PROMPT_STATES",
    "findings_section",
    "model_for",
    "prompt_context",
    "render",
    "template_name",
]

_DIR = Path(__file__).resolve().parent.parent / "templates" / "step"
_TAG = re.compile(r"\{\{\s*(>?)\s*([A-Za-z0-9_-]+)\s*\}\}")
_BLANKS = re.compile(r"\n{4,}")
# Diffs inlined into a prompt are capped; the agent can always run git itself.
DIFF_CAP = 60_000

NO_PROMPT_STATES: frozenset[State] = frozenset({"testing", "close-package", "done", "health-check"})

# state -> (models.states key, tier)
_MODEL_KEY: dict[State, tuple[str, str]] = {
    "grilling": ("grilling", "planning"),
    "grilled": ("decompose", "planning"),
    "planning": ("building", "execution"),
    "building": ("building", "execution"),
    "fixing": ("fixing", "execution"),
    "health-fixing": ("fixing", "execution"),
    "agentic-review": ("agentic-review", "planning"),
    "review": ("clean", "planning"),
    "squashing": ("clean", "planning"),
}

_INTRO: dict[str, str] = {
    "grilling-agent": "The human captured a request (the diff below). Turn it into a plan.",
    "grilling-human": "The agent wrote a plan with suggested answers to its open questions.",
    "grilled": "The plan is settled. Break it into work packages.",
    "building": "Build the next work package.",
    "fixing": "The last check found problems in the package being built. Fix them.",
    "agentic-review": "The package is green. Review it against its specs.",
    "review": "Every package is done. Prepare the human review.",
    "await-review": "The review record is ready for you.",
    "escalate": "The tests are still red after the allowed fix attempts.",
    "escalate-scripted": "The tests are still red after the allowed fix attempts.",
    "idle": "Nothing is in flight.",
    "squashing": "The cycle is approved. Write the message it is squashed under.",
    "health-fixing": "The health check found the test suite red.",
}


# The prompts that name the test command.
_RUN_THE_TESTS = frozenset(
    {"building", "fixing", "escalate", "escalate-scripted", "health-fixing", "idle"}
)
_SOURCE_NOTE = {
    "detected": (
        "The test command is `{}`, detected from the project's files: no `testCommand` "
        "is configured (set it in `.gtdrc.json` to choose)."
    ),
    "default": (
        "The test command is `{}`, gtd's default: no `testCommand` is configured and no "
        "test runner was detected (set it in `.gtdrc.json`)."
    ),
}


def template_name(state: State, actor: Party) -> str:
    if actor == "check":
        return "check"
    if state in NO_PROMPT_STATES:
        raise ValueError(f"{state} renders no prompt (the edge performs it)")
    if state == "grilling":
        return f"grilling-{actor}"
    if state == "planning":
        return "building"
    return state


def model_for(state: State, config: Config) -> str:
    key, tier = _MODEL_KEY.get(state, ("", "planning"))
    models = config.models
    if key and key in models.states:
        return models.states[key]
    return models.planning if tier == "planning" else models.execution


def _load(name: str) -> str:
    return (_DIR / f"{name}.md").read_text(encoding="utf-8")


def _expand(text: str, context: Mapping[str, str], depth: int = 0) -> str:
    if depth > 5:
        raise ValueError("template partials nest too deeply")

    def sub(match: re.Match[str]) -> str:
        partial, name = match.group(1), match.group(2)
        if partial:
            return _expand(_load(f"partials/{name}").rstrip("\n"), context, depth + 1)
        if name not in context:
            raise KeyError(f"prompt template uses an unknown name: {name}")
        return context[name]

    return _TAG.sub(sub, text)


def render(name: str, context: Mapping[str, str]) -> str:
    text = _expand(_load(name), context)
    return _BLANKS.sub("\n\n\n", text.strip("\n")) + "\n"


# -- the edge: what each prompt inlines ------------------------------------------------


def _cap(text: str) -> str:
    text = text.rstrip("\n")
    if len(text) <= DIFF_CAP:
        return text or "(empty)"
    return text[:DIFF_CAP] + f"\n… (truncated at {DIFF_CAP} characters — run git diff for the rest)"


def _diff(git: Git, base: str | None, head: str) -> str:
    """The change since ``base`` (or ``head``'s own), outside .gtd/."""
    pathspec = [".", f":(exclude){GTD_DIR}"]
    if base is None:
        raw = git.run("show", "--no-color", "--format=", head, "--", *pathspec)
    else:
        raw = git.run("diff", "--no-color", f"{base}..{head}", "--", *pathspec)
    return _cap(raw)


def _commit_diff(git: Git, commit: Commit) -> str:
    raw = git.run("show", "--no-color", "--format=", commit.sha)
    return _cap(raw)


def findings_section(resolution: Resolution) -> str:
    """The refused draft's findings, one ``path:line: message`` a line; ``""`` when
    there are none."""
    findings = resolution.findings
    if not findings:
        return ""
    paths = sorted({f.path for f in findings})
    named = ", ".join(f"`{p}`" for p in paths)
    lines = "\n".join(f.render() for f in findings)
    return (
        "## Fix the format first\n\n"
        f"Your last turn was not captured: {named} breaks its format. Fix every "
        "finding below (the rules are further down), then finish your turn again.\n\n"
        f"````text\n{lines}\n````"
    )


def _todo_section(root: Path) -> str:
    text = read_file(root, TODO)
    if text is None:
        return ""
    return f"## The plan (`{TODO}`)\n\n````markdown\n{text.rstrip()}\n````"


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


def _newest(commits: tuple[Commit, ...], *wanted: object) -> Commit | None:
    for commit in reversed(commits):
        if commit.parsed in wanted:
            return commit
    return None


def _package_start(commits: tuple[Commit, ...]) -> str | None:
    start = _newest(commits, Routing("planning"), Routing("package done"))
    return start.sha if start is not None else None


def _cycle_log(commits: tuple[Commit, ...], base: str | None) -> str:
    start = 0
    if base is not None:
        for i, commit in enumerate(commits):
            if commit.sha == base:
                start = i + 1
    return "\n".join(f"{c.sha[:10]} {c.subject}" for c in commits[start:]) or "(none)"


def _last_plan(git: Git, commits: tuple[Commit, ...]) -> str:
    """The plan as it was when gtd consumed it (the parent of the commit that
    deleted TODO.md), for the squash message's record of decisions."""
    for commit in reversed(read_changes(git, commits, len(commits))):
        if commit.deleted(TODO) and commit.parent:
            text = git.run("show", f"{commit.parent}:{TODO}", check=False)
            if text.strip():
                return f"## The plan this cycle settled\n\n````markdown\n{text.rstrip()}\n````"
    return ""


def prompt_context(
    git: Git,
    commits: tuple[Commit, ...],
    resolution: Resolution,
    config: Config,
    *,
    plain: bool,
) -> tuple[str, dict[str, str]]:
    """The template name and everything it inlines for ``resolution``'s rest."""
    root = git.root
    state, actor = resolution.state, resolution.actor
    name = template_name(state, actor)
    if name == "check":
        from gtd.step.script import script_context

        return name, script_context(config, state)
    if name == "escalate" and config.scripted:
        name = "escalate-scripted"
    head = commits[-1].sha if commits else "HEAD"
    tail_name = "agent-tail-scripted" if config.scripted else "agent-tail"
    tail = _load(f"partials/{tail_name}").rstrip("\n") if plain and actor == "agent" else ""
    intro = _INTRO[name]
    if name in _RUN_THE_TESTS and config.test_command_source in _SOURCE_NOTE:
        intro += "\n\n" + _SOURCE_NOTE[config.test_command_source].format(config.test_command)
    ctx: dict[str, str] = {
        "state": state,
        "actor": actor,
        "intro": intro,
        "model": model_for(state, config),
        "test_command": config.test_command,
        "tail": tail,
        "todo_section": "",
        "review_base": resolution.review_base or "",
        "format_findings": findings_section(resolution),
    }
    if name == "grilling-agent":
        source = _newest(commits, Turn("human", "grilling"), Turn("human", "review"))
        ctx["diff_title"] = "What the human captured" + (
            f" (`{source.subject.strip()}`, {source.sha[:10]})" if source else ""
        )
        ctx["diff"] = _commit_diff(git, source) if source else "(no captured change)"
        ctx["todo_section"] = _todo_section(root)
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
            ctx["diff"] = _diff(git, _package_start(commits), head)
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
        ctx["cycle_log"] = _cycle_log(commits, base)
        ctx["diff_title"] = "The cycle's change (`.gtd/` left out)"
        ctx["diff"] = _diff(git, base, head)
    return name, ctx


def build_prompt(
    git: Git,
    commits: tuple[Commit, ...],
    resolution: Resolution,
    config: Config,
    *,
    plain: bool,
) -> str:
    name, context = prompt_context(git, commits, resolution, config, plain=plain)
    return render(name, context)
