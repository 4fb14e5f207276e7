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


# -- the product values the assertions read -------------------------------------------

_ASSERTING_CALLS = ("approx", "fail")


def module_names(path: str) -> set[str]:
    """The names a repository file is imported by: its dotted path from the top,
    and from a source folder (``src/pkg/flags.py`` → ``src.pkg.flags``,
    ``pkg.flags``); an extension module by its stem (``pkg/flags.cpython-311-x86_64-linux-gnu.so``
    → ``pkg.flags``)."""
    folder, _, name = path.rpartition("/")
    if name == "__init__.py":
        parts = folder.split("/") if folder else []
    elif name.endswith((".py", ".so", ".pyd")):
        parts = [*(folder.split("/") if folder else []), name.split(".")[0]]
    else:
        return set()
    if not parts or not all(p.isidentifier() for p in parts[-1:]):
        return set()
    out = {".".join(parts)}
    if len(parts) > 1 and parts[0] in ("src", "lib", "python"):
        out.add(".".join(parts[1:]))
    return out


def asserted_names(sources: Iterable[str]) -> frozenset[tuple[str, str]]:
    """(module, name) of each product value the tests' assertions read: a name
    imported from a module (``from pkg.flags import TOL``) or an attribute of an
    imported module (``flags.TOL``) inside an ``assert``, a unittest ``assert…``
    call or ``pytest.approx``."""
    out: set[tuple[str, str]] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        objects, modules = bindings(tree)
        for node in ast.walk(tree):
            if not _asserting(node):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and inner.id in objects:
                    out.add(objects[inner.id])
                elif isinstance(inner, ast.Attribute):
                    base = _dotted(inner.value)
                    if base is not None:
                        head, _, rest = base.partition(".")
                        if head in modules:
                            module = modules[head] + (f".{rest}" if rest else "")
                            out.add((module, inner.attr))
    return frozenset(out)


def _asserting(node: ast.AST) -> bool:
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in _ASSERTING_CALLS or name.startswith("assert")
    return False


def bindings(tree: ast.AST) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """(a name bound to a module's attribute → (module, attribute); a name bound
    to a module → the module)."""
    objects: dict[str, tuple[str, str]] = {}
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                bound = alias.asname or alias.name
                objects[bound] = (node.module, alias.name)
                # `from pkg import flags` may bind a module: both readings are kept
                modules.setdefault(bound, f"{node.module}.{alias.name}")
    return objects, modules


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None
