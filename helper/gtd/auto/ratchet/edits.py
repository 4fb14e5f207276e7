"""Which test an edit of a protected test file touched, in words a person can act
on: ``a protected test was changed: tests/test_api.py::test_x (line 12)`` instead
of the file alone, and ``a protected test was deleted: tests/test_api.py::test_y``
for a test method removed (the commonest way to weaken a suite).

Pure: the file's text at the baseline and now in, a reason out. Python files are
read with ``ast`` (the innermost function or class around the first changed line);
any other file, or one that does not parse, is named by its line alone.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterator

CHANGED = "a protected test was changed"
DELETED = "a protected test was deleted"
_MAX_BYTES = 1 << 20  # past this, the file is named without a diff (cheap, always)


def _defs(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int, int]]:
    """(qualified name, first line, last line) of every function and class,
    outer before inner; the first line is that of the first decorator."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{node.name}"
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            yield name, first, node.end_lineno or node.lineno
            yield from _defs(node, name + "::")


def _tests(defs: list[tuple[str, int, int]]) -> list[str]:
    """The test functions among ``defs`` (pytest's default naming)."""
    return [name for name, _, _ in defs if name.rpartition("::")[2].startswith("test")]


def _parse(text: str) -> list[tuple[str, int, int]] | None:
    try:
        return list(_defs(ast.parse(text)))
    except (SyntaxError, ValueError, RecursionError):
        return None


def first_changed_line(old: str, new: str) -> int | None:
    """The first line of ``old`` (1-based) that ``new`` changed, removed or
    inserted before; None when the texts have the same lines."""
    return next(changed_lines(old, new), None)


def changed_lines(old: str, new: str) -> Iterator[int]:
    """The first line of ``old`` (1-based) of each place ``new`` differs, in order."""
    before, after = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, _, _, _ in matcher.get_opcodes():
        if tag != "equal":
            yield min(i1 + 1, max(len(before), 1))


def describe(path: str, old: bytes, new: bytes) -> str:
    """Why the edit of ``path`` (a protected test file) is refused, naming the
    test and the line where that can be told."""
    if len(old) > _MAX_BYTES or len(new) > _MAX_BYTES:
        return f"{CHANGED}: {path}"
    old_text = old.decode("utf-8", "replace")
    new_text = new.decode("utf-8", "replace")
    was = _parse(old_text) if path.endswith(".py") else None
    now = _parse(new_text) if was is not None else None
    if was is not None and now is not None:
        gone = [t for t in _tests(was) if t not in set(_tests(now))]
        if gone:
            more = f" (and {len(gone) - 1} more)" if len(gone) > 1 else ""
            return f"{DELETED}: {path}::{gone[0]}{more}"
    line = first_changed_line(old_text, new_text)
    before, after = old_text.splitlines(), new_text.splitlines()
    if line is not None and len(after) > len(before) and after[: len(before)] == before:
        return f"{CHANGED}: {path} (lines added after its last, line {len(before)})"
    if line is None:
        # Same lines, other bytes (line endings, a byte-order mark): still an edit.
        return f"{CHANGED}: {path} (its line endings or encoding)"
    # The first change inside a test (a function or class) is what to look at: an
    # import added above a skip marker is not where the suite was weakened.
    for at in changed_lines(old_text, new_text):
        around = [name for name, a, b in (was or []) if a <= at <= b]
        if around:
            # the innermost: _defs yields outer before inner
            return f"{CHANGED}: {path}::{around[-1]} (line {at})"
    return f"{CHANGED}: {path} (line {line})"
