"""Identities: what decides a test's report (pytest's and pluggy's functions and
classes, every hook's implementations, the plugin's own classes), taken when
the session is configured and compared at its end; and how plugins are named
and placed (their file, their report hooks) and the interpreter's environment
described."""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

import pytest

from .objects import _code_file, _describe, _watchable
from .paths import _abs, _abspath, _basename, _dirname, _join, _normcase, _under
from .terms import MISSING as _MISSING
from .terms import C

# -- tamper evidence: identities -------------------------------------------------------

# (module, attribute): what pytest looks up by name each time it runs a test.
_WATCHED = (
    ("_pytest.runner", "call_and_report"),
    ("_pytest.runner", "runtestprotocol"),
    ("_pytest.runner", "check_interactive_exception"),
    ("_pytest.runner", "CallInfo"),
    ("_pytest.runner", "TestReport"),
    ("_pytest.reports", "BaseReport"),
    ("_pytest.reports", "TestReport"),
    ("_pytest.reports", "CollectReport"),
    ("_pytest.python", "Function"),
    ("_pytest.skipping", "evaluate_skip_marks"),
    ("_pytest.skipping", "evaluate_xfail_marks"),
    ("pytest", "TestReport"),
    ("pluggy._callers", "_multicall"),
    ("os", "write"),
)
# Classes with every attribute watched: methods, properties, class methods.
_WATCHED_CLASSES = (
    ("_pytest.reports", "BaseReport"),
    ("_pytest.reports", "TestReport"),
    ("_pytest.reports", "CollectReport"),
    ("_pytest.runner", "CallInfo"),
    ("_pytest.python", "Function"),
    ("_pytest.nodes", "Item"),
)
# Classes a test's verdict also goes through, often loaded after configure
# (doctest by pytest's doctest support, unittest by the first TestCase): judged
# at the end by where their code comes from, pytest's, pluggy's or the standard
# library's, with no identity taken at configure (~0.6 ms a run saved there).
_ORIGIN_CLASSES = (
    ("_pytest.raises", "RaisesExc"),
    ("_pytest.raises", "RaisesGroup"),
    ("_pytest.python_api", "RaisesContext"),
    ("doctest", "OutputChecker"),
    ("doctest", "DocTestRunner"),
    ("unittest.case", "TestCase"),
)
# Hooks whose registered implementations are watched, object and function.
_WATCHED_HOOKS = (
    *C.REPORT_HOOKS,
    "pytest_collectreport",
    "pytest_runtest_setup",
    "pytest_runtest_teardown",
)


