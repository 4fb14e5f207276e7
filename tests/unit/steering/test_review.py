"""The checkbox review format of .gtd/REVIEW.md: these tables are its specification."""

from __future__ import annotations

import pytest

from gtd.steering.review import BoxEdit, parse_review, toggle_actions

VALID_REVIEW = """\
# Review: abc1234

<!-- base: 0123456789abcdef -->

## Parser for the review format

Reads REVIEW.md into chunks.

- [ ] ./helper/gtd/steering/review.py#42 — the pointer expression
- [x] ./helper/gen-docs.py#3
- [X] ./tests/unit/test_review.py - spec tables

## Docs

- [ ] ./docs/steering-files.md
"""


def test_a_valid_review_lists_chunks_and_pointers() -> None:
    doc = parse_review(VALID_REVIEW)
    assert doc.findings == ()
    assert (doc.short_hash, doc.base) == ("abc1234", "0123456789abcdef")
    assert [(c.title, c.line, c.end_line) for c in doc.chunks] == [
        ("Parser for the review format", 5, 11),
        ("Docs", 13, 15),
    ]
    assert doc.chunks[0].description == "Reads REVIEW.md into chunks."
    assert [(p.path, p.line, p.note, p.ticked, p.source_line) for p in doc.pointers] == [
        ("./helper/gtd/steering/review.py", 42, "the pointer expression", False, 9),
        ("./helper/gen-docs.py", 3, None, True, 10),
        ("./tests/unit/test_review.py", None, "spec tables", True, 11),
        ("./docs/steering-files.md", None, None, False, 15),
    ]
    assert [p.source_line for p in doc.unticked] == [9, 15]


@pytest.mark.parametrize(
    ("pointer", "path", "line", "note", "ticked"),
    [
        ("- [ ] ./a.py", "./a.py", None, None, False),
        ("- [x] ./a.py#7", "./a.py", 7, None, True),
        ("- [X] ./a.py#7 — why", "./a.py", 7, "why", True),
        ("- [ ] ./a.py -- two hyphens", "./a.py", None, "two hyphens", False),
        ("-[ ]./a.py", "./a.py", None, None, False),
        ("  - [ ] ./indented.py", "./indented.py", None, None, False),
        ("- [ ] ./gen-docs.py", "./gen-docs.py", None, None, False),
        (
            "- [ ] ./gen-docs.py#12 — a note — with dashes",
            "./gen-docs.py",
            12,
            "a note — with dashes",
            False,
        ),
        ("- [ ] ./a.py—glued note", "./a.py", None, "glued note", False),
        ("- [ ] ./dir/#1", "./dir/", 1, None, False),
        ("- [ ] ./a#b.py", "./a#b.py", None, None, False),
        ("- [ ] ./#12", "./#12", None, None, False),
        ("- [ ] ./a.py\t— tabbed", "./a.py", None, "tabbed", False),
    ],
)
def test_pointer_shapes(
    pointer: str, path: str, line: int | None, note: str | None, ticked: bool
) -> None:
    doc = parse_review(f"# Review: h\n<!-- base: b -->\n## C\n{pointer}\n")
    assert doc.findings == ()
    (p,) = doc.pointers
    assert (p.path, p.line, p.note, p.ticked) == (path, line, note, ticked)
    assert pointer[p.box] in " xX"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "",
            [(1, "REVIEW.md is empty"), (1, "missing '<!-- base"), (1, "no '## <title>' chunk")],
            id="empty file",
        ),
        pytest.param(
            "\n\n## C\n- [ ] ./a\n<!-- base: b -->\n",
            [(3, "the first line must be '# Review: <hash>'")],
            id="no header",
        ),
        pytest.param(
            "# Review:\n<!-- base: b -->\n## C\n- [ ] ./a\n",
            [(1, "the first line must be")],
            id="header without hash",
        ),
        pytest.param(
            "# Review: a b\n<!-- base: b -->\n## C\n- [ ] ./a\n",
            [(1, "the first line must be")],
            id="header with two words",
        ),
        pytest.param(
            "# Review: h\n## C\n- [ ] ./a\n",
            [(1, "missing '<!-- base: <hash> -->' line")],
            id="review without base comment",
        ),
        pytest.param(
            "# Review: h\n<!-- base: -->\n## C\n- [ ] ./a\n",
            [(1, "missing '<!-- base")],
            id="base comment without hash",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\nNo chunks.\n",
            [(1, "no '## <title>' chunk")],
            id="no chunk",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\n##\n- [ ] ./a\n",
            [(3, "chunk heading '##' has no title"), (4, "outside any '##' chunk"), (1, "no '##")],
            id="chunk heading with no text",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\n## C\nprose only\n",
            [(3, "chunk 'C' has no pointer")],
            id="chunk without pointers",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\n## C\n- [ ] src/a.py#3\n",
            [(3, "has no pointer"), (4, "pointer path 'src/a.py#3' must start with './'")],
            id="pointer without ./",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\n## C\n- [ ] ./ok\n- [ ] /abs/a.py\n",
            [(5, "must start with './'")],
            id="absolute path",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\n## C\n- [ ] ./ok\n- [ ] ./\n",
            [(5, "pointer path './' must start with './'")],
            id="bare ./",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\n## C\n- [ ] ./ok\n- [ ]\n",
            [(5, "pointer has no path")],
            id="no path",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\n## C\n- [ ] ./ok\n- [-] ./a\n- [] ./b\n",
            [(5, "checkbox '[-]'"), (6, "checkbox '[]'")],
            id="bad boxes",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\n## C\n- [ ] ./ok\n* [ ] ./a\n",
            [(5, "starts with '- '")],
            id="star bullet",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\n## C\n- [ ] ./ok\n- [ ] ./a.py plain words\n",
            [(5, "malformed pointer")],
            id="note without a dash",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\n- [ ] ./early\n## C\n- [ ] ./ok\n",
            [(3, "outside any '##' chunk")],
            id="pointer before the first chunk",
        ),
        pytest.param(
            "# Review: h\r\n<!-- base: b -->\r\n## C\r\nprose\r\n## D\r\n- [ ] x\r\n",
            [(3, "chunk 'C' has no pointer"), (5, "chunk 'D' has no pointer"), (6, "'./'")],
            id="CRLF findings keep their lines",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\n## C\n```\n- [ ] ./quoted\n```\n",
            [(3, "chunk 'C' has no pointer")],
            id="pointers in fenced code are examples",
        ),
        pytest.param(
            "# Review: h\n<!-- base: b -->\n## C\n- [ ] ./a\n# Other\n- [ ] ./b\n",
            [(6, "outside any '##' chunk")],
            id="a level-1 heading ends the chunk",
        ),
    ],
)
def test_findings(text: str, expected: list[tuple[int, str]]) -> None:
    doc = parse_review(text)
    got = sorted((f.line, f.message) for f in doc.findings)
    assert len(got) == len(expected), got
    for line, fragment in expected:
        assert any(g[0] == line and fragment in g[1] for g in got), (line, fragment, got)


