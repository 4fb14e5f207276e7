"""The AST walk: each pattern of :mod:`gtd.auto.diffread.patterns`, looked for in
the product code a change added.

Only product files are read (test files and test configuration are the ratchet's
to judge: :func:`gtd.auto.ratchet.files.is_test_path`), and a construct counts only
where it touches a line the change added (:mod:`gtd.auto.diffread.lines`). Names
are resolved through the file's own imports (``import sys as s``, ``from os
import environ``), so ``s.modules`` reads as ``sys.modules``; what an attacker
hides behind ``getattr`` and strings is beyond any reader of source and stays in
the threat model (the reviewer and the tests are the other layers).
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Collection, Iterable, Iterator

from gtd.auto.diffread import lines, tests_seen
from gtd.auto.diffread.patterns import Finding
from gtd.auto.ratchet import files
from gtd.tuples import NamedTuple


class Source(NamedTuple):
    """One changed file: its text at the cycle's base (None: new) and now."""

    path: str
    old: str | None
    new: str


def read(
    sources: Iterable[Source],
    test_sources: Iterable[str] = (),
    test_paths: Collection[str] = (),
) -> list[Finding]:
    """The findings over the changed product files, sorted by file and line.

    ``test_sources``: the snapshot tests' text (their inputs and answers);
    ``test_paths``: the snapshot's test files (product code must not name them)."""
    answers = _Answers(test_sources)
    out: list[Finding] = []
    for source in sources:
        if not source.path.endswith(".py") or files.is_test_path(source.path):
            continue
        try:
            tree = ast.parse(source.new)
        except (SyntaxError, ValueError):
            continue  # the tests will say so; nothing to read
        added = lines.added(source.old, source.new)
        if added:
            found = _File(source.path, tree, added, answers, test_paths).findings()
            out.extend(found + _constants(source, tree, added, answers))
    return sorted(set(out))


class _Answers:
    """What the snapshot's tests hold the code to, parsed only when a change holds
    something to compare (most changes hold no literal table and assign no
    module-level value, and a large suite takes a while to parse)."""

    def __init__(self, sources: Iterable[str]) -> None:
        self.sources = sources
        self.texts: list[str] | None = None
        self.seen: frozenset[tests_seen.Pair] | None = None
        self.names: frozenset[tuple[str, str]] | None = None

    def _texts(self) -> list[str]:
        if self.texts is None:
            self.texts = list(self.sources)
        return self.texts

    def pairs(self) -> frozenset[tests_seen.Pair]:
        """(input, answer) pairs of the tests' assertions."""
        if self.seen is None:
            self.seen = tests_seen.pairs(self._texts())
        return self.seen

    def asserted(self) -> frozenset[tuple[str, str]]:
        """(module, name) of the product values the assertions read."""
        if self.names is None:
            self.names = tests_seen.asserted_names(self._texts())
        return self.names


# -- what the patterns look for -------------------------------------------------------

_TEST_ENV = re.compile(r"PYTEST|(^|_)(UNIT)?TEST(S|ING)?(_|$)", re.IGNORECASE)
_TEST_FRAMEWORKS = frozenset(
    {"pytest", "_pytest", "unittest", "unittest.mock", "nose", "nose2", "doctest", "hypothesis"}
)
_TEST_WORD = re.compile(r"(^|[^a-z])(py)?test|unittest|conftest", re.IGNORECASE)
_ARGV = frozenset({"sys.argv", "sys.orig_argv"})
_FRAMES = frozenset(
    {
        "inspect.stack", "inspect.currentframe", "inspect.getouterframes", "inspect.trace",
        "inspect.getframeinfo", "sys._getframe", "traceback.extract_stack",
        "traceback.walk_stack", "traceback.format_stack", "traceback.print_stack",
    }
)  # fmt: skip
_FRAME_ATTRS = frozenset({"f_back", "f_code", "co_name", "co_filename", "f_globals", "f_locals"})
_ENV_READS = frozenset({"os.environ.get", "os.getenv", "os.environ.__contains__"})
_COMPARISONS = frozenset({"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"})
# Attributes of sys that programs set as ordinary configuration.
_SYS_SETTINGS = frozenset(
    {
        "excepthook", "displayhook", "stdout", "stderr", "stdin", "ps1", "ps2",
        "tracebacklimit", "dont_write_bytecode", "breakpointhook", "unraisablehook",
    }
)  # fmt: skip
_LIBRARIES = frozenset(sys.stdlib_module_names) | {"pytest", "_pytest", "hypothesis", "builtins"}
_ENDERS = frozenset({"os._exit", "sys.exit", "os.kill", "exit", "quit", "os.abort"})
_IMPORT_LISTS = frozenset({"sys.path", "sys.meta_path", "sys.path_hooks"})
_TEST_PATH = re.compile(r"(^|/)(tests?/|conftest\.py$|test_[^/]*\.py$)")


