"""The pieces the values watch (values.py) judges with: which libraries and
classes it records, a value's shape (what it holds, walked into plain
containers), entries compared by identity, and how hard hypothesis tries."""

from __future__ import annotations

import sys
from functools import partial
from operator import attrgetter, is_not, itemgetter
from operator import is_ as _is
from types import BuiltinFunctionType, FunctionType, ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest

from .objects import _code_file, _describe, _watchable
from .paths import _abs, _norm
from .terms import MISSING as _MISSING

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

_SCALARS = frozenset({int, float, complex, str, bytes, bool, type(None)})
_WALK_BUDGET = 256  # container elements walked per value; beyond, identity only
_WALK_DEPTH = 4
_EMPTY_CELL = ("empty cell",)
# A class's own entries that are data about the class, not values code reads; and
# the list unittest sets on every TestCase class it runs the class cleanups of.
_CLASS_NOISE = frozenset(
    {"__dict__", "__weakref__", "__doc__", "__module__", "__qualname__", "tearDown_exceptions"}
)
# Libraries whose public callables legitimately change in a session: sys's hooks
# (pytest's own), warnings' (logging.captureWarnings replaces showwarning); and
# the hook pytest's threadexception plugin sets for the session.
_UNWATCHED_LIBRARIES = frozenset({"sys", "warnings"})
_UNWATCHED_NAMES = frozenset({"threading.excepthook"})
_BUILTIN_HOOKS = frozenset({"__import__", "__build_class__"})
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement


def _private(module: str) -> bool:
    return module[:1] == "_" or "._" in module


def _dunder(key: str) -> bool:
    return key[:2] == "__" and key[-2:] == "__"


# The libraries whose functions' code is taken as the run begins (or as their
# import ends): those an assertion helper compares, computes or checks files
# through. Every function of every library (~1,450 at pytest's start, more as
# the run imports others) was ~14 M instructions a run; the assertion
# machinery's are taken with the rest of it.
_KEPT = frozenset(
    {
        "statistics",
        "fractions",
        "decimal",
        "cmath",
        "random",
        "datetime",
        "csv",
        "hashlib",
        "base64",
        "zlib",
        "tempfile",
        "io",
        "os",
        "posixpath",
        "ntpath",
        "genericpath",
        "pathlib",
        "shutil",
        "filecmp",
        "fnmatch",
        "glob",
        "re",
        "json",
        "json.decoder",
        "json.encoder",
        "textwrap",
        "difflib",
        "string",
        "pprint",
        "collections",
        "functools",
        "itertools",
        "operator",
        "math",
        "numbers",
        "copy",
        "inspect",
        "subprocess",
        "pytest",
    }
)

# Of those, the libraries whose classes are recorded too (their own entries and
# their functions' code): the ones whose classes an assertion helper compares or
# checks through (``Fraction(a) == Fraction(b)``, ``Counter``, ``Path.exists``,
# a JSON decoder, a diff). The classes of all of _KEPT were ~9 M instructions a
# run (1,583 entries: inspect's, pytest's, os's...); these ~4 M.
_CLASSES_KEPT = frozenset(
    {
        "fractions",
        "decimal",
        "statistics",
        "numbers",
        "collections",
        "pathlib",
        "json.decoder",
        "json.encoder",
        "difflib",
        "csv",
        "string",
        "textwrap",
        "datetime",
        "filecmp",
    }
)

# What a function does besides its identity: its code, defaults and keyword
# defaults, each compared by identity (``==`` would ask a default's own ``__eq__``).
_is_not = is_not
_function_state = attrgetter("__code__", "__defaults__", "__kwdefaults__")
_is_function = partial(_is, FunctionType)
_second = itemgetter(1)


# The assertion machinery of the libraries a test's verdict goes through, beside
# pytest's own reports (watched by :class:`Identities`): unittest's TestCase and
# its contexts, unittest.mock's call assertions, doctest's checker and runner,
# pytest's approx and raises (their modules by the names of pytest's versions),
# pytest's outcomes (pytest.fail, skip, xfail: instances whose class decides),
# pytest's adapters between a test and its report (the unittest item that
# takes a TestCase's failures, warns' check, the doctest item and the checker
# and runner classes it makes on first use), and the comparisons behind
# numpy's, pandas' and torch's testing functions where a suite loads them. A
# tolerance class attribute widened, a method swapped for another of the
# standard library's, a private function the public one calls replaced: each
# passes a failing assertion, and none rebinds a name a protected module binds.
# Their own entries are compared by identity, data included (approx's default
# tolerances are data), from the run's start or the end of their import (~0.1
# ms a run).
_MACHINERY = frozenset(
    {
        "unittest.case",
        "unittest.mock",
        "doctest",
        "_pytest.approx",
        "_pytest.python_api",
        "_pytest.raises",
        "_pytest.outcomes",
        "_pytest.unittest",
        "_pytest.recwarn",
        "_pytest.doctest",
        "numpy.testing._private.utils",
        "pandas._testing.asserters",
        "torch.testing._comparison",
    }
)


