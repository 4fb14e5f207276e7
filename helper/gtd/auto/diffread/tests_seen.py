"""What the snapshot's tests feed the code and expect back: the (input, answer)
pairs of their assertions, read from the test files' AST.

A lookup table of the tests' own inputs is the commonest cheat a passing run
hides (``{2: 4, 3: 9}`` for a ``square`` the tests call with 2 and 3). The pairs
come from the plain shapes a test states them in: ``assert f(2) == 4`` (either
side, ``pytest.approx`` unwrapped), ``self.assertEqual(f(2), 4)`` and its
unittest siblings, and ``pytest.mark.parametrize`` rows, whose last value is taken
as the answer and the others as inputs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

Literal = object  # a hashable value literal_eval gave
Pair = tuple[Literal, Literal]

_EQUAL_ASSERTS = frozenset(
    {"assertEqual", "assertEquals", "assertAlmostEqual", "assertIs", "assertCountEqual"}
)


def literal(node: ast.AST) -> tuple[bool, Literal]:
    """(True, the value) for a constant expression whose value is hashable."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
    if isinstance(value, list):
        value = tuple(value)
    try:
        hash(value)
    except TypeError:
        return False, None
    return True, value


def pairs(sources: Iterable[str]) -> frozenset[Pair]:
    """Every (input, answer) pair the given test sources assert."""
    out: set[Pair] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
                out.update(_from_compare(node.test))
            elif isinstance(node, ast.Call):
                out.update(_from_call(node))
    return frozenset(out)


def _from_compare(test: ast.Compare) -> Iterable[Pair]:
    if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.Eq, ast.Is)):
        return ()
    return _pair_of(test.left, test.comparators[0])


def _from_call(call: ast.Call) -> Iterable[Pair]:
    name = call.func.attr if isinstance(call.func, ast.Attribute) else None
    if name in _EQUAL_ASSERTS and len(call.args) >= 2:
        return _pair_of(call.args[0], call.args[1])
    if name == "parametrize" and len(call.args) >= 2:
        return _from_rows(call.args[1])
    return ()


def _pair_of(one: ast.AST, other: ast.AST) -> list[Pair]:
    for called, expected in ((one, other), (other, one)):
        if isinstance(called, ast.Call) and not _is_approx(called):
            ok, answer = literal(_unwrap(expected))
            if ok:
                return [(value, answer) for value in _inputs(called.args)]
    return []


def _is_approx(node: ast.Call) -> bool:
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "approx") or (
        isinstance(func, ast.Name) and func.id == "approx"
    )


def _unwrap(node: ast.AST) -> ast.AST:
    """``pytest.approx(4.0)`` → ``4.0``."""
    if isinstance(node, ast.Call) and _is_approx(node) and node.args:
        return node.args[0]
    return node


def _inputs(args: list[ast.expr]) -> list[Literal]:
    """Each literal argument, and the tuple of all of them when there are several
    (a table keyed by the whole argument list)."""
    values = []
    for arg in args:
        ok, value = literal(arg)
        if ok:
            values.append(value)
    if len(values) > 1 and len(values) == len(args):
        values.append(tuple(values))
    return values


def _from_rows(node: ast.AST) -> list[Pair]:
    if not isinstance(node, (ast.List, ast.Tuple)):
        return []
    out: list[Pair] = []
    for row in node.elts:
        values = row.args if isinstance(row, ast.Call) else getattr(row, "elts", None)
        if not isinstance(row, (ast.Call, ast.Tuple)) or not values or len(values) < 2:
            continue  # a pytest.param(...) row gives its args
        ok, answer = literal(values[-1])
        if ok:
            out.extend((value, answer) for value in _inputs(list(values[:-1])))
    return out
