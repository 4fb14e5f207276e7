"""The values watch: what protected code reads, as first seen, compared at the
session's end.

A protected module (a test module, a conftest, a helper in a test folder: a
file the judged tree takes from the base) cannot be edited by the change; what
it reads while the tests run can be. Each one's values are recorded as its
import left them, walked into plain containers, and compared at the end of
the session: a tolerance constant rebound, a default argument replaced, a dict
of limits or a class attribute changed, a closure's cell set, a name the test
module bound its assertion helper to rebound to a builtin. So are the
builtins and the public functions of the libraries protected modules import,
as they were when the plugin was imported (before any conftest, test or code
under test ran) or, for a library loaded since, when the first protected
module that binds it was imported. The module's own code may change its
values too (a cache filled, a counter): the baseline's run does the same, and
the helper does not hold evidence the baseline shows against a change."""

from __future__ import annotations

import os
import sys
from itertools import chain, compress, count, repeat
from types import CodeType, FunctionType, ModuleType
from typing import TYPE_CHECKING, Any

from .bindings import _import_bindings, _imported_name
from .objects import _describe, _watchable
from .paths import _norm, _under
from .shapes import (
    _BUILTIN_HOOKS,
    _CLASSES_KEPT,
    _HEAP_TYPE,
    _KEPT,
    _MACHINERY,
    _UNWATCHED_LIBRARIES,
    _UNWATCHED_NAMES,
    _WALK_BUDGET,
    _WALK_DEPTH,
    _behaviour_changed,
    _changed,
    _class_noise,
    _dunder,
    _entries_changed,
    _environment_roots,
    _function_state,
    _hypothesis_strength,
    _is_function,
    _is_not,
    _machinery_modules,
    _private,
    _property_module,
    _second,
    _shape,
    _stand_in,
    _strength_change,
    _submodule,
    _weaker,
)
from .terms import MISSING as _MISSING

if TYPE_CHECKING:
    from .provenance import Provenance
    from .settings import Settings
    from .shapes import _Strength


