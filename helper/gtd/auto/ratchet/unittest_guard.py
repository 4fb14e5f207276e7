"""The unittest runner's guards (gtd.auto.ratchet.unittest_report loads this file
by path from beside itself, as it loads the contract). Never imported by gtd.

- :class:`Watch`: unittest's and doctest's machinery, and the runner's own
  classes, recorded before any test module loads and compared by identity at
  the end.
- :class:`RoomFinder`: imports that would load from the live repository load
  from the clean room (the move is in_process.RoomRedirect, which the runner
  loads by path and hands in).

Standard library only, syntax for Python 3.7 and later.
"""

from __future__ import annotations

import sys

# typing for the type checker only: this file runs in the project's own test
# process, whose cost is measured against the bare test command (stdlib, no typing)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# -- the machinery, watched ---------------------------------------------------------------

# What decides a test's outcome and its report. Code under test shares this
# interpreter and can rebind any of it (``TestCase.assertEqual = ...``); each
# change seen at the end is evidence (``machinery``), which the verdict holds
# against the candidate unless the baseline's run showed it too. A tripwire,
# not a wall: the walls are outside the process (docs/threat-model.md).
_WATCHED_CLASSES = (
    ("unittest.case", "TestCase"),
    ("unittest.case", "FunctionTestCase"),
    ("unittest.case", "_Outcome"),
    ("unittest.suite", "TestSuite"),
    ("unittest.suite", "BaseTestSuite"),
    ("unittest.result", "TestResult"),
    ("unittest.runner", "TextTestResult"),
    ("unittest.runner", "TextTestRunner"),
    ("doctest", "DocTestCase"),
    ("doctest", "DocTestRunner"),
    ("doctest", "OutputChecker"),
    ("doctest", "DocTestParser"),
    ("doctest", "Example"),
)
_WATCHED_FUNCTIONS = (("os", "write"), ("json", "dumps"), ("doctest", "DocTestSuite"))


class Watch:
    """Every member of the watched classes (the runner's own too) and the
    watched functions, with the code and defaults of each function, kept by
    reference (an identity check needs the object alive)."""

    def __init__(self, own: tuple[type, ...]) -> None:
        places: list[tuple[str, type]] = []
        for module_name, cls_name in _WATCHED_CLASSES:
            cls = getattr(sys.modules.get(module_name), cls_name, None)
            if isinstance(cls, type):
                places.append((f"{module_name}.{cls_name}", cls))
        places.extend((f"gtd-unittest.{cls.__name__}", cls) for cls in own)
        self.classes = [
            (name, cls, dict(vars(cls)), {a: _code_of(v) for a, v in vars(cls).items()})
            for name, cls in places
        ]
        self.functions: list[tuple[str, object, str, object, tuple[object, ...] | None]] = []
        for module_name, attr in _WATCHED_FUNCTIONS:
            module = sys.modules.get(module_name)
            if module is not None and hasattr(module, attr):
                value = getattr(module, attr)
                self.functions.append(
                    (f"{module_name}.{attr}", module, attr, value, _code_of(value))
                )

    def changed(self) -> list[str]:
        """What was rebound, removed, added (a member added to a class shadows its
        base's) or had its code replaced since."""
        out: list[str] = []
        for name, cls, before, codes in self.classes:
            now = vars(cls)
            for attr in set(before) | set(now):
                value, was = now.get(attr, _GONE), before.get(attr, _GONE)
                if not (behaves(value) or behaves(was)):
                    continue  # data unittest keeps on a test class (tearDown_exceptions)
                if value is not was or not _same(_code_of(value), codes.get(attr)):
                    out.append(f"{name}.{attr}")
        for label, module, attr, was, code in self.functions:
            value = getattr(module, attr, _GONE)
            if value is not was or not _same(_code_of(value), code):
                out.append(label)
        return sorted(out)


_GONE = object()


def behaves(value: object) -> bool:
    """Code, or what finds code: a function, a class, a descriptor."""
    return value is not _GONE and (callable(value) or hasattr(type(value), "__get__"))


def _code_of(value: object) -> tuple[object, ...] | None:
    """A function's code and defaults (each can be replaced in place), or None."""
    function = getattr(value, "__func__", value)
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    return (
        code,
        getattr(function, "__defaults__", None),
        getattr(function, "__kwdefaults__", None),
    )


def _same(a: tuple[object, ...] | None, b: tuple[object, ...] | None) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(a[i] is b[i] for i in range(len(a)))


# -- imports from the live repository load from the room ---------------------------------


class RoomFinder:
    """First on ``sys.meta_path``: a module the other finders would load from
    under the live repository (an editable install: a ``.pth`` path, or
    setuptools' import finder) loads from the same place in the room, where
    the judged tree is: ``redirect`` (in_process.RoomRedirect, the pytest
    plugin's too) moves it."""

    def __init__(self, redirect: Any) -> None:
        self.redirect = redirect
        self.busy: set[str] = set()

    def install(self) -> None:
        self.redirect.rewrite_sys_path()
        sys.meta_path.insert(0, self)  # type: ignore[arg-type]

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        if name in self.busy:
            return None
        self.busy.add(name)
        try:
            finders: list[object] = list(sys.meta_path)
            for finder in finders:
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    return self.redirect.spec(name, spec)
            return None
        finally:
            self.busy.discard(name)
