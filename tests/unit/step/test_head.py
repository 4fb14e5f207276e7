"""Every row of the state machine's HEAD classification table (precedence 3).

Each case names the row; the tree is the minimum that keeps precedence 1 and 2 out
of the way. "R" is a rest as ``gtd next`` reports it, "M" a mid-chain HEAD with the
action any mutator performs."""

from __future__ import annotations

import pytest

from gtd.step.actions import (
    SQUASH_TEMPLATE,
    ClosePackage,
    HealthCheck,
    MakeCommit,
    RunTests,
    Squash,
    WriteSquashTemplate,
)
from gtd.step.events import LineDiff, WorkingTree
from gtd.step.settings import StepConfig
from gtd.step.steering import HEALTH, REVIEW, TODO
from tests.unit.step.build import CommitSpec, history, sha, tree
from tests.unit.step.helpers import Shape, classify

START: list[CommitSpec] = ["chore: init", ("gtd(human): grilling", "A idea.md")]  # sha(1), sha(2)
CYCLE: list[CommitSpec] = [
    *START,
    ("gtd(agent): grilling", "A TODO"),
    ("gtd(agent): building", "A src/a.py"),
]
HEALTH_LOOP: list[CommitSpec] = [
    "chore: init",
    "gtd: health-check",
    ("gtd(agent): health-fixing", "D HEALTH"),
]
FLIP = LineDiff(("- [ ] ./src/a.py",), ("- [x] ./src/a.py",))
PROSE = LineDiff(("Fine.",), ("Rename it.",))
PKG = "01-a"
NO_SQUASH = StepConfig(squash=False)

