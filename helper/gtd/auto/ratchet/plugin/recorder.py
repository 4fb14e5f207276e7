"""The recorder: the session's hooks that write what happened (one line per test
report, what pytest collected, the end line), registered at configure when the
helper asked for a report. What it sees on the way that calls for a check
(a report made by other code, a test that runs something else) it hands to
the session's checks (checks.py), which also run at the end."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import pytest

from .checks import SessionChecks
from .objects import _function_in, _member
from .paths import _abs, _norm, _normcase
from .selection import item_path
from .terms import C

if TYPE_CHECKING:
    from collections.abc import Callable

    from .identities import Identities
    from .outcomes import OutcomeWatch
    from .session import State

# Bound at import, before any conftest or test runs: code that later replaces
# json's encoder does not change what the plugin writes.
_quote = json.encoder.encode_basestring_ascii
_RANK = {outcome: rank for rank, outcome in enumerate(C.OUTCOMES)}
_REASON_MAX = 300


class Recorder:
    """The session's hooks, registered at configure when the helper asked for a
    report. In an xdist worker it checks but writes no test lines: the controller
    receives every report and writes them."""

    # the plugin's check of its own code (selfcheck.py; set once every part is
    # made): reached through this name, which the identities watch
    _own_check: Callable[[], list[tuple[str, str]]]

    def __init__(self, state: State, config: pytest.Config, worker: str | None) -> None:
        from _pytest.reports import TestReport

        self.state = state
        sink = self.sink = state.sink
        self.config = config
        self.worker = worker
        self.root = str(config.rootpath)  # pytest >= 6.1
        self.tests: dict[str, str] = {}  # node id -> worst outcome written
        self.deselected: list[pytest.Item] = []
        self.identities: Identities | None = None
        self.watch: OutcomeWatch | None = None
        # node id -> (the item, what it was collected to run, that one's function)
        self.runs: dict[str, tuple[pytest.Item, object, object]] = {}
        self.plain_runtest = item_kinds()[0].__dict__.get("runtest")  # Function's
        self.report_class: type = TestReport
        # What makes each report, looked at again with every report: the end of
        # the session compares everything watched, but code can patch these only
        # while the tests run and put them back before the end.
        from _pytest import runner

        self.runner = runner
        # the class's own namespace, live: a method set on the class shows in it
        self.report_dict = vars(TestReport)
        # CallInfo's namespace, live too: ``CallInfo.__dict__`` makes a new view on
        # every read (~2 M instructions over a 500-test run, read three times a
        # test); the class itself is compared by identity beside it.
        self.call_info = runner.CallInfo
        self.call_info_dict = vars(runner.CallInfo)
        self.makers = self.report_makers()
        self.makers_changed = False
        # A trace function the tests run under: coverage's, installed before
        # configure, is the baseline's too; one installed since is looked at.
        self.traced = sys.gettrace()
        # The line written for most tests, with the session id already in place.
        head = f'"{C.KIND}":"{C.TEST}","{C.SESSION}":"{sink.session}"'
        self.template = "{" + head + ',"id":%s,"o":"%s","w":"%s"}\n'
        self.checks = SessionChecks(state, config, self)

    # -- per test: a dict write and one line -------------------------------------------

    # First: a plugin's logreport hook that runs earlier could edit the report
    # before it is read here.
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        outcome: str = report.outcome
        when: str = report.when
        if type(report) is not self.report_class:
            self.checks.report_class(report)
        # (report_makers() compared by identity, inline: this runs three times a
        # test, and a call and a tuple cost more than the reads themselves)
        makers, own, runner = self.makers, self.report_dict, self.runner
        if not self.makers_changed and (
            own.get("__init__") is not makers[0]
            or own.get("from_item_and_call") is not makers[1]
            or runner.call_and_report is not makers[2]
            or runner.runtestprotocol is not makers[3]
            or runner.CallInfo is not self.call_info
            or self.call_info_dict.get("from_call") is not makers[4]
        ):
            self.makers_changed = True
            self.checks.makers(self.makers, self.report_makers())
        if sys.gettrace() is not self.traced:
            self.traced = sys.gettrace()
            if self.traced is not None:
                self.checks.tracer("sys.settrace", self.traced)
        if outcome == "passed":
            if when != "call":
                # (a setup or teardown that passed says nothing more; xpass: a call's)
                if when == "setup" and report.nodeid in self.runs:
                    self.checks.test_run(report.nodeid)
                return
            node_id = report.nodeid
            if hasattr(report, "wasxfail"):
                outcome = "xpassed"
            elif report.longrepr is not None:
                self.sink.evidence("passed-with-failure", node_id, when)
            self.note(node_id, outcome, when)
        elif outcome == "skipped":
            if hasattr(report, "wasxfail"):
                self.note(report.nodeid, "xfailed", when, reason=_xfail_reason(report))
            else:
                self.note_skip(report.nodeid, when, report.longrepr)
        else:
            self.note(report.nodeid, "failed" if when == "call" else "error", when)

    def note(
        self,
        node_id: str,
        outcome: str,
        when: str,
        where: str | None = None,
        reason: str | None = None,
    ) -> None:
        if self.worker is not None:
            return
        previous = self.tests.get(node_id)
        if previous is None or _RANK[outcome] > _RANK[previous]:
            self.tests[node_id] = outcome
        if where is None and reason is None:
            line = self.template % (_quote(node_id), outcome, when)
            if outcome == "passed":
                self.sink.out.later(line)
            else:
                self.sink.out.line(line)
            return
        fields: dict[str, object] = {"id": node_id, "o": outcome, "w": when}
        if where is not None:
            fields["at"] = where
        if reason is not None:
            fields["r"] = reason[:_REASON_MAX]
        self.sink.emit(C.TEST, fields)

    def note_skip(self, node_id: str, when: str, longrepr: object) -> None:
        where = None
        reason = ""
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            path, line, text = longrepr
            where = f"{path}:{line}"
            reason = str(text)
            if reason.startswith("Skipped: "):
                reason = reason[len("Skipped: ") :]
        elif longrepr is not None:
            reason = str(longrepr)
        self.note(node_id, "skipped", when, where, reason)

    def report_makers(self) -> tuple[object, ...]:
        own, runner = self.report_dict, self.runner
        return (
            own.get("__init__"),
            own.get("from_item_and_call"),
            runner.call_and_report,
            runner.runtestprotocol,
            runner.CallInfo.__dict__.get("from_call"),
        )

    # -- collection --------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectstart(self, collector: pytest.Collector) -> None:
        # One line per module, written at once: if importing it ends the process
        # (the code under test calls os._exit), the report says where.
        if isinstance(collector, pytest.Module):
            try:
                file = _abs(str(item_path(collector)))
                self.sink.emit(C.COLLECTING, {"file": file})
                values = self.state.values
                if values.files is not None:
                    values.tests.add(_normcase(file))
            except Exception:  # never fail the run from here
                return

    # First: what each item was collected to run, before any other hook sees it.
    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.outcome == "passed":
            self.record_runs(report.result)
        elif report.outcome == "failed":
            lines = str(report.longrepr).strip().splitlines()
            self.note(report.nodeid, "error", "collect", reason=lines[-1] if lines else "")
        elif report.outcome == "skipped":
            self.note_skip(report.nodeid, "collect", report.longrepr)

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path: object) -> bool | None:
        selection = self.state.selection
        if selection is None or selection.allows_path(_norm(collection_path)):
            return None
        return True

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        selection = self.state.selection
        if selection is None:
            return
        kept = [item for item in items if selection.keeps(item)]
        if len(kept) == len(items):
            return
        dropped = [item for item in items if not selection.keeps(item)]
        outside = {_norm(item_path(item)) for item in dropped} - selection.files
        for file in sorted(outside):
            self.sink.evidence("unselected", file, "collected although not selected")
        items[:] = kept
        config.hook.pytest_deselected(items=dropped)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.extend(items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        try:
            self.write_items(session.items, deselected=False)
            self.write_items(self.deselected, deselected=True)
            self.watch_outcomes()
            self.checks.modules()
            self.record_late()
            self.state.values.collected()
        except Exception as exc:
            self.sink.evidence("internal", "collection report", type(exc).__name__)

    def record_runs(self, nodes: list[Any]) -> None:
        """The function each test item of pytest's own kind was collected to run
        (its ``runtest`` is ``Function.runtest``, which calls it through
        ``pytest_pyfunc_call``), as its collector reported it: before the
        collection hooks run. The item itself is reachable from the code under
        test (``gc``) and from those hooks, which can hand it a function of their
        own or a ``runtest`` that calls nothing: :class:`SessionChecks` compares once
        the test is set up."""
        plain = self.plain_runtest
        runs = self.runs
        for item in nodes:
            if getattr(type(item), "runtest", None) is plain:  # (not a collector, nor
                # an item kind with a runtest of its own)
                obj = vars(item).get("_obj")
                if obj is None:  # a method: bound to each test's instance at its setup
                    obj = _member(getattr(item.parent, "obj", None), item.originalname)
                if obj is not None:
                    runs[item.nodeid] = (item, obj, _function_in(obj))

    def watch_outcomes(self) -> None:
        """:class:`OutcomeWatch` registered once every conftest is loaded, where
        a plugin of the project's implements the hooks it checks (known to the
        registration hook first: it is not a late plugin)."""
        from .outcomes import OutcomeWatch

        state = self.state
        pm = self.config.pluginmanager
        if self.watch is not None or not OutcomeWatch.needed(pm, state.provenance, state.files):
            return
        self.watch = watch = OutcomeWatch(self.sink)
        name = "gtd-ratchet-outcomes"
        state.registered[id(watch)] = (name, state.plugin_file, [], False)
        pm.register(watch, name)

    def record_late(self) -> None:
        """Test modules whose import was not seen ending (imported by a loader of
        neither the import system nor pytest's rewriter) recorded now: what the
        tests change of them from here on is still seen."""
        values = self.state.values
        missing = values.missing()
        if not missing:
            return
        for module in list(sys.modules.values()):
            file = getattr(module, "__file__", None)
            if isinstance(file, str) and _norm(file) in missing:
                values.imported(module)

    def write_items(self, items: list[pytest.Item], deselected: bool) -> None:
        groups: dict[tuple[str, str], list[pytest.Item]] = {}
        files: dict[str, str] = {}  # a module's items share its path: one abspath each
        kinds = item_kinds()
        function = kinds[0]
        # (item_path and _item_kind inline: this runs once per item)
        for item in items:
            path = getattr(item, "path", None)  # pytest >= 7
            raw = str(path if path is not None else item.fspath)
            file = files.get(raw)
            if file is None:
                file = files[raw] = _abs(raw)
            kind = "function" if isinstance(item, function) else _item_kind(item, kinds)
            group = groups.get((file, kind))
            if group is None:
                group = groups[(file, kind)] = []
            group.append(item)
        for (file, kind), group in groups.items():
            ids = [item.nodeid for item in group]
            fields: dict[str, object] = {"file": file, "kind": kind, "ids": ids}
            if kind == "doctest-module":
                fields["dg"] = [_docstring_digest(item) for item in group]
            if deselected:
                fields["d"] = True
            self.sink.emit(C.ITEMS, fields)

    # -- the end -----------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: object) -> None:
        sink = self.sink
        fields: dict[str, object] = {"exit": _int(exitstatus)}
        try:
            for label, detail in self._own_check():
                sink.evidence("patched", f"gtd_ratchet_report.{label}", detail)
            fields.update(self.checks.finish())
        except Exception as exc:
            sink.evidence("internal", "session checks", type(exc).__name__)
        counts: dict[str, int] = {}
        for outcome in self.tests.values():
            counts[outcome] = counts.get(outcome, 0) + 1
        fields["counts"] = counts
        sink.emit(C.END, fields)
        self.state.values.stop()


def _int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[call-overload, no-any-return]
    except (TypeError, ValueError):
        return None


def _xfail_reason(report: object) -> str:
    reason = str(getattr(report, "wasxfail", ""))
    return reason[len("reason: ") :] if reason.startswith("reason: ") else reason


def item_kinds() -> tuple[type, type, type]:
    from _pytest.doctest import DoctestItem, DoctestTextfile
    from _pytest.python import Function

    return Function, DoctestItem, DoctestTextfile


def _docstring_digest(item: pytest.Item) -> str | None:
    """sha256 of the examples a module doctest runs, as the process had them when
    collected: code can assign ``__doc__`` at import, which the source does not
    show. The JSON list of ``[source, want]`` pairs, as
    gtd.auto.ratchet.doctests.examples_digest digests the source's docstring."""
    import hashlib

    examples = getattr(getattr(item, "dtest", None), "examples", None)
    if not isinstance(examples, list):
        return None
    try:
        pairs = [[str(e.source), str(e.want)] for e in examples]
    except AttributeError:
        return None
    return hashlib.sha256(json.dumps(pairs).encode("ascii")).hexdigest()


def _item_kind(item: pytest.Item, kinds: tuple[type, type, type]) -> str:
    function, doctest_item, doctest_text = kinds
    if isinstance(item, function):
        return "function"
    if isinstance(item, doctest_item):
        parent = getattr(item, "parent", None)
        return "doctest-text" if isinstance(parent, doctest_text) else "doctest-module"
    return "other"


def _legacy_ignore_collect(
    modern: Callable[[Recorder, object], bool | None],
) -> Callable[[Recorder, object], bool | None]:
    """pytest before 7 names the argument ``path`` (a py.path); 9 knows only
    ``collection_path``."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self: Recorder, path: object) -> bool | None:
        return modern(self, path)

    return pytest_ignore_collect


if int(pytest.__version__.split(".")[0]) < 7:
    Recorder.pytest_ignore_collect = _legacy_ignore_collect(  # type: ignore[method-assign, assignment]
        Recorder.pytest_ignore_collect
    )
