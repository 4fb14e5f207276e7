"""Properties of both parsers: total on any text, findings always point at real
lines, and fast (linear) on huge files."""

from __future__ import annotations

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


def _timed(fn: Callable[[str], object], text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


@pytest.mark.parametrize(
    ("parse", "unit"),
    [
        (parse_questions, "### Q\nSuggested default: something reasonable\nMore prose.\n\n"),
        (parse_review, "## Chunk\nWhy.\n- [ ] ./src/module/file.py#123 — a note\n- [x] ./b.py\n\n"),
    ],
)
def test_huge_files_parse_in_linear_time(parse: Callable[[str], object], unit: str) -> None:
    head = "# Review: abc\n<!-- base: def -->\n## Open Questions\n"
    small = head + unit * (500_000 // len(unit))
    huge = head + unit * (5_000_000 // len(unit))
    assert len(huge) > 4_900_000
    baseline = min(_timed(parse, small) for _ in range(3))
    elapsed = _timed(parse, huge)
    # Ten times the text: linear is ~10x the baseline, quadratic ~100x. The bounds
    # are generous because test machines are shared and loaded.
    assert elapsed < 30 * baseline + 1.0, (elapsed, baseline)
    assert elapsed < 30.0


def test_pathological_long_lines_stay_linear() -> None:
    n = 2_000_000
    lines = [
        "## " + " " * n + "x",
        "- [ ] ./" + "a" * n + " " * n + "b",
        "- [ ] ./" + "#1" * (n // 2),
        "- [ ] ./a" + " " * n + "-",
        "<!-- base: " + "a " * (n // 2),
        "### " + "a #" * (n // 3),
        "`" * n,
    ]
    for line in lines:
        text = "# Review: h\n## Open Questions\n### Q\n" + line + "\n"
        assert _timed(parse_review, text) < 2.0, line[:20]
        assert _timed(parse_questions, text) < 2.0, line[:20]
