"""The ratchet's unittest runner: ``python -m unittest`` with per-test results.
Never imported by gtd.

A test command ``<python> -m unittest ARGS`` runs in the clean room as
``<python> -c <boot> <this file> ARGS`` (gtd.auto.ratchet.unittest_channel):
the same interpreter, the same arguments, and this module in place of
``unittest.__main__``. It loads the tests exactly as ``python -m unittest``
would — :class:`unittest.TestProgram` with ``module=None``: discovery with no
arguments, the ``discover`` subcommand, names and ``-k`` patterns, the
``load_tests`` protocol (so the doctests a ``load_tests`` adds through
``doctest.DocTestSuite`` run, and are judged one by one) — and runs them with
unittest's own text runner, whose output and exit status are unchanged.

What it adds is the report the pytest plugin writes (gtd.auto.ratchet.contract,
loaded by path from beside this file): one session, the items it loaded, one
line per test, and the end line with the counts and the interpreter. Test ids
are the ones pytest gives the same tests, named from the root the helper asks
for: ``tests/test_x.py::TestX::test_y`` for a method, and for a doctest
``pkg/mod.py::pkg.mod.func`` (a module's docstrings, kind ``doctest-module``,
with the digest of its examples as the plugin computes it) or
``docs/guide.txt::guide.txt`` (``DocFileSuite``, kind ``doctest-text``).
Outcomes: a success is ``passed``, a failure (a subtest's too) ``failed``, an
error ``error``, a skip ``skipped`` with its reason, an expected failure
``xfailed``, an unexpected success ``failed`` (unittest counts it against the
run). A test module that cannot be imported is an ``error`` under its file's
name; a ``setUpClass`` or ``setUpModule`` that fails is an error of every test
it holds.

The helper's selection applies: only the files asked for (discovery imports no
other test module, and of what the selected ones load, a test case is kept
when its class's file was asked for, a doctest always: only a selected
module's ``load_tests`` can have added it), or only the ids asked for.

Its guards are unittest_guard.py beside it: the machinery tripwire and the
finder that redirects imports from the live repository to the room; the
channel back to the helper and the redirect itself are in_process.py, the
pytest plugin's too. Standard library
only, syntax for Python 3.7 and later. The pytest plugin's other in-process
tripwires are not here: docs/ratchet.md says what that leaves.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import unittest

# typing for the type checker only: this file runs in the project's own test
# process, whose cost is measured against the bare test command (stdlib, no typing)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_WRITE_MAX = 4096  # bytes a local socket writes whole: lines never interleave inside


def _load_contract(file: str = "contract.py", name: str = "gtd_ratchet_contract") -> Any:
    """contract.py (or another module of the runner's) from beside this file:
    the same names the helper imports."""
    import importlib.util

    path = os.path.join(_HERE, file)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


C: Any = _load_contract()
G: Any = _load_contract("unittest_guard.py", "gtd_ratchet_unittest_guard")
P: Any = _load_contract("in_process.py", "gtd_ratchet_in_process")


class Sink:
    """Where the lines go: the helper's socket (``GTD_RATCHET_FD``, checked to be
    that very socket), else the settings' report file, else nowhere
    (in_process.open_channel, as the pytest plugin's)."""

    def __init__(self, report: str | None) -> None:
        self.fd, self.via = P.open_channel(C.ENV_FD, report)

    def write(self, records: list[dict[str, Any]]) -> None:
        if self.fd < 0:
            return
        chunk = b""
        for record in records:
            line = (json.dumps(record, ensure_ascii=True) + "\n").encode("ascii")
            if chunk and len(chunk) + len(line) > _WRITE_MAX:
                self._send(chunk)
                chunk = b""
            chunk += line
        if chunk:
            self._send(chunk)

    def _send(self, data: bytes) -> None:
        try:
            while data:
                data = data[os.write(self.fd, data) :]
        except OSError:
            self.fd = -1  # the helper is gone: the run goes on, unreported


class Settings:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.report = _text(raw.get(C.SETTING_REPORT))
        self.site = _text(raw.get(C.SETTING_SITE))
        self.junit = _text(raw.get(C.SETTING_JUNIT))
        self.root = _text(raw.get(C.SETTING_ROOT)) or os.getcwd()
        files, ids = raw.get(C.SETTING_FILES), raw.get(C.SETTING_IDS)
        self.files = None if not isinstance(files, list) else {str(f) for f in files}
        self.live = _text(raw.get(C.SETTING_LIVE))
        self.room = _text(raw.get(C.SETTING_ROOM))
        self.ids = None if not isinstance(ids, list) else {str(i) for i in ids}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _settings() -> Settings | None:
    path = os.environ.get(C.ENV_SETTINGS)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
    except (OSError, ValueError):
        return None
    return Settings(raw) if isinstance(raw, dict) else None


def _restore_environment(settings: Settings) -> None:
    """The run's additions gone, so a Python or pytest a test starts does not
    report into this run (the pytest plugin does the same)."""
    os.environ.pop(C.ENV_SETTINGS, None)
    os.environ.pop(C.ENV_FD, None)
    if settings.site:
        kept = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p != settings.site]
        if any(kept):
            os.environ["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            os.environ.pop("PYTHONPATH", None)
    addopts = os.environ.get("PYTEST_ADDOPTS")
    if settings.junit and addopts is not None:
        import shlex

        rest = addopts.replace("--junitxml=" + shlex.quote(settings.junit), "").strip()
        if rest:
            os.environ["PYTEST_ADDOPTS"] = rest
        else:
            os.environ.pop("PYTEST_ADDOPTS", None)


# -- naming tests --------------------------------------------------------------------


class Named:
    """One loaded test as the report names it."""

    __slots__ = ("digest", "dotted", "file", "kind", "node_id")

    def __init__(self, node_id: str, file: str, kind: str, dotted: str, digest: str | None):
        self.node_id = node_id
        self.file = file  # absolute, or "" where unknown
        self.kind = kind
        self.dotted = dotted  # unittest's own id (module.Class.method)
        self.digest = digest


class Namer:
    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self._files: dict[str, str] = {}

    def relative(self, path: str) -> str:
        """``path`` relative to the root when inside it, else as given."""
        if not path:
            return path
        if path not in self._files:
            real = os.path.realpath(path)
            rel = os.path.relpath(real, self.root)
            inside = not (rel == os.pardir or rel.startswith(os.pardir + os.sep))
            self._files[path] = rel.replace(os.sep, "/") if inside else path
        return self._files[path]

    def module_file(self, name: str) -> str:
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None)
        return os.path.abspath(file) if isinstance(file, str) else ""

    def name(self, test: unittest.TestCase) -> Named:
        import doctest

        dotted = test.id()
        if isinstance(test, doctest.DocTestCase):
            dt = test._dt_test  # type: ignore[attr-defined]
            file = os.path.abspath(dt.filename) if dt.filename else ""
            text = isinstance(test, doctest.DocFileCase)
            kind = "doctest-text" if text else "doctest-module"
            label = os.path.basename(dt.name) if text else dt.name
            rel = self.relative(file)
            return Named(f"{rel}::{label}" if rel else dt.name, file, kind, dotted, _digest(dt))
        if isinstance(test, unittest.FunctionTestCase):  # a plain function, wrapped
            function = getattr(test, "_testFunc", None)
            file = self.module_file(str(getattr(function, "__module__", "")))
            rel = self.relative(file)
            qual = str(getattr(function, "__qualname__", dotted))
            if rel:
                return Named(f"{rel}::{qual}", file, "function", dotted, None)
            return Named(dotted, file, "other", dotted, None)
        cls = type(test)
        file = self.module_file(cls.__module__)
        rel = self.relative(file)
        method = getattr(test, "_testMethodName", None)
        if rel and isinstance(method, str):
            qual = getattr(cls, "__qualname__", cls.__name__).replace(".", "::")
            return Named(f"{rel}::{qual}::{method}", file, "function", dotted, None)
        return Named(dotted, file, "other", dotted, None)


