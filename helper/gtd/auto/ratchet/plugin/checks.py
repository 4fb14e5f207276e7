"""The session's checks: tamper evidence the recorder asks for on the way (a
report made by another class or maker, a test that runs something else, a
trace function installed) and the checks at the session's end, in a fixed
order, each watcher's ``finish()`` among them."""

from __future__ import annotations

import sys
from types import FunctionType
from typing import TYPE_CHECKING, Any

from .identities import environment, is_conftest, report_hooks
from .imports import EnvironmentFiles
from .objects import _by_qualname, _code_file, _describe, _function_in, _function_of, _reloaded
from .paths import _both, _dirname, _isabs, _norm, _normcase, _under
from .provenance import _module_code
from .shapes import _environment_roots
from .terms import MISSING as _MISSING

if TYPE_CHECKING:
    import pytest

    from .recorder import Recorder
    from .session import State


class SessionChecks:
    """The checks of one session (the recorder's)."""

    def __init__(self, state: State, config: pytest.Config, recorder: Recorder) -> None:
        self.state = state
        self.sink = state.sink
        self.config = config
        self.recorder = recorder
        self.classes_seen: set[type] = {recorder.report_class}
        self.checked_modules: dict[str, object] = {}
        self.environment_files = EnvironmentFiles.asked(state.settings, state.watch)

    # -- on the way --------------------------------------------------------------------

    def makers(self, before: tuple[object, ...], now: tuple[object, ...]) -> None:
        """What makes each report (:meth:`Recorder.report_makers`), found changed."""
        labels = (
            "_pytest.reports.TestReport.__init__",
            "_pytest.reports.TestReport.from_item_and_call",
            "_pytest.runner.call_and_report",
            "_pytest.runner.runtestprotocol",
            "_pytest.runner.CallInfo.from_call",
        )
        # (zip's strict= is Python 3.10: this file runs on 3.7 too)
        for label, was, made in zip(labels, before, now):  # noqa: B905
            if was is not made:
                self.sink.evidence("patched", label, _describe(made))

    def report_class(self, report: object) -> None:
        """A report of a class other than pytest's own TestReport."""
        cls = type(report)
        if cls in self.classes_seen:
            return
        self.classes_seen.add(cls)
        module = sys.modules.get(cls.__module__)
        file = getattr(module, "__file__", None)
        identities = self.recorder.identities
        homes = identities.homes if identities is not None else ()
        if isinstance(report, self.recorder.report_class) and file and _under(_norm(file), homes):
            return  # a report class of pytest's own (subtests)
        name = f"{cls.__module__}.{cls.__qualname__}"
        self.sink.evidence("report-class", name, str(getattr(report, "nodeid", "")))

    def test_run(self, node_id: str) -> None:
        """After the test's setup, before its call: the item still runs the
        function it was collected to run (a method's, bound to each test's
        instance, compared by its function) with pytest's ``runtest``. Code of
        the project's that swaps them must do so before this point: the only code
        between here and the call is the hooks of the call."""
        item, raw, collected = self.recorder.runs[node_id]
        own = vars(item)
        if "runtest" in own:
            self.sink.evidence("replaced-test", node_id, "its runtest replaced")
        obj = own.get("_obj")
        if obj is None or obj is raw or _function_in(obj) is collected:
            return
        file = _code_file(obj)
        if file is not None and self.state.provenance.in_room(file) is None:
            return  # an installed plugin's wrapper (pytest-asyncio runs coroutines so)
        name = getattr(obj, "__qualname__", None)
        what = f"{name} from {file}" if file and name else _describe(obj)
        self.sink.evidence("replaced-test", node_id, f"runs {what} instead")

    # -- the end -----------------------------------------------------------------------

    def finish(self) -> dict[str, object]:
        """Every check, in order; then what the end line says of the session."""
        identities = self.recorder.identities
        if identities is not None:
            self.emit(identities.finish())
        self.emit(self.state.guard.finish())
        self.modules()
        self.planted()
        self.rebound()
        self.bound()
        self.tracers()
        self.conftests()
        self.emit(self.state.values.finish())
        return {
            "conftests": list(self.state.conftests),
            "plugins": self.report_plugins(),
            "env": environment(),
        }

    def emit(self, found: list[tuple[str, str, str]]) -> None:
        for what, subject, detail in found:
            self.sink.evidence(what, subject, detail)

    def modules(self) -> None:
        """Modules from a forbidden root; the environment's files the session ran."""
        forbidden = self.state.settings.forbidden
        if not forbidden:
            return
        env = self.environment_files
        checked = self.checked_modules
        for name, module in list(sys.modules.items()):
            if checked.get(name) is module:
                continue  # seen at the end of collection, and not replaced since
            checked[name] = module
            file = getattr(module, "__file__", None)
            if isinstance(file, str):
                norm = _norm(file)
                if _under(norm, forbidden):
                    self.sink.module(name, file)
                elif env is not None:
                    env.ran(name, norm)
        watch = self.state.watch
        if env is not None and watch is not None and watch.origins:
            origins, watch.origins = watch.origins, []
            for name, origin in origins:
                env.ran(name, _norm(origin))

    def planted(self) -> None:
        """Modules put into ``sys.modules`` by hand under the name of a file of the
        room: every import that reads the name gets that object, not the file
        (a stand-in for an assertion helper or for the code under test), and no
        finder is ever asked."""
        watch = self.state.watch
        if watch is None or not watch.room:
            return
        room = _both(watch.room)
        for name in sorted(set(sys.modules) - watch.before - watch.asked):
            watch.from_elsewhere(name, getattr(sys.modules.get(name), "__file__", None))
            try:
                origin = _file_of(name)
            except Exception:  # a name no finder can look up: not a file of the room
                continue
            if isinstance(origin, str) and _under(_norm(origin), room):
                self.sink.evidence("planted-module", name, f"a stand-in for {origin}")

    def rebound(self) -> None:
        """Functions of the project's modules (those loaded from the room, its
        virtualenv aside) that are not what the module's code made: one whose code
        object comes from another file (``f.__code__ = ...``, no decorator), or a
        function of another of the project's modules that is not that module's
        own by name (a lambda put in the place of an assertion helper before the
        tests import it); and, for these and the functions of the classes the
        modules define, code that is not what was loaded (:meth:`foreign_code`)."""
        watch = self.state.watch
        if watch is None or not watch.room:
            return
        room = _both(watch.room)
        env = _environment_roots()
        project: dict[str, tuple[object, str, str]] = {}
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None)
            if isinstance(file, str):
                norm = _norm(file)
                if _under(norm, room) and not _under(norm, env):
                    project[name] = (module, norm, file)
        ids_of = self.state.provenance.ids
        reached: dict[str, set[int] | None] = {}
        for name, (loaded, file, given) in project.items():
            for key, value in list(vars(loaded).items()):
                if type(value) is not FunctionType:
                    if isinstance(value, type) and vars(value).get("__module__") == name:
                        self.members(name, key, value, given, reached)
                    continue
                # Where its code comes from (inline, the common case: a function
                # of a loaded file, one of that file's own code objects).
                code = value.__code__
                ids = ids_of.get(code.co_filename)
                if ids is None or id(code) not in ids:
                    why = self.foreign_code(value, given, reached)
                    if why is not None:
                        self.sink.evidence("rebound", f"{name}.{key}", why)
                home = getattr(value, "__module__", None)
                if home == name:
                    code_file = value.__code__.co_filename
                    # (the same string as the module's own file: the same file)
                    if (
                        code_file != given
                        and _norm(code_file) != file
                        and not hasattr(value, "__wrapped__")
                    ):
                        detail = f"its code comes from {code_file}"
                        self.sink.evidence("rebound", f"{name}.{key}", detail)
                elif (
                    isinstance(home, str)
                    and home in project
                    and not _reloaded(_by_qualname(project[home][0], value.__qualname__), value)
                ):
                    detail = f"a function of {home} put in its place"
                    self.sink.evidence("rebound", f"{name}.{key}", detail)
                elif isinstance(home, str) and home not in project:  # imported
                    watch.from_elsewhere(home, value.__code__.co_filename)

    def members(
        self, name: str, key: str, cls: type, given: str, reached: dict[str, set[int] | None]
    ) -> None:
        """:meth:`foreign_code` for the functions of a class a project module defines."""
        for member_key, member in list(vars(cls).items()):
            function = _function_of(member)
            if function is not None:
                why = self.foreign_code(function, given, reached)
                if why is not None:
                    self.sink.evidence("rebound", f"{name}.{key}.{member_key}", why)

    def bound(self) -> None:
        """The functions of the room's modules rebound since their import ended;
        the room's files loaded as code that the run itself wrote."""
        provenance = self.state.provenance
        for rel, how in sorted(provenance.fresh.items()):
            self.sink.evidence("written-module", rel, how)
        for module, name, functions in list(provenance.bound.values()):
            now = vars(module)
            for key, function in functions.items():
                value = now.get(key, _MISSING)
                if value is not function and not _reloaded(value, function):
                    what = "removed" if value is _MISSING else _describe(value)
                    detail = f"rebound since its module was imported: {what}"
                    self.sink.evidence("rebound", f"{name}.{key}", detail)

    def foreign_code(
        self, function: FunctionType, given: str, reached: dict[str, set[int] | None]
    ) -> str | None:
        """Why ``function`` (of a module whose file is ``given``) runs code that is
        not what was loaded (:class:`Provenance`): none of the code loaded from the
        file it names; for a decorator's wrapper (``__wrapped__``), whose code
        comes from another file, none of what that file's module reaches, or a
        file no module was loaded from."""
        provenance = self.state.provenance
        code = function.__code__
        file = code.co_filename
        provenance.written(file)
        ids = provenance.ids.get(file)  # (nearly always already in the normal form)
        if ids is None and file != given and file[:1] != "<":
            ids = provenance.ids.get(_norm(file))
        if ids is not None:
            if id(code) in ids:
                return None
            return f"its code was compiled during the run under the name of {file}"
        if file == given or file[:1] == "<" or not hasattr(function, "__wrapped__"):
            return None
        norm = _norm(file)
        if not _isabs(file):
            return None
        if norm not in reached:
            home = next(
                (
                    m
                    for m in list(sys.modules.values())
                    if isinstance(getattr(m, "__file__", None), str) and _norm(m.__file__) == norm
                ),
                None,
            )
            reached[norm] = None if home is None else _module_code(home)
        found = reached[norm]
        if found is None:
            return f"a wrapper whose code names {file}, from which no module was loaded"
        if id(code) not in found:
            return f"a wrapper whose code is none of {file}'s"
        return None

    def tracers(self) -> None:
        """A trace or profile function left installed can rewrite any frame's
        locals (an assertion's operands) or patch pytest between two reports."""
        threading = sys.modules.get("threading")
        for label, now in (
            ("sys.settrace", sys.gettrace()),
            ("sys.setprofile", sys.getprofile()),
            ("threading.settrace", getattr(threading, "_trace_hook", None)),
            ("threading.setprofile", getattr(threading, "_profile_hook", None)),
        ):
            if now is not None:
                self.tracer(label, now)

    def tracer(self, label: str, value: object) -> None:
        identities = self.recorder.identities
        file, homes = _code_file(value), identities.homes if identities else ()
        if file is not None and _under(_normcase(file), homes):
            return  # the standard library's own, pytest's or pluggy's
        self.sink.evidence("tracer", f"{label} {_tracer_name(value)}", _describe(value))

    def conftests(self) -> None:
        for plugin in self.config.pluginmanager.get_plugins():
            file = self.state.files.of(plugin)
            if file is not None and is_conftest(file):
                self.state.conftests.setdefault(file, None)
        selection = self.state.selection
        if selection is not None:
            for file in self.state.conftests:
                if _norm(_dirname(file)) not in selection.dirs:
                    self.sink.evidence("conftest-outside", file)

    def report_plugins(self) -> list[list[object]]:
        """Every plugin that implements a hook, and every one registered and
        removed again; its report hooks named, and every hook it implements. Any
        hook can change what a test does (a collection hook can swap each item's
        ``runtest``): the helper compares the whole list with the baseline's, and
        each plugin's hooks with those it implemented there."""
        pm = self.config.pluginmanager
        acting = _acting_plugins(pm)
        files = self.state.files
        watch = self.recorder.watch
        site = self.state.settings.site
        own = (_norm(site),) if site else ()
        out: list[list[object]] = []
        listed = set()
        for name, plugin in pm.list_name_plugin():
            if plugin is None:
                continue
            listed.add(id(plugin))
            impls = acting.get(id(plugin))
            if impls is None:
                continue
            file = files.of(plugin)
            if file is not None and own and _under(_norm(file), own):
                continue  # the loader the helper wrote for this run, in a fresh folder
            if plugin is watch:
                continue  # this plugin's own, registered only where it is needed
            late = self.state.registered.get(id(plugin), ("", None, [], False))[3]
            # a hook of a plugin of the room whose function another file defines
            # (a conftest's star import) is named with that file: the one changed
            if self.state.provenance.in_room(file) is None:
                implements = sorted(h for h, _ in impls)
            else:
                implements = sorted(
                    h if f is None or f == file else f"{h}\t{f}"
                    for h, f in ((h, _code_file(impl.function)) for h, impl in impls)
                )
            out.append([str(name), file, report_hooks(pm, plugin), late, implements])
        for key, (name, file, hooks, late) in self.state.registered.items():
            if key not in listed and key != id(watch):  # registered, then removed again
                out.append([name, file, hooks, late, hooks])
        return out