class Identities:
    """The identity of what decides a test's report, captured when the session is
    configured and compared at its end; plus, at capture, whether each watched
    function comes from pytest or pluggy at all (a replacement made earlier)."""

    def __init__(
        self, pm: Any, early: dict[int, tuple[str, Any, object]], own: dict[str, type]
    ) -> None:
        """``early``: every hook's implementations as the plugin's registration saw
        them; ``own``: the plugin's classes pytest calls, by name."""
        import pluggy

        self.pm = pm
        self.own = own
        # Where pytest's own code comes from: pytest, pluggy, attrs (pytest before 8
        # generates methods with it) and the standard library (functools does too).
        homes = [sys.modules["_pytest"], pytest, pluggy, os]
        if "attr" in sys.modules:
            homes.append(sys.modules["attr"])
        self.homes = tuple(_normcase(_dirname(_abspath(str(m.__file__)))) for m in homes)
        self.snapshot = self.take()
        # Every hook's implementations, each with its function as first seen: when
        # this plugin registered (before any conftest's code ran) or, for a plugin
        # registered since, now. Any hook can run code after the last test and
        # before the end's checks (put back a value the tests read, say), so a
        # function swapped in a registered implementation is evidence.
        self.impls = dict(early)
        for name, impls in hook_impls(pm):
            for impl in impls:
                self.impls.setdefault(id(impl), (name, impl, impl.function))

    def take(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for module_name, attr in _WATCHED:
            out[f"{module_name}.{attr}"] = getattr(sys.modules.get(module_name), attr, _MISSING)
        for module_name, attr in _WATCHED_CLASSES:
            cls = getattr(sys.modules.get(module_name), attr, None)
            if isinstance(cls, type):
                for key, value in list(vars(cls).items()):
                    if _watchable(value):
                        out[f"{module_name}.{attr}.{key}"] = value
        pm = self.pm
        out["pluggy PluginManager._inner_hookexec"] = getattr(pm, "_inner_hookexec", _MISSING)
        out["pluggy PluginManager._hookexec"] = getattr(type(pm), "_hookexec", _MISSING)
        for hook_name in (*_WATCHED_HOOKS, "pytest_runtest_logreport"):
            caller = getattr(pm.hook, hook_name, None)
            if caller is None:
                continue
            for key, value in vars(type(caller)).items():
                out[f"pluggy {type(caller).__name__}.{key}"] = value
            out[f"{hook_name}._hookexec"] = getattr(caller, "_hookexec", _MISSING)
            for impl in caller.get_hookimpls():
                label = f"{hook_name} of {plugin_label(pm, impl.plugin)}"
                out[label] = impl.function
        for name, cls in self.own.items():
            for key, value in vars(cls).items():
                out[f"gtd_ratchet_report.{name}.{key}"] = value
        return out

    def finish(self) -> list[tuple[str, str, str]]:
        """What changed of what was taken at configure, and implementations added
        to a hook by hand."""
        out = [("patched", label, now) for label, now in self.changed()]
        out += [("late-plugin", hook, detail) for hook, detail in self.unregistered()]
        return out

    def foreign(self) -> list[tuple[str, str]]:
        """Watched pytest and pluggy functions whose code lives elsewhere."""
        out = []
        for label, value in self.snapshot.items():
            if label.startswith(("gtd_ratchet_report.", "os.")) or " of " in label:
                continue
            file = _code_file(value)
            if file and not _under(_normcase(file), self.homes):
                out.append((label, file))
        return out

    def unregistered(self) -> list[tuple[str, str]]:
        """Implementations on pytest's hooks whose plugin is not registered: added
        to a hook by hand, never seen by ``pytest_plugin_registered``."""
        plugins = {id(plugin) for plugin in self.pm.get_plugins()}
        return [
            (name, f"{_describe(impl.function)} added to the hook, no plugin registered")
            for name, impls in hook_impls(self.pm)
            for impl in impls
            if id(impl.plugin) not in plugins
        ]

    def changed(self) -> list[tuple[str, str]]:
        now = self.take()
        swapped = {
            f"{name} of {plugin_label(self.pm, impl.plugin)}": _describe(impl.function)
            for name, impl, function in list(self.impls.values())
            if impl.function is not function
        }
        out = list(swapped.items())
        for label in sorted(set(self.snapshot) | set(now)):
            if " of " in label and label not in self.snapshot:
                continue  # a plugin registered later: reported as one
            before, after = self.snapshot.get(label, _MISSING), now.get(label, _MISSING)
            if before is not after and label not in swapped:
                out.append((label, "removed" if after is _MISSING else _describe(after)))
        for module_name, attr in _ORIGIN_CLASSES:
            cls = getattr(sys.modules.get(module_name), attr, None)
            if isinstance(cls, type):
                for key, value in list(vars(cls).items()):
                    file = _code_file(value) if _watchable(value) else None
                    if file and not _under(_normcase(file), self.homes):
                        out.append((f"{module_name}.{attr}.{key}", file))
        return out


def plugin_label(pm: Any, plugin: object) -> str:
    name = pm.get_name(plugin)
    if name and name != str(id(plugin)):
        return str(name)
    # (pluggy names an unnamed plugin by its id, another in every run: the
    # baseline's evidence could never excuse the candidate's)
    kind = plugin if isinstance(plugin, ModuleType) else type(plugin)
    return f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', kind.__name__)}"


def hook_impls(pm: Any) -> list[tuple[str, list[Any]]]:
    """Each of pytest's hooks by name, with its implementations."""
    out = []
    for name, caller in list(vars(pm.hook).items()):
        get = getattr(caller, "get_hookimpls", None)
        if get is not None:
            out.append((name, get()))
    return out


class PluginFiles:
    """The file each plugin comes from; an object of the plugin's own ``kinds``
    (its recorder) is the entry point's file."""

    def __init__(self, own_file: str, kinds: tuple[type, ...]) -> None:
        self.own_file = own_file
        self.kinds = kinds

    def of(self, plugin: object) -> str | None:
        if isinstance(plugin, self.kinds):
            return self.own_file
        file = getattr(plugin, "__file__", None)
        if file is None:
            module = sys.modules.get(getattr(type(plugin), "__module__", ""))
            file = getattr(module, "__file__", None)
        return _abs(file) if isinstance(file, str) else None


def is_conftest(file: str | None) -> bool:
    return file is not None and _basename(file) == "conftest.py"


def report_hooks(pm: Any, plugin: object) -> list[str]:
    """The report hooks the plugin implements, under any method name (``specname``).
    Asks only those hooks: pluggy's ``get_hookcallers`` walks every hook, and this
    runs once per plugin registered."""
    out = []
    for name in C.REPORT_HOOKS:
        caller = getattr(pm.hook, name, None)
        if caller is not None and any(i.plugin is plugin for i in caller.get_hookimpls()):
            out.append(name)
    return sorted(out)


def environment() -> dict[str, object]:
    import site

    import pluggy

    sites: list[str] = []
    getsitepackages = getattr(site, "getsitepackages", None)  # an old virtualenv lacks it
    if getsitepackages is not None:
        sites.extend(getsitepackages())
    if getattr(site, "ENABLE_USER_SITE", False):
        sites.append(site.getusersitepackages())
    pth: list[str] = []
    for directory in sites:
        try:
            names = sorted(n for n in os.listdir(directory) if n.endswith(".pth"))
        except OSError:
            continue
        pth.extend(_join(directory, n) for n in names)
    return {
        C.ENV_EXECUTABLE: sys.executable,
        C.ENV_PREFIX: sys.prefix,
        C.ENV_BASE_PREFIX: getattr(sys, "base_prefix", sys.prefix),
        C.ENV_VERSION: sys.version.split()[0],
        C.ENV_PATH: list(sys.path),
        C.ENV_SITE: sites,
        C.ENV_PTH: pth,
        C.ENV_PYTEST: _abspath(str(pytest.__file__)),
        C.ENV_PLUGGY: _abspath(str(pluggy.__file__)),
    }
