"""Properties of both parsers: total on any text, findings always point at real
lines, and linear work on huge files and long lines."""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gtd.steering import check, kind_of
from gtd.steering.findings import split_lines
from gtd.steering.questions import parse_questions
from gtd.steering.review import parse_review, toggle_actions

# Text biased towards the formats' own tokens, so the interesting branches are hit.
_TOKENS = st.sampled_from(
    [
        "# Review: abc",
        "<!-- base: def -->",
        "## Open Questions",
        "## Chunk",
        "##",
        "###",
        "### Q",
        "Answer: yes",
        "Answer:",
        "Suggested default: x",
        "- [ ] ./a.py#3 — n",
        "- [x] ./b",
        "- [ ] b",
        "* [ ] ./c",
        "- [] ",
        "```",
        "~~~",
        "prose",
        " ",
        "\t",
        "—",
        "#",
    ]
)
_SEPARATORS = st.sampled_from(["\n", "\r\n", "\r", "\n\n", " ", "\x0b", "\u2028"])
_DOCS = st.one_of(
    st.text(),
    st.lists(st.tuples(_TOKENS, _SEPARATORS, st.text(max_size=3))).map(
        lambda parts: "".join(a + b + c for a, b, c in parts)
    ),
)


@settings(max_examples=400, deadline=None)
@given(_DOCS)
def test_questions_never_crash_and_findings_point_at_lines(text: str) -> None:
    doc = parse_questions(text)
    lines = split_lines(text)
    for finding in doc.findings:
        assert 1 <= finding.line <= len(lines)
        if finding.start is not None and finding.end is not None:
            assert 0 <= finding.start <= finding.end <= len(lines[finding.line - 1])
    for question in doc.questions:
        assert 1 <= question.line <= question.text_line <= question.end_line <= len(lines)
        assert question.title
        assert question.text
    assert doc.valid == (check("qa", text) == ())


@settings(max_examples=400, deadline=None)
@given(_DOCS)
def test_review_never_crashes_and_findings_point_at_lines(text: str) -> None:
    doc = parse_review(text)
    lines = split_lines(text)
    for finding in doc.findings:
        assert 1 <= finding.line <= len(lines)
        if finding.start is not None and finding.end is not None:
            assert 0 <= finding.start <= finding.end <= len(lines[finding.line - 1])
    for chunk in doc.chunks:
        assert 1 <= chunk.line <= chunk.end_line <= len(lines)
        for pointer in chunk.pointers:
            assert chunk.line < pointer.source_line <= chunk.end_line
            assert lines[pointer.source_line - 1][pointer.box] in " xX"
            assert pointer.path.startswith("./")
            assert len(pointer.path) > 2
    for number in range(1, len(lines) + 1):
        for action in toggle_actions(doc, number):
            assert action.edits
            for edit in action.edits:
                assert lines[edit.line - 1][edit.column] in " xX"
    assert doc.valid == (check("review", text) == ())


@settings(max_examples=200, deadline=None)
@given(_DOCS)
def test_ticking_everything_keeps_a_review_valid(text: str) -> None:
    doc = parse_review(text)
    lines = split_lines(text)
    for chunk in doc.chunks:
        for pointer in chunk.pointers:
            row = lines[pointer.source_line - 1]
            lines[pointer.source_line - 1] = row[: pointer.box] + "x" + row[pointer.box + 1 :]
    ticked = parse_review("\n".join(lines))
    assert len(ticked.findings) == len(doc.findings)
    assert not ticked.unticked


def test_kind_is_decided_by_name() -> None:
    assert kind_of(".gtd/TODO.md") == "qa"
    assert kind_of("/x/REVIEW.md") == "review"
    assert kind_of("PLAN.md") is None
    assert kind_of("todo.md") is None


def _calls(fn: Callable[[str], object], text: str) -> int:
    """How many functions (Python and built-in: every regex match, every str method)
    one parse calls. A count, not a time: the same on a loaded machine."""
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        fn(text)
    finally:
        sys.setprofile(None)
    return count


def _cpu(fn: Callable[[str], object], text: str) -> float:
    """CPU seconds this process spends on one parse: other processes' load is not
    counted, and the collector is off so none of its pauses lands on one side."""
    gc.disable()
    try:
        start = time.process_time()
        fn(text)
        return time.process_time() - start
    finally:
        gc.enable()


def _grows_linearly(fn: Callable[[str], object], small: str, big: str) -> None:
    """``big`` is ten times ``small``: linear work is ~10x, quadratic ~100x; the
    bound, 30x, leaves room for noise without letting quadratic through."""
    baseline = min(_cpu(fn, small) for _ in range(3))
    elapsed = _cpu(fn, big)
    assert elapsed < 30 * baseline + 0.1, (elapsed, baseline)


_HEAD = "# Review: abc\n<!-- base: def -->\n## Open Questions\n"
_UNITS = [
    (parse_questions, "### Q\nSuggested default: something reasonable\nMore prose.\n\n"),
    (parse_review, "## Chunk\nWhy.\n- [ ] ./src/module/file.py#123 — a note\n- [x] ./b.py\n\n"),
]


@pytest.mark.parametrize(("parse", "unit"), _UNITS)
def test_work_per_section_is_constant(parse: Callable[[str], object], unit: str) -> None:
    """Ten times the sections cost at most ten times the calls (a fixed part for the
    head, then the same per section): no step looks back over what was read."""
    small = _calls(parse, _HEAD + unit * 200)
    big = _calls(parse, _HEAD + unit * 2000)
    assert small > 200
    assert big <= 10 * small, (small, big)


@pytest.mark.parametrize(("parse", "unit"), _UNITS)
def test_huge_files_parse_in_linear_time(parse: Callable[[str], object], unit: str) -> None:
    """The built-in work (regexes, slicing) on a 5 MB file grows with its size too."""
    small = _HEAD + unit * (500_000 // len(unit))
    huge = _HEAD + unit * (5_000_000 // len(unit))
    assert len(huge) > 4_900_000
    _grows_linearly(parse, small, huge)


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "## " + " " * n + "x",
        lambda n: "- [ ] ./" + "a" * n + " " * n + "b",
        lambda n: "- [ ] ./" + "#1" * (n // 2),
        lambda n: "- [ ] ./a" + " " * n + "-",
        lambda n: "<!-- base: " + "a " * (n // 2),
        lambda n: "### " + "a #" * (n // 3),
        lambda n: "`" * n,
    ],
)
def test_pathological_long_lines_stay_linear(make: Callable[[int], str]) -> None:
    """Lines shaped to make a backtracking regex quadratic: at 2 million characters
    quadratic would take minutes; linear takes milliseconds."""
    head = "# Review: h\n## Open Questions\n### Q\n"
    small, big = head + make(200_000) + "\n", head + make(2_000_000) + "\n"
    for parse in (parse_review, parse_questions):
        _grows_linearly(parse, small, big)
