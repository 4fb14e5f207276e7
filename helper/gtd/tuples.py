"""``class Point(NamedTuple)``, without typing's work at import.

The helper's values are NamedTuple classes, ~45 of them on the path of one
`gtd ratchet run`. typing.NamedTuple checks every field's annotation when the class
is made, and under ``from __future__ import annotations`` (which every module here
uses) each one is a string it compiles into a ForwardRef: ~220 µs a class, 38 M
instructions and ~9 ms of every run (docs/performance.md), for annotations nothing
reads at run time (the type checker reads the source).

So modules import NamedTuple from here. The type checker sees typing's own; at run
time the class statement makes the same ``collections.namedtuple`` that typing
makes, with the class body's methods, properties, docstring and defaults, and the
annotations kept as written. What typing refuses is refused too: a field without a
default after one with a default, and redefining namedtuple's own attributes.
Generic NamedTuples are not supported (none exist here).
"""

from __future__ import annotations

import collections

__all__ = ["NamedTuple"]

# typing's own lists: what a class body may not define, and what it does not copy.
_PROHIBITED = frozenset(
    {
        "__new__", "__init__", "__slots__", "__getnewargs__", "_fields",
        "_field_defaults", "_make", "_replace", "_asdict", "_source",
    }
)  # fmt: skip
_SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})
_namedtuple: Any = collections.namedtuple  # called with computed fields and defaults


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

TYPE_CHECKING = False  # typing's own to the type checker (see gtd.hints)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    NamedTuple = _Base
