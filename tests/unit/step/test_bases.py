"""Review base and squash base."""

from __future__ import annotations

import pytest

from gtd.step.bases import (
    cycle_squash_base,
    has_review_material,
    health_run_base,
    review_base,
    squash_base,
)
from tests.unit.step.build import BASE, CommitSpec, history, sha

ANCHOR = "a" * 40
H_GRILL = ("gtd(human): grilling", "A idea.md")
A_GRILL = ("gtd(agent): grilling", "A TODO")
BUILD = ("gtd(agent): building", "A src/a.py")
REVIEWING = f"gtd: reviewing {ANCHOR}"


@pytest.mark.parametrize(
    ("items", "base", "material"),
    [
        pytest.param([], None, False, id="nothing at all"),
        pytest.param(["chore: init", ("feat: x", "A x.py")], None, False, id="no workflow"),
        pytest.param(
            ["chore: init", H_GRILL, A_GRILL, BUILD],
            sha(1),
            True,
            id="parent of the first grilling turn",
        ),
        pytest.param(
            [H_GRILL, A_GRILL],
            BASE,
            True,
            id="first grilling turn's parent may be the merge base",
        ),
        pytest.param(
            ["chore: init", ("gtd(agent): grilling", "A TODO"), "gtd: grilled"],
            sha(1),
            False,
            id="only .gtd/ changed: nothing to review",
        ),
        pytest.param(
            ["chore: init", H_GRILL, BUILD, "gtd: awaiting review", "gtd(human): review"],
            sha(4),
            False,
            id="the last awaiting review wins over grilling",
        ),
        pytest.param(
            [H_GRILL, "gtd: awaiting review", "gtd: review feedback", BUILD],
            sha(2),
            True,
            id="changes since the last awaiting review",
        ),
        pytest.param(
            [H_GRILL, "gtd: awaiting review", REVIEWING, "gtd(agent): review"],
            ANCHOR,
            True,
            id="the newest anchor wins and always has material",
        ),
        pytest.param(
            [REVIEWING, H_GRILL, f"gtd: reviewing {'c' * 40}"],
            "c" * 40,
            True,
            id="newest of two anchors",
        ),
        pytest.param(
            [REVIEWING, H_GRILL, BUILD, "gtd: done", H_GRILL, BUILD],
            sha(4),
            True,
            id="only the cycle after the last gtd: done counts",
        ),
        pytest.param(
            [H_GRILL, BUILD, "gtd: done", ("feat: later", "A y.py")],
            None,
            False,
            id="a settled cycle followed by plain commits has no base",
        ),
    ],
)
def test_review_base(items: list[CommitSpec], base: str | None, material: bool) -> None:
    commits = history(*items)
    assert review_base(commits) == base
    assert has_review_material(commits) is material


def test_review_base_of_a_root_grilling_turn_is_unknown() -> None:
    commits = history(H_GRILL, BUILD)
    root = [commits[0]._replace(parent=None)]
    assert review_base(root + commits[1:]) is None
    assert has_review_material(root + commits[1:]) is False


CYCLE: list[CommitSpec] = [
    "chore: init",
    H_GRILL,
    A_GRILL,
    "gtd(human): grilling",
    "gtd: grilled",
    BUILD,
]


@pytest.mark.parametrize(
    ("items", "base"),
    [
        pytest.param([*CYCLE, "gtd: done"], sha(1), id="parent of the first grilling turn"),
        pytest.param(
            [*CYCLE, "gtd: review feedback", A_GRILL, "gtd(human): grilling", BUILD, "gtd: done"],
            sha(1),
            id="feedback detours keep the original start",
        ),
        pytest.param(
            ["chore: init", REVIEWING, "gtd: review feedback", A_GRILL, BUILD, "gtd: done"],
            sha(1),
            id="parent of the anchor of an ad-hoc review cycle",
        ),
        pytest.param(
            [*CYCLE, "gtd: done", "feat: between", H_GRILL, BUILD, "gtd: done"],
            sha(8),
            id="a second cycle starts after the previous done",
        ),
        pytest.param(["chore: init", BUILD, "gtd: done"], None, id="no start in the cycle"),
    ],
)
def test_cycle_squash_base(items: list[CommitSpec], base: str | None) -> None:
    commits = history(*items)
    assert cycle_squash_base(commits, len(commits) - 1) == base
    with_template = history(*items, "gtd: squash template", "gtd(agent): squashing")
    assert squash_base(with_template) == base


HEALTH_RUN: list[CommitSpec] = [
    "chore: init",
    "feat: plain",
    "gtd: health-check",
    "gtd(agent): health-fixing",
    "gtd: health-fix",
    "gtd: health-check",
    "gtd(human): escalate",
]


@pytest.mark.parametrize(
    ("items", "base"),
    [
        pytest.param([*HEALTH_RUN, "gtd: tests green"], sha(2), id="first check of the run"),
        pytest.param(
            ["gtd: health-check", "feat: fix config", "gtd: health-fix", "gtd: tests green"],
            None,
            id="a boundary ends the run",
        ),
        pytest.param(["chore: init", "gtd: tests green"], None, id="no run"),
        pytest.param(
            ["chore: init", "gtd: health-fix", "gtd: tests green"],
            None,
            id="a run needs a health-check",
        ),
    ],
)
def test_health_run_squash_base(items: list[CommitSpec], base: str | None) -> None:
    commits = history(*items)
    assert health_run_base(commits, len(commits) - 1) == base
    with_template = history(*items, "gtd: squash template", "gtd(agent): squashing")
    assert squash_base(with_template) == base


@pytest.mark.parametrize(
    "items",
    [
        pytest.param(["chore: init", "gtd(agent): squashing"], id="no template"),
        pytest.param(["gtd: squash template"], id="nothing before the template"),
        pytest.param(["gtd: planning", "gtd: squash template"], id="template after neither"),
    ],
)
def test_squash_base_unknown(items: list[CommitSpec]) -> None:
    assert squash_base(history(*items)) is None


def test_squash_base_skips_boundaries_before_the_template() -> None:
    commits = history(*CYCLE, "gtd: done", "chore: add .gtdrc.json", "gtd: squash template")
    assert squash_base(commits) == sha(1)
