"""The three budget counters, folded over the commit range (step-mode.md, "Counters").

Each commit is read by every counter's rule in turn; within one commit a reset comes
before an increment, so a commit that does both leaves the counter at 1.

- test-fix: reset at package start (``gtd: planning``, ``gtd: package done``), at an
  agentic-review turn that touched FEEDBACK.md, and when a commit deletes ERRORS.md;
  +1 per ``gtd: errors``.
- review-fix: reset at package start; +1 per agentic-review turn that touched
  FEEDBACK.md.
- health-fix: reset at package start and when a commit deletes ERRORS.md; +1 per
  ``gtd: health-check``.

"Touched"/"deletes" match the ``.gtd/`` path and, for history written by earlier 2.x
builds, the old root path too (the README's upgrade note).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from gtd.step.config import Config
from gtd.step.events import Commit
from gtd.step.steering import ERRORS, FEEDBACK, LEGACY_ERRORS, LEGACY_FEEDBACK
from gtd.step.subjects import Routing, Turn

__all__ = [
    "Counters",
    "fold_counters",
    "is_feedback_round",
    "is_package_start",
    "removes_errors",
]


class Counters(NamedTuple):
    test_fix: int = 0
    review_fix: int = 0
    health_fix: int = 0

    def test_cap_reached(self, config: Config) -> bool:
        return self.test_fix >= config.fix_attempt_cap

    def health_cap_reached(self, config: Config) -> bool:
        return self.health_fix >= config.fix_attempt_cap

    def force_approve(self, config: Config) -> bool:
        """Agentic review is skipped: switched off, or its findings budget is spent."""
        return not config.agentic_review or self.review_fix >= config.review_threshold


def is_package_start(commit: Commit) -> bool:
    parsed = commit.parsed
    return isinstance(parsed, Routing) and parsed.route in ("planning", "package done")


def is_feedback_round(commit: Commit) -> bool:
    """An agentic-review turn whose diff touched FEEDBACK.md — a findings round, and
    (README) also the approval write itself."""
    parsed = commit.parsed
    return (
        isinstance(parsed, Turn)
        and parsed.actor == "agent"
        and parsed.gate == "agentic-review"
        and commit.touched(FEEDBACK, LEGACY_FEEDBACK)
    )


def removes_errors(commit: Commit) -> bool:
    return commit.deleted(ERRORS, LEGACY_ERRORS)


def _is_route(commit: Commit, route: str) -> bool:
    parsed = commit.parsed
    return isinstance(parsed, Routing) and parsed.route == route


def fold_counters(commits: Iterable[Commit]) -> Counters:
    test_fix = review_fix = health_fix = 0
    for commit in commits:
        start = is_package_start(commit)
        feedback = is_feedback_round(commit)
        errors_gone = removes_errors(commit)
        if start or feedback or errors_gone:
            test_fix = 0
        if _is_route(commit, "errors"):
            test_fix += 1
        if start:
            review_fix = 0
        if feedback:
            review_fix += 1
        if start or errors_gone:
            health_fix = 0
        if _is_route(commit, "health-check"):
            health_fix += 1
    return Counters(test_fix, review_fix, health_fix)
