"""What the snapshot's tests lean on outside the test folders, protected without
being declared: the modules they import that assert (an assertion helper kept in
the product package, ``pkg/testing.py``), and the data files they open (golden
files beside the code). Pure: the test sources and the tree's paths in, paths
out. The snapshot holds them like its tests
(gtd.auto.ratchet.baseline_run.snapshot_of), so a cycle that widens the helper
or rewrites the golden file is reverted.

Read from the tests' syntax trees: an import names its module, and a file is a
string the tests hand to ``open``, ``Path``, ``os.path.join`` or a ``/`` path.
What the tests reach only at run time (a name computed from strings) is beyond
this reader; ``ratchet.protect`` declares such files by hand.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Mapping

_OPENERS = frozenset(
    {"open", "Path", "PurePath", "join", "read_text", "read_bytes", "joinpath", "files"}
)


def leaned_on(tests: Mapping[str, bytes], paths: Collection[str]) -> dict[str, str]:
    """The files of ``paths`` (the tree's, test files excluded by the caller's
    snapshot) that the tests in ``tests`` (path → source) lean on, each with why."""
    modules: set[str] = set()
    names: set[str] = set()
    for source in tests.values():
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        modules |= _imported(tree)
        names |= _opened(tree)
    out: dict[str, str] = {}
    for path in _module_files(modules, paths):
        out[path] = "a module the tests import"
    for path in paths:
        if path.endswith(".py") or path in out:
            continue
        if any(path == name or path.endswith("/" + name) for name in names):
            out[path] = "a file the tests open"
    return out


def asserts(source: bytes) -> bool:
    """Whether a module states assertions: ``assert``, ``raise AssertionError``,
    ``pytest.approx``, a unittest ``assert…`` method or ``pytest.fail``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id == "AssertionError":
                return True
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("approx", "fail") or name.startswith("assert"):
                return True
    return False


def _imported(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def _opened(tree: ast.AST) -> set[str]:
    """File names the tests hand to an opener or a ``/`` path."""
    out: set[str] = set()
    for node in ast.walk(tree):
        args: Iterable[ast.AST] = ()
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _OPENERS:
                args = node.args
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            args = (node.left, node.right)
        for arg in args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                name = arg.value.strip().lstrip("./")
                if "." in name.rsplit("/", 1)[-1] and len(name) >= 3:
                    out.add(name)
    return out


def _module_files(modules: set[str], paths: Collection[str]) -> list[str]:
    """The repository files that ``modules`` name (``pkg.testing`` →
    ``pkg/testing.py`` or ``pkg/testing/__init__.py``, at the top or under a
    source folder such as ``src/``)."""
    wanted = set()
    for module in modules:
        rel = module.replace(".", "/")
        wanted.add(f"{rel}.py")
        wanted.add(f"{rel}/__init__.py")
    out = []
    for path in paths:
        if not path.endswith(".py"):
            continue
        parts = path.split("/")
        if any("/".join(parts[i:]) in wanted for i in range(len(parts))):
            out.append(path)
    return sorted(out)
