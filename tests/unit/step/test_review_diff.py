"""The "substantive" rule for a human review turn (gtd 2.x's human review gate)."""

from __future__ import annotations

import pytest

from gtd.step.errors import StepError
from gtd.step.events import LineDiff
from gtd.step.review_diff import is_checkbox_only, is_substantive, needs_review_diff
from tests.unit.step.build import commit

HUMAN_REVIEW = "gtd(human): review"


def d(removed: list[str], added: list[str]) -> LineDiff:
    return LineDiff(tuple(removed), tuple(added))


@pytest.mark.parametrize(
    ("diff", "only"),
    [
        pytest.param(d(["- [ ] ./a.py#3 — ok"], ["- [x] ./a.py#3 — ok"]), True, id="one flip"),
        pytest.param(d(["- [x] ./a.py"], ["- [ ] ./a.py"]), True, id="unflip"),
        pytest.param(d(["- [ ] ./a.py"], ["- [X] ./a.py"]), True, id="capital X"),
        pytest.param(
            d(["  - [ ] ./a.py", "- [ ] ./b.py"], ["  - [x] ./a.py", "- [x] ./b.py"]),
            True,
            id="several flips, indented",
        ),
        pytest.param(
            d(["- [ ] ./a.py\r", "- [ ] ./b.py"], ["- [ ] ./a.py", "- [x] ./b.py"]),
            True,
            id="a pair identical after stripping CR is ignored",
        ),
        pytest.param(d([], []), False, id="no change is no flip"),
        pytest.param(d(["- [ ] ./a.py\r"], ["- [ ] ./a.py"]), False, id="only line endings"),
        pytest.param(d(["- [ ] ./a.py"], ["- [x] ./b.py"]), False, id="text changed too"),
        pytest.param(d(["- [ ] ./a.py"], ["  - [x] ./a.py"]), False, id="indent changed"),
        pytest.param(d(["- [ ] ./a.py"], []), False, id="line removed"),
        pytest.param(d([], ["- [ ] ./a.py"]), False, id="line added"),
        pytest.param(d(["prose"], ["other prose"]), False, id="prose edit"),
        pytest.param(
            d(["- [ ] ./a.py", "prose"], ["- [x] ./a.py", "prose!"]),
            False,
            id="flip plus prose",
        ),
        pytest.param(d(["- [y] ./a.py"], ["- [x] ./a.py"]), False, id="not a checkbox mark"),
        pytest.param(d(["-  [ ] ./a.py"], ["-  [x] ./a.py"]), False, id="not the pointer shape"),
        pytest.param(
            d(["- [ ] ./a.py", "- [ ] ./b.py"], ["- [x] ./b.py", "- [x] ./a.py"]),
            False,
            id="pairs are taken in order",
        ),
    ],
)
def test_checkbox_only(diff: LineDiff, only: bool) -> None:
    assert is_checkbox_only(diff) is only


FLIP = d(["- [ ] ./a.py"], ["- [x] ./a.py"])
PROSE = d(["Looks fine"], ["Please rename x"])


@pytest.mark.parametrize(
    ("spec", "substantive"),
    [
        pytest.param((), False, id="empty turn approves"),
        pytest.param(("M REVIEW", FLIP), False, id="checkbox-only approves"),
        pytest.param(("D REVIEW",), False, id="deleting REVIEW.md approves"),
        pytest.param(("M REVIEW", PROSE), True, id="prose edit is feedback"),
        pytest.param(("M src/a.py",), True, id="code edit is feedback"),
        pytest.param(("M REVIEW", "M src/a.py", FLIP), True, id="flip plus code is feedback"),
        pytest.param(("D REVIEW", "A notes.md"), True, id="delete plus new file is feedback"),
        pytest.param(("A REVIEW",), True, id="a re-created record is feedback"),
        pytest.param(("M .gtd/01-a/01-x.md",), True, id="any other .gtd file is feedback"),
    ],
)
def test_substantive(spec: tuple[str | LineDiff, ...], substantive: bool) -> None:
    assert is_substantive(commit(HUMAN_REVIEW, *spec)) is substantive


def test_missing_review_lines_is_an_edge_bug_not_a_guess() -> None:
    head = commit(HUMAN_REVIEW, "M REVIEW")
    assert needs_review_diff(head)
    with pytest.raises(StepError) as err:
        is_substantive(head)
    assert err.value.kind == "input"


@pytest.mark.parametrize(
    ("subject", "spec", "needed"),
    [
        (HUMAN_REVIEW, "M REVIEW", True),
        (HUMAN_REVIEW, "D REVIEW", False),
        (HUMAN_REVIEW, "M src/a.py", False),
        ("gtd(agent): review", "M REVIEW", False),
    ],
)
def test_needs_review_diff(subject: str, spec: str, needed: bool) -> None:
    assert needs_review_diff(commit(subject, spec)) is needed
