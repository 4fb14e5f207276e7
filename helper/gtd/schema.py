"""One way to validate what people write: declarative schemas, and the words for
every mistake.

A schema is a tree of *kinds* (:class:`Integer`, :class:`Number`, :class:`Text`,
:class:`Flag`, :class:`Choice`, :class:`Each`, :class:`Table`, :class:`Fields`).
``kind.check(value, path)`` returns the value as the program wants it, or raises
:class:`Invalid` carrying the path to the offending part and what was wrong. The
caller turns that into its error: it knows the file, and where in it a path lies
(YAML node marks, ruamel's line table), so every message can name file:line.

The words are here and only here. gtd's own files (``.deepflow/config.yaml``,
``.deepflow/auto-memory.yaml``) say ``<path> must be <expected>, not <got>``;
step mode's ``.gtdrc*`` files keep gtd 2.x's wording, which its contract fixes
(``Invalid gtd config: <path>: expected <...>, got <json>``): :func:`gtd2_reason`.

Pure and light: no YAML, no IO (imported on the start-up path).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Choice",
    "Each",
    "Fields",
    "Flag",
    "Integer",
    "Invalid",
    "Kind",
    "Number",
    "Table",
    "Text",
    "describe",
    "dotted",
    "gtd2_reason",
]

Step = str | int
Path = tuple[Step, ...]


class Invalid(Exception):
    """``path`` names the offending part; ``problem`` is one of ``type`` (a value of
    the wrong kind), ``range`` (right kind, out of bounds), ``missing`` (a required
    key), ``unknown`` (a key the schema does not know) and ``rule`` (a check of the
    kind's own, worded in ``detail``). ``reason`` is gtd's wording, without the
    path: the caller prefixes it as its file names keys."""

    def __init__(
        self,
        path: Path,
        problem: str,
        kind: Kind | None = None,
        value: object = None,
        detail: str = "",
        hint: str | None = None,
    ) -> None:
        self.path = path
        self.problem = problem
        self.kind = kind
        self.value = value
        self.detail = detail
        # A rule's problem carries its own hint; a wrong value gets the kind's.
        self.hint = hint if problem == "rule" or kind is None else kind.hint
        super().__init__(self.reason)

    @property
    def reason(self) -> str:
        if self.problem == "missing":
            return f"lacks `{self.path[-1]}`"
        if self.problem == "unknown":
            return "is an unknown key"
        if self.problem == "rule" or self.kind is None:
            return self.detail
        return f"must be {self.kind.expected}, not {describe(self.value)}"

    def message(self, *, quoted: bool = False) -> str:
        """The whole sentence: the path (in backticks when ``quoted``) and the
        reason. A missing key names the entry that lacks it."""
        if self.problem == "unknown":
            return f"unknown key {dotted(self.path)}"
        where = self.path[:-1] if self.problem == "missing" else self.path
        subject = _quote(dotted(where), quoted) if where else "the file"
        return f"{subject} {self.reason}"


def _quote(text: str, quoted: bool) -> str:
    return f"`{text}`" if quoted else text


def dotted(path: Path) -> str:
    """``cycles[2].status``: keys joined by dots, list positions in brackets."""
    return "".join(
        f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(path)
    )


def describe(value: object) -> str:
    """A wrong value as a message shows it: its kind, and the value when short."""
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        if abs(value) >= 10**100:
            return "an integer of more than 100 digits"
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({str(value)!r})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    import datetime as dt  # only an unusual value gets this far

    if isinstance(value, (dt.date, dt.datetime)):
        return "a date"
    return type(value).__name__


class Kind:
    """One kind of value. ``expected`` is the phrase after "must be"; ``hint`` what
    to do about a wrong value, when there is more to say than that."""

    expected = "a value"
    hint: str | None = None

    def check(self, value: object, path: Path) -> Any:
        raise NotImplementedError

    def wrong(self, value: object, path: Path) -> Invalid:
        return Invalid(path, "type", self, value)


class Integer(Kind):
    """An integer (never a boolean) from ``minimum`` to ``maximum``."""

    def __init__(self, minimum: int = 0, maximum: int | None = None) -> None:
        self.minimum = minimum
        self.maximum = maximum
        if maximum is not None:
            self.expected = f"an integer from {minimum} to {maximum}"
        elif minimum == 0:
            self.expected = "a non-negative integer"
        else:
            self.expected = f"an integer ≥ {minimum}"

    def check(self, value: object, path: Path) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.wrong(value, path)
        if value < self.minimum or (self.maximum is not None and value > self.maximum):
            raise Invalid(path, "range", self, value)
        return int(value)


class Number(Kind):
    """A finite number of ``unit`` (seconds), above ``minimum`` (or at it, when
    ``inclusive``) and under ``below``. ``text``: a number written as text is read
    too (a parser that keeps floats as text)."""

    def __init__(
        self,
        minimum: float = 0.0,
        *,
        inclusive: bool,
        below: float = math.inf,
        text: bool = False,
        unit: str = "seconds",
    ) -> None:
        self.minimum = minimum
        self.inclusive = inclusive
        self.below = below
        self.text = text
        sign = "≥" if inclusive else ">"
        self.expected = f"a number of {unit} {sign} {minimum:g}"

    def check(self, value: object, path: Path) -> float:
        if self.text and isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise self.wrong(value, path) from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.wrong(value, path)
        low = value >= self.minimum if self.inclusive else value > self.minimum
        if not low or (value >= self.below and value != math.inf):
            raise Invalid(path, "range", self, value)
        if value == math.inf:
            raise Invalid(path, "rule", self, value, "must be finite")
        return float(value)


class Flag(Kind):
    expected = "true or false"

    def check(self, value: object, path: Path) -> bool:
        if not isinstance(value, bool):
            raise self.wrong(value, path)
        return value


class Text(Kind):
    """A string; ``nonempty``: with something besides blanks. ``convert`` turns an
    accepted non-string value into text (a bare hash YAML read as a number);
    ``rule`` checks the text further, answering (problem, hint) or None; ``clean``
    shapes the accepted text (strips it)."""

    def __init__(
        self,
        expected: str = "a string",
        *,
        nonempty: bool = False,
        convert: Callable[[object], str | None] | None = None,
        rule: Callable[[str], tuple[str, str | None] | None] | None = None,
        hint: str | None = None,
        clean: Callable[[str], str] | None = None,
    ) -> None:
        self.expected = expected
        self.nonempty = nonempty
        self.convert = convert
        self.rule = rule
        self.hint = hint
        self.clean = clean

    def check(self, value: object, path: Path) -> str:
        text = value if isinstance(value, str) else None
        if text is None and self.convert is not None:
            text = self.convert(value)
        if text is None or (self.nonempty and not text.strip()):
            raise self.wrong(value, path)
        text = str(text)  # drop a parser's string subclass (quoting styles)
        if self.rule is not None:
            found = self.rule(text)
            if found is not None:
                raise Invalid(path, "rule", self, value, found[0], found[1])
        return self.clean(text) if self.clean is not None else text


class Choice(Kind):
    """One of a few strings; ``aliases``: an older spelling read as today's (and
    never offered in the message)."""

    def __init__(self, values: Sequence[str], aliases: Mapping[str, str] | None = None) -> None:
        self.values = tuple(values)
        self.aliases = dict(aliases or {})
        self.expected = f"one of {', '.join(self.values)}"

    def check(self, value: object, path: Path) -> str:
        for allowed in self.values:
            if value == allowed:
                return allowed
        if isinstance(value, str) and value in self.aliases:
            return self.aliases[value]
        raise self.wrong(value, path)


class Each(Kind):
    """A list, each item of ``item``; None reads as an empty list."""

    expected = "a list"

    def __init__(self, item: Kind, expected: str = "a list", hint: str | None = None) -> None:
        self.item = item
        self.expected = expected
        self.hint = hint

    def check(self, value: object, path: Path) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.wrong(value, path)
        return [self.item.check(v, (*path, i)) for i, v in enumerate(value)]


class Table(Kind):
    """A mapping of free keys (task ids) to values of ``value``; None reads as
    empty. Keys are read as text (``key``), so a bare ``1:`` is the id "1"."""

    def __init__(self, value: Kind, expected: str, key: Text | None = None) -> None:
        self.value = value
        self.expected = expected
        self.key = key or Text()

    def check(self, value: object, path: Path) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.wrong(value, path)
        out: dict[str, Any] = {}
        for raw, item in value.items():
            name = self.key.check(raw, path)
            out[name] = self.value.check(item, (*path, name))
        return out


class Fields(Kind):
    """A mapping of named fields. ``required`` names the fields that must be there
    (and not null); a null optional field is left out (its default applies).
    ``closed``: any other key is an error; otherwise it is ignored (a person's
    ``note:`` in a file gtd writes). ``null_default``: off, a null field is checked
    like any value (gtd 2.x reads ``"squash": null`` as a mistake); ``nullable``:
    the mapping itself may be null (read as empty)."""

    def __init__(
        self,
        fields: Mapping[str, Kind],
        *,
        required: Sequence[str] = (),
        closed: bool = True,
        expected: str = "a mapping",
        nullable: bool = False,
        null_default: bool = True,
    ) -> None:
        self.fields = dict(fields)
        self.required = frozenset(required)
        self.closed = closed
        self.expected = expected
        self.nullable = nullable
        self.null_default = null_default

    def check(self, value: object, path: Path) -> dict[str, Any]:
        if value is None and self.nullable:
            return {}
        if not isinstance(value, Mapping):
            raise self.wrong(value, path)
        out: dict[str, Any] = {}
        for key in value:
            if key not in self.fields and self.closed:
                raise Invalid((*path, str(key)), "unknown", self, value)
        for name, kind in self.fields.items():
            item = value.get(name)
            if item is None and (self.null_default or name not in value):
                if name in self.required:
                    raise Invalid((*path, name), "missing", self, value)
                continue
            out[name] = kind.check(item, (*path, name))
        return out


# -- gtd 2.x's wording (step mode's config files) -------------------------------------


def gtd2_reason(exc: Invalid) -> str:
    """The reason gtd 2.x gives for ``exc`` (after ``Invalid gtd config: <path>: ``):
    ``expected <kind>, got <json>``, ``must be ≥ <n>, got <n>``, ``unknown key
    (allowed: ...)``."""
    kind, got = exc.kind, json.dumps(exc.value)
    if exc.problem == "unknown" and isinstance(kind, Fields):
        return f"unknown key (allowed: {', '.join(kind.fields)})"
    if exc.problem == "range" and isinstance(kind, Integer):
        return f"must be ≥ {kind.minimum}, got {exc.value}"
    if isinstance(kind, Integer):
        return f"expected an integer, got {got}"
    if isinstance(kind, Flag):
        return f"expected true or false, got {got}"
    if isinstance(kind, Text):
        return f"expected a non-empty string, got {got}"
    if isinstance(kind, Choice):
        return f"expected {' or '.join(json.dumps(v) for v in kind.values)}, got {got}"
    if isinstance(kind, (Fields, Table)):
        return f"expected an object, got {got}"
    return exc.reason
