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

__all__ = ["StepError", "StepErrorKind"]

StepErrorKind = Literal["illegal-combination", "corruption", "input"]


class StepError(StateError):
    """``kind`` tells the three sources apart: ``illegal-combination`` (precedence 1),
    ``corruption`` (precedence 5, no rule matched) and ``input`` (the edge handed the
    core values that contradict each other — a bug at the edge, not in the repo)."""

    def __init__(self, kind: StepErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: StepErrorKind = kind