def _digest(dt: Any) -> str | None:
    """sha256 of the examples the doctest runs, as gtd.auto.ratchet.doctests
    digests the source's docstring and the pytest plugin the item's."""
    import hashlib

    try:
        pairs = [[str(e.source), str(e.want)] for e in dt.examples]
    except (AttributeError, TypeError):
        return None
    return hashlib.sha256(json.dumps(pairs).encode("ascii")).hexdigest()


def flatten(suite: unittest.TestSuite | unittest.TestCase) -> Iterator[unittest.TestCase]:
    if isinstance(suite, unittest.TestSuite):
        for test in suite:
            yield from flatten(test)
    else:
        yield suite


_FAILED_LOAD = "unittest.loader._FailedTest"


# -- the recording result -------------------------------------------------------------


class Recorder:
    """The session's lines: items, one line per outcome, the end line."""

    def __init__(self, sink: Sink, settings: Settings, selected: bool | None) -> None:
        import secrets

        self.sink = sink
        self.settings = settings
        self.namer = Namer(settings.root)
        self.sid = "unittest-" + secrets.token_hex(6)
        self.named: dict[int, Named] = {}  # id(test) → its name
        self.results: dict[str, str] = {}  # node id → worst outcome
        self.order = C.OUTCOMES
        self.watch: Any = None  # a Watch (unittest_guard)
        self.planned: list[Named] = []  # the tests that run, once loaded and selected
        sink.write(
            [
                {
                    C.KIND: C.START,
                    C.SESSION: self.sid,
                    "v": C.VERSION,
                    "pid": os.getpid(),
                    "worker": None,
                    "root": settings.root,
                    "ini": None,
                    "plugin": os.path.abspath(__file__),
                    "via": sink.via,
                    "sel": selected,
                }
            ]
        )

    def name_of(self, test: Any) -> Named:
        named = self.named.get(id(test))
        if named is None:
            if isinstance(test, unittest.TestCase):
                named = self.namer.name(test)
            else:  # an _ErrorHolder: setUpClass/setUpModule, or a class fixture
                text = str(test)
                named = Named(text, "", "other", text, None)
            self.named[id(test)] = named
        return named

    def items(self, tests: list[Named]) -> None:
        groups: dict[tuple[str, str], list[Named]] = {}
        for named in tests:
            groups.setdefault((named.file, named.kind), []).append(named)
        lines = []
        for (file, kind), group in groups.items():
            line: dict[str, Any] = {
                C.KIND: C.ITEMS,
                C.SESSION: self.sid,
                "file": file,
                "kind": kind,
                "ids": [n.node_id for n in group],
                "d": False,
            }
            if kind == "doctest-module":
                line["dg"] = [n.digest for n in group]
            lines.append(line)
        self.sink.write(lines)

    def outcome(self, node_id: str, outcome: str, reason: str | None = None) -> None:
        was = self.results.get(node_id)
        if was is None or self.order.index(outcome) > self.order.index(was):
            self.results[node_id] = outcome
        line: dict[str, Any] = {
            C.KIND: C.TEST,
            C.SESSION: self.sid,
            "id": node_id,
            "o": outcome,
            "w": "call",
        }
        if reason is not None:
            line["r"] = reason[:500]
        self.sink.write([line])

    def evidence(self, kind: str, subject: str, detail: str) -> None:
        line = {C.KIND: C.EVIDENCE, C.SESSION: self.sid, "what": kind, "subject": subject}
        self.sink.write([{**line, "detail": detail}])

    def end(self, status: int) -> None:
        changed = self.watch.changed() if self.watch is not None else []
        # The recorder's and the sink's own attributes are data: code put there
        # (found through the garbage collector) would stand in for a method.
        for obj in (self, self.sink):
            kind = type(obj).__name__
            changed += [f"gtd-unittest.{kind}.{a}" for a, v in vars(obj).items() if G.behaves(v)]
        self.sink.write(
            [
                {C.KIND: C.EVIDENCE, C.SESSION: self.sid, "what": "machinery", "subject": name}
                for name in changed
            ]
        )
        counts: dict[str, int] = {}
        for outcome in self.results.values():
            counts[outcome] = counts.get(outcome, 0) + 1
        self.sink.write(
            [
                {
                    C.KIND: C.END,
                    C.SESSION: self.sid,
                    "exit": status,
                    "counts": counts,
                    "conftests": [],
                    "plugins": [],
                    "env": _environment(),
                }
            ]
        )


