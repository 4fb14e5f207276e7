"""A finding: one rule a steering file breaks, located by line (and column span).

Lines are 1-based, as ``path:line`` in the validator's output; columns are 0-based
Python string offsets into the line, end exclusive (the language server converts
both to the client's position encoding). Every finding fails validation, whatever
its severity: the validator accepts a file exactly when the language server shows
no diagnostic for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gtd.fences import FenceTracker

Severity = Literal["error", "warning"]

__all__ = ["FenceTracker", "Finding", "Severity", "heading", "split_lines"]

# The line ends LSP counts (\r\n, \r, \n) — str.splitlines() also splits on \v, \f,
# \x1c and U+2028, which would put findings on lines the editor does not have.
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Finding:
    line: int
    message: str
    severity: Severity = "error"
    start: int | None = None
    end: int | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "line": self.line,
            "column": None if self.start is None else self.start + 1,
            "end_column": None if self.end is None else self.end + 1,
            "message": self.message,
            "severity": self.severity,
        }


def split_lines(text: str) -> list[str]:
    """The document's lines without their line ends; ``""`` is one empty line, and a
    final line end opens an (empty) last line, as editors count them."""
    return _LINE_END.split(text)


# Greedy and anchored: every pattern here stays linear on a 5 MB line.
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")


def heading(line: str) -> tuple[int, str] | None:
    """``(level, text)`` for an ATX heading line, else None. ``text`` is ``""`` for a
    heading with no text; an optional closing ``#`` run is not part of it."""
    if "#" not in line[:4]:
        return None
    match = _HEADING.match(line)
    if match is None:
        return None
    text = (match.group(2) or "").strip()
    if text.endswith("#"):
        bare = text.rstrip("#")
        if not bare or bare[-1] in " \t":
            text = bare.strip()
    return len(match.group(1)), text
