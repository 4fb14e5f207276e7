"""Text cut to a readable length for answers, the report and briefs. Pure.

A reason names the tests that decided it, and a test id can be kilobytes long (a
parametrized test whose id holds its data). The sealed records and the memory file
keep every reason whole; what a person or an agent reads is cut: each over-long
word in its middle (the file and test name at the front and the end of the
parameters stay), then the whole text at a word boundary.
"""

from __future__ import annotations

REASON_MAX = 300  # characters of a reason in an answer, a report cell or a brief
WORD_MAX = 160  # characters of one word (a test id, a path) before it is cut
_TAIL = 40


def shorten_word(text: str, limit: int = WORD_MAX) -> str:
    """One word (a test id) cut in its middle when longer than ``limit``."""
    if len(text) <= limit:
        return text
    return text[: limit - _TAIL - 1] + "…" + text[-_TAIL:]


def shorten(text: str, limit: int = REASON_MAX) -> str:
    """``text`` with every over-long word cut, then cut to ``limit`` characters at
    a word boundary, marked with …."""
    if len(text) > WORD_MAX and any(len(w) > WORD_MAX for w in text.split()):
        text = " ".join(shorten_word(w) for w in text.split(" "))
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    cut = head.rsplit(" ", 1)[0] if " " in head else head
    return cut + "…"
