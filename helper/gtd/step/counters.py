"""The three budget counters, folded over the commit range.

Each commit is read by every counter's rule in turn; within one commit a reset comes
before an increment, so a commit that does both leaves the counter at 1.

- test-fix: reset at package start (``gtd: planning``, ``gtd: package done``), at an
  agentic-review turn that touched FEEDBACK.md, and when a commit deletes ERRORS.md;
  +1 per red test run: ``gtd: errors``, or with scripted checks
  ``gtd(check): test-failed`` / ``gtd(check): escalated``.
- review-fix: reset at package start; +1 per agentic-review turn that touched
  FEEDBACK.md.
- health-fix: reset at package start and when a commit deletes ERRORS.md; +1 per
  red health check: ``gtd: health-check``, ``gtd(check): health-failed`` or
  ``gtd(check): health-escalated``.

The scripted check's turns also carry the counters as they stand after the turn, as
a ``Gtd-Counters: t=<test-fix> r=<review-fix> h=<health-fix>`` trailer
(:meth:`Counters.trailer`): a record for people reading ``git log``. The fold
never reads it — subjects and change lists stay the one source, so histories
without trailers (every 2.x one) count the same.

"Touched"/"deletes" match the ``.gtd/`` path and, for history written by earlier 2.x
builds, the old root path too (gtd 2.x's upgrade note).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gtd.step.events import Commit
from gtd.step.settings import StepConfig
from gtd.step.steering import ERRORS, FEEDBACK, LEGACY_ERRORS, LEGACY_FEEDBACK
from gtd.step.subjects import Check, Routing, Subject, Turn
from gtd.tuples import NamedTuple

__all__ = [
    "HEALTH_RUNS",
    "TEST_RUNS",
    "Counters",
    "changes_read_from",
    "count_commit",
    "fold_counters",
    "is_feedback_round",
    "is_package_start",
    "removes_errors",
]

# The commits that record a red run of each budget, inline and scripted.
TEST_RUNS: frozenset[Subject] = frozenset(
    {Routing("errors"), Check("test-failed"), Check("escalated")}
)
HEALTH_RUNS: frozenset[Subject] = frozenset(
    {Routing("health-check"), Check("health-failed"), Check("health-escalated")}
)


class Counters(NamedTuple):
    test_fix: int = 0
    review_fix: int = 0
    health_fix: int = 0

    def test_cap_reached(self, config: StepConfig) -> bool:
        return self.test_fix >= config.fix_attempt_cap

    def health_cap_reached(self, config: StepConfig) -> bool:
        return self.health_fix >= config.fix_attempt_cap

    def force_approve(self, config: StepConfig) -> bool:
        """Agentic review is skipped: switched off, or its findings budget is spent."""
        return not config.agentic_review or self.review_fix >= config.review_threshold

    def trailer(self) -> str:
        return f"Gtd-Counters: t={self.test_fix} r={self.review_fix} h={self.health_fix}"


def is_package_start(commit: Commit) -> bool:
    parsed = commit.parsed
    return isinstance(parsed, Routing) and parsed.route in ("planning", "package done")


def _is_agentic_review(parsed: Subject) -> bool:
    return isinstance(parsed, Turn) and parsed.actor == "agent" and parsed.gate == "agentic-review"


def is_feedback_round(commit: Commit) -> bool:
    """An agentic-review turn whose diff touched FEEDBACK.md — a findings round, and
    (as in gtd 2.x) also the approval write itself."""
    return _is_agentic_review(commit.parsed) and commit.touched(FEEDBACK, LEGACY_FEEDBACK)


def removes_errors(commit: Commit) -> bool:
    return commit.deleted(ERRORS, LEGACY_ERRORS)


def _last_package_start(commits: Sequence[Commit]) -> int:
    for i in range(len(commits) - 1, -1, -1):
        if is_package_start(commits[i]):
            return i
    return -1


def fold_counters(commits: Iterable[Commit]) -> Counters:
    """The counters at the newest commit.

    Folded from the newest package start on (it resets all three, and adds to none),
    and a commit's change list is read only where it can matter — an agentic-review
    turn's, and a commit's below which a ``gtd: errors`` or ``gtd: health-check``
    made a counter non-zero (a reset of zeros changes nothing) — so the edge need
    not read the others (:func:`changes_read_from`)."""
    seq = commits if isinstance(commits, Sequence) else tuple(commits)
    counters = Counters()
    for commit in seq[_last_package_start(seq) + 1 :]:
        counters = count_commit(counters, commit)
    return counters


def count_commit(counters: Counters, commit: Commit) -> Counters:
    """The counters after ``commit``, given those before it (a package start resets
    all three; within one commit a reset comes before an increment)."""
    if is_package_start(commit):
        return Counters()
    test_fix, review_fix, health_fix = counters
    parsed = commit.parsed
    feedback = is_feedback_round(commit)
    errors_gone = bool(test_fix or health_fix) and removes_errors(commit)
    if feedback or errors_gone:
        test_fix = 0
    if parsed in TEST_RUNS:
        test_fix += 1
    if feedback:
        review_fix += 1
    if errors_gone:
        health_fix = 0
    if parsed in HEALTH_RUNS:
        health_fix += 1
    return Counters(test_fix, review_fix, health_fix)


def changes_read_from(commits: Sequence[Commit]) -> int:
    """The index of the oldest commit whose change list :func:`fold_counters` may
    read (``len(commits)`` when none): the first agentic-review turn after the
    newest package start, or the commit after the first red run there (a
    :data:`TEST_RUNS` or :data:`HEALTH_RUNS` commit), whichever is older."""
    for i in range(_last_package_start(commits) + 1, len(commits)):
        parsed = commits[i].parsed
        if _is_agentic_review(parsed):
            return i
        if parsed in TEST_RUNS or parsed in HEALTH_RUNS:
            return i + 1
    return len(commits)
