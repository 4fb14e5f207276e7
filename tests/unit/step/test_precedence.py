"""Precedence 1, 2, 4 and 5 of the state machine (3, the HEAD table, is test_head.py):
illegal combinations, steering files, the ladder, and the refusal to guess."""

from __future__ import annotations

import pytest

from gtd.step.actions import ClosePackage, HealthCheck, MakeCommit, RunTests
from gtd.step.errors import StepError
from gtd.step.events import WorkingTree
from gtd.step.settings import StepConfig
from tests.unit.step.build import CommitSpec, history, run, tree
from tests.unit.step.helpers import Shape, classify

START: list[CommitSpec] = ["chore: init", ("gtd(human): grilling", "A idea.md")]
CYCLE: list[CommitSpec] = [
    *START,
    ("gtd(agent): grilling", "A TODO"),
    ("gtd(agent): building", "A src/a.py"),
]
PKG = "01-a"

# -- 1. illegal combinations -------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "t", "what"),
    [
        (["chore: init"], tree("HEALTH", packages=PKG), ".gtd/HEALTH.md + packages"),
        (["chore: init"], tree("HEALTH REVIEW"), ".gtd/HEALTH.md + .gtd/REVIEW.md"),
        (["chore: init"], tree("HEALTH FEEDBACK"), ".gtd/HEALTH.md + .gtd/FEEDBACK.md"),
        (["chore: init"], tree("HEALTH ERRORS"), ".gtd/HEALTH.md + .gtd/ERRORS.md"),
        (["chore: init"], tree("REVIEW", packages=PKG), ".gtd/REVIEW.md + packages"),
        (["chore: init"], tree("REVIEW TODO"), ".gtd/REVIEW.md + committed .gtd/TODO.md"),
        (
            ["chore: init"],
            tree("REVIEW TODO", dirty="A REVIEW, A TODO"),
            "uncommitted .gtd/REVIEW.md + .gtd/TODO.md",
        ),
        (["chore: init"], tree("FEEDBACK REVIEW"), ".gtd/FEEDBACK.md + .gtd/REVIEW.md"),
        (["chore: init"], tree("FEEDBACK"), ".gtd/FEEDBACK.md without packages"),
        (
            ["chore: init"],
            tree("ERRORS FEEDBACK", packages=PKG),
            ".gtd/ERRORS.md + .gtd/FEEDBACK.md",
        ),
        (["chore: init"], tree("ERRORS"), ".gtd/ERRORS.md without packages"),
        (["chore: init", "gtd: errors"], tree("ERRORS"), ".gtd/ERRORS.md without packages"),
    ],
)
def test_illegal_combination(items: list[CommitSpec], t: WorkingTree, what: str) -> None:
    for invoker in (None, "human", "agent"):
        with pytest.raises(StepError) as err:
            run(history(*items), t, None, invoker)
        assert err.value.kind == "illegal-combination"
        assert err.value.message == f"illegal combination: {what}"


@pytest.mark.parametrize(
    ("items", "t", "expected"),
    [
        pytest.param(
            ["chore: init", "gtd: health-check"], tree("ERRORS"), ("R", "escalate", "human", None),
            id="ERRORS.md without packages at gtd: health-check",
        ),
        pytest.param(
            ["chore: init", "gtd: health-fix"], tree("ERRORS"), ("R", "escalate", "human", None),
            id="ERRORS.md without packages at gtd: health-fix",
        ),
        pytest.param(
            [*CYCLE, "gtd: awaiting review"], tree("REVIEW TODO", dirty="A TODO"),
            ("R", "await-review", "human", None),
            id="a committed REVIEW.md beside a new TODO.md",
        ),
    ],
)  # fmt: skip
def test_legal_neighbours(items: list[CommitSpec], t: WorkingTree, expected: Shape) -> None:
    assert classify(history(*items), t) == expected


# -- 2. steering files -------------------------------------------------------------

GREEN: list[CommitSpec] = [*CYCLE, "gtd: tests green"]
REVIEWED: list[CommitSpec] = [*GREEN, ("gtd(agent): agentic-review", "A FEEDBACK")]


