"""`.deepflow/auto-memory.yaml` on disk: a rendering of the sealed records' fold
(gtd.auto.records), and the one-time import of a file an earlier loop (deepflow,
or gtd before the sealed records) left, at `gtd auto setup`.

People read this file and may annotate it, so it is written through ruamel.yaml
round-trip: their comments, key order, quoting and extra keys survive, and only
entries whose values changed are touched. What the file holds and how each entry
is decoded is gtd.auto.memory_schema's; this module parses, locates lines and
writes.

A corrupt file is an InputError naming file:line, never silently replaced at
import: it holds the only record of what an earlier loop tried.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from gtd import paths, schema
from gtd.auto.memory import Memory
from gtd.auto.memory_schema import (
    KEYED,
    OPTIONAL,
    PROSE,
    SECTIONS,
    WHEN,
    FieldList,
    Scalar,
    decode,
    halt_fields,
    list_fields,
    quarantine_fields,
    result_fields,
    task_cost_fields,
)
from gtd.errors import InputError
from gtd.fsio import atomic_write, read_text

HINT = "fix or move the file aside; gtd never resets it silently"
HEADER = (
    "gtd auto mode memory: deepflow's auto-memory.yaml keys plus gtd's cycle log.\n"
    "Rendered from the sealed records after every cycle; comments are kept."
)

PathLike = str | Path
Step = str | int
_Path = tuple[Step, ...]


class Doc:
    """The round-trip document a Memory was loaded from; opaque outside this module.

    `root` is ruamel's CommentedMap (None: no file yet, or an empty one); `preamble`
    keeps the text of a file that held only comments, which ruamel cannot attach to
    an empty document."""

    __slots__ = ("preamble", "root")

    def __init__(self, root: Any = None, preamble: str = "") -> None:
        self.root = root
        self.preamble = preamble


# ---------------------------------------------------------------------------
# Reading.


def _label(path: Path) -> str:
    # Errors name the file the way the user knows it, not by a long absolute path.
    if path.parts[-2:] == tuple(paths.MEMORY.split("/")):
        return paths.MEMORY
    return str(path)


def _read(path: Path) -> str | None:
    try:
        return read_text(path)
    except UnicodeDecodeError as exc:
        raise InputError(_label(path), f"not UTF-8 text ({exc.reason})", hint=HINT) from exc


class _FloatText(str):
    """A scalar YAML reads as a float, kept as the text it is, and written back
    bare as it was read: a cycle's ``duration_s: 4.795`` stays a number to every
    reader of the file after the next save (as a plain str it came back quoted,
    '4.795', a string to PyYAML)."""

    __slots__ = ()


@functools.cache
def _constructor() -> Any:
    from ruamel.yaml.constructor import RoundTripConstructor

    class Constructor(RoundTripConstructor):
        """No field is a float, but a bare short hash like `1234e56` is one to YAML
        1.2 (not to PyYAML's 1.1); keep such scalars as the text they are."""

    def float_as_text(constructor: Any, node: Any) -> Any:
        return _FloatText(constructor.construct_scalar(node))

    # add_constructor copies the table into the subclass: ruamel's stays untouched.
    Constructor.add_constructor("tag:yaml.org,2002:float", float_as_text)
    return Constructor


@functools.cache
def _representer() -> Any:
    from ruamel.yaml.representer import RoundTripRepresenter

    class Representer(RoundTripRepresenter):
        """Writes a float's text (`_FloatText`) back bare, as it was read."""

    def text_as_float(representer: Any, data: _FloatText) -> Any:
        return representer.represent_scalar("tag:yaml.org,2002:float", str(data))

    Representer.add_representer(_FloatText, text_as_float)
    return Representer


def _ruamel() -> Any:
    from ruamel.yaml import YAML  # lazy: ruamel costs tens of ms to import

    yaml = YAML(typ="rt")
    yaml.Constructor = _constructor()
    yaml.Representer = _representer()
    yaml.preserve_quotes = True  # a human's (and deepflow's) "quoted" strings stay quoted
    yaml.width = 4096  # one entry per line, as deepflow writes them; never re-wrap
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _locate(root: Any, path: _Path) -> int:
    """1-based line of the deepest part of `path` that exists in the ruamel tree."""
    line = int(getattr(getattr(root, "lc", None), "line", 0) or 0) + 1
    node = root
    for step in path:
        try:
            if isinstance(node, Mapping):
                pos = cast(Any, node).lc.key(step)
            elif isinstance(node, list):
                pos = cast(Any, node).lc.item(step)
            else:
                break
            node = node[step]
        except (KeyError, IndexError, AttributeError, TypeError):
            # A key given as an int in the file but named by its text in the path.
            found = next(
                (k for k in node if isinstance(node, Mapping) and str(k) == str(step)), None
            )
            if found is None:
                break
            pos = node.lc.key(found)
            node = node[found]
        line = int(pos[0]) + 1
    return line


def load(path: PathLike) -> tuple[Memory, Doc]:
    """Parse with ruamel round-trip: the Memory plus the Doc to hand back to `save`.
    Missing file → empty memory (the file appears on the first save)."""
    path = Path(path)
    text = _read(path)
    if text is None:
        return Memory(), Doc()
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        root = _ruamel().load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        parts = (str(part) for part in (exc.context, exc.problem) if part)
        problem = " ".join(": ".join(parts).split()) or "invalid"
        raise InputError(_label(path), f"YAML syntax error: {problem}", line, HINT) from exc
    except YAMLError as exc:
        raise InputError(_label(path), f"YAML error: {exc}", hint=HINT) from exc
    except ValueError as exc:  # a number too long for Python to convert (> 4,300 digits)
        raise InputError(
            _label(path), "a value cannot be read (a number too long?)", hint=HINT
        ) from exc
    try:
        mem = decode(root)
    except schema.Invalid as exc:
        line = _locate(root, exc.path)
        raise InputError(_label(path), exc.message(quoted=True), line, HINT) from exc
    preamble = text if root is None and text.strip() else ""
    return mem, Doc(root, preamble)


# What a YAML 1.2 reader reads as a number, which a bare string must not look like.
_NUMBER_12 = re.compile(
    r"[-+]?(?:0b[01_]+|0o?[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
    r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?|\.(?:inf|Inf|INF))|\.(?:nan|NaN|NAN)"
)


