"""The one fence tracker: its rule line by line, and the PLAN.md parser and the
steering parsers reading the same fenced example the same way."""

from __future__ import annotations

import pytest

from gtd.auto.plan import parse
from gtd.fences import FenceTracker
from gtd.steering.questions import parse_questions
from gtd.steering.review import parse_review


def fenced(lines: list[str]) -> list[bool]:
    tracker = FenceTracker()
    return [tracker.step(line) for line in lines]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param(["a", "```", "b", "```", "c"], [False, True, True, True, False], id="plain"),
        pytest.param(["~~~", "```", "~~~", "x"], [True, True, True, False], id="tilde"),
        pytest.param(["```py", "x", "```"], [True, True, True], id="info-string"),
        pytest.param(["  ```", "x", "  ```", "y"], [True, True, True, False], id="in-a-list-item"),
        pytest.param(["\t```", "x", "```", "y"], [True, True, True, False], id="tab-indented"),
        pytest.param(["````", "```", "````", "y"], [True, True, True, False], id="longer-fence"),
        pytest.param(["```", "``` not a close", "```"], [True, True, True], id="text-after"),
        pytest.param(["```", "~~~", "x"], [True, True, True], id="other-char-stays-open"),
        pytest.param(["``", "x"], [False, False], id="two-backticks-are-code"),
        pytest.param(["a ```", "x"], [False, False], id="not-at-the-start"),
        pytest.param(["```", "```   ", "x"], [True, True, False], id="trailing-blanks-close"),
    ],
)
def test_the_rule(lines: list[str], expected: list[bool]) -> None:
    assert fenced(lines) == expected


def test_inside_reports_an_open_fence() -> None:
    tracker = FenceTracker()
    assert not tracker.inside
    tracker.step("```")
    assert tracker.inside
    tracker.step("```")
    assert not tracker.inside


# An example indented under a (nested) list item: the PLAN.md parser and both
# steering parsers skip what it shows.
def test_every_parser_skips_the_same_fenced_example() -> None:
    plan = parse(
        "- [ ] **T1**: Document the format\n"
        "  ```\n"
        "  - [ ] **T2**: an example task\n"
        "  ### an example heading\n"
        "  ```\n"
    )
    assert [t.id for t in plan.tasks] == ["T1"]
    assert plan.problems == ()

    questions = parse_questions(
        "## Open Questions\n"
        "- a note\n"
        "  - with a nested example:\n"
        "    ```\n"
        "### Quoted\n"
        "    ```\n"
        "### A\n"
        "Answer: x\n"
    )
    assert [q.title for q in questions.questions] == ["A"]

    review = parse_review(
        "# Review: h\n<!-- base: b -->\n## C\n- [ ] ./a.py\n  - example:\n    ```\n"
        "- [ ] ./quoted.py\n    ```\n"
    )
    assert [p.path for c in review.chunks for p in c.pointers] == ["./a.py"]