def test_a_pointer_outside_chunks_is_a_warning_and_others_errors() -> None:
    doc = parse_review("# Review: h\n<!-- base: b -->\n- [ ] ./x\n## C\n- [ ] ./ok\n- [ ] x\n")
    assert [(f.line, f.severity) for f in doc.findings] == [(3, "warning"), (6, "error")]


def test_valid_review_details() -> None:
    # Prose lines, sub-headings and markdown links inside a chunk are description.
    text = (
        "\n  # Review: h\n\nIntro.\n## C\n### Detail\nSee [the docs](./d.md).\n- [x] ./a\n"
        "<!-- base: b -->\n"
    )
    doc = parse_review(text)
    assert doc.findings == ()
    assert doc.chunks[0].description == "### Detail See [the docs](./d.md)."
    assert doc.chunks[0].ticked


@pytest.mark.parametrize(
    ("line", "titles", "edits"),
    [
        (3, ["Tick all in 'C'"], [(4, " ", "x")]),
        (4, ["Tick ./a#1", "Tick all in 'C'"], [(4, " ", "x")]),
        (5, ["Untick ./b", "Tick all in 'C'"], [(5, "x", " ")]),
        (7, ["Untick all in 'D'"], [(8, "x", " "), (9, "X", " ")]),
        (9, ["Untick ./d", "Untick all in 'D'"], [(9, "X", " ")]),
        (1, [], []),
    ],
)
def test_toggle_actions(line: int, titles: list[str], edits: list[tuple[int, str, str]]) -> None:
    text = (
        "# Review: h\n<!-- base: b -->\n## C\n- [ ] ./a#1\n  - [x] ./b\n\n"
        "## D\n- [x] ./c\n-  [X] ./d\n"
    )
    lines = text.split("\n")
    actions = toggle_actions(parse_review(text), line)
    assert [a.title for a in actions] == titles
    if actions:
        first = actions[0].edits
        assert [(e.line, lines[e.line - 1][e.column], e.text) for e in first] == edits


def test_whole_chunk_tick_only_edits_unticked_pointers() -> None:
    text = "# Review: h\n<!-- base: b -->\n## C\n- [ ] ./a\n- [x] ./b\n- [ ] ./c\n"
    (chunk_action,) = toggle_actions(parse_review(text), 3)
    assert chunk_action.edits == (BoxEdit(4, 3, "x"), BoxEdit(6, 3, "x"))
