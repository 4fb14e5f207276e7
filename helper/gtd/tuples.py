"""``class Point(NamedTuple)``, without typing's work at import.

The helper's values are NamedTuple classes, ~45 of them on the path of one
`gtd ratchet run`. typing.NamedTuple checks every field's annotation when the class
is made, and under ``from __future__ import annotations`` (which every module here
uses) each one is a string it compiles into a ForwardRef: ~220 µs a class, 38 M
instructions and ~9 ms of every run (docs/performance.md), for annotations nothing
reads at run time (the type checker reads the source).

So modules import NamedTuple from here. The type checker sees typing's own; at run
time the class statement makes the class ``collections.namedtuple`` makes (as
typing does; here without namedtuple's ``eval`` of each class's ``__new__``, see
_namedtuple), with the class body's methods, properties, docstring and defaults,
and the annotations kept as written. What typing refuses is refused too: a field without a
default after one with a default, and redefining namedtuple's own attributes.
Generic NamedTuples are not supported (none exist here).
"""

from __future__ import annotations

import sys
from types import CodeType, FunctionType
from typing import TYPE_CHECKING

try:  # CPython's C accessor, what namedtuple itself uses for each field
    from collections import _tuplegetter  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - another interpreter
    from operator import itemgetter

    def _tuplegetter(index: int, doc: str) -> Any:
        return property(itemgetter(index), doc=doc)


__all__ = ["NamedTuple"]

# typing's own lists: what a class body may not define, and what it does not copy.
_PROHIBITED = frozenset(
    {
        "__new__", "__init__", "__slots__", "__getnewargs__", "_fields",
        "_field_defaults", "_make", "_replace", "_asdict", "_source",
    }
)  # fmt: skip
_SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

# collections.namedtuple compiles each class's __new__ from source with eval: ~0.2 M
# instructions a class, ~10 M of a `gtd ratchet run`. The code of a __new__ depends
# only on the number of fields (their names are its local names), so it is compiled
# once per number and renamed for each class; the class is then made as namedtuple
# makes it (collections/__init__.py, Python 3.11), its other methods included.
_NEW_GLOBALS: dict[str, Any] = {"_tuple_new": tuple.__new__, "__builtins__": {}}
_NEW_CODES: dict[int, CodeType] = {}


def _new(typename: str, fields: tuple[str, ...], defaults: tuple[Any, ...] | None) -> Any:
    code = _NEW_CODES.get(len(fields))
    if code is None:
        names = ", ".join(f"_{i}" for i in range(len(fields)))
        listed = names + ("," if len(fields) == 1 else "")
        source = f"lambda _cls{', ' if names else ''}{names}: _tuple_new(_cls, ({listed}))"
        code = _NEW_CODES[len(fields)] = eval(source, _NEW_GLOBALS).__code__
    made = FunctionType(code.replace(co_varnames=("_cls", *fields)), _NEW_GLOBALS, "__new__")
    made.__defaults__ = defaults
    made.__doc__ = f"Create new instance of {typename}({', '.join(fields)})"
    return made


def _namedtuple(typename: str, names: list[str], *, defaults: list[Any], module: str) -> Any:
    """collections.namedtuple(typename, names, defaults=defaults, module=module) for
    names a class statement has already checked (identifiers, none twice)."""
    fields = tuple(map(sys.intern, names))
    count = len(fields)
    field_defaults = dict(zip(fields[count - len(defaults) :], defaults))  # noqa: B905
    repr_fmt = "(" + ", ".join(f"{name}=%r" for name in fields) + ")"
    tuple_new = tuple.__new__

    def _make(cls: Any, iterable: Any) -> Any:
        result = tuple_new(cls, iterable)
        if len(result) != count:
            raise TypeError(f"Expected {count} arguments, got {len(result)}")
        return result

    _make.__doc__ = f"Make a new {typename} object from a sequence or iterable"

    def _replace(self: Any, /, **kwds: Any) -> Any:
        result = self._make(map(kwds.pop, fields, self))
        if kwds:
            raise ValueError(f"Got unexpected field names: {list(kwds)!r}")
        return result

    _replace.__doc__ = f"Return a new {typename} object replacing specified fields with new values"

    def __repr__(self: Any) -> str:
        "Return a nicely formatted representation string"
        return str(self.__class__.__name__ + repr_fmt % self)

    def _asdict(self: Any) -> dict[str, Any]:
        "Return a new dict which maps field names to their values."
        return dict(zip(self._fields, self))  # noqa: B905

    def __getnewargs__(self: Any) -> tuple[Any, ...]:
        "Return self as a plain tuple.  Used by copy and pickle."
        return tuple(self)

    new = _new(typename, fields, tuple(defaults) if defaults else None)
    for method in (new, _make, _replace, __repr__, _asdict, __getnewargs__):
        method.__qualname__ = f"{typename}.{method.__name__}"
    namespace: dict[str, Any] = {
        "__doc__": f"{typename}({', '.join(fields)}{',' if count == 1 else ''})",
        "__slots__": (),
        "_fields": fields,
        "_field_defaults": field_defaults,
        "__new__": new,
        "_make": classmethod(_make),
        "_replace": _replace,
        "__repr__": __repr__,
        "_asdict": _asdict,
        "__getnewargs__": __getnewargs__,
        "__match_args__": fields,
    }
    for index, name in enumerate(fields):
        namespace[name] = _tuplegetter(index, sys.intern(f"Alias for field number {index}"))
    made = type(typename, (tuple,), namespace)
    made.__module__ = module
    return made


class _Maker(type):
    def __new__(cls, typename: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        if bases != (_Base,):
            raise TypeError("a NamedTuple class can only inherit from NamedTuple")
        fields = ns.get("__annotations__", {})
        with_default: list[str] = []
        for name in fields:
            if name in ns:
                with_default.append(name)
            elif with_default:
                raise TypeError(
                    f"Non-default namedtuple field {name} cannot follow default field"
                    f"{'s' if len(with_default) > 1 else ''} {', '.join(with_default)}"
                )
        made = _namedtuple(
            typename,
            list(fields),
            defaults=[ns[name] for name in with_default],
            module=ns["__module__"],
        )
        made.__annotations__ = dict(fields)
        for key, value in ns.items():
            if key in _PROHIBITED:
                raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
            if key not in _SPECIAL and key not in made._fields:
                setattr(made, key, value)
        return made


# Made without _Maker.__new__, which makes the classes that inherit from it.
_Base: Any = type.__new__(_Maker, "NamedTuple", (), {"__module__": __name__})

if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    NamedTuple = _Base