# ---------------------------------------------------------------------------
# Writing.


def _needs_quotes(text: str) -> bool:
    """Would a bare `text` read back as something other than this string, by a YAML
    1.1 or 1.2 reader? ruamel quotes what *it* would misread; PyYAML's 1.1 rules
    (`yes`, `0123`, `1_0`) and 1.2 numbers are ours to cover, so deepflow and any
    other reader see the same text."""
    typed = _yaml11().get(text[:1], ())
    return any(p.match(text) for p in typed) or bool(_NUMBER_12.fullmatch(text))


# YAML 1.1's implicit types as PyYAML resolves a plain scalar (bool, float, int,
# merge, null, timestamp, value, and the reserved !&*), each with the characters
# that can start it: PyYAML tries only a string's first character's (an empty
# string: null's). Here rather than PyYAML's resolver, whose import (~10 ms)
# every `cycle end` paid to write the memory file; the unit tests hold the two
# to the same answers.
_YAML11_TYPES = (
    ("yYnNtTfFoO", r"yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"),
    (
        "-+0123456789.",
        r"[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
        r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
    ),
    (
        "-+0123456789",
        r"[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
        r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
    ),
    ("<", r"<<"),
    ("~nN", r"~|null|Null|NULL|"),
    (
        "0123456789",
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)"
        r"[0-9][0-9]?:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9]{2})?))?",
    ),
    ("=", r"="),
    ("!&*", r"!|&|\*"),
)


@functools.cache
def _yaml11() -> dict[str, tuple[re.Pattern[str], ...]]:
    """First character → the types a plain scalar starting with it may be
    (compiled once, when a string is first written)."""
    table: dict[str, list[re.Pattern[str]]] = {"": [re.compile(r"^(?:~|null|Null|NULL|)$")]}
    for firsts, pattern in _YAML11_TYPES:
        compiled = re.compile(f"^(?:{pattern})$")
        for first in firsts:
            table.setdefault(first, []).append(compiled)
    return {first: tuple(types) for first, types in table.items()}


def _out(key: str, value: Scalar) -> Any:
    if isinstance(value, list):
        from ruamel.yaml.comments import CommentedSeq

        seq = CommentedSeq(_out(key, item) for item in value)
        seq.fa.set_flow_style()
        return seq
    if isinstance(value, str):
        from ruamel.yaml.scalarstring import DoubleQuotedScalarString

        if key in PROSE or _needs_quotes(value):
            return DoubleQuotedScalarString(value)
    return value


def _same(raw: object, value: Scalar, key: str) -> bool:
    """Does the value already in the file mean `value`? Then leave the node alone, so
    a person's formatting of untouched entries survives."""
    if value is None:
        return raw is None
    if isinstance(value, bool) or isinstance(raw, bool):
        return raw is value
    if isinstance(value, list):
        return isinstance(raw, list) and [str(item) for item in raw] == value
    if isinstance(value, float):
        try:
            return float(raw) == value  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False
    if isinstance(value, int):
        return isinstance(raw, int) and int(raw) == value
    try:
        return bool(WHEN.check(raw, (key,)) == value)
    except schema.Invalid:
        return False


