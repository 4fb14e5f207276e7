"""The open-questions format of ``.gtd/TODO.md``, as values. Pure: text in, values out.

The format (gtd 3.0 notes, "Steering-file formats"):

- TODO.md is free-form prose plus an OPTIONAL section at the heading
  ``## Open Questions``; absent, the file has zero questions and is valid.
- The section ends at the next heading of level 1 or 2, or at the end of the file.
- Every ``###`` heading inside it is one question. The first non-blank line of its
  body (up to the next heading of any level) must be ``Suggested default: <text>``
  (the agent's default, not yet answered) or ``Answer: <text>`` (the human's
  answer), with non-empty text.

Headings inside fenced code blocks are examples, not headings. A file with nothing
but whitespace is a finding: an agent turn that leaves TODO.md empty wrote no plan.
This module and its unit tests are the format's specification; ``gtd validate`` and
the language server both call :func:`parse_questions`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gtd.steering.findings import FenceTracker, Finding, heading, split_lines

QuestionStatus = Literal["suggested", "answered"]

SECTION_TITLE = "Open Questions"
_FIRST_LINE = re.compile(r"^(Suggested default|Answer):\s*(.*)$")
_STATUS: dict[str, QuestionStatus] = {"Suggested default": "suggested", "Answer": "answered"}


@dataclass(frozen=True)
class Question:
    title: str
    status: QuestionStatus
    text: str  # the suggested default or the answer
    line: int  # the ``###`` heading, 1-based
    end_line: int  # the last line of the question's body, 1-based
    text_line: int  # the ``Suggested default:``/``Answer:`` line


@dataclass(frozen=True)
class QuestionsDoc:
    questions: tuple[Question, ...]
    findings: tuple[Finding, ...]
    section_line: int | None  # the ``## Open Questions`` heading, when present

    @property
    def valid(self) -> bool:
        return not self.findings


@dataclass
class _Open:
    """A ``###`` question being read: its heading and its first non-blank body line."""

    title: str
    line: int
    first: tuple[int, str] | None = None
    last: int = 0


def parse_questions(text: str) -> QuestionsDoc:
    """Parse TODO.md. Total: any text gives a result, never an exception."""
    lines = split_lines(text)
    findings: list[Finding] = []
    questions: list[Question] = []
    if not text.strip():
        findings.append(Finding(1, "TODO.md is empty: write the plan (and any open questions)"))
        return QuestionsDoc((), tuple(findings), None)

    fences = FenceTracker()
    section_line: int | None = None
    in_section = False
    current: _Open | None = None

    def close(q: _Open | None) -> None:
        if q is None:
            return
        if q.first is None:
            findings.append(
                Finding(
                    q.line,
                    f"question '{q.title}' has no body: its first line must be "
                    "'Suggested default: <text>' or 'Answer: <text>'",
                )
            )
            return
        number, raw = q.first
        body = raw.strip()
        match = _FIRST_LINE.match(body)
        start = len(raw) - len(raw.lstrip())
        if match is None:
            findings.append(
                Finding(
                    number,
                    f"question '{q.title}': the first line must be "
                    "'Suggested default: <text>' or 'Answer: <text>'",
                    start=start,
                    end=start + len(body),
                )
            )
            return
        value = match.group(2).strip()
        if not value:
            findings.append(
                Finding(
                    number,
                    f"question '{q.title}': '{match.group(1)}:' has no text",
                    start=start,
                    end=start + len(body),
                )
            )
            return
        questions.append(Question(q.title, _STATUS[match.group(1)], value, q.line, q.last, number))

    for index, line in enumerate(lines):
        number = index + 1
        fenced = fences.step(line)
        found = None if fenced else heading(line)
        if found is not None:
            level, title = found
            if level <= 2:
                close(current)
                current = None
                in_section = level == 2 and title == SECTION_TITLE
                if in_section and section_line is None:
                    section_line = number
                continue
            if in_section:
                close(current)
                current = None
                if level == 3:
                    if title:
                        current = _Open(title, number, last=number)
                    else:
                        findings.append(
                            Finding(
                                number, "question heading '###' has no text", start=0, end=len(line)
                            )
                        )
                continue
        if current is not None and line.strip():
            current.last = number
            if current.first is None:
                current.first = (number, line)
    close(current)
    findings.sort(key=lambda f: f.line)
    return QuestionsDoc(tuple(questions), tuple(findings), section_line)