def _environment() -> dict[str, Any]:
    import site

    sites: list[str] = []
    with contextlib.suppress(AttributeError):  # a virtualenv's old site.py has none
        sites = list(site.getsitepackages())
    user = getattr(site, "ENABLE_USER_SITE", False) and site.getusersitepackages()
    if isinstance(user, str):
        sites.append(user)
    pth: list[str] = []
    for folder in sites:
        try:
            pth.extend(
                os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith(".pth")
            )
        except OSError:
            continue
    return {
        C.ENV_EXECUTABLE: sys.executable,
        C.ENV_PREFIX: sys.prefix,
        C.ENV_BASE_PREFIX: getattr(sys, "base_prefix", sys.prefix),
        C.ENV_VERSION: sys.version.split()[0],
        C.ENV_PATH: list(sys.path),
        C.ENV_SITE: sites,
        C.ENV_PTH: pth,
        C.ENV_PYTEST: "",
        C.ENV_PLUGGY: "",
    }


def _result_class(recorder: Recorder) -> type[unittest.TextTestResult]:
    class Recording(unittest.TextTestResult):
        """unittest's text result, each outcome also reported."""

        def addSuccess(self, test: Any) -> None:
            super().addSuccess(test)
            recorder.outcome(recorder.name_of(test).node_id, "passed")

        def addFailure(self, test: Any, err: Any) -> None:
            super().addFailure(test, err)
            recorder.outcome(recorder.name_of(test).node_id, "failed")

        def addError(self, test: Any, err: Any) -> None:
            super().addError(test, err)
            for node_id in _errored(recorder, test):
                recorder.outcome(node_id, "error")

        def addSkip(self, test: Any, reason: str) -> None:
            super().addSkip(test, reason)
            for node_id in _errored(recorder, test):
                recorder.outcome(node_id, "skipped", str(reason))

        def addExpectedFailure(self, test: Any, err: Any) -> None:
            super().addExpectedFailure(test, err)
            recorder.outcome(recorder.name_of(test).node_id, "xfailed")

        def addUnexpectedSuccess(self, test: Any) -> None:
            super().addUnexpectedSuccess(test)
            recorder.outcome(recorder.name_of(test).node_id, "failed", "unexpected success")

        def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
            super().addSubTest(test, subtest, err)
            if err is not None:
                failed = issubclass(err[0], test.failureException)
                recorder.outcome(recorder.name_of(test).node_id, "failed" if failed else "error")

    return Recording


