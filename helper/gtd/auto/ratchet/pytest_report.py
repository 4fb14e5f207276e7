"""The pytest plugin behind the ratchet's per-test results. Never imported by gtd.

How it loads: for each test run the helper writes, into a fresh directory it puts
on ``PYTHONPATH``, a few-line module with a random name (``gtd_ratchet_<token>``)
and a ``*.dist-info`` declaring that module as the ``pytest11`` entry point
``gtd_ratchet_report``. Any pytest the test command starts (directly, through make
or a shell pipeline) autoloads it, and it loads this file by path from the
installed helper. A file in the repository cannot shadow a module name it cannot
know, and the code that runs is the helper's own, not a copy the tests could edit.

What it does (the contract — environment and line format — is contract.py beside
this file, which both sides read):

- streams one JSON line per test report (and one per collection error or skip)
  into the helper's pipe, or appends them to a file where the pipe was not
  inherited: every outcome but a plain pass at once, passes in batches of a few
  kilobytes or a quarter of a second. Outcomes: passed, xpassed, skipped, xfailed,
  failed (a strict xpass too, as pytest says) and error (a failure in setup,
  teardown or collection); a skip carries its location and reason, an xfail its
  reason;
- reports what pytest collected: each item's node id, file and kind;
- applies a selection the helper asks for (only these files, only these node
  ids): nothing else is collected, and no conftest.py outside it is loaded;
- when asked, loads modules from the room instead of the live repository
  (editable installs of either kind: a path added by a ``.pth``, or setuptools'
  import finder);
- records tamper evidence: pytest internals replaced during the session, plugins
  registered late that can change reports, modules loaded from a forbidden root,
  the conftest files and the interpreter's environment.

Degrades, never breaks: nothing here may fail the user's run. Any internal problem
means a report that is missing or flagged, which the verdict treats as missing
results. Where the plugin does not load (a command that replaces ``PYTHONPATH``,
``python -I``, ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), the ``--junitxml`` the helper
also passes stays in force; where it loads and can write, it switches that off.

How it is made: this module composes the parts in the folder ``plugin/`` beside
it (gtd.auto.ratchet.plugin: settings, sink, selection, provenance, bytecode
guard, values, import watch, identities, outcome watch, recorder, checks, its
own check) into pytest's hooks. It loads each part by path, in the order of
:data:`_PARTS`, under a private package name (``_gtd_ratchet_plugin``), before
the plugin starts anything: the parts are the helper's files as this module is,
and no finder on ``sys.meta_path`` (pytest's assertion rewriter among them) is
asked for them. Each part is handed what it needs; what the process keeps (the
state, provenance, the values watch) is made here.

Runs in the user's test environment: standard library and pytest (6.1 or later)
only, syntax for Python 3.7 and later. Per test it does a dict write and formats
one short line (a write to the pipe for every ~40 passing tests); everything else
happens at start-up, at the end of collection and at the end of the session.
"""

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
