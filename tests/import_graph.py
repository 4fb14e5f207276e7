"""The helper's import graph, read from its source with `ast` (nothing is imported).

Every import counts: at module level, inside functions and methods, and
``importlib.import_module("…")`` / ``__import__("…")`` with a literal name. Only
the imports under ``if TYPE_CHECKING:`` are left out: the type checker reads
them, the interpreter never runs them. tests/unit/test_layout.py holds the
declared map (which module is core, which is edge) and checks the graph against
it; the functions here take a folder and a package name, so the same checks run
on a small synthetic package to show they fail.

The IO check is by name (IO_BUILTINS, IO_METHODS: ``open``, ``.read_text``,
``.now`` on any receiver; os, sys and time name by name): it sees the usual ways
and is no wall against a determined one (``getattr(p, "write_" + "text")``, or a
call of an allowed module that also reads, as ``ElementTree.parse`` of a path).

Besides imports, the walk notes every place a module builds a git command line
(a list or tuple whose first item is the literal ``"git"``, or a process call
whose first argument is): the one seam for git is ``gtd.git.Git``.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Import:
    target: str  # the absolute module name imported
    line: int
    in_function: bool


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    imports: list[Import] = field(default_factory=list)
    git_lines: list[int] = field(default_factory=list)
    # ``os.path.join``, ``sys.version_info``: each use of os's and sys's names (line)
    uses: list[tuple[str, int]] = field(default_factory=list)
    # ``open(…)``, ``x.read_text(…)``, ``datetime.now()``: calls that read, write or
    # ask the clock whatever their receiver (line)
    io_calls: list[tuple[str, int]] = field(default_factory=list)


def module_names(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Every module of ``package`` (whose folder is ``root``): name → (file, is a package)."""
    found: dict[str, tuple[Path, bool]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        if "__pycache__" in rel.parts or not _in_package(root, path.parent):
            continue
        parts = [package, *rel.parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


def _in_package(root: Path, folder: Path) -> bool:
    # A folder without __init__.py is data (the demo's sample project), not the package.
    while folder != root:
        if not (folder / "__init__.py").exists():
            return False
        folder = folder.parent
    return True


def scan(root: Path, package: str) -> dict[str, Module]:
    names = module_names(root, package)
    modules: dict[str, Module] = {}
    for name, (path, is_package) in names.items():
        module = Module(name, path, is_package)
        tree = ast.parse(path.read_bytes(), str(path))
        _Walker(module, set(names)).visit(tree)
        modules[name] = module
    return modules


_PROCESS_CALLS = frozenset(
    {"run", "Popen", "call", "check_call", "check_output", "spawn", "start", "execvp", "execv"}
)


# The allowed standard-library modules that also hold IO (os, sys, time) are
# checked name by name; the calls below are IO on any receiver.
ATTRIBUTE_CHECKED = ("os", "sys", "time")
IO_BUILTINS = frozenset({"open", "print", "input", "breakpoint"})
IO_METHODS = frozenset(
    {
        "read_text", "read_bytes", "write_text", "write_bytes", "open", "unlink", "mkdir",
        "rmdir", "touch", "iterdir", "glob", "rglob", "exists", "is_file", "is_dir",
        "is_symlink", "stat", "lstat", "chmod", "symlink_to", "resolve", "samefile",
        "expanduser", "cwd", "home", "readline", "readlines", "writelines", "now", "today",
        "utcnow", "time", "monotonic", "perf_counter", "time_ns", "monotonic_ns", "urandom",
        "getenv",
    }
)  # fmt: skip


def _is_git(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == "git"


class _Walker(ast.NodeVisitor):
    def __init__(self, module: Module, known: set[str]) -> None:
        self.module = module
        self.known = known
        self.depth = 0  # functions entered
        self.aliases: dict[str, str] = {}  # local name → os / sys / os.path

    # -- scopes -------------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function(node)

    def _function(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
        if name == "TYPE_CHECKING":
            for child in node.orelse:  # the run-time branch runs
                self.visit(child)
            return
        self.generic_visit(node)

    # -- imports ------------------------------------------------------------------------

    def _add(self, target: str, node: ast.AST) -> None:
        self.module.imports.append(Import(target, getattr(node, "lineno", 0), self.depth > 0))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)
            if top(alias.name) in ATTRIBUTE_CHECKED:
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    self.aliases[top(alias.name)] = top(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            parts = self.module.name.split(".")
            if not self.module.is_package:
                parts.pop()
            if node.level > 1:
                parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, node.module] if node.module else parts)
        else:
            base = node.module or ""
        for alias in node.names:
            # `from pkg import name`: a submodule when one of that name exists.
            sub = f"{base}.{alias.name}"
            self._add(sub if sub in self.known else base, node)
            if top(base) in ATTRIBUTE_CHECKED and not node.level:
                self.module.uses.append((sub, node.lineno))
                if sub == "os.path":  # a module: its names are checked where used
                    self.aliases[alias.asname or alias.name] = sub

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        first = node.args[0] if node.args else None
        literal = first.value if isinstance(first, ast.Constant) else None
        if name in ("import_module", "__import__") and isinstance(literal, str):
            self._add(literal, node)
        if name in _PROCESS_CALLS and first is not None and _is_git(first):
            self.module.git_lines.append(node.lineno)
        if (isinstance(func, ast.Name) and name in IO_BUILTINS) or (
            isinstance(func, ast.Attribute) and name in IO_METHODS
        ):
            self.module.io_calls.append((name, node.lineno))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = [node.attr]
        inner: ast.expr = node.value
        while isinstance(inner, ast.Attribute):
            chain.append(inner.attr)
            inner = inner.value
        if isinstance(inner, ast.Name) and inner.id in self.aliases:
            self.module.uses.append(
                (".".join([self.aliases[inner.id], *reversed(chain)]), node.lineno)
            )
            return  # the longest chain only: `os.path.join`, not `os.path` again
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        # `os` handed on whole (`f(os)`, `x = sys`): anything could be done with it.
        if node.id in self.aliases and isinstance(node.ctx, ast.Load):
            self.module.uses.append((self.aliases[node.id], node.lineno))

    # -- git command lines --------------------------------------------------------------

    def visit_List(self, node: ast.List) -> None:
        self._sequence(node)

    def visit_Tuple(self, node: ast.Tuple) -> None:
        self._sequence(node)

    def _sequence(self, node: ast.List | ast.Tuple) -> None:
        if node.elts and _is_git(node.elts[0]):
            self.module.git_lines.append(node.lineno)
        self.generic_visit(node)


# -- the checks ---------------------------------------------------------------------------


def top(name: str) -> str:
    return name.split(".", 1)[0]


def undeclared(modules: dict[str, Module], core: set[str], edge: set[str], where: str) -> list[str]:
    problems = []
    for name in sorted(modules):
        if name not in core and name not in edge:
            problems.append(
                f"{name} ({modules[name].path}) is neither core nor edge: declare it in "
                f"{where} (CORE if it does no IO, else EDGE)"
            )
    for name in sorted((core | edge) - set(modules)):
        problems.append(f"{name} is declared in {where} but no such module exists")
    for name in sorted(core & edge):
        problems.append(f"{name} is declared both core and edge in {where}")
    return problems


def impurities(
    modules: dict[str, Module],
    core: set[str],
    package: str,
    stdlib_allowed: set[str],
    names_allowed: set[str],
    core_reads: dict[str, str],
) -> list[str]:
    """A core module may import only core modules of ``package`` and the allowed
    standard-library modules (by full name or by top-level package); of ``os``,
    ``sys`` and ``time`` it may use only the names allowed; it calls nothing that
    reads, writes or asks the clock (IO_BUILTINS, IO_METHODS, on any receiver)
    unless ``core_reads`` says why it may; and the packages it sits in import only
    such modules at load (Python runs them before it)."""

    def refused(target: str) -> str | None:
        if top(target) == package:
            return None if target in core else ", which is not core"
        if target in stdlib_allowed or top(target) in stdlib_allowed:
            return None
        kind = "standard library" if top(target) in sys.stdlib_module_names else "package"
        return f" ({kind}), which a core module may not: not on the allowed list"

    problems = []
    for name in sorted(core & set(modules)):
        module = modules[name]
        for used, line in module.uses:
            if used not in names_allowed:
                problems.append(f"{name} line {line} uses {used}, which a core module may not")
        if name not in core_reads:
            for call, line in module.io_calls:
                problems.append(f"{name} line {line} calls {call}(), IO a core module may not do")
        for imp in module.imports:
            why = refused(imp.target)
            if why is not None:
                where = f"{name} line {imp.line}" + (
                    " (inside a function)" if imp.in_function else ""
                )
                problems.append(f"{where} imports {imp.target}{why}")
        for parent in ancestors(name):
            for imp in modules[parent].imports if parent in modules else ():
                why = None if imp.in_function else refused(imp.target)
                if why is not None:
                    problems.append(
                        f"{name}: its package {parent} imports {imp.target} at load{why}"
                    )
    return problems


def ancestors(name: str) -> list[str]:
    """The packages Python runs before module ``name``: ``a.b.c`` → ``a``, ``a.b``."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def graph(modules: dict[str, Module], package: str, *, functions: bool) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, module in modules.items():
        for imp in module.imports:
            if imp.in_function and not functions:
                continue
            if imp.target in modules and imp.target != name:
                edges[name].add(imp.target)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        # Iterative, so a deep graph never meets the recursion limit.
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return sorted(found)


def git_command_lines(modules: dict[str, Module], allowed: set[str]) -> list[str]:
    return [
        f"{name} line {line} builds a git command line: call git through gtd.git.Git"
        for name in sorted(modules)
        if name not in allowed
        for line in modules[name].git_lines
    ]