def _flow(fields: Iterable[tuple[str, Scalar]]) -> Any:
    from ruamel.yaml.comments import CommentedMap

    entry = CommentedMap((key, _out(key, value)) for key, value in fields if value is not None)
    entry.fa.set_flow_style()  # deepflow's `T1: { status: success, ... }`, one per line
    return entry


def _sync_entry(container: Any, key: Step, fields: FieldList) -> None:
    """Make container[key] say `fields`, touching only what differs. Keys gtd does
    not write (a person's `note:`) are kept; gtd's keys absent from `fields` go."""
    current = container[key] if _has(container, key) else None
    if not isinstance(current, Mapping):
        if _has(container, key) or not isinstance(key, int):
            container[key] = _flow(fields)
        else:
            container.append(_flow(fields))
        return
    for name, value in fields:
        if value is None:
            if name in current:
                del current[name]  # type: ignore[attr-defined]
        elif not _same(current.get(name), value, name):
            current[name] = _out(name, value)  # type: ignore[index]


def _has(container: Any, key: Step) -> bool:
    if isinstance(key, int):
        return key < len(container)
    return key in container


def _size(mem: Memory, name: str) -> int:
    if name == "task_costs":  # derived from the cycles (memory_schema.task_cost_fields)
        return len(task_cost_fields(mem))
    part = getattr(mem, name)
    return (part is not None) if name == "stop" else len(part)


def _keyed_fields(name: str, mem: Memory) -> dict[str, FieldList]:
    if name == "task_results":
        return {task: result_fields(res) for task, res in mem.task_results.items()}
    if name == "task_costs":
        return task_cost_fields(mem)
    return {test: quarantine_fields(q) for test, q in mem.quarantined.items()}


def _sync_section(root: Any, name: str, mem: Memory) -> None:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    current: Any = root.get(name)
    if name == "stop":
        if mem.stop is None:
            root.pop(name, None)
        else:
            _sync_entry(root, name, halt_fields(mem.stop))
        return
    is_map = name in KEYED
    if _size(mem, name) == 0:
        # An empty (or `~`) section stays as the person wrote it; a missing one is
        # added only to a new file (render decides), so the schema is visible there.
        if name not in root or current:
            root[name] = CommentedMap() if is_map else CommentedSeq()
        return
    if not isinstance(current, CommentedMap if is_map else CommentedSeq):
        current = CommentedMap() if is_map else CommentedSeq()
        root[name] = current
    current.fa.set_block_style()  # `task_results: {}` grew entries: one per line now

    if name == "consecutive_reverts":
        for task in [k for k in current if str(k) not in mem.consecutive_reverts]:
            del current[task]
        for task, count in mem.consecutive_reverts.items():
            key = next((k for k in current if str(k) == task), task)
            if not _same(current.get(key), count, task):
                current[key] = count
        return
    if is_map:
        wanted = _keyed_fields(name, mem)
        for task in [k for k in current if str(k) not in wanted]:
            del current[task]
        for task, fields in wanted.items():
            _sync_entry(current, next((k for k in current if str(k) == task), task), fields)
        return
    entries = list_fields(name, mem)
    del current[len(entries) :]
    for index, fields in enumerate(entries):
        _sync_entry(current, index, fields)


def render(mem: Memory, doc: Doc) -> str:
    """The file text for `mem`, merged into `doc` (which is updated in place)."""
    import io

    from ruamel.yaml.comments import CommentedMap

    new = doc.root is None
    if new:
        doc.root = CommentedMap()
        if not doc.preamble:
            doc.root.yaml_set_start_comment(HEADER)
    root = doc.root
    for name in SECTIONS:
        if name in OPTIONAL and not _size(mem, name) and name not in root:
            continue
        if new or name in root or _size(mem, name):
            _sync_section(root, name, mem)
    out = io.StringIO()
    _ruamel().dump(root, out)
    text = out.getvalue()
    if doc.preamble:
        text = doc.preamble.rstrip("\n") + "\n" + text
        doc.preamble = ""
    return text


def save(path: PathLike, mem: Memory, doc: Doc) -> None:
    """Write `mem` atomically, preserving everything in `doc` that `mem` does not own.
    The caller holds the state lock between its `load` and this `save`."""
    atomic_write(Path(path), render(mem, doc))


def update(path: PathLike, change: Callable[[Memory], Memory]) -> Memory:
    """load → change → save (only if something changed). Returns the new Memory."""
    mem, doc = load(path)
    new = change(mem)
    if new != mem:
        save(path, new, doc)
    return new
