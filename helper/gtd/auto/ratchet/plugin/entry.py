"""The entry module's code (gtd.auto.ratchet.pytest_report), run in that
module's namespace: the hooks pytest finds on it, the process's state, the
loading of the parts. Never imported, as a module of its own, by the plugin.

Why it lives here: hypothesis draws part of its examples from the literals of
every loaded module whose file is outside site-packages and the standard
library. The entry module keeps its file (the baseline records each plugin's
file, this one's path among them), so it holds no literal hypothesis collects;
this code, with its literals, runs from a module that never joins
``sys.modules``, as the parts do. pytest_report.py's docstring says what the
plugin does and how it loads."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Generator

_PLUGIN_FILE = os.path.abspath(__file__)
# The parts, in the order they load: each imports only parts before it.
_PARTS = (
    "terms",
    "paths",
    "settings",
    "sink",
    "selection",
    "objects",
    "provenance",
    "shapes",
    "bindings",
    "bytecode",
    "values",
    "imports",
    "identities",
    "outcomes",
    "checks",
    "recorder",
    "session",
    "selfcheck",
)
_PACKAGE = "_gtd_ratchet_plugin"  # private: the values watch records no module of it


def _load_parts() -> dict[str, Any]:
    """Each part of ``plugin/`` beside this file, loaded by path as a module of
    :data:`_PACKAGE`. No package module is made: a part that imports one not
    loaded yet fails here (the package has no folder to look in), never looks
    for it on ``sys.meta_path``. The source loader reads each part's bytecode
    cache as any import would; the module is made by hand (importlib.util's
    spec and module helpers cost ~110,000 instructions a part, on every run)."""
    from importlib.machinery import ModuleSpec, SourceFileLoader
    from types import ModuleType

    folder = os.path.join(os.path.dirname(_PLUGIN_FILE), "plugin")
    out: dict[str, Any] = {}
    for part in _PARTS:
        name = f"{_PACKAGE}.{part}"
        path = os.path.join(folder, f"{part}.py")
        loader = SourceFileLoader(name, path)
        module = ModuleType(name)
        module.__file__ = path
        module.__loader__ = loader
        module.__package__ = _PACKAGE
        module.__spec__ = ModuleSpec(name, loader, origin=path)
        sys.modules[name] = module
        code = loader.get_code(name)
        assert code is not None
        exec(code, vars(module))
        # No file once loaded: hypothesis draws examples from the literals of
        # every module whose file is outside site-packages (it takes them for the
        # project's own), so in a helper not installed there (an editable
        # checkout, a copy) the parts' ~340 literals joined the project's (attrs
        # has 318), a bug behind one of the project's was drawn half as often,
        # and each run parsed the parts (~0.05 s). Nothing reads a part's file
        # after its code ran; tracebacks read the code's own file name.
        del module.__file__
        out[part] = module
    return out


_LOADED = _load_parts()
if TYPE_CHECKING:  # the type checker reads the helper's package; pytest, the files
    from gtd.auto.ratchet.plugin import (
        bytecode,
        checks,
        identities,
        imports,
        paths,
        provenance,
        recorder,
        selection,
        selfcheck,
        session,
        settings,
        terms,
        values,
    )
else:
    bytecode = _LOADED["bytecode"]
    checks = _LOADED["checks"]
    identities = _LOADED["identities"]
    imports = _LOADED["imports"]
    paths = _LOADED["paths"]
    provenance = _LOADED["provenance"]
    recorder = _LOADED["recorder"]
    selection = _LOADED["selection"]
    selfcheck = _LOADED["selfcheck"]
    session = _LOADED["session"]
    settings = _LOADED["settings"]
    terms = _LOADED["terms"]
    values = _LOADED["values"]

C = terms.C
Recorder = recorder.Recorder
Identities = identities.Identities
ImportWatch = imports.ImportWatch
State = session.State
# (the helper's tests read these here)
_abs = paths._abs
_both = paths._both
_docstring_digest = recorder._docstring_digest

# What this process keeps, made at import: provenance of the room's code (its
# clock is the bytecode guard's loader), the values protected code reads.
_PROVENANCE = provenance.Provenance(bytecode._NoFreshBytecode)
_VALUES = values.Values(_PROVENANCE)
_FILES = identities.PluginFiles(_PLUGIN_FILE, (Recorder,))


def _start() -> State | None:
    """At import, before the user's conftests, test modules and code under test:
    read the settings, start the watchers and put the import watch first."""
    asked = settings.read_settings()
    if asked is None:
        return None
    state = State(asked, _PLUGIN_FILE, _PROVENANCE, _VALUES, _FILES)
    _VALUES.start(asked)
    state.guard.start()
    if asked.redirect or asked.forbidden:
        watch = state.watch = ImportWatch(asked, state.sink, _PROVENANCE, _PLUGIN_FILE)
        watch.start()
    return state


_STATE: State | None
try:
    _STATE = _start()
except Exception:  # the run goes on without a report
    _STATE = None


# -- hooks of the entry-point module -----------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    state = _STATE
    if state is None or state.selection is None:
        return
    try:
        selection.guard_conftests(state.selection, early_config.pluginmanager, state.sink)
    except Exception as exc:
        state.sink.evidence("guard-missing", "conftest loading", type(exc).__name__)


@pytest.hookimpl(tryfirst=True)  # before junitxml's own pytest_configure reads the option
def pytest_configure(config: pytest.Config) -> None:
    state = _STATE
    if state is None:
        return
    settings = state.settings
    if settings.site:
        sys.path[:] = [entry for entry in sys.path if entry != settings.site]
    sink = state.sink
    if sink.out.fd < 0:
        return  # nowhere to write: the JUnit XML reports instead
    worker = getattr(config, "workerinput", {}).get("workerid")  # an xdist worker
    try:
        recorder = Recorder(state, config, worker)
        config.pluginmanager.register(recorder, "gtd-ratchet-recorder")
        own = {"Recorder": Recorder, "SessionChecks": checks.SessionChecks}
        recorder.identities = Identities(config.pluginmanager, state.early_impls, own)
    except Exception:  # an older or unusual pytest: the JUnit XML reports instead
        return
    state.recorder = recorder
    xmlpath = getattr(config.option, "xmlpath", None)
    if settings.junit and xmlpath and paths._norm(xmlpath) == paths._norm(settings.junit):
        config.option.xmlpath = None  # this report replaces it
    inipath = getattr(config, "inipath", None)
    sink.emit(
        C.START,
        {
            "v": C.VERSION,
            "pid": os.getpid(),
            "worker": worker,
            "root": recorder.root,
            "ini": None if inipath is None else str(inipath),
            "plugin": _PLUGIN_FILE,
            "via": sink.out.via,
            "sel": None if state.selection is None else True,
        },
    )
    for label, file in recorder.identities.foreign():
        sink.evidence("foreign", label, file)


def pytest_plugin_registered(plugin: object, manager: Any) -> None:
    state = _STATE
    if state is None or id(plugin) in state.registered:
        return
    try:
        early = state.early_impls
        if not early:  # (the first call: this module's own registration)
            for name, impls in identities.hook_impls(manager):
                for impl in impls:
                    early[id(impl)] = (name, impl, impl.function)
        file = state.files.of(plugin)
        if identities.is_conftest(file):
            state.conftests.setdefault(str(file), None)
        hooks = identities.report_hooks(manager, plugin)
        name = identities.plugin_label(manager, plugin)
        state.registered[id(plugin)] = (name, file, hooks, state.started)
        if state.started and hooks and not identities.is_conftest(file):
            state.sink.evidence("late-plugin", name, f"{file} ({', '.join(hooks)})")
    except Exception as exc:
        state.sink.evidence("internal", "plugin registration", type(exc).__name__)


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionstart() -> Generator[None, None, None]:
    state = _STATE
    if state is not None:
        state.started = True
    yield
    # After every plugin's sessionstart: xdist has started its workers, which
    # inherited the environment and so load this plugin too. From now on nothing
    # should: a pytest that a test starts is the user's, not the ratchet's.
    if state is not None:
        _restore_environment(state.settings)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    state = _STATE
    if state is None or state.recorder is None:
        return
    pm = session.config.pluginmanager
    if not pm.is_registered(state.recorder):
        state.sink.evidence("unregistered", "gtd-ratchet-recorder", "removed during the session")
    watch = state.recorder.watch
    if watch is not None and not pm.is_registered(watch):
        state.sink.evidence("unregistered", "gtd-ratchet-outcomes", "removed during the session")


def pytest_unconfigure() -> None:
    # The session is over and its end line written: the watchers let go.
    ImportWatch.finish()
    _VALUES.release()


def _restore_environment(asked: settings.Settings) -> None:
    os.environ.pop(C.ENV_SETTINGS, None)
    os.environ.pop(C.ENV_FD, None)
    site = asked.site
    if site:
        entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        kept = [entry for entry in entries if entry != site]
        if any(kept):
            os.environ["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            os.environ.pop("PYTHONPATH", None)
    junit = asked.junit
    if junit:
        import shlex

        addopts = os.environ.get("PYTEST_ADDOPTS")
        if addopts is not None:
            rest = addopts.replace("--junitxml=" + shlex.quote(junit), "").strip()
            if rest:
                os.environ["PYTEST_ADDOPTS"] = rest
            else:
                del os.environ["PYTEST_ADDOPTS"]


# -- the plugin's own code ------------------------------------------------------------
# Every module of the plugin (this one, each part, and in_process.py, which the
# parts share with the unittest runner) taken now that all are made, compared
# first thing at the session's end (plugin/selfcheck.py).

selfcheck.made(
    [
        (globals(), __name__),
        *[(vars(_LOADED[part]), _LOADED[part].__name__) for part in _PARTS],
        (vars(terms.P), terms.P.__name__),
    ],
    Recorder,
)