def _entries_changed(
    subject: str,
    now: Any,
    first: dict[str, object],
    ignored: Callable[[str], bool],
    home: object = None,
) -> list[tuple[str, str]]:
    """Entries of ``now`` (a namespace or a class's own) not ``first``'s, by
    identity; ``ignored`` keys aside, and in a module whose file is ``home`` a
    name first None now bound to a class that module's own code made (pytest's
    doctest support makes its checker and runner classes on first use)."""
    out: list[tuple[str, str]] = []
    if len(now) == len(first) and all(map(_is, now.values(), first.values())):
        return out  # (every entry in place and in order: nearly every time)
    for key, value in first.items():
        current = now.get(key, _MISSING)
        if value is None and home is not None and _made_by(current, home):
            continue
        if current is not value and not ignored(key):
            what = "removed" if current is _MISSING else "rebound"
            detail = f"{what} since it was first seen"
            if current is not _MISSING:
                detail += f": {_describe(current)}"
            out.append((f"{subject}.{key}", detail))
    for key in [k for k in list(now) if k not in first and not ignored(k)]:
        out.append((f"{subject}.{key}", f"added since it was first seen: {_describe(now[key])}"))
    return out


if TYPE_CHECKING:  # (a type only: the plugin runs on Python 3.7 too)
    _Strength = tuple[int, frozenset[str]]  # hypothesis: (max_examples, phases)


def _hypothesis_strength() -> _Strength | None:
    """How hard hypothesis's default settings try, where hypothesis is loaded:
    its examples and its phases."""
    module = sys.modules.get("hypothesis._settings")
    if module is None:
        return None
    try:
        current = module.settings.default
        if current is _STRENGTH[0]:  # (asked after every import: settings never change)
            return cast("_Strength", _STRENGTH[1])
        strength = (int(current.max_examples), frozenset(str(p) for p in current.phases))
    except Exception:  # (another hypothesis: what it cannot tell is not judged)
        return None
    _STRENGTH[:] = [current, strength]
    return strength


_STRENGTH: list[object] = [_MISSING, None]  # the settings object last measured, its strength


def _weaker(now: _Strength, was: _Strength) -> bool:
    return now[0] < was[0] or now[1] < was[1]


def _strength_change(was: _Strength, now: _Strength) -> str:
    out = []
    if now[0] != was[0]:
        out.append(f"max_examples {was[0]} -> {now[0]}")
    dropped = sorted(was[1] - now[1])
    if dropped:
        out.append(f"phases without {', '.join(dropped)}")
    return "hypothesis made weaker: " + "; ".join(out)


def _environment_roots() -> tuple[str, ...]:
    prefixes = {sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix)}
    return tuple(sorted(_norm(p) for p in prefixes))


def _behaviour_changed(subject: str, now: Any, first: dict[str, object]) -> list[tuple[str, str]]:
    """A library class's own methods and descriptors (not its data: a library may
    keep caches on its classes) rebound, removed or added since first seen."""
    out: list[tuple[str, str]] = []
    if len(now) == len(first) and all(map(_is, now.values(), first.values())):
        return out  # (nearly every time)
    for key, value in first.items():
        current = now.get(key, _MISSING)
        if current is not value and _watchable(value) and key not in _CLASS_NOISE:
            what = "removed" if current is _MISSING else "rebound"
            detail = f"{what} since it was first seen"
            if current is not _MISSING:
                detail += f": {_describe(current)}"
            out.append((f"{subject}.{key}", detail))
    for key in [k for k in list(now) if k not in first and k not in _CLASS_NOISE]:
        if _watchable(now[key]):
            detail = f"added since it was first seen: {_describe(now[key])}"
            out.append((f"{subject}.{key}", detail))
    return out


def _made_by(value: object, home: object) -> bool:
    """Whether ``value`` is a class whose own functions (one at least) all come
    from the file ``home``."""
    if not isinstance(value, type) or not isinstance(home, str):
        return False
    files = {_code_file(v) for v in list(vars(value).values()) if callable(v)}
    files.discard(None)
    return bool(files) and files == {_abs(home)}


def _class_noise(key: str) -> bool:
    # (and the flags pytest sets on its node classes once it has warned)
    return key in _CLASS_NOISE or key.startswith("_pytest_")