def _acting_plugins(pm: Any) -> dict[int, list[tuple[str, Any]]]:
    """The plugins (by id) with at least one hook implementation, each with the
    hooks it implements (by the hook's name, whatever its function's) and the
    implementations: one pass over pluggy's hook callers, at the end of the
    session."""
    out: dict[int, list[tuple[str, Any]]] = {}
    for name, caller in vars(pm.hook).items():
        get = getattr(caller, "get_hookimpls", None)
        if get is not None:
            for impl in get():
                out.setdefault(id(impl.plugin), []).append((name, impl))
    return out


def _file_of(name: str) -> str | None:
    """The file the path finder would load module ``name`` from, its packages
    looked up the same way where they are not loaded (a stand-in may be planted
    without its package)."""
    from importlib.machinery import PathFinder

    path: list[str] | None = None
    parts = name.split(".")
    for depth in range(1, len(parts) + 1):
        prefix = ".".join(parts[:depth])
        loaded = sys.modules.get(prefix) if depth < len(parts) else None
        locations = getattr(loaded, "__path__", None)
        if locations is None:
            spec = PathFinder.find_spec(prefix, path)
            if spec is None:
                return None
            if depth == len(parts):
                origin = spec.origin
                return origin if isinstance(origin, str) else None
            locations = spec.submodule_search_locations
            if locations is None:
                return None
        path = [str(p) for p in locations]
    return None


def _tracer_name(value: object) -> str:
    """What a trace function is, the same in every run (no address, no room)."""
    inner = getattr(value, "__func__", value)
    name = getattr(inner, "__qualname__", None) or type(value).__qualname__
    return f"{getattr(inner, '__module__', None) or type(value).__module__}.{name}"
