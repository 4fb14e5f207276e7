"""The scripted check's capture rules (docs/step-mode.md,
"Scripted checks": mechanics in the script, semantics at capture).

With ``"checks": "scripted"`` the test run and the health check are not run by the
machine: their states rest awaiting the ``check`` actor, a driver runs the wrapper
script gtd writes (:mod:`gtd.step.script`), and ``gtd step check`` captures what the
script left in the tree. The script only ever does mechanics — it writes
``.gtd/FEEDBACK.md`` with the command's output when the command fails, and nothing
when it passes. Everything that steers is decided here, at capture time, from that
one fact and the counters folded from history *now*: whether the budget is spent,
whether the package is force-approved, whether the output becomes FEEDBACK.md,
ERRORS.md or HEALTH.md. A script emitted before the budget changed and run after
is therefore harmless: the script is the same for every check, and the label is
chosen against the current trailer of counters.

=================  ===============  ==============================================
rest               check's output   captured turn (``gtd(check): <label>``)
=================  ===============  ==============================================
testing            FEEDBACK.md      ``test-failed`` (FEEDBACK.md stays), or at the
                                    cap ``escalated`` (moved to ERRORS.md)
testing            none             ``close-package-approved`` when agentic review
                                    is off or its budget spent, else
                                    ``agentic-review``; ``tests-green`` without
                                    packages
health-check       FEEDBACK.md      ``health-failed`` (moved to HEALTH.md), or at
                                    the cap ``health-escalated`` (to ERRORS.md)
health-check       none             ``tests-green`` (HEALTH.md removed)
idle               FEEDBACK.md      as health-check
idle               none             nothing: a green health check at idle makes no
                                    commit, as in gtd 2.x
=================  ===============  ==============================================

Each label is the scripted twin of a 2.x routing commit (``test-failed`` and
``escalated`` of ``gtd: errors``, the green ones of ``gtd: tests green``,
``health-*`` of ``gtd: health-check``), counted and routed the same way.
"""

from __future__ import annotations

from typing import Literal

from gtd.step.actions import CaptureCheck
from gtd.step.counters import Counters, count_commit
from gtd.step.events import Commit
from gtd.step.settings import StepConfig
from gtd.step.steering import ERRORS, HEALTH
from gtd.step.subjects import Check, CheckLabel

__all__ = ["CheckRest", "capture"]

# Where the check is taken: the test run, the health check a health fix (or an
# escalation of the health loop) asks for, and the idle health check.
CheckRest = Literal["testing", "health-check", "idle"]

_NO_SHA = "0" * 40


def _turn(
    label: CheckLabel,
    counters: Counters,
    moves_to: str | None = None,
    removes: tuple[str, ...] = (),
) -> CaptureCheck:
    # The trailer records the counters after this turn: fold the turn itself.
    after = count_commit(counters, Commit(_NO_SHA, Check(label).render(), None, ()))
    return CaptureCheck(label, after, moves_to, removes)


def capture(
    rest: CheckRest, *, red: bool, counters: Counters, config: StepConfig, packages: bool
) -> CaptureCheck | None:
    """The check's turn at ``rest``: ``red`` is whether the script left its output
    (``.gtd/FEEDBACK.md``); None means nothing to commit (green at idle)."""
    if rest == "testing":
        if red:
            if counters.test_cap_reached(config):
                return _turn("escalated", counters, moves_to=ERRORS)
            return _turn("test-failed", counters)
        if not packages:
            return _turn("tests-green", counters)
        if counters.force_approve(config):
            return _turn("close-package-approved", counters)
        return _turn("agentic-review", counters)
    if red:
        if counters.health_cap_reached(config):
            return _turn("health-escalated", counters, moves_to=ERRORS, removes=(HEALTH,))
        return _turn("health-failed", counters, moves_to=HEALTH)
    if rest == "health-check":
        return _turn("tests-green", counters, removes=(HEALTH,))
    return None
