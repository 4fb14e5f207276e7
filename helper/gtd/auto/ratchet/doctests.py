"""Doctests as snapshot tests: a digest per docstring that holds doctest examples,
keyed by the name pytest gives the doctest item. Pure: source bytes in, digests
out; the code is parsed with ``ast``, never imported.

pytest's ``--doctest-modules`` collects one item per docstring with examples,
found the way :class:`doctest.DocTestFinder` finds them, and names each
``<module>.<qualified name>``: the module's own docstring is ``pkg.mod``, a
function ``pkg.mod.f``, a class ``pkg.mod.C``, a method, property, static or
class method ``pkg.mod.C.m``, a nested class's method ``pkg.mod.C.D.m``, and an
entry of a module's ``__test__`` dict ``pkg.mod.__test__.key``. Functions nested
in functions are not collected, and neither are they here. A ``def`` or ``class``
under ``if``/``try``/``with``/``for``/``while``/``match`` at module or class level
counts (it is an attribute when that branch runs); two definitions of one name
digest together, so either changing counts.

A docstring "has examples" when a line starts with ``>>>`` after spaces (tabs
expanded), which is doctest's own rule. Its digest covers what doctest runs and
compares: each example's source (its ``# doctest:`` directives included) and its
expected output, in order, as :class:`doctest.DocTestParser` reads them (see
:func:`examples_digest`). Rewriting, adding, removing or skipping an example, or
any change to an expected output doctest would see (a space, a blank line that
ends it sooner), is "a protected test was changed: <file>::<name> (doctest)"; the
docstring's prose, the indentation and where the examples sit are not the test,
and neither are the code around it (the function body, other functions,
comments, imports): they leave every digest unchanged. A docstring doctest
cannot parse is digested as its whole text (pytest could not collect it).

Text files collected with ``--doctest-glob`` (``*.rst``, ``*.txt``...) are not
read here: the whole file is the test, so the snapshot hashes them like any
other test file.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping

from gtd import digest as sha

UNPARSABLE = "(unparsable)"
# What a digest covers; a snapshot whose digests covered something else is taken
# again (gtd.auto.baseline.summary, gtd.auto.cycle.begin).
FORMAT = "examples"

_EXAMPLE = re.compile(r"^[ ]*>>>", re.MULTILINE)  # doctest's _EXAMPLE_RE, tabs expanded
_COMPOUND = (ast.If, ast.Try, ast.With, ast.For, ast.While, ast.AsyncFor, ast.AsyncWith)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def has_examples(docstring: str) -> bool:
    return _EXAMPLE.search(docstring.expandtabs()) is not None


def doctest_digests(source: bytes, module: str) -> dict[str, str]:
    """``{doctest item name: sha256}`` for every docstring in ``source`` (a Python
    module named ``module``) that holds doctest examples. A module Python cannot
    parse yields ``{UNPARSABLE: sha256 of the whole source}``: its doctests cannot
    be told apart, and pytest could not import it either."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):  # ValueError: NUL bytes
        return {UNPARSABLE: sha.sha256(source).hexdigest()}
    texts: dict[str, list[str]] = {}
    for name, text in _docstrings(tree, module):
        if has_examples(text):
            texts.setdefault(name, []).append(text)
    return {
        name: _joined([examples_digest(text) for text in parts]) for name, parts in texts.items()
    }


def examples_digest(docstring: str) -> str:
    """sha256 of the examples doctest runs from ``docstring``: the JSON list of
    ``[source, want]`` pairs. The plugin (gtd.auto.ratchet.pytest_report) computes
    the same from the ``DocTest`` pytest parsed, to spot a docstring rewritten at
    import. Options come from the source's directives and an exception's message
    from the expected output, so the pair is all of it."""
    import doctest  # (only where a module holds doctests)

    try:
        examples = doctest.DocTestParser().get_examples(docstring)
    except ValueError:  # doctest refuses it: any change to the text counts
        return sha.sha256(("text\0" + docstring).encode("utf-8", "surrogatepass")).hexdigest()
    pairs = [[example.source, example.want] for example in examples]
    return sha.sha256(json.dumps(pairs).encode("ascii")).hexdigest()