def _errored(recorder: Recorder, test: Any) -> list[str]:
    """The tests an error (or skip) is of: the test itself, or for an error of a
    class or module fixture (``setUpClass (pkg.mod.TestX)``), every loaded test
    it holds — they will not run."""
    if isinstance(test, unittest.TestCase):
        return [recorder.name_of(test).node_id]
    text = str(test)
    scope = text.rpartition(" (")[2].rstrip(")") if text.endswith(")") else ""
    held = [
        n.node_id
        for n in recorder.planned
        if scope and (n.dotted == scope or n.dotted.startswith(scope + "."))
    ]
    return held or [text]


# -- loading as `python -m unittest` does ------------------------------------------------


def _selective_loader(settings: Settings, namer: Namer) -> type[unittest.TestLoader]:
    """A loader whose discovery imports no test module outside the selection."""
    files = settings.files

    class Loader(unittest.TestLoader):
        def _match_path(self, path: str, full_path: str, pattern: str) -> bool:
            if files is not None and namer.relative(os.path.abspath(full_path)) not in files:
                return False
            return bool(super()._match_path(path, full_path, pattern))

    return Loader


def _program(
    recorder: Recorder, settings: Settings, runner_class: type[unittest.TextTestRunner]
) -> type[unittest.TestProgram]:
    namer = recorder.namer

    class Program(unittest.TestProgram):
        def runTests(self) -> None:
            me: Any = self  # (typeshed leaves TestProgram's attributes untyped)
            kept: list[unittest.TestCase] = []
            named: list[Named] = []
            for test in flatten(me.test):
                name = recorder.name_of(test)
                if name.dotted.startswith(_FAILED_LOAD + "."):
                    # an import that failed: named by the module's file, as pytest names
                    # a collection error
                    module = name.dotted[len(_FAILED_LOAD) + 1 :]
                    path = _module_path(namer.root, module)
                    name.node_id = namer.relative(path) if path else module
                    name.file = path or ""
                if not _selected(name, settings, namer):
                    continue
                kept.append(test)
                if not name.dotted.startswith(_FAILED_LOAD + "."):
                    named.append(name)
            self.test = unittest.TestSuite(kept)
            recorder.planned = named
            recorder.items(named)
            self.testRunner = runner_class
            leave, me.exit = me.exit, False
            super().runTests()
            status = _exit_status(me.result)
            recorder.end(status)
            if leave:
                sys.exit(status)

    return Program