CASES = [
    # gtd(agent): grilling
    ("agent grilling, empty", [*START, "gtd(agent): grilling"], tree("TODO", dirty="A TODO"),
     None, ("R", "grilling", "agent", None)),
    ("agent grilling, wrote the plan", [*START, ("gtd(agent): grilling", "A TODO")],
     tree("TODO"), None, ("R", "grilling", "human", None)),
    # gtd(human): grilling
    ("human grilling, empty accepts the defaults",
     [*START, ("gtd(agent): grilling", "A TODO"), "gtd(human): grilling"], tree("TODO"), None,
     ("M", "grilling", "human", MakeCommit("gtd: grilled"))),
    ("human grilling, answers", [*START, ("gtd(agent): grilling", "A TODO"),
     ("gtd(human): grilling", "M TODO")], tree("TODO"), None, ("R", "grilling", "agent", None)),
    # gtd(agent): grilled
    ("agent grilled with packages",
     [*START, "gtd: grilled", ("gtd(agent): grilled", "A .gtd/01-a/01-t.md")],
     tree("TODO", packages=PKG), None,
     ("M", "grilled", "agent", MakeCommit("gtd: planning", (TODO,)))),
    ("agent grilled without packages", [*START, "gtd: grilled", "gtd(agent): grilled"],
     tree("TODO"), None, ("R", "grilled", "agent", None)),
    # gtd(agent): building, gtd(human): escalate
    ("agent building", CYCLE, tree(packages=PKG), None,
     ("M", "testing", "agent", RunTests(cap_reached=False, attempts=0))),
    ("agent building at the cap", [*CYCLE, "gtd: errors", "gtd: errors", "gtd: errors",
     ("gtd(agent): building", "M src/a.py")], tree(packages=PKG), None,
     ("M", "testing", "agent", RunTests(cap_reached=True, attempts=3))),
    ("human escalate", [*CYCLE, "gtd: errors", ("gtd(human): escalate", "D ERRORS")],
     tree(packages=PKG), None, ("M", "testing", "human", RunTests(False, 0))),
    ("human escalate, health loop (no packages): a health check",
     [*HEALTH_LOOP, "gtd: health-fix", "gtd: health-check", ("gtd(human): escalate", "D ERRORS")],
     tree(), None, ("M", "health-check", "human", HealthCheck(False, 0, commit_green=True))),
    ("human escalate, ERRORS.md deletion still pending: capture it first",
     [*CYCLE, "gtd: errors", "gtd(human): escalate"], tree(packages=PKG, dirty="D ERRORS"),
     None, ("R", "escalate", "human", None)),
    ("human escalate, health loop, ERRORS.md kept",
     [*HEALTH_LOOP, "gtd: health-fix", "gtd: health-check", "gtd(human): escalate"],
     tree("ERRORS"), None, ("R", "escalate", "human", None)),
    # gtd(agent): fixing
    ("agent fixing, empty", [*CYCLE, "gtd: errors", "gtd(agent): fixing"],
     tree("FEEDBACK", packages=PKG, feedback="boom"), None, ("R", "fixing", "agent", None)),
    ("agent fixing, changed code", [*CYCLE, "gtd: errors", ("gtd(agent): fixing", "M src/a.py")],
     tree("FEEDBACK", packages=PKG, feedback="boom"), None,
     ("M", "testing", "agent", RunTests(False, 1))),
    # gtd(agent): agentic-review
    ("agent agentic-review without a verdict",
     [*CYCLE, "gtd: tests green", ("gtd(agent): agentic-review", "M src/a.py")],
     tree(packages=PKG), None, ("R", "agentic-review", "agent", None)),
    # gtd(agent): review
    ("agent review with REVIEW.md", [*CYCLE, "gtd: package done",
     ("gtd(agent): review", "A REVIEW")], tree("REVIEW"), None,
     ("M", "review", "agent", MakeCommit("gtd: awaiting review"))),
    ("agent review without REVIEW.md", [*CYCLE, "gtd: package done", "gtd(agent): review"],
     tree(), None, ("R", "review", "agent", None)),
    # gtd(human): review
    ("human review, substantive", [*CYCLE, "gtd: awaiting review",
     ("gtd(human): review", "M REVIEW", PROSE)], tree("REVIEW"), None,
     ("M", "review", "human", MakeCommit("gtd: review feedback", (REVIEW,)))),
    ("human review, code edit", [*CYCLE, "gtd: awaiting review",
     ("gtd(human): review", "M src/a.py")], tree("REVIEW"), None,
     ("M", "review", "human", MakeCommit("gtd: review feedback", (REVIEW,)))),
    ("human review, checkbox-only", [*CYCLE, "gtd: awaiting review",
     ("gtd(human): review", "M REVIEW", FLIP)], tree("REVIEW"), None,
     ("M", "done", "human", MakeCommit("gtd: done", (REVIEW,)))),
    ("human review, empty", [*CYCLE, "gtd: awaiting review", "gtd(human): review"],
     tree("REVIEW"), None, ("M", "done", "human", MakeCommit("gtd: done", (REVIEW,)))),
    ("human review, deleted REVIEW.md", [*CYCLE, "gtd: awaiting review",
     ("gtd(human): review", "D REVIEW")], tree(), None,
     ("M", "done", "human", MakeCommit("gtd: done", (REVIEW,)))),
    # gtd(agent): squashing
    ("agent squashing, real message", [*CYCLE, "gtd: done", "gtd: squash template",
     ("gtd(agent): squashing", "M SQUASH_MSG")], tree("SQUASH_MSG", squash_msg="feat: a"), None,
     ("M", "squashing", "agent", Squash(sha(1)))),
    ("agent squashing, template unchanged", [*CYCLE, "gtd: done", "gtd: squash template",
     ("gtd(agent): squashing", "M src/a.py")], tree("SQUASH_MSG", squash_msg=SQUASH_TEMPLATE),
     None, ("R", "squashing", "agent", None)),
    ("agent squashing, no squash base", ["chore: init", "gtd: done", "gtd: squash template",
     ("gtd(agent): squashing", "M SQUASH_MSG")], tree("SQUASH_MSG", squash_msg="feat: a"), None,
     ("R", "squashing", "agent", None)),
    # gtd(agent): health-fixing
    ("agent health-fixing", HEALTH_LOOP, tree(), None,
     ("M", "health-fixing", "agent", MakeCommit("gtd: health-fix", (HEALTH,)))),
    ("agent health-fixing, HEALTH.md still there",
     ["chore: init", "gtd: health-check", ("gtd(agent): health-fixing", "M src/a.py")],
     tree("HEALTH"), None,
     ("M", "health-fixing", "agent", MakeCommit("gtd: health-fix", (HEALTH,)))),
    # routing: grilled / planning
    ("gtd: grilled", [*START, "gtd: grilled"], tree("TODO"), None,
     ("R", "grilled", "agent", None)),
    ("gtd: planning", [*START, "gtd: planning"], tree(packages=PKG), None,
     ("R", "building", "agent", None)),
    # routing: tests green
    ("tests green, packages, force-approve", [*CYCLE, "gtd: tests green"], tree(packages=PKG),
     StepConfig(agentic_review=False), ("M", "close-package", "agent", ClosePackage(PKG))),
    ("tests green, packages, review threshold spent", [*CYCLE,
     ("gtd(agent): agentic-review", "A FEEDBACK"), "gtd: tests green"], tree(packages=PKG),
     StepConfig(review_threshold=1), ("M", "close-package", "agent", ClosePackage(PKG))),
    ("tests green, packages", [*CYCLE, "gtd: tests green"], tree(packages=PKG), None,
     ("R", "agentic-review", "agent", None)),
    ("tests green, no packages, squash after a health fix",
     [*HEALTH_LOOP, "gtd: health-fix", "gtd: tests green"], tree(), None,
     ("M", "done", "agent", WriteSquashTemplate())),
    ("tests green, no packages, squash off", [*HEALTH_LOOP, "gtd: health-fix",
     "gtd: tests green"], tree(), NO_SQUASH, ("R", "idle", "human", None)),
    ("tests green, no packages, no health fix", ["chore: init", "gtd: tests green"], tree(),
     None, ("R", "idle", "human", None)),
    # routing: errors / health-check
    ("errors, ERRORS.md present", [*CYCLE, "gtd: errors"], tree("ERRORS", packages=PKG), None,
     ("R", "escalate", "human", None)),
    ("errors, ERRORS.md deletion pending", [*CYCLE, "gtd: errors"],
     tree(packages=PKG, dirty="D ERRORS"), None, ("R", "escalate", "human", None)),
    ("errors", [*CYCLE, "gtd: errors"], tree(packages=PKG), None,
     ("R", "fixing", "agent", None)),
    ("health-check, ERRORS.md present", [*HEALTH_LOOP, "gtd: health-fix", "gtd: health-check"],
     tree("ERRORS"), None, ("R", "escalate", "human", None)),
    ("health-check, ERRORS.md deletion pending", ["chore: init", "gtd: health-check"],
     tree(dirty="D ERRORS"), None, ("R", "escalate", "human", None)),
    ("health-check", ["chore: init", "gtd: health-check"], tree(), None,
     ("R", "health-fixing", "agent", None)),
    # routing: awaiting review / review feedback
    ("awaiting review", [*CYCLE, "gtd: awaiting review"], tree("REVIEW"), None,
     ("R", "await-review", "human", None)),
    ("review feedback", [*CYCLE, "gtd: review feedback"], tree(), None,
     ("R", "grilling", "agent", None)),
    # routing: done
    ("done, squash with a base", [*CYCLE, "gtd(human): review", "gtd: done"], tree(), None,
     ("M", "done", "human", WriteSquashTemplate())),
    ("done, squash off", [*CYCLE, "gtd: done"], tree(), NO_SQUASH, ("R", "idle", "human", None)),
    ("done, no squash base", ["chore: init", "gtd: done"], tree(), None,
     ("R", "idle", "human", None)),
    # routing: squash template / reviewing / health-fix
    ("squash template", [*CYCLE, "gtd: done", "gtd: squash template"],
     tree("SQUASH_MSG", squash_msg=SQUASH_TEMPLATE), None, ("R", "squashing", "agent", None)),
    ("reviewing <h>", ["chore: init", f"gtd: reviewing {'a' * 40}"], tree(), None,
     ("R", "review", "agent", None)),
    ("health-fix", [*HEALTH_LOOP, "gtd: health-fix"], tree(), None,
     ("R", "idle", "human", None)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("items", "t", "config", "expected"),
    [
        pytest.param(items, t, config, expected, id=name)
        for name, items, t, config, expected in CASES
    ],
)
def test_head_classification(
    items: list[CommitSpec], t: WorkingTree, config: StepConfig | None, expected: Shape
) -> None:
    assert classify(history(*items), t, config) == expected


@pytest.mark.parametrize(
    ("items", "t", "expected"),
    [
        pytest.param(
            [*CYCLE, "gtd: package done"], tree(packages="02-b"), ("R", "building", "agent", None),
            id="package done falls through to the ladder",
        ),
        pytest.param(
            ["chore: init", ("feat: x", "A x.py")], tree(), ("R", "idle", "human", None),
            id="a boundary falls through to the ladder",
        ),
        pytest.param(
            [*START, ("gtd(human): building", "M src/a.py")], tree("TODO"),
            ("R", "grilling", "agent", None),
            id="a turn outside the table falls through to the ladder",
        ),
    ],
)  # fmt: skip
def test_fall_through(items: list[CommitSpec], t: WorkingTree, expected: Shape) -> None:
    assert classify(history(*items), t) == expected
