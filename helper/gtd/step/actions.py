"""The edge actions ``resolve`` asks for.

At most one per resolve; the edge performs it, gathers again and resolves again until
a rest, a refusal or a fixpoint. Each is a plain value so tests compare them with
``==`` and ``gtd step --json`` can list :meth:`describe` texts under ``actions``.
Every commit is "stage everything, commit, allow empty".
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from gtd.step.counters import Counters
from gtd.step.steering import FEEDBACK, HEALTH, SQUASH_MSG
from gtd.step.subjects import Check, CheckLabel, Turn, parse_subject
from gtd.tuples import NamedTuple

__all__ = [
    "SQUASH_TEMPLATE",
    "SQUASH_TEMPLATE_2_0",
    "Action",
    "CaptureCheck",
    "ClosePackage",
    "HealthCheck",
    "MakeCommit",
    "RunCheck",
    "RunTests",
    "Squash",
    "WriteSquashTemplate",
    "is_squash_template",
    "silent_failure_message",
    "silent_failure_parts",
]

# Written by WriteSquashTemplate; the machine squashes only once the agent has
# replaced it, because the file becomes the squash commit's message verbatim.
SQUASH_TEMPLATE = (
    "type(scope): replace this template with one conventional-commits message\n"
    "\n"
    "Summarise what this cycle changed, and record the decisions taken while grilling.\n"
)


# The template gtd 2.0.0 writes. A repository moving between the two implementations
# mid-squash must not squash under either placeholder, so both count as unfinished.
SQUASH_TEMPLATE_2_0 = (
    "<!-- gtd: replace this file's content with the real squash commit message. -->\n"
    "<!-- Use conventional-commits style, e.g. `feat: add thing` or `fix: correct thing`. -->\n"
    "\n"
    "type: short summary\n"
    "\n"
    "Longer description of the change, if needed.\n"
)


def _normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip()


_TEMPLATES = frozenset(_normal(t) for t in (SQUASH_TEMPLATE, SQUASH_TEMPLATE_2_0))


def is_squash_template(text: str | None) -> bool:
    """True while SQUASH_MSG.md holds no usable message: absent, blank, or an
    unmodified template — ours or gtd 2.0.0's (trailing blanks and line endings
    aside)."""
    return text is None or not text.strip() or _normal(text) in _TEMPLATES


def silent_failure_parts(command: str) -> tuple[str, str]:
    """The sentinel's text before and after the exit code (the check script puts
    the code between them itself)."""
    return f"Test command `{command}` failed with exit code ", " and produced no output."


def silent_failure_message(command: str, exit_code: int) -> str:
    """What a red run that printed nothing writes to FEEDBACK/ERRORS/HEALTH.md."""
    before, after = silent_failure_parts(command)
    return f"{before}{exit_code}{after}"


class MakeCommit(NamedTuple):
    """Delete ``removes`` (when present), stage everything and commit ``subject``.
    Turn captures and routing commits alike; a hook that rejects the empty commit is
    retried without hooks."""

    subject: str
    removes: tuple[str, ...] = ()

    def describe(self) -> str:
        parsed = parse_subject(self.subject)
        if isinstance(parsed, Turn):
            return f'capture the {parsed.actor} turn as "{self.subject}"'
        text = f'commit "{self.subject}"'
        return f"{text}, removing {', '.join(self.removes)}" if self.removes else text


class RunTests(NamedTuple):
    """Remove FEEDBACK.md and run the test command. Green: commit ``gtd: tests
    green``. Red: write the output to FEEDBACK.md — or to ERRORS.md when
    ``cap_reached`` — and commit ``gtd: errors``. ``attempts`` is the test-fix count
    so far (for messages)."""

    cap_reached: bool
    attempts: int

    def describe(self) -> str:
        return f"run the tests (removing {FEEDBACK}; fix attempts so far: {self.attempts})"


class ClosePackage(NamedTuple):
    """Remove FEEDBACK.md and the package folder ``.gtd/<package>`` (and ``.gtd/`` if
    that empties it), commit ``gtd: package done``."""

    package: str
    # NamedTuples compare as tuples: the tag keeps ClosePackage("x") != Squash("x").
    kind: Literal["close-package"] = "close-package"

    def describe(self) -> str:
        return f'close package {self.package} and commit "gtd: package done"'


class WriteSquashTemplate:
    """Write :data:`SQUASH_TEMPLATE` to SQUASH_MSG.md, commit ``gtd: squash template``.

    Fieldless, so a plain class rather than a NamedTuple (an empty tuple is falsy)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is WriteSquashTemplate

    def __hash__(self) -> int:
        return hash(WriteSquashTemplate)

    def __repr__(self) -> str:
        return "WriteSquashTemplate()"

    def describe(self) -> str:
        return f'write {SQUASH_MSG} and commit "gtd: squash template"'


class Squash(NamedTuple):
    """Read SQUASH_MSG.md, remove it, ``reset --soft <base>``, commit the message
    verbatim."""

    base: str
    kind: Literal["squash"] = "squash"  # see ClosePackage.kind

    def describe(self) -> str:
        return f"squash the cycle onto {self.base[:12]} with the message in {SQUASH_MSG}"


class HealthCheck(NamedTuple):
    """Run the test command as a health check.

    Red: write the output to HEALTH.md — or, when ``cap_reached``, to ERRORS.md and
    remove HEALTH.md (the two never coexist) — and commit ``gtd: health-check``.
    Green with ``commit_green``: remove HEALTH.md if present and commit ``gtd: tests
    green``. Green without it: zero commits — HEAD and tree are unchanged, which the
    edge loop must treat as its fixpoint.
    """

    cap_reached: bool
    attempts: int
    commit_green: bool

    def describe(self) -> str:
        if self.commit_green:
            return f'run the health check (green: remove {HEALTH}, commit "gtd: tests green")'
        return "run the health check"


class RunCheck(NamedTuple):
    """Run the check script gtd writes for ``state`` (never any other text), then go
    on as the check actor, whose turn captures the effect. Only the human's
    ``gtd step`` at idle asks for this (the idle carve-out of scripted checks) —
    and ``gtd run``, which asks for it itself."""

    state: str
    kind: Literal["run-check"] = "run-check"  # see ClosePackage.kind

    def describe(self) -> str:
        return f"run the check script for {self.state}"


class CaptureCheck(NamedTuple):
    """Capture the check's turn: move the check's FEEDBACK.md to ``moves_to`` when
    set (ERRORS.md at the cap, HEALTH.md for a red health check), remove
    ``removes``, and commit ``gtd(check): <label>`` with ``counters`` — the counters
    after this turn — as the ``Gtd-Counters`` trailer."""

    label: CheckLabel
    counters: Counters
    moves_to: str | None = None
    removes: tuple[str, ...] = ()

    @property
    def subject(self) -> str:
        return Check(self.label).render()

    @property
    def message(self) -> str:
        return f"{self.subject}\n\n{self.counters.trailer()}\n"

    def describe(self) -> str:
        text = f'capture the check turn as "{self.subject}"'
        if self.moves_to is not None:
            text += f", moving {FEEDBACK} to {self.moves_to}"
        return text


Action: TypeAlias = (
    MakeCommit
    | RunTests
    | ClosePackage
    | WriteSquashTemplate
    | Squash
    | HealthCheck
    | RunCheck
    | CaptureCheck
)