def _module_path(root: str, module: str) -> str | None:
    base = os.path.join(root, *module.split("."))
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


def _selected(name: Named, settings: Settings, namer: Namer) -> bool:
    if settings.ids is not None and name.node_id not in settings.ids:
        return False
    if settings.files is not None and not name.kind.startswith("doctest"):
        # (a doctest is kept: only a selected test module's load_tests, or a
        # package's, can have added it — discovery imported no other)
        return namer.relative(name.file) in settings.files
    return True


def _runner_class(recorder: Recorder) -> type[unittest.TextTestRunner]:
    class Runner(unittest.TextTestRunner):
        resultclass = _result_class(recorder)

    return Runner


def _exit_status(result: unittest.TestResult) -> int:
    """unittest's own: 5 when nothing ran (Python 3.12 and later), else 0 or 1."""
    if sys.version_info >= (3, 12) and result.testsRun == 0 and not result.skipped:
        return 5
    return 0 if result.wasSuccessful() else 1


def main(argv: list[str]) -> None:
    settings = _settings()
    # As `python -m unittest`: the working directory first on the import path
    # (the -c that started this put "" there), the program named as unittest names it.
    if sys.path and sys.path[0] in ("", _HERE):
        sys.path[0] = os.getcwd()
    prog = "python -m unittest"
    if settings is None:  # not a run of the ratchet: plain unittest
        unittest.main(module=None, argv=[prog, *argv])
        return
    sink = Sink(settings.report)  # (before the environment loses the socket's name)
    _restore_environment(settings)
    selected = True if settings.files is not None or settings.ids is not None else None
    recorder = Recorder(sink, settings, selected)
    loader_class = _selective_loader(settings, recorder.namer)
    runner_class = _runner_class(recorder)
    program = _program(recorder, settings, runner_class)
    import doctest  # (its classes watched from before any test module loads)

    result_class: Any = runner_class.resultclass
    own = (Recorder, Sink, Namer, Named, loader_class, runner_class, result_class)
    recorder.watch = G.Watch((*own, program, G.RoomFinder, P.RoomRedirect))
    if settings.live and settings.room:
        live = sorted({os.path.normpath(settings.live), os.path.realpath(settings.live)})
        redirect = P.RoomRedirect(live, settings.room, os.path.normpath, recorder.evidence)
        G.RoomFinder(redirect).install()
    del doctest
    program(module=None, argv=[prog, *argv], testLoader=loader_class())


if __name__ == "__main__":
    main(sys.argv[1:])