@pytest.mark.parametrize(
    ("items", "t", "config", "expected"),
    [
        pytest.param(
            [*GREEN], tree("ERRORS", packages=PKG), None, ("R", "escalate", "human", None),
            id="ERRORS.md rests at escalate whatever HEAD says",
        ),
        pytest.param(
            ["chore: init", ("feat: x", "A x.py")], tree("HEALTH"), None,
            ("R", "health-fixing", "agent", None),
            id="HEALTH.md rests at health-fixing",
        ),
        pytest.param(
            ["chore: init", "gtd: health-check", ("gtd(agent): health-fixing", "M a.py")],
            tree("HEALTH"), None,
            ("M", "health-fixing", "agent", MakeCommit("gtd: health-fix", (".gtd/HEALTH.md",))),
            id="HEALTH.md does not pre-empt the health-fixing turn",
        ),
        pytest.param(
            GREEN, tree("FEEDBACK", packages=PKG, dirty="A FEEDBACK", feedback="nit"), None,
            ("R", "agentic-review", "agent", None),
            id="FEEDBACK.md at tests green: the reviewer's turn is captured first",
        ),
        pytest.param(
            REVIEWED, tree("FEEDBACK", packages=PKG, feedback=" \n"), None,
            ("M", "close-package", "agent", ClosePackage(PKG)),
            id="empty FEEDBACK.md approves: close the package",
        ),
        pytest.param(
            [*GREEN, ("gtd(agent): agentic-review", "M src/a.py")],
            tree(packages=PKG, dirty="D FEEDBACK"), None,
            ("M", "close-package", "agent", ClosePackage(PKG)),
            id="a pending FEEDBACK.md deletion approves",
        ),
        pytest.param(
            REVIEWED, tree("FEEDBACK", packages=PKG, feedback="rename x"), None,
            ("R", "fixing", "agent", None),
            id="findings rest at fixing",
        ),
        pytest.param(
            [*CYCLE, "gtd: errors"], tree("FEEDBACK", packages=PKG, feedback=""), None,
            ("R", "fixing", "agent", None),
            id="an emptied FEEDBACK.md at gtd: errors is a dispute, not an approval",
        ),
        pytest.param(
            [*CYCLE, "gtd: errors"], tree(packages=PKG, dirty="D FEEDBACK"), None,
            ("R", "fixing", "agent", None),
            id="a deleted FEEDBACK.md at gtd: errors is a dispute too",
        ),
        pytest.param(
            [*CYCLE, "gtd: errors", ("gtd(agent): fixing", "M src/a.py")],
            tree("FEEDBACK", packages=PKG, feedback=""), None,
            ("M", "testing", "agent", RunTests(False, 1)),
            id="FEEDBACK.md does not pre-empt the fixing turn",
        ),
        pytest.param(
            GREEN,
            tree("FEEDBACK", packages=PKG, feedback="stale"),
            StepConfig(agentic_review=False),
            ("M", "close-package", "agent", ClosePackage(PKG)),
            id="force-approve at tests green overrides a stale FEEDBACK.md",
        ),
        pytest.param(
            REVIEWED, tree("FEEDBACK", packages=PKG, feedback="last round"),
            StepConfig(review_threshold=1), ("R", "fixing", "agent", None),
            id="the round that crosses the threshold still gets its fix",
        ),
    ],
)  # fmt: skip
def test_steering_files(
    items: list[CommitSpec], t: WorkingTree, config: StepConfig | None, expected: Shape
) -> None:
    assert classify(history(*items), t, config) == expected


# -- 4. the ladder -----------------------------------------------------------------

DONE_PKG: list[CommitSpec] = [*CYCLE, "gtd: tests green", "gtd: package done"]