def _property_module(name: str) -> bool:
    """A module of hypothesis (:meth:`Values.property_machine`)."""
    return name[:10] == "hypothesis" and (len(name) == 10 or name[10] == ".")


def _machinery_modules() -> set[str]:
    """:data:`_MACHINERY`, with the modules this pytest's approx and raises are
    defined in (wherever a version moved them)."""
    names = set(_MACHINERY)
    for value in (getattr(pytest, "approx", None), getattr(pytest, "raises", None)):
        where = getattr(value, "__module__", None)
        if isinstance(where, str):
            names.add(where)
    return names


def _stand_in(key: str, value: object) -> bool:
    """A builtin function, or a class of the builtins, bound under a name not its
    own: what a stand-in handed to a test module while it imports looks like
    (``assert_cents`` bound to ``max``, which returns without raising). A test
    module's own alias (``from math import isclose as close``) is the baseline's
    too."""
    if type(value) is BuiltinFunctionType or (
        isinstance(value, type) and value.__module__ == "builtins"
    ):
        return getattr(value, "__name__", key) != key
    return False


def _changed(now: object, before: object) -> bool:
    # (a scalar's shape is the value itself: a NaN is not equal to itself)
    return now is not before and now != before


def _submodule(value: object, package: str, key: str) -> bool:
    return isinstance(value, ModuleType) and value.__name__ == f"{package}.{key}"


def _shape(
    value: object, home: str, budget: list[int], depth: int, keep: list[object] | None
) -> object:
    """What ``value`` holds, as scalars and the ids of the objects it refers to
    (``keep`` holds those alive at the first look), walked into plain containers,
    functions (code, defaults, closure cells), partials, descriptors, classes
    defined in ``home`` and instances of them or ``SimpleNamespace``: equal
    shapes, an unchanged value. Beyond ``depth`` or ``budget``: identity only.
    Called for every value of every protected module twice a run: the common
    kinds (a test function, an imported module or class) return first."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is FunctionType:
        function = cast(FunctionType, value)
        defaults, keywords = function.__defaults__, function.__kwdefaults__
        closure = function.__closure__
        if defaults is None and keywords is None and closure is None:
            return (id(value), id(function.__code__))
    elif kind is ModuleType:
        return id(value)
    if keep is not None:
        keep.append(value)
    if depth <= 0 or budget[0] <= 0:
        return id(value)
    budget[0] -= 1
    depth -= 1
    try:
        if kind is FunctionType:
            cells: list[object] = []
            for cell in closure or ():
                try:
                    cells.append(_shape(cell.cell_contents, home, budget, depth, keep))
                except ValueError:  # a cell not yet filled
                    cells.append(_EMPTY_CELL)
            return (
                id(value),
                id(function.__code__),
                _shape(defaults, home, budget, depth, keep),
                _shape(keywords, home, budget, depth, keep),
                tuple(cells),
            )
        if kind is tuple or kind is list or kind is set or kind is frozenset or kind is dict:
            sized = cast("Collection[object]", value)
            if len(sized) > budget[0]:  # too large to walk: its identity only
                return id(value)
            budget[0] -= len(sized)
            if kind is dict:
                items = list(cast("dict[object, object]", value).items())
                return (
                    id(value),
                    tuple(
                        (
                            _shape(k, home, budget, depth, keep),
                            _shape(v, home, budget, depth, keep),
                        )
                        for k, v in items
                    ),
                )
            parts = [_shape(v, home, budget, depth, keep) for v in list(sized)]
            if kind is set or kind is frozenset:
                return (id(value), frozenset(parts))
            return (id(value), tuple(parts))
        if isinstance(value, type):
            if vars(value).get("__module__") != home:
                return id(value)
            entries = [(k, v) for k, v in list(vars(value).items()) if k not in _CLASS_NOISE]
            return (id(value), tuple((k, _shape(v, home, budget, depth, keep)) for k, v in entries))
        inner: tuple[object, ...] = ()
        if kind is partial:
            made = cast("partial[object]", value)
            inner = (made.func, made.args, made.keywords)
        elif kind is staticmethod or kind is classmethod:
            inner = (cast(Any, value).__func__,)
        elif kind is property:
            held = cast(property, value)
            inner = (held.fget, held.fset, held.fdel)
        elif kind is SimpleNamespace or vars(kind).get("__module__") == home:
            namespace = value.__dict__
            if type(namespace) is dict:
                inner = (namespace,)
            # (its class too: ``obj.__class__ = Other`` changes every method)
            return (id(value), id(kind), *(_shape(v, home, budget, depth, keep) for v in inner))
        if inner:
            return (id(value), *(_shape(v, home, budget, depth, keep) for v in inner))
    except Exception:  # an object that will not be looked into: its identity
        return id(value)
    return id(value)