def _joined(digests: list[str]) -> str:
    """One digest for a name defined once (the digest itself) or more than once."""
    if len(digests) == 1:
        return digests[0]
    return sha.sha256("\0".join(digests).encode("ascii")).hexdigest()


def _docstrings(tree: ast.Module, module: str) -> Iterator[tuple[str, str]]:
    doc = ast.get_docstring(tree, clean=False)
    if doc is not None:
        yield module, doc
    for node in _members(tree.body):
        yield from _definition(node, module)
    for node in _members(tree.body, defs=False):
        yield from _test_dict(node, module)


def _members(body: Iterable[ast.stmt], *, defs: bool = True) -> Iterator[ast.stmt]:
    """Statements that define attributes of the enclosing module or class: its own,
    and those inside compound statements (never inside a def or class)."""
    for node in body:
        if isinstance(node, _DEFS):
            if defs:
                yield node
        elif isinstance(node, _COMPOUND) or type(node).__name__ in ("TryStar", "Match"):
            for block in _blocks(node):
                yield from _members(block, defs=defs)
        elif not defs:
            yield node


def _blocks(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list):
            yield block
    for handler in getattr(node, "handlers", ()):
        yield handler.body
    for case in getattr(node, "cases", ()):
        yield case.body


def _definition(node: ast.stmt, prefix: str) -> Iterator[tuple[str, str]]:
    assert isinstance(node, _DEFS)
    name = f"{prefix}.{node.name}"
    doc = ast.get_docstring(node, clean=False)
    if doc is not None:
        yield name, doc
    if isinstance(node, ast.ClassDef):  # methods, properties, nested classes
        for member in _members(node.body):
            yield from _definition(member, name)


def _test_dict(node: ast.stmt, module: str) -> Iterator[tuple[str, str]]:
    """``__test__ = {"name": "docstring"}``: doctest collects each string value as
    ``module.__test__.name``; a value it cannot read here is digested as its code."""
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets, value = [node.target], node.value
    else:
        return
    if not any(isinstance(t, ast.Name) and t.id == "__test__" for t in targets):
        return
    if not isinstance(value, ast.Dict):
        yield f"{module}.__test__", ">>> " + ast.dump(value)
        return
    for key, item in zip(value.keys, value.values, strict=False):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            yield f"{module}.__test__", ">>> " + ast.dump(value)
            continue
        name = f"{module}.__test__.{key.value}"
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            yield name, item.value
        else:
            yield name, ">>> " + ast.dump(item)  # a function or class: its code decides


def changes(path: str, before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Integrity reasons for the doctests of the file at ``path``: each baseline
    doctest must keep its digest. New doctests are new tests, not violations."""
    if before and UNPARSABLE in after and UNPARSABLE not in before:
        return [f"a protected test was changed: {path} {UNPARSABLE} (doctest)"]
    out: list[str] = []
    for name in sorted(before):
        now = after.get(name)
        label = f"{path} {UNPARSABLE}" if name == UNPARSABLE else f"{path}::{name}"
        if now is None:
            out.append(f"a protected test was deleted or renamed: {label} (doctest)")
        elif now != before[name]:
            out.append(f"a protected test was changed: {label} (doctest)")
    return out


def module_name(path: str, package_dirs: Collection[str]) -> str:
    """The module name pytest's default import mode (``prepend``) gives the file at
    ``path`` (repository-relative): its stem, prefixed by each enclosing folder that
    is a package (holds ``__init__.py``; ``package_dirs`` lists those folders).
    With ``--import-mode=importlib`` or a ``src`` layout on ``sys.path`` the name
    can differ: the item names in pytest's collection are the authority."""
    folder, _, filename = path.rpartition("/")
    stem = filename[:-3] if filename.endswith(".py") else filename
    parts = [] if stem == "__init__" else [stem]
    while folder and folder in package_dirs:
        folder, _, name = folder.rpartition("/")
        parts.insert(0, name)
    return ".".join(parts) if parts else "__init__"
