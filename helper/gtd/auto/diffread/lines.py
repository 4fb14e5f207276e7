"""Which lines of a changed file the change added: the reader reports only what the
agent wrote, never a construct the file already had at the cycle's base (a
project's own memo table, or its own ``atexit`` hook, is not the cycle's)."""

from __future__ import annotations

from difflib import SequenceMatcher


def added(old: str | None, new: str) -> frozenset[int]:
    """The 1-based numbers of the lines of ``new`` that are not in ``old``
    (every line when the file is new)."""
    new_lines = new.splitlines()
    if old is None:
        return frozenset(range(1, len(new_lines) + 1))
    matcher = SequenceMatcher(None, old.splitlines(), new_lines, autojunk=False)
    out: set[int] = set()
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            out.update(range(j1 + 1, j2 + 1))
    return frozenset(out)