def _is_distinct(value: object) -> bool:
    """A value too particular to match a test's input by chance: a string of four
    or more characters, a number of 10 or more, a non-whole float, a tuple."""
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        return len(value) >= 4
    if isinstance(value, float):
        return abs(value) >= 10 or not value.is_integer()
    if isinstance(value, int):
        return abs(value) >= 10
    return isinstance(value, tuple)


class _File:
    def __init__(
        self,
        path: str,
        tree: ast.Module,
        added: frozenset[int],
        answers: _Answers,
        test_paths: Collection[str],
    ) -> None:
        self.path = path
        self.tree = tree
        self.added = added
        self.answers = answers
        self.test_paths = set(test_paths) | {p.rsplit("/", 1)[-1] for p in test_paths}
        self.aliases = _aliases(tree)
        self.docstrings = _docstrings(tree)
        self.functions = {
            n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self.module_names = {
            t.id
            for n in tree.body
            if isinstance(n, (ast.Assign, ast.AnnAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            if isinstance(t, ast.Name)
        }
        self.out: list[Finding] = []

    def findings(self) -> list[Finding]:
        for scope, nodes in _scopes(self.tree):
            self._sniffing_in_scope(scope, nodes)
            self._counting(scope, nodes)
            self._answers(scope, nodes)
            for node in nodes:
                self._node(node)
        return self.out

    # -- helpers ---------------------------------------------------------------------

    def _new(self, node: ast.AST) -> bool:
        start = getattr(node, "lineno", None)
        if start is None:
            return False
        end = getattr(node, "end_lineno", None) or start
        return any(line in self.added for line in range(start, end + 1))

    def _add(self, node: ast.AST, pattern: str, why: str) -> None:
        self.out.append(Finding(self.path, getattr(node, "lineno", 0), pattern, why))

    def _name(self, node: ast.AST) -> str | None:
        """The dotted name an expression stands for, imports resolved."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self._name(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    # -- one node at a time ----------------------------------------------------------

    def _node(self, node: ast.AST) -> None:
        if not self._new(node):
            return
        if isinstance(node, ast.Call):
            self._call(node)
        elif isinstance(node, ast.Subscript):
            if self._name(node.value) == "os.environ" and self._test_env(node.slice):
                self._add(node, "test-sniffing", self._env_why(node.slice))
            if self._name(node.value) == "sys.modules" and self._framework(node.slice):
                self._add(node, "test-sniffing", "looks for a test framework in sys.modules")
        elif isinstance(node, ast.Compare):
            self._compare(node)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            self._assignment(node)
        elif isinstance(node, ast.ClassDef):
            self._class(node)
        elif _into_tests(node):
            self._add(node, "reads-tests", "builds a path into the test folder")

    def _call(self, node: ast.Call) -> None:
        name = self._name(node.func)
        first = node.args[0] if node.args else None
        if name in _ENV_READS and first is not None and self._test_env(first):
            self._add(node, "test-sniffing", self._env_why(first))
        elif name in ("sys.modules.get", "sys.modules.__contains__") and self._framework(first):
            self._add(node, "test-sniffing", "looks for a test framework in sys.modules")
        elif name in ("setattr", "delattr") and first is not None:
            self._patched(node, self._name(first), _constant(node.args[1:2]))
        elif name == "os._exit":
            self._add(node, "exit-control", "ends the process at once, past the test runner")
        elif name == "os.kill" and any(self._name(a) == "os.getpid" for a in _calls(node)):
            self._add(node, "exit-control", "signals its own process")
        elif name == "atexit.register" and first is not None:
            self._exit_handler(node, first)
        elif name is not None and _changes_import_path(name):
            self._import_path(node, name.rsplit(".", 1)[0])
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if isinstance(arg, ast.Constant) and self._test_file(arg.value):
                self._add(arg, "reads-tests", f"names a test file: {arg.value!r}")

    def _compare(self, node: ast.Compare) -> None:
        for op, right in zip(node.ops, node.comparators, strict=True):
            if not isinstance(op, (ast.In, ast.NotIn)):
                continue
            where = self._name(right)
            if where == "sys.modules" and self._framework(node.left):
                self._add(node, "test-sniffing", "looks for a test framework in sys.modules")
            elif where == "os.environ" and self._test_env(node.left):
                self._add(node, "test-sniffing", self._env_why(node.left))

    def _assignment(self, node: ast.AST) -> None:
        targets = (
            node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]  # type: ignore[attr-defined]
        )
        value = getattr(node, "value", None)
        for target in targets:
            named = self._name(target)
            if named is not None and (named.endswith("__path__") or named in _IMPORT_LISTS):
                if not (isinstance(value, ast.Call) and _is_extend_path(value)):
                    self._import_path(target, named)
                continue
            if isinstance(target, ast.Attribute):
                self._patched(target, self._name(target.value), target.attr)
            elif isinstance(target, ast.Subscript) and self._name(target.value) in (
                "__builtins__",
                "builtins.__dict__",
            ):
                self._add(target, "patched-library", "replaces a builtin")

    def _patched(self, node: ast.AST, owner: str | None, attr: str | None) -> None:
        """``owner.attr = …`` where owner is a standard or test library (or one of
        its classes) that the file imported."""
        if owner is None or owner.split(".")[0] not in self.imported_tops:
            return
        top = owner.split(".")[0]
        if top not in _LIBRARIES or (owner == "sys" and attr in _SYS_SETTINGS):
            return
        if owner == "os" and attr == "environ":
            return
        what = f"{owner}.{attr}" if attr else owner
        self._add(node, "patched-library", f"replaces {what} for every caller, tests included")

    @property
    def imported_tops(self) -> set[str]:
        return {full.split(".")[0] for full in self.aliases.values()}

    def _import_path(self, node: ast.AST, where: str | None) -> None:
        if where == "sys.path":
            self._add(node, "sys-path", "changes sys.path: an import may find another module")
        else:
            self._add(node, "package-path", f"changes {where}: imports are redirected")

    def _class(self, node: ast.ClassDef) -> None:
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if item.name in _COMPARISONS and _always_constant(item):
                    self._add(item, "constant-equality", f"{node.name}.{item.name} always "
                              "returns the same answer, whatever it is compared with")  # fmt: skip
            elif isinstance(item, ast.Assign) and isinstance(item.value, ast.Lambda):
                names = [t.id for t in item.targets if isinstance(t, ast.Name)]
                if set(names) & _COMPARISONS and isinstance(item.value.body, ast.Constant):
                    self._add(item, "constant-equality", f"{node.name}.{names[0]} always "
                              "returns the same answer, whatever it is compared with")  # fmt: skip

    def _exit_handler(self, node: ast.Call, handler: ast.expr) -> None:
        body: ast.AST | None = handler
        if isinstance(handler, ast.Name):
            body = self.functions.get(handler.id)
        if body is not None and any(self._name(c.func) in _ENDERS for c in _calls(body)):
            self._add(node, "exit-control", "an exit handler that ends the process")

    # -- a whole scope ---------------------------------------------------------------

    def _sniffing_in_scope(self, scope: ast.AST, nodes: list[ast.AST]) -> None:
        """argv or the call stack read in a scope that also spells out a test word:
        code that asks who runs it (``"pytest" in sys.argv[0]``, a ``test_``
        caller in the stack)."""
        words = [
            n for n in nodes
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in self.docstrings and _TEST_WORD.search(n.value)
        ]  # fmt: skip
        if not words or not any(self._new(w) for w in words):
            return
        for node in nodes:
            if isinstance(node, (ast.Name, ast.Attribute)) and self._name(node) in _ARGV:
                self._add(node, "test-sniffing", "reads sys.argv for a test word")
                return
            if isinstance(node, ast.Call) and self._name(node.func) in _FRAMES:
                self._add(node, "test-sniffing", "reads the call stack for a test word")
                return
            if isinstance(node, ast.Attribute) and node.attr in _FRAME_ATTRS:
                self._add(node, "test-sniffing", "reads the call stack for a test word")
                return

    def _counting(self, scope: ast.AST, nodes: list[ast.AST]) -> None:
        """A counter the function itself advances and a branch reads: right for the
        first N calls, wrong after (or the reverse)."""
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or not self._new(scope):
            return
        shared = {
            name for n in nodes if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names
        }
        shared |= self.module_names
        counters: set[str] = set()
        for node in nodes:
            target: ast.AST | None = None
            if isinstance(node, ast.AugAssign):
                target = node.target
            elif (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and ast.unparse(node.targets[0]) in _reads(node.value)
            ):
                target = node.targets[0]
            if target is not None and _is_state(target, shared, scope.name):
                counters.add(ast.unparse(target))
        if not counters:
            return
        for node in nodes:
            test = getattr(node, "test", None)
            if isinstance(node, (ast.If, ast.While, ast.IfExp)) and test is not None:
                read = {ast.unparse(n) for n in ast.walk(test)}
                if read & counters:
                    self._add(node, "call-counting", f"{scope.name} branches on a count of its "
                              f"own calls ({sorted(read & counters)[0]})")  # fmt: skip
                    return

    def _answers(self, scope: ast.AST, nodes: list[ast.AST]) -> None:
        """A snapshot test's input mapped to its expected answer: a dict literal's
        entries, or ``if x == input: return answer`` branches."""
        found: list[tuple[ast.AST, tests_seen.Pair]] = []
        for node in nodes:
            if isinstance(node, ast.Dict) and self._new(node):
                for key, value in zip(node.keys, node.values, strict=True):
                    pair = _literal_pair(key, value)
                    if pair is not None and pair in self.answers.pairs():
                        found.append((node, pair))
            elif isinstance(node, ast.If) and self._new(node):
                returned = _returned(node.body)
                if returned is None or not returned[0]:
                    continue
                for given in _compared(node.test):
                    if (given, returned[1]) in self.answers.pairs():
                        found.append((node, (given, returned[1])))
        distinct = {pair for _, pair in found}
        if len(distinct) >= 2 or any(_is_distinct(pair[0]) for pair in distinct):
            where, (given, answer) = found[0]
            self._add(where, "test-answers", f"maps a snapshot test's input {given!r} to its "
                      f"expected answer {answer!r} ({len(distinct)} such)")  # fmt: skip

    # -- small readers ---------------------------------------------------------------

    def _test_env(self, node: ast.AST | None) -> bool:
        return (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _TEST_ENV.search(node.value) is not None
        )

    def _env_why(self, node: ast.AST) -> str:
        value = node.value if isinstance(node, ast.Constant) else "?"
        return f"reads {value!s}, which is set only while tests run"

    def _test_file(self, value: object) -> bool:
        return isinstance(value, str) and (
            value in self.test_paths or _TEST_PATH.search(value) is not None
        )

    def _framework(self, node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and node.value in _TEST_FRAMEWORKS


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Each name an import binds, to the module or object it stands for."""
    return tests_seen.bindings(tree)[1]


def _docstrings(tree: ast.Module) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _scopes(tree: ast.Module) -> Iterator[tuple[ast.AST, list[ast.AST]]]:
    """The module and each function, with the nodes that belong to it (a nested
    function's nodes belong to that function only)."""
    pending: list[ast.AST] = [tree]
    while pending:
        scope = pending.pop()
        nodes: list[ast.AST] = []
        stack = list(ast.iter_child_nodes(scope))
        while stack:
            node = stack.pop()
            nodes.append(node)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                pending.append(node)
                if not isinstance(node, ast.Lambda):
                    stack.extend(node.decorator_list)
                continue
            stack.extend(ast.iter_child_nodes(node))
        yield scope, nodes


def _constants(
    source: Source, tree: ast.Module, added: frozenset[int], answers: _Answers
) -> list[Finding]:
    """Module-level values the snapshot's assertions read (``TOL`` of
    ``pytest.approx(x, abs=flags.TOL)``), given a new value by the change."""
    assigned = _module_values(tree)
    if not any(line in added for line, _ in assigned.values()):
        return []
    names = tests_seen.module_names(source.path)
    if not names:
        return []
    asserted = {name for module, name in answers.asserted() if module in names}
    if not asserted:
        return []
    try:
        before = _module_values(ast.parse(source.old)) if source.old is not None else {}
    except (SyntaxError, ValueError):
        before = {}
    out = []
    for name in sorted(asserted & assigned.keys()):
        line, value = assigned[name]
        if line in added and name in before and before[name][1] != value:
            why = f"changes {name}, a value the snapshot's tests read in their assertions"
            out.append(Finding(source.path, line, "test-constants", why))
    return out


def _module_values(tree: ast.Module) -> dict[str, tuple[int, str]]:
    """Each module-level name assigned a value: (line, the value's dump)."""
    out: dict[str, tuple[int, str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    out[target.id] = (node.lineno, ast.dump(node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = (node.lineno, ast.dump(node))
    return out


def _changes_import_path(call: str) -> bool:
    """``sys.path.insert``, ``pkg.__path__.append`` and the like."""
    where, _, verb = call.rpartition(".")
    return verb in ("insert", "append", "extend") and (
        where in _IMPORT_LISTS or where.endswith("__path__")
    )


def _is_extend_path(node: ast.AST) -> bool:
    """``__path__ = pkgutil.extend_path(__path__, __name__)``: the namespace
    package idiom, not a redirection."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name == "extend_path"


def _into_tests(node: ast.AST) -> bool:
    """``Path(__file__).parent / "tests"``."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div)
        and isinstance(node.right, ast.Constant)
        and node.right.value in ("tests", "test")
    )


def _calls(node: ast.AST) -> Iterator[ast.Call]:
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            yield child


def _constant(nodes: list[ast.expr]) -> str | None:
    if nodes and isinstance(nodes[0], ast.Constant) and isinstance(nodes[0].value, str):
        return nodes[0].value
    return None


def _always_constant(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Every return of ``func`` (none of its nested functions') gives a bool constant."""
    returns = [n for _, nodes in [next(_scopes(ast.Module(body=func.body, type_ignores=[])))]
               for n in nodes if isinstance(n, ast.Return)]  # fmt: skip
    if not returns:
        return False
    for ret in returns:
        value = ret.value
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
            value = value.operand
        if not (isinstance(value, ast.Constant) and isinstance(value.value, bool)):
            return False
    return True


def _is_state(target: ast.AST, shared: set[str], own_name: str) -> bool:
    """State that outlives a call: a global or nonlocal name, or an attribute or
    item of a module-level name or of the function itself (``f.calls``). An
    object's own attributes (``self.count``) are ordinary object state."""
    if isinstance(target, ast.Name):
        return target.id in shared
    base = target
    while isinstance(base, (ast.Attribute, ast.Subscript)):
        base = base.value
    return isinstance(base, ast.Name) and (base.id in shared or base.id == own_name)


def _reads(value: ast.AST) -> set[str]:
    """What an expression reads, ``getattr(f, "n", 0)`` spelled as ``f.n``."""
    out = {ast.unparse(n) for n in ast.walk(value)}
    for call in _calls(value):
        if isinstance(call.func, ast.Name) and call.func.id == "getattr" and len(call.args) >= 2:
            name = _constant(call.args[1:2])
            if name is not None:
                out.add(f"{ast.unparse(call.args[0])}.{name}")
    return out


def _literal_pair(key: ast.AST | None, value: ast.AST) -> tests_seen.Pair | None:
    if key is None:
        return None
    ok_key, k = tests_seen.literal(key)
    ok_value, v = tests_seen.literal(value)
    return (k, v) if ok_key and ok_value else None


def _returned(body: list[ast.stmt]) -> tuple[bool, object] | None:
    """The literal a branch returns straight away."""
    if body and isinstance(body[0], ast.Return) and body[0].value is not None:
        return tests_seen.literal(body[0].value)
    return None


def _compared(test: ast.AST) -> list[object]:
    """The literals a branch's condition compares a value with (``==``, ``in``)."""
    out: list[object] = []
    if isinstance(test, ast.BoolOp):
        for value in test.values:
            out.extend(_compared(value))
    elif isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq):
            for side in (test.left, right):
                ok, seen = tests_seen.literal(side)
                if ok:
                    out.append(seen)
        elif isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            for elt in right.elts:
                ok, seen = tests_seen.literal(elt)
                if ok:
                    out.append(seen)
    return out
