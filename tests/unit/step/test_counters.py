"""The three counter folds: resets, increments, and a
reset before an increment within one commit."""

from __future__ import annotations

import pytest

from gtd.step.counters import Counters, fold_counters
from gtd.step.settings import StepConfig
from tests.unit.step.build import CommitSpec, history

REVIEW_TURN = "gtd(agent): agentic-review"


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param([], Counters(0, 0, 0), id="empty range"),
        # test-fix
        pytest.param(["gtd: errors", "gtd: errors"], Counters(2, 0, 0), id="+1 per errors"),
        pytest.param(
            ["gtd: errors", "gtd: planning", "gtd: errors"],
            Counters(1, 0, 0),
            id="test-fix reset at gtd: planning",
        ),
        pytest.param(
            ["gtd: errors", "gtd: errors", "gtd: package done"],
            Counters(0, 0, 0),
            id="test-fix reset at gtd: package done",
        ),
        pytest.param(
            ["gtd: errors", (REVIEW_TURN, "A FEEDBACK"), "gtd: errors"],
            Counters(1, 1, 0),
            id="test-fix reset at a feedback round",
        ),
        pytest.param(
            ["gtd: errors", (REVIEW_TURN, "M src/a.py"), "gtd: errors"],
            Counters(2, 0, 0),
            id="agentic-review turn without FEEDBACK.md is no round",
        ),
        pytest.param(
            ["gtd: errors", ("gtd(human): escalate", "D ERRORS"), "gtd: errors"],
            Counters(1, 0, 0),
            id="test-fix reset when ERRORS.md is deleted",
        ),
        pytest.param(
            ["gtd: errors", ("chore: tidy", "D ERRORS")],
            Counters(0, 0, 0),
            id="the deletion counts whatever the subject",
        ),
        pytest.param(
            ["gtd: errors", ("gtd(human): escalate", "M ERRORS")],
            Counters(1, 0, 0),
            id="editing ERRORS.md is no reset",
        ),
        # review-fix
        pytest.param(
            [(REVIEW_TURN, "A FEEDBACK"), (REVIEW_TURN, "M FEEDBACK"), (REVIEW_TURN, "D FEEDBACK")],
            Counters(0, 3, 0),
            id="+1 per agentic-review turn touching FEEDBACK.md (any status)",
        ),
        pytest.param(
            [(REVIEW_TURN, "A FEEDBACK"), "gtd: package done", (REVIEW_TURN, "A FEEDBACK")],
            Counters(0, 1, 0),
            id="review-fix reset at package start",
        ),
        pytest.param(
            [(REVIEW_TURN, "A FEEDBACK"), ("gtd(human): escalate", "D ERRORS")],
            Counters(0, 1, 0),
            id="review-fix survives an ERRORS.md deletion",
        ),
        pytest.param(
            [("gtd(human): agentic-review", "A FEEDBACK")],
            Counters(0, 0, 0),
            id="only the agent's agentic-review turn counts",
        ),
        # health-fix
        pytest.param(
            ["gtd: health-check", "gtd: health-fix", "gtd: health-check"],
            Counters(0, 0, 2),
            id="+1 per health-check",
        ),
        pytest.param(
            ["gtd: health-check", ("gtd(human): escalate", "D ERRORS"), "gtd: health-check"],
            Counters(0, 0, 1),
            id="health-fix reset when ERRORS.md is deleted",
        ),
        pytest.param(
            ["gtd: health-check", "gtd: planning"],
            Counters(0, 0, 0),
            id="health-fix reset at package start",
        ),
        pytest.param(
            ["gtd: health-check", "gtd: tests green"],
            Counters(0, 0, 1),
            id="tests green resets nothing",
        ),
        # reset before increment within one commit
        pytest.param(
            ["gtd: errors", ("gtd: errors", "D ERRORS")],
            Counters(1, 0, 0),
            id="test-fix: reset then +1 in the same commit",
        ),
        pytest.param(
            ["gtd: health-check", ("gtd: health-check", "D ERRORS")],
            Counters(0, 0, 1),
            id="health-fix: reset then +1 in the same commit",
        ),
        # legacy root paths in old history (README upgrade note)
        pytest.param(
            ["gtd: errors", (REVIEW_TURN, "A FEEDBACK.md")],
            Counters(0, 1, 0),
            id="root FEEDBACK.md of older 2.x history counts",
        ),
        pytest.param(
            ["gtd: errors", "gtd: health-check", ("gtd(human): escalate", "D ERRORS.md")],
            Counters(0, 0, 0),
            id="root ERRORS.md deletion of older 2.x history counts",
        ),
        # boundaries are inert
        pytest.param(
            ["gtd: errors", "feat: x", "gtd: new task", "gtd: errors"],
            Counters(2, 0, 0),
            id="boundary commits change nothing",
        ),
    ],
)
def test_fold(items: list[CommitSpec], expected: Counters) -> None:
    assert fold_counters(history(*items)) == expected


@pytest.mark.parametrize(
    ("counters", "config", "test_cap", "health_cap", "force"),
    [
        (Counters(2, 2, 2), StepConfig(), False, False, False),
        (Counters(3, 3, 3), StepConfig(), True, True, True),
        (Counters(0, 0, 0), StepConfig(fix_attempt_cap=0), True, True, False),
        (Counters(0, 0, 0), StepConfig(agentic_review=False), False, False, True),
        (Counters(0, 1, 0), StepConfig(review_threshold=1), False, False, True),
    ],
)
def test_budgets(
    counters: Counters, config: StepConfig, test_cap: bool, health_cap: bool, force: bool
) -> None:
    assert counters.test_cap_reached(config) is test_cap
    assert counters.health_cap_reached(config) is health_cap
    assert counters.force_approve(config) is force
