"""Fenced code blocks: which lines of a markdown file are an example, not structure.
One rule for every markdown file the helper reads — PLAN.md (a fenced checkbox is
not a task, a fenced ``- Blocked by:`` not a dependency) and the steering files (a
fenced ``#`` line is not a heading). Pure, and only ``re``: PLAN.md is read on
every tick of the unattended loop."""

from __future__ import annotations

import re

# A fence may be indented any amount: inside a list item (a task's block, a review
# chunk's bullet) it is indented with the item's text.
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")


class FenceTracker:
    """Fed the lines of a document in order, says whether each sits inside a fenced
    code block (``` or ~~~). A fence closes on the same character, at least as long,
    with nothing else on the line (CommonMark); anything else inside is content."""

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: str | None = None

    @property
    def inside(self) -> bool:
        """True while a fence is open: the next line is fenced content or its close."""
        return self._open is not None

    def step(self, line: str) -> bool:
        """Feed the next line; True when it opens, closes or sits inside a fence."""
        if self._open is None:
            lead = line.lstrip(" \t")[:1]
            if lead not in {"`", "~"}:
                return False  # the common case, without a regex
            match = _FENCE.match(line)
            if match is None:
                return False
            self._open = match.group(1)
            return True
        match = _FENCE.match(line)
        if match is not None and not line[match.end() :].strip():
            fence = match.group(1)
            if fence[0] == self._open[0] and len(fence) >= len(self._open):
                self._open = None
        return True