class Values:
    """What protected code reads, as first seen (see above)."""

    def __init__(self, provenance: Provenance) -> None:
        self.provenance = provenance
        self.files: frozenset[str] | None = None  # protected files; None: not asked
        self.tests: set[str] = set()  # test modules pytest began collecting
        self.seen: set[str] = set()  # files whose modules are recorded
        # each module's namespace as first seen: every one when the plugin was
        # imported, a library loaded since when its import ended
        # (name -> (module, copy, since when))
        self.early: dict[str, tuple[object, dict[str, object], str]] = {}
        # id(module) -> (module, name, {global: (value, shape)}), kept alive so that
        # every id in a shape stays that object's
        self.protected: dict[int, tuple[object, str, dict[str, tuple[object, object]]]] = {}
        self.looked: set[int] = set()  # modules protected ones bind, looked at (ids)
        # libraries protected modules bind: name -> (module, namespace, since when)
        self.read: dict[str, tuple[object, dict[str, object], str]] = {}
        self.kept: list[object] = []
        # names a protected module's import bound to a builtin not of that name:
        # (subject, detail)
        self.stand_ins: list[tuple[str, str]] = []
        self.names: dict[str, int] = {}  # a protected module's name -> id(module)
        # the assertion machinery's modules as first seen (:meth:`machine`):
        # name -> (module, namespace, {class name: (class, its own entries)})
        self.machinery: dict[str, tuple[object, dict[str, object], dict[str, Any]]] = {}
        # hypothesis's modules as first seen (:meth:`property_machine`): name ->
        # (module, its functions and classes, {class name: (class, own entries)})
        self.properties: dict[str, tuple[object, dict[str, object], dict[str, Any]]] = {}
        # names a protected module's import statements bound to other than what
        # they import (:meth:`bindings`): (subject, detail)
        self.bound_by_import: list[tuple[str, str]] = []
        # Every function of a library's namespace (and of the machinery's
        # classes) as first seen, with its code, defaults and keyword defaults
        # then, flattened three to a function: ``f.__code__ = ...`` changes what
        # ``f`` does (pytest.fail, _exists, a function this plugin calls)
        # and leaves it the object first seen
        self.functions: list[FunctionType] = []
        self.states: list[object] = []
        # The classes each library of :data:`_CLASSES_KEPT` defines, as first seen (the
        # run's start, or its import's end): library -> {name: (class, its own
        # entries)}. ``Fraction.__eq__ = ...`` leaves the module's namespace as
        # it was, and the class the one first seen.
        self.classes: dict[str, dict[str, tuple[type, dict[str, object]]]] = {}
        # hypothesis made to try fewer examples while a module of the code under
        # test was imported: (module, (examples, phases) after, before)
        self.weakened: list[tuple[str, _Strength, _Strength]] = []
        self.examples_first: _Strength | None = None  # as hypothesis's import left it
        self.ended = False  # an end line written (:meth:`stop`)
        # hypothesis's strength once collection imported every test module
        self.examples_at_collection: _Strength | None = None
        # pytest's rewriter's exec_module, as wrapped (:meth:`watch_rewritten`)
        self.rewritten: dict[str, object] = {}

    def start(self, settings: Settings) -> None:
        if settings.guarded is None:
            return
        self.files = settings.guarded
        early = self.early
        # A dict copy of each public module's namespace (~8,000 names of ~150
        # modules at pytest's start, ~0.3 ms): a private one (``_pytest.*``,
        # ``email._parseaddr``) is no API the tests call; pytest's internals are
        # watched by :class:`Identities`.
        for name, module in list(sys.modules.items()):
            if _property_module(name):
                self.property_machine(name, module)
            namespace = getattr(module, "__dict__", None)
            if type(namespace) is dict and not _private(name):
                copy = dict(namespace)
                early[name] = (module, copy, "the run began")
                if name in _KEPT:
                    self.keep_states(copy)
                    if name in _CLASSES_KEPT:
                        self.library_classes(name, copy)
        builtins = early.get("builtins")
        if builtins is not None:
            self.read["builtins"] = builtins
        # and the path modules this plugin's own checks decide with (their
        # functions are bound at its import; what those call is looked up here)
        for name in ("os", os.path.__name__, "genericpath"):
            held = early.get(name)
            if held is not None:
                self.read.setdefault(name, held)
        for name in _machinery_modules():
            loaded = sys.modules.get(name)
            if loaded is not None:
                self.machine(name, loaded)
        self.watch_rewritten()

    def watch_rewritten(self) -> None:
        """Protected modules that pytest's assertion rewriter imports (test modules,
        conftests) recorded as their import ends, as the import system's are by
        the bytecode guard's loader."""
        try:
            from _pytest.assertion import rewrite
        except ImportError:  # no assertion rewriting: the import system loads them
            return
        hook = getattr(rewrite, "AssertionRewritingHook", None)
        original = getattr(hook, "exec_module", None)
        if not isinstance(hook, type) or original is None:
            return
        imported = self.imported

        def exec_module(self: object, module: Any) -> None:
            original(self, module)
            imported(module)

        hook.exec_module = self.rewritten["exec_module"] = exec_module  # type: ignore[attr-defined]

    def keep_states(self, namespace: dict[str, object]) -> None:
        """Each function of ``namespace`` with its code and defaults (C-level
        iteration: ~1,300 functions at pytest's start)."""
        values = list(namespace.values())
        functions: list[Any] = list(compress(values, map(_is_function, map(type, values))))
        self.functions += functions
        self.states += chain.from_iterable(map(_function_state, functions))

    def library_classes(self, name: str, namespace: dict[str, object]) -> None:
        """Record the classes ``namespace`` (library ``name``'s) defines: each
        one's own entries, and its functions' code and defaults. Classes of C
        (``int``, ``Decimal`` where ``_decimal`` is built) cannot be changed."""
        found: dict[str, tuple[type, dict[str, object]]] = {}
        items: list[tuple[str, Any]] = list(namespace.items())
        # (the classes picked out at C level: ~1,000 names in these libraries)
        for key, value in compress(items, map(isinstance, map(_second, items), repeat(type))):
            if value.__flags__ & _HEAP_TYPE and vars(value).get("__module__") == name:
                entries = dict(vars(value))
                found[key] = (value, entries)
                self.keep_states(entries)
        self.classes[name] = found

    def examples_after(self, module: Any, before: _Strength | None) -> None:
        """Note hypothesis's default settings left weaker (fewer examples, fewer
        phases) by the import of ``module``, if it is the code under test: a
        property test then tries one example, the smallest, and misses what a
        hundred would find. A project's own conftest or test module may load
        any profile; the code under test has no say."""
        loaded = sys.modules.get("hypothesis._settings")
        if self.files is None or loaded is None:
            return
        if self.examples_first is None:
            # (hypothesis loaded before the run began, or its import just ended)
            self.examples_first = before if before is not None else _hypothesis_strength()
            if module is loaded:
                return
        file = getattr(module, "__file__", None)
        norm = self.provenance.in_room(file)
        if norm is None or norm in self.files or _under(norm, _environment_roots()):
            return
        now = _hypothesis_strength()
        was = before if before is not None else self.examples_first
        if now is not None and was is not None and _weaker(now, was):
            self.weakened.append((str(getattr(module, "__name__", norm)), now, was))

    def code_replaced(self) -> list[tuple[str, str]]:
        """The functions (:meth:`keep_states`) whose code, defaults or keyword
        defaults are not, by identity, what they were first seen with."""
        functions = self.functions
        now = list(chain.from_iterable(map(_function_state, functions)))
        out: dict[str, str] = {}
        for at in compress(count(), map(_is_not, now, self.states)):
            function = functions[at // 3]
            what = ("code", "defaults", "keyword defaults")[at % 3]
            name = f"{getattr(function, '__module__', '?')}.{function.__qualname__}"
            out[name] = f"its {what} replaced since first seen: {_describe(function)}"
        return list(out.items())

    def machine(self, name: str, module: object) -> None:
        """Record a module of the assertion machinery (:data:`_MACHINERY`): its
        namespace and, for each class it defines, the class's own entries."""
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is not dict or name in self.machinery:
            return
        classes = {
            key: (value, dict(vars(value)))
            for key, value in list(namespace.items())
            if isinstance(value, type) and getattr(value, "__module__", None) == name
        }
        copy = dict(namespace)
        self.machinery[name] = (module, copy, classes)
        self.keep_states(copy)
        for _, entries in classes.values():
            self.keep_states(entries)

    def imported(self, module: Any) -> None:
        """Record ``module``'s values if it is protected (its import just ended)."""
        files = self.files
        if files is None or id(module) in self.protected:
            return
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            return
        norm = _norm(file)
        if norm not in files and norm not in self.tests:
            if self.ended:
                return  # a library loaded after the end line: nothing compares it
            name = getattr(module, "__name__", None)
            early = self.early
            if isinstance(name, str) and name not in early:
                room = self.provenance.room
                if not (room and _under(norm, room)):
                    # a library loaded since the run began, as its import left it:
                    # the code under test may import it first and patch it at once
                    if not _private(name):
                        copy = dict(vars(module))
                        early[name] = (module, copy, "it was imported")
                        if name in _KEPT:
                            self.keep_states(copy)
                            if name in _CLASSES_KEPT:
                                self.library_classes(name, copy)
                    # (the machinery's modules often have private names:
                    # numpy.testing._private.utils, hypothesis's internals)
                    if name in _MACHINERY:
                        self.machine(name, module)
                    elif _property_module(name):
                        self.property_machine(name, module)
            return
        self.seen.add(norm)
        name = str(getattr(module, "__name__", norm))
        values: dict[str, tuple[object, object]] = {}
        keep = self.kept
        for key, value in list(vars(module).items()):
            if key[:2] == "__" and key[-2:] == "__":
                if key == "__builtins__":  # what functions made later look builtins up in
                    values[key] = (value, id(value))
                continue
            values[key] = (value, _shape(value, name, [_WALK_BUDGET], _WALK_DEPTH, keep))
            if type(value) is ModuleType:
                self.library(value, name)
                continue
            home = getattr(value, "__module__", None) if callable(value) else None
            if type(home) is str and home != name:
                # a function or class bound by name (`from statistics import
                # fmean`): what it calls through its module's globals is read too
                source = sys.modules.get(home)
                if type(source) is ModuleType:
                    self.library(source, name)
            if _stand_in(key, value):
                what = getattr(value, "__name__", "?")
                detail = f"bound by its module's import to the builtin {what}, a name not its own"
                self.stand_ins.append((f"{name}.{key}", detail))
        self.protected[id(module)] = (module, name, values)
        self.names[name] = id(module)
        code = self.provenance.top.get(norm)
        if code is not None:
            self.bindings(module, name, code)

    def bindings(self, module: Any, name: str, code: CodeType) -> None:
        """Each name ``module``'s own import statements bound (once) checked
        against what they import: the module's value in ``sys.modules`` and, for
        a protected module or a library, the value it held when it was first
        seen. A hook on ``builtins.__import__`` (or on the module, or on
        ``sys.modules``) that hands a protected module a stand-in while it
        imports, and takes itself off again, leaves the stand-in bound under
        the real name: nothing changes after the import, so only here does it
        show."""
        namespace = vars(module)
        package = namespace.get("__package__")
        if not isinstance(package, str):
            package = name if hasattr(module, "__path__") else name.rpartition(".")[0]
        out = self.bound_by_import
        for statement in _import_bindings(code):
            bound = statement[4]
            actual = namespace.get(bound, _MISSING)
            if actual is _MISSING:
                continue  # (an import the module's code did not run)
            imported = _imported_name(statement, package)
            if imported is not None:
                wrong = self.binding_wrong(actual, *imported)
                if wrong is not None:
                    out.append((f"{name}.{bound}", wrong))

    def binding_wrong(self, actual: object, target: str, attribute: str | None) -> str | None:
        """What is wrong with ``actual`` as the value an import of ``target``'s
        ``attribute`` (or of the module ``target`` itself) bound, if anything."""
        modules = sys.modules
        source = modules.get(target)
        if attribute is None:
            if actual is source:
                return None
            return f"bound by its import to {_describe(actual)}, not the module {target}"
        if source is None:
            return f"bound by an import of {target}, which is not loaded"
        held = getattr(source, "__dict__", None)
        if type(held) is not dict:
            return None
        value = held.get(attribute, _MISSING)
        if value is _MISSING:
            value = modules.get(f"{target}.{attribute}", _MISSING)
        if value is _MISSING:
            if "__getattr__" in held:  # (a lazy module's names are not held)
                return None
            return f"bound by an import of {target}.{attribute}, which {target} does not hold"
        if actual is not value:
            return f"bound by its import to {_describe(actual)}, not {target}.{attribute}"
        first = self.first_value(target, attribute)
        if first is _MISSING or first is actual:
            return None
        return (
            f"bound by its import to {_describe(actual)}: {target}.{attribute} was "
            f"{_describe(first)} when it was first seen"
        )

    def property_machine(self, name: str, module: object) -> None:
        """Record a module of hypothesis, which decides how many examples a
        property test tries and what they are (its engine, its strategies): the
        functions and classes it defines, and each class's own entries. Its
        modules keep data of their own that changes as tests run (caches,
        counters, submodules bound as they load): that is not judged."""
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is not dict or name in self.properties:
            return
        made: dict[str, object] = {
            key: value
            for key, value in list(namespace.items())
            if type(value) is FunctionType or isinstance(value, type)
            if getattr(value, "__module__", None) == name
        }
        classes = {
            key: (value, dict(vars(value)))
            for key, value in made.items()
            if type(value) is not FunctionType
        }
        self.properties[name] = (module, made, classes)
        self.keep_states(made)
        for _, entries in classes.values():
            self.keep_states(entries)

    def machinery_changed(self) -> list[tuple[str, str]]:
        """The assertion machinery's entries (:meth:`machine`) rebound, removed
        or added since first seen; hypothesis's functions and classes
        (:meth:`property_machine`) rebound or removed, their classes' entries
        rebound, removed or added."""
        out: list[tuple[str, str]] = []
        for name, (module, namespace, classes) in list(self.machinery.items()):
            file = getattr(module, "__file__", None)
            out += _entries_changed(name, vars(module), namespace, _dunder, file)
            for key, (cls, entries) in classes.items():
                out += _entries_changed(f"{name}.{key}", vars(cls), entries, _class_noise)
        for name, (module, made, classes) in list(self.properties.items()):
            # only what the module first made: the names it adds as tests run are data
            namespace = vars(module)
            now = {key: namespace[key] for key in made if key in namespace}
            out += _entries_changed(name, now, made, _dunder)
            for key, (cls, entries) in classes.items():
                out += _entries_changed(f"{name}.{key}", vars(cls), entries, _class_noise)
        return out

    def first_value(self, target: str, attribute: str) -> object:
        """``target``'s ``attribute`` as first seen: as a protected module's
        import left it, or a library's as the run began or its import ended;
        :data:`_MISSING` where it was not held then (or ``target`` was not seen).
        (By name: a module put in sys.modules in place of the one first seen
        under that name is judged by what the first one held.)"""
        at = self.names.get(target)
        if at is not None:
            entry = self.protected[at][2].get(attribute)
            return _MISSING if entry is None else entry[0]
        early = self.early.get(target)
        if early is None:
            return _MISSING
        return early[1].get(attribute, _MISSING)

    def library(self, module: ModuleType, reader: str) -> None:
        """Watch ``module`` (and the modules it holds, one level: ``np.testing``),
        unless it is the project's own (a protected one is recorded itself, the
        change's are its to change)."""
        if id(module) in self.looked:
            return  # (every test module binds pytest: its namespace is looked at once)
        self.looked.add(id(module))
        for one in (module, *[v for v in list(vars(module).values()) if isinstance(v, ModuleType)]):
            name = getattr(one, "__name__", None)
            if not isinstance(name, str) or name in self.read or name in _UNWATCHED_LIBRARIES:
                continue
            if self.provenance.in_room(getattr(one, "__file__", None)) is not None:
                continue
            early = self.early.get(name)
            if early is not None and early[0] is one:
                self.read[name] = early
            else:
                self.read[name] = (one, dict(vars(one)), f"{reader} was imported")

    def stop(self) -> None:
        """No library recorded from here on: the session's end line is written.
        Hypothesis's plugin imports its 74 modules only for the terminal summary,
        after that line: recording them was ~18 M instructions of a 500-test run.
        A protected module still is, and every record stays until the session
        is over (:meth:`release`): an end line the code under test wrote early is
        followed by the real one, which compares them all again."""
        self.ended = True

    def release(self) -> None:
        """Every record let go once the session is over and an end line written:
        left alive, they are walked by pytest's two full collections at its end
        (~7 M instructions)."""
        if self.ended:
            rewritten = self.rewritten
            self.__init__(self.provenance)  # type: ignore[misc]  # every field as before
            self.rewritten = rewritten  # (what the end's check looks for, in any session)

    def missing(self) -> set[str]:
        """Test modules pytest collected whose import was not seen ending (a loader
        other than the import system's or pytest's): recorded late, at the end
        of collection."""
        return self.tests - self.seen

    def changed(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for module, name, values in list(self.protected.values()):
            now = vars(module)
            for key, (value, shape) in values.items():
                current = now.get(key, _MISSING)
                if current is _MISSING:
                    out.append((f"{name}.{key}", "removed since its module was imported"))
                elif current is not value and _submodule(current, name, key):
                    continue  # a submodule imported again (a test that reloads one)
                elif current is not value:
                    detail = f"rebound since its module was imported: {_describe(current)}"
                    out.append((f"{name}.{key}", detail))
                elif key == "__builtins__":
                    continue  # by identity: its contents are the builtins' own (below)
                elif _changed(_shape(current, name, [_WALK_BUDGET], _WALK_DEPTH, None), shape):
                    out.append((f"{name}.{key}", "changed in place since its module was imported"))
            for key in [k for k in list(now) if k not in values and not _dunder(k)]:
                if _submodule(now[key], name, key):
                    continue  # the import system binds a package's submodules to it
                detail = f"added since its module was imported: {_describe(now[key])}"
                out.append((f"{name}.{key}", detail))
        for name, (module, first, since) in list(self.read.items()):
            now = vars(module)
            builtins = name == "builtins"
            get = now.get
            for key, value in first.items():
                current = get(key, _MISSING)
                if current is value:
                    continue  # (nearly every name: looked at first)
                if key[:1] == "_" and not (builtins and key in _BUILTIN_HOOKS):
                    continue
                # (a submodule too: ``json.encoder = stand_in`` keeps ``json``)
                watched = _watchable(value) or type(value) is ModuleType
                if watched and f"{name}.{key}" not in _UNWATCHED_NAMES:
                    what = "removed" if current is _MISSING else "rebound"
                    detail = f"{what} since {since}"
                    if current is not _MISSING:
                        detail += f": {_describe(current)}"
                    out.append((f"{name}.{key}", detail))
            for key, (cls, entries) in self.classes.get(name, {}).items():
                out += _behaviour_changed(f"{name}.{key}", vars(cls), entries)
        return out

    def collected(self) -> None:
        """Collection is over: every test module is imported."""
        self.examples_at_collection = _hypothesis_strength()

    def finish(self) -> list[tuple[str, str, str]]:
        """Values protected code reads, changed since first seen; hypothesis made
        weaker; the record of protected imports undone."""
        out: list[tuple[str, str, str]] = []
        for subject, detail in self.changed():
            out.append(("changed-value", subject, detail))
        for subject, detail in self.stand_ins:
            out.append(("rebound", subject, detail))
        for subject, detail in self.bound_by_import:
            out.append(("stand-in", subject, detail))
        for subject, detail in self.machinery_changed():
            out.append(("machinery", subject, detail))
        for subject, detail in self.code_replaced():
            out.append(("code-replaced", subject, detail))
        for name, now, was in self.weakened:
            detail = f"{_strength_change(was, now)} while {name} was imported"
            out.append(("changed-value", "hypothesis.settings.default", detail))
        at_collection = self.examples_at_collection
        at_end = _hypothesis_strength()
        if at_collection is not None and at_end is not None and _weaker(at_end, at_collection):
            detail = f"{_strength_change(at_collection, at_end)} while the tests ran"
            out.append(("changed-value", "hypothesis.settings.default", detail))
        wrapped = self.rewritten.get("exec_module")
        if wrapped is not None:
            rewrite = sys.modules.get("_pytest.assertion.rewrite")
            hook = getattr(rewrite, "AssertionRewritingHook", None)
            if not isinstance(hook, type) or vars(hook).get("exec_module") is not wrapped:
                label = "_pytest.assertion.rewrite.AssertionRewritingHook.exec_module"
                out.append(("patched", label, "the record of protected imports undone"))
        return out
