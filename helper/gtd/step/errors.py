"""The one error step mode's pure core raises.

``resolve`` never guesses: a steering-file combination that cannot arise in normal
flow, a history no precedence rule explains, or inputs the edge filled
inconsistently all become a :class:`StepError`. It is a :class:`gtd.errors.StateError`
(hence a ``GtdError``), so the CLI's single handler prints ``gtd: <message>`` and
exits 1 without step mode needing a handler of its own.
"""

from __future__ import annotations

from typing import Literal

from gtd.errors import StateError

__all__ = ["ChangesNotGathered", "StepError", "StepErrorKind"]

StepErrorKind = Literal["illegal-combination", "corruption", "input"]


class StepError(StateError):
    """``kind`` tells the three sources apart: ``illegal-combination`` (precedence 1),
    ``corruption`` (precedence 5, no rule matched) and ``input`` (the edge handed the
    core values that contradict each other — a bug at the edge, not in the repo)."""

    def __init__(self, kind: StepErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: StepErrorKind = kind


class ChangesNotGathered(Exception):
    """A fold read the change list of a commit the edge did not read it for.

    The edge reads change lists (``--name-status``) only for the newest commits the
    folds can look at (:func:`gtd.step.machine.changes_wanted`); this is the safety
    net should any reader reach further. Deliberately not a :class:`StepError` (no
    handler of the core's may swallow it): the edge catches it, reads every change
    list and resolves again, so the answer never depends on what was skipped."""

    def __init__(self, sha: str) -> None:
        super().__init__(f"the change list of {sha[:12]} was not gathered")
        self.sha = sha
