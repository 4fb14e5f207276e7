"""The edge actions ``resolve`` asks for (step-mode.md, "Edge actions").

At most one per resolve; the edge performs it, gathers again and resolves again until
a rest, a refusal or a fixpoint. Each is a plain value so tests compare them with
``==`` and ``gtd step --json`` can list :meth:`describe` texts under ``actions``.
Every commit is "stage everything, commit, allow empty".
"""

from __future__ import annotations

from typing import Literal, NamedTuple, TypeAlias

from gtd.step.steering import FEEDBACK, HEALTH, SQUASH_MSG
from gtd.step.subjects import Turn, parse_subject

__all__ = [
    "SQUASH_TEMPLATE",
    "Action",
    "ClosePackage",
    "HealthCheck",
    "MakeCommit",
    "RunTests",
    "Squash",
    "WriteSquashTemplate",
    "is_squash_template",
    "silent_failure_message",
]

# Written by WriteSquashTemplate; the machine squashes only once the agent has
# replaced it, because the file becomes the squash commit's message verbatim.
SQUASH_TEMPLATE = (
    "type(scope): replace this template with one conventional-commits message\n"
    "\n"
    "Summarise what this cycle changed, and record the decisions taken while grilling.\n"
)


def _normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip()


def is_squash_template(text: str | None) -> bool:
    """True while SQUASH_MSG.md holds no usable message: absent, blank, or the
    unmodified template (trailing blanks and line endings aside)."""
    return text is None or not text.strip() or _normal(text) == _normal(SQUASH_TEMPLATE)


def silent_failure_message(command: str, exit_code: int) -> str:
    """What a red run that printed nothing writes to FEEDBACK/ERRORS/HEALTH.md."""
    return f"Test command `{command}` failed with exit code {exit_code} and produced no output."


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


Action: TypeAlias = (
    MakeCommit | RunTests | ClosePackage | WriteSquashTemplate | Squash | HealthCheck
)
