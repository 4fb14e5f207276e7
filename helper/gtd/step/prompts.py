"""The prompts ``gtd next`` prints (docs/step-mode.md,
"How it is built").

One template per prompt-bearing state in ``gtd/templates/step/`` and shared partials
in ``partials/`` (header, diff, feedback, package and the pinned agent tail),
rendered by the helper's one strict engine (gtd.templates: ``{{ name }}``,
``{{> partial }}``; an unknown name is an error, so a template typo fails the tests
instead of printing a hole). After rendering, runs of three or more blank lines
collapse to two and the text ends with exactly one newline.

:func:`render` is pure (context in, text out), and so is everything here that
decides a prompt's name and fixed values; :mod:`gtd.step.inlines` is the edge
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

from collections.abc import Mapping, Sequence

from gtd import templates
from gtd.step.events import Commit
from gtd.step.machine import Resolution
from gtd.step.settings import StepConfig
from gtd.step.states import State
from gtd.step.subjects import Party, Routing

__all__ = [
    "DIFF_CAP",
    "NO_PROMPT_STATES",
    "base_context",
    "cap",
    "cycle_log",
    "fenced",
    "findings_section",
    "model_for",
    "newest",
    "package_start",
    "prompt_name",
    "render",
    "template_name",
]

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


def model_for(state: State, config: StepConfig) -> str:
    key, tier = _MODEL_KEY.get(state, ("", "planning"))
    models = config.models
    if key and key in models.states:
        return models.states[key]
    return models.planning if tier == "planning" else models.execution


def render(name: str, context: Mapping[str, str]) -> str:
    """The prompt template ``name`` (``gtd/templates/step/<name>.md``) rendered by
    the one strict engine (gtd.templates), tidied as a prompt prints."""
    return templates.render(f"step/{name}.md", context, tidy=True)


# -- the fixed values of a prompt -----------------------------------------------------


def prompt_name(resolution: Resolution, config: StepConfig) -> str:
    """The template ``resolution``'s rest renders (:func:`template_name`, with the
    scripted checks' escalation)."""
    name = template_name(resolution.state, resolution.actor)
    if name == "escalate" and config.scripted:
        return "escalate-scripted"
    return name


def base_context(
    name: str, resolution: Resolution, config: StepConfig, *, plain: bool
) -> dict[str, str]:
    """The values every agent or human prompt carries; the edge adds what the
    template ``name`` inlines from the repository."""
    state, actor = resolution.state, resolution.actor
    tail_name = "agent-tail-scripted" if config.scripted else "agent-tail"
    tail = (
        templates.template(f"step/partials/{tail_name}.md").rstrip("\n")
        if plain and actor == "agent"
        else ""
    )
    intro = _INTRO[name]
    if name in _RUN_THE_TESTS and config.test_command_source in _SOURCE_NOTE:
        intro += "\n\n" + _SOURCE_NOTE[config.test_command_source].format(config.test_command)
    return {
        "state": state,
        "actor": actor,
        "intro": intro,
        "model": model_for(state, config),
        "test_command": config.test_command,
        "tail": tail,
        "todo_section": "",
        "notes_step": "",
        "review_base": resolution.review_base or "",
        "format_findings": findings_section(resolution),
    }


# Files a human's sketch adds that only describe the request (`IDEA.md`, notes):
# left in the tree, the squash would ship them as part of the feature.
_NOTE_SUFFIXES = (".md", ".txt", ".markdown", ".rst")
_PROJECT_DOCS = ("readme", "changelog", "changes", "history", "license", "contributing")


def sketch_notes(added: Sequence[str]) -> list[str]:
    """The files among ``added`` (what the human's grilling turn added) that look
    like notes about the request rather than the project's own files: a text or
    markdown file outside ``.gtd/`` and ``docs/``, not a README or CHANGELOG."""
    found: list[str] = []
    for path in added:
        name = path.rsplit("/", 1)[-1].lower()
        if path.startswith((".gtd/", "docs/")) or not name.endswith(_NOTE_SUFFIXES):
            continue
        if name.split(".", 1)[0] in _PROJECT_DOCS:
            continue
        found.append(path)
    return found


def notes_step(notes: Sequence[str]) -> str:
    """The grilling prompt's step about the human's note files ("" for none)."""
    if not notes:
        return ""
    named = ", ".join(f"`{n}`" for n in notes)
    if len(notes) == 1:
        verb, says, them, which = "describes", "it says", "it", "it is"
    else:
        verb, says, them, which = "describe", "they say", "them", "one is"
    return (
        f"5. {named} only {verb} the request: carry what {says} into `.gtd/TODO.md`, "
        f"then delete {them}; an unchanged note is left out of the squashed commit. "
        f"If {which} documentation the project keeps, move it under `docs/`."
    )


def cap(text: str) -> str:
    """A diff as a prompt inlines it: capped at :data:`DIFF_CAP` characters."""
    text = text.rstrip("\n")
    if len(text) <= DIFF_CAP:
        return text or "(empty)"
    return text[:DIFF_CAP] + f"\n… (truncated at {DIFF_CAP} characters — run git diff for the rest)"


def fenced(title: str, text: str) -> str:
    """A section quoting a markdown file: ``## title`` and the text in a fence."""
    return f"## {title}\n\n````markdown\n{text.rstrip()}\n````"


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


def newest(commits: tuple[Commit, ...], *wanted: object) -> Commit | None:
    """The newest commit whose parsed subject is one of ``wanted``."""
    for commit in reversed(commits):
        if commit.parsed in wanted:
            return commit
    return None


def package_start(commits: tuple[Commit, ...]) -> str | None:
    """Where the package being built began: its planning or the last package done."""
    start = newest(commits, Routing("planning"), Routing("package done"))
    return start.sha if start is not None else None


def cycle_log(commits: tuple[Commit, ...], base: str | None) -> str:
    """The cycle's commits after ``base``, one ``<sha> <subject>`` a line."""
    start = 0
    if base is not None:
        for i, commit in enumerate(commits):
            if commit.sha == base:
                start = i + 1
    return "\n".join(f"{c.sha[:10]} {c.subject}" for c in commits[start:]) or "(none)"