@pytest.mark.parametrize(
    ("items", "t", "expected"),
    [
        pytest.param(
            DONE_PKG, tree(packages="02-b", dirty="M .gtd/02-b/01-task.md"),
            ("R", "planning", "agent", None),
            id="dirty package files rest at planning",
        ),
        pytest.param(
            ["chore: init", "feat: x"], tree("TODO", packages=PKG, dirty="A .gtd/01-a/01-t.md"),
            ("R", "planning", "agent", None),
            id="dirty package files come before TODO.md",
        ),
        pytest.param(
            DONE_PKG, tree(packages="02-b"), ("R", "building", "agent", None),
            id="package done with packages left: building",
        ),
        pytest.param(
            DONE_PKG, tree(), ("R", "review", "agent", None),
            id="package done, none left, something to review",
        ),
        pytest.param(
            ["chore: init", "gtd: package done"], tree(), ("R", "idle", "human", None),
            id="package done, none left, nothing to review",
        ),
        pytest.param(
            ["chore: init", "feat: x"], tree("TODO"), ("R", "grilling", "agent", None),
            id="TODO.md at a boundary: grilling for the agent",
        ),
        pytest.param(
            [*CYCLE, ("fix: config", "M .gtdrc.json")], tree(packages=PKG),
            ("M", "testing", "agent", RunTests(False, 0)),
            id="recovery: a boundary on top of the build checkpoint re-tests",
        ),
        pytest.param(
            [*CYCLE, "fix: a", "fix: b"], tree(packages=PKG),
            ("M", "testing", "agent", RunTests(False, 0)),
            id="recovery skips every boundary",
        ),
        pytest.param(
            [*START, ("feat: x", "A x.py")], tree(), ("R", "review", "agent", None),
            id="no steering files, something to review",
        ),
        pytest.param(
            ["chore: init", ("feat: x", "A x.py")], tree(), ("R", "idle", "human", None),
            id="no steering files, nothing to review",
        ),
        pytest.param(
            [], tree(), ("R", "idle", "human", None), id="an empty range is idle",
        ),
        pytest.param(
            ["chore: init"], tree("SQUASH_MSG"), ("R", "idle", "human", None),
            id="SQUASH_MSG.md is not a steering file for the ladder",
        ),
    ],
)  # fmt: skip
def test_ladder(items: list[CommitSpec], t: WorkingTree, expected: Shape) -> None:
    assert classify(history(*items), t) == expected


# -- 5. no rule matched ------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "t", "head", "clean"),
    [
        pytest.param(["chore: init", "feat: x"], tree("REVIEW"), "feat: x", True,
                     id="REVIEW.md at a boundary"),
        pytest.param(["chore: init", "feat: x"], tree(packages=PKG, dirty="M x.py"), "feat: x",
                     False, id="packages with no build checkpoint"),
        pytest.param([*START, "gtd(agent): planning"], tree(packages=PKG),
                     "gtd(agent): planning", True, id="unknown gate with packages"),
        pytest.param([], tree(packages=PKG), "", True, id="packages and no history"),
        pytest.param([*GREEN, ("gtd(agent): agentic-review", "D .gtd/01-a/01-t.md")],
                     tree(dirty="D FEEDBACK"), "gtd(agent): agentic-review", False,
                     id="an approval with no package to close"),
        pytest.param(["chore: init", " gtd(human): fixing "], tree("REVIEW", dirty="M a.py"),
                     "gtd(human): fixing", False, id="REVIEW.md at a turn outside the table"),
    ],
)  # fmt: skip
def test_refuses_to_guess(items: list[CommitSpec], t: WorkingTree, head: str, clean: bool) -> None:
    with pytest.raises(StepError) as err:
        run(history(*items), t)
    assert err.value.kind == "corruption"
    assert err.value.message == (
        f'no precedence rule matched (HEAD="{head}", clean={str(clean).lower()}); '
        "repo is in an unrecognized state — refusing to guess"
    )


def test_present_file_without_its_text_is_an_input_error() -> None:
    broken = WorkingTree(
        present=frozenset({".gtd/FEEDBACK.md"}), packages=tree(packages=PKG).packages
    )
    with pytest.raises(StepError) as err:
        run(history(*GREEN), broken)
    assert err.value.kind == "input"


def test_health_check_at_cap_spent_health_check_removes_health_md_when_green() -> None:
    commits = history("chore: init", "gtd: health-check", "gtd: health-check", "gtd: health-check")
    r = run(commits, tree("HEALTH"), StepConfig(squash=False), "agent")
    assert r.action == HealthCheck(cap_reached=True, attempts=3, commit_green=True)
