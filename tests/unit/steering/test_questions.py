"""The open-questions format of .gtd/TODO.md: these tables are its specification."""

from __future__ import annotations

import pytest

from gtd.steering.questions import parse_questions

VALID_PLAN = """\
# Plan: add a cache

Some prose about the plan.

## Open Questions

### Which backend?

Suggested default: sqlite, it is already a dependency.

### Eviction policy?
Answer: LRU with a 10 MB cap

## Steps

### Not a question
Anything goes here.
"""


def test_a_valid_plan_lists_its_questions_with_status_and_lines() -> None:
    doc = parse_questions(VALID_PLAN)
    assert doc.findings == ()
    assert doc.valid
    assert doc.section_line == 5
    assert [(q.title, q.status, q.text, q.line, q.text_line) for q in doc.questions] == [
        ("Which backend?", "suggested", "sqlite, it is already a dependency.", 7, 9),
        ("Eviction policy?", "answered", "LRU with a 10 MB cap", 11, 12),
    ]
    assert doc.questions[0].end_line == 9


@pytest.mark.parametrize(
    ("text", "titles"),
    [
        pytest.param("# Plan\n\nJust prose.\n", [], id="no section: zero questions"),
        pytest.param("## Open Questions\n", [], id="empty section"),
        pytest.param("## Open Questions\n\nIntro prose.\n", [], id="prose before questions"),
        pytest.param(
            "## Open Questions\n### A\nAnswer: x\n# Top\n### B\nanything\n",
            ["A"],
            id="a level-1 heading ends the section",
        ),
        pytest.param(
            "## Open Questions\n### A\nAnswer: x\n## Next\n### B\nanything\n",
            ["A"],
            id="a level-2 heading ends the section",
        ),
        pytest.param(
            "## Open Questions\n### A\nAnswer: x\n#### Detail\nfree text\n",
            ["A"],
            id="a level-4 heading is not a question",
        ),
        pytest.param(
            "## Open Questions\n```\n### Quoted\n```\n### A\nAnswer: x\n",
            ["A"],
            id="headings in fenced code are examples",
        ),
        pytest.param(
            "## Open Questions\n### A ###\nAnswer: x\n", ["A"], id="closing hashes are dropped"
        ),
        pytest.param("## Open Questions  \n### A\nAnswer: x\n", ["A"], id="trailing blanks"),
        pytest.param(
            "## Open Questions\r\n\r\n### A\r\n\r\nSuggested default: y\r\n",
            ["A"],
            id="CRLF line ends",
        ),
        pytest.param("## Open Questions\r### A\rAnswer: x\r", ["A"], id="bare CR line ends"),
        pytest.param(
            "## Open Questions\n### A\n   Answer: indented\n", ["A"], id="indented first line"
        ),
        pytest.param(
            "## Open Questions\n### A\nAnswer: x\n\n## Open Questions\n### B\nAnswer: y\n",
            ["A", "B"],
            id="a repeated section is read too",
        ),
        pytest.param(
            "## Other\n### A\nfoo\n## Open Questions\n### B\nAnswer: y\n",
            ["B"],
            id="only the open-questions section holds questions",
        ),
        pytest.param(
            "## Open Questions\n### A\nAnswer: x\nmore prose\n- [ ] a list\n",
            ["A"],
            id="only the first body line is constrained",
        ),
    ],
)
def test_valid_shapes(text: str, titles: list[str]) -> None:
    doc = parse_questions(text)
    assert doc.findings == ()
    assert [q.title for q in doc.questions] == titles


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", [(1, "TODO.md is empty")], id="empty file"),
        pytest.param(" \n\t\n", [(1, "TODO.md is empty")], id="whitespace only"),
        pytest.param(
            "## Open Questions\n###\nAnswer: x\n",
            [(2, "question heading '###' has no text")],
            id="heading with no text",
        ),
        pytest.param(
            "## Open Questions\n###   \nAnswer: x\n",
            [(2, "question heading '###' has no text")],
            id="heading with only blanks",
        ),
        pytest.param(
            "## Open Questions\n### A\n",
            [(2, "question 'A' has no body")],
            id="no body at end of file",
        ),
        pytest.param(
            "## Open Questions\n### A\n\n### B\nAnswer: x\n",
            [(2, "question 'A' has no body")],
            id="no body before the next question",
        ),
        pytest.param(
            "## Open Questions\n### A\nWe could use sqlite.\n",
            [(3, "question 'A': the first line must be")],
            id="prose first",
        ),
        pytest.param(
            "## Open Questions\n### A\nSuggested Default: x\n",
            [(3, "the first line must be")],
            id="wrong case",
        ),
        pytest.param(
            "## Open Questions\n### A\n- Answer: x\n", [(3, "the first line")], id="as a list item"
        ),
        pytest.param(
            "## Open Questions\n### A\nAnswer:\n", [(3, "'Answer:' has no text")], id="empty answer"
        ),
        pytest.param(
            "## Open Questions\n### A\nSuggested default:    \n",
            [(3, "'Suggested default:' has no text")],
            id="blank default",
        ),
        pytest.param(
            "## Open Questions\r\n### A\r\nnope\r\n###\r\n",
            [(3, "the first line"), (4, "has no text")],
            id="CRLF findings keep their lines",
        ),
        pytest.param(
            "## Open Questions\n### A\n#### Sub\nAnswer: x\n",
            [(2, "question 'A' has no body")],
            id="a sub-heading ends the body",
        ),
    ],
)
def test_findings(text: str, expected: list[tuple[int, str]]) -> None:
    doc = parse_questions(text)
    assert len(doc.findings) == len(expected)
    for (line, fragment), finding in zip(expected, doc.findings, strict=True):
        assert finding.line == line
        assert fragment in finding.message
        assert finding.severity == "error"


def test_a_malformed_question_is_not_listed_but_the_others_are() -> None:
    doc = parse_questions("## Open Questions\n### A\nnope\n### B\nAnswer: yes\n")
    assert [q.title for q in doc.questions] == ["B"]
    assert [f.line for f in doc.findings] == [3]


def test_finding_columns_span_the_offending_text() -> None:
    doc = parse_questions("## Open Questions\n### A\n  nope  \n")
    (finding,) = doc.findings
    assert (finding.start, finding.end) == (2, 6)
