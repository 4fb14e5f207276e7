"""`.deepflow/auto-memory.yaml` on disk: the edge around `gtd.auto.memory`.

People read and edit this file, so writes go through ruamel.yaml round-trip: their
comments, key order, quoting and extra keys survive, and only entries whose values
changed are touched. Reads on the hot path (`cycle begin`, once a minute) use PyYAML's
C loader instead, which is much cheaper to import and run; it hands over to ruamel
whenever the two parsers could disagree (YAML 1.1 vs 1.2 scalars, duplicate keys) or
the file is invalid, so both paths always yield the same Memory and every error
carries ruamel's line number.

A corrupt file is an InputError, never silently replaced: it holds the only record
of what the loop already tried.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

from gtd.auto.memory import (
    CYCLE_STATUSES,
    CycleRecord,
    Halt,
    Memory,
    ProbeLearning,
    Revert,
    TaskResult,
)
from gtd.errors import InputError
from gtd.fsio import atomic_write, read_text

LABEL = ".deepflow/auto-memory.yaml"
HINT = "fix or move the file aside; gtd never resets it silently"
HEADER = (
    "gtd auto mode memory: deepflow's auto-memory.yaml keys plus a `cycles` log.\n"
    "Written after every cycle; hand edits (and comments) are kept."
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


class _Invalid(Exception):
    def __init__(self, path: _Path, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


class _Fallback(Exception):
    """The fast parser met something only ruamel can judge the same way `load` does."""


# ---------------------------------------------------------------------------
# Converting parsed YAML (plain or ruamel containers) into a Memory.


def _dotted(path: _Path) -> str:
    return "".join(
        f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(path)
    )


def _kind(value: object) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    import datetime as dt  # here, not at import: `cycle begin` reads memory from the cache

    if isinstance(value, (dt.date, dt.datetime)):
        return "a date"
    return type(value).__name__


def _text(value: object, path: _Path, *, timestamp: bool = False) -> str:
    if isinstance(value, str):
        return str(value)  # drop ruamel's quoting subclass: the model holds plain str
    if isinstance(value, int) and not isinstance(value, bool):
        # An unquoted all-digit short hash (deepflow writes them bare) parses as an
        # int; ruamel remembers the width, so leading zeros come back too.
        digits = str(int(value))
        width = getattr(value, "_width", None)
        if isinstance(width, int) and value >= 0:
            digits = digits.zfill(width)
        return digits
    import datetime as dt  # only a non-string value gets this far

    if timestamp and isinstance(value, dt.datetime):
        offset = value.utcoffset()
        if offset is not None and not offset:
            return value.strftime("%Y-%m-%dT%H:%M:%SZ")
        return dt.datetime.isoformat(value)
    raise _Invalid(path, f"`{_dotted(path)}` must be a string, not {_kind(value)}")


def _int(value: object, path: _Path, *, minimum: int = 0) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
        return int(value)
    want = "a positive integer" if minimum > 0 else "a non-negative integer"
    shown = f" ({value!r})" if isinstance(value, (int, float, str)) else ""
    raise _Invalid(path, f"`{_dotted(path)}` must be {want}, not {_kind(value)}{shown}")


def _bool(value: object, path: _Path) -> bool:
    if isinstance(value, bool):
        return value
    raise _Invalid(path, f"`{_dotted(path)}` must be true or false, not {_kind(value)}")


def _mapping(value: object, path: _Path, what: str) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    raise _Invalid(path, f"`{_dotted(path)}` must be a mapping of {what}, not {_kind(value)}")


def _items(value: object, path: _Path) -> Iterator[tuple[_Path, Mapping[Any, Any]]]:
    if value is None:
        return
    if not isinstance(value, list):
        raise _Invalid(path, f"`{_dotted(path)}` must be a list, not {_kind(value)}")
    for index, item in enumerate(value):
        where = (*path, index)
        if not isinstance(item, Mapping):
            raise _Invalid(where, f"`{_dotted(where)}` must be a mapping, not {_kind(item)}")
        yield where, item


class _Fields:
    """Typed access to one entry's fields, with errors pointing at the entry."""

    def __init__(self, entry: Mapping[Any, Any], path: _Path) -> None:
        self.entry = entry
        self.path = path

    def _get(self, key: str, required: bool) -> object:
        value = self.entry.get(key)
        if value is None and required:
            raise _Invalid(self.path, f"`{_dotted(self.path)}` lacks `{key}`")
        return value

    def text(self, key: str, *, timestamp: bool = False) -> str:
        return _text(self._get(key, True), (*self.path, key), timestamp=timestamp)

    def opt_text(self, key: str, default: str | None = None) -> str | None:
        value = self._get(key, False)
        return default if value is None else _text(value, (*self.path, key))

    def integer(self, key: str, *, minimum: int = 0) -> int:
        return _int(self._get(key, True), (*self.path, key), minimum=minimum)

    def opt_integer(self, key: str) -> int | None:
        value = self._get(key, False)
        return None if value is None else _int(value, (*self.path, key))

    def opt_bool(self, key: str) -> bool | None:
        value = self._get(key, False)
        return None if value is None else _bool(value, (*self.path, key))


def _task_results(raw: object) -> dict[str, TaskResult]:
    results: dict[str, TaskResult] = {}
    for task, entry in _mapping(raw, ("task_results",), "task id → result").items():
        path: _Path = ("task_results", _text(task, ("task_results",)))
        if not isinstance(entry, Mapping):
            raise _Invalid(path, f"`{_dotted(path)}` must be a mapping, not {_kind(entry)}")
        f = _Fields(entry, path)
        results[str(path[1])] = TaskResult(
            status=f.text("status"),
            cycle=f.opt_integer("cycle"),
            commit=f.opt_text("commit"),
            reason=f.opt_text("reason"),
        )
    return results


def _counters(raw: object) -> dict[str, int]:
    counters: dict[str, int] = {}
    for task, count in _mapping(raw, ("consecutive_reverts",), "task id → count").items():
        key = _text(task, ("consecutive_reverts",))
        counters[key] = _int(count, ("consecutive_reverts", key))
    return counters


def _cycles(raw: object) -> tuple[CycleRecord, ...]:
    records: list[CycleRecord] = []
    seen: set[int] = set()
    for path, entry in _items(raw, ("cycles",)):
        f = _Fields(entry, path)
        number = f.integer("cycle", minimum=1)
        if number in seen:
            raise _Invalid((*path, "cycle"), f"cycle {number} is logged twice")
        seen.add(number)
        status = f.text("status")
        if status not in CYCLE_STATUSES:
            raise _Invalid(
                (*path, "status"),
                f"`{_dotted((*path, 'status'))}` must be one of {', '.join(CYCLE_STATUSES)},"
                f" not {status!r}",
            )
        records.append(
            CycleRecord(
                cycle=number,
                task=f.text("task"),
                title=f.opt_text("title", "") or "",
                status=status,
                commit=f.opt_text("commit"),
                reason=f.opt_text("reason"),
                at=f.text("at", timestamp=True),
                tests_passed=f.opt_integer("tests_passed"),
                tests_total=f.opt_integer("tests_total"),
                build_ok=f.opt_bool("build_ok"),
                spike=bool(f.opt_bool("spike")),
                learning=f.opt_text("learning"),
            )
        )
    return tuple(records)


def _to_memory(data: object) -> Memory:
    if data is None:
        return Memory()
    if not isinstance(data, Mapping):
        raise _Invalid((), f"the file must hold a mapping of sections, not {_kind(data)}")
    reverts = []
    for path, entry in _items(data.get("revert_history"), ("revert_history",)):
        f = _Fields(entry, path)
        reverts.append(Revert(f.text("task"), f.integer("cycle"), f.opt_text("reason", "") or ""))
    learned = []
    for path, entry in _items(data.get("probe_learnings"), ("probe_learnings",)):
        f = _Fields(entry, path)
        learned.append(
            ProbeLearning(f.text("spike"), f.opt_text("probe", "") or "", f.text("insight"))
        )
    halts = []
    for path, entry in _items(data.get("halts"), ("halts",)):
        f = _Fields(entry, path)
        halts.append(
            Halt(
                cycle=f.integer("cycle"),
                task=f.text("task"),
                failures=f.integer("count"),
                reason=f.opt_text("reason", "") or "",
                at=f.text("at", timestamp=True),
            )
        )
    return Memory(
        task_results=_task_results(data.get("task_results")),
        revert_history=tuple(reverts),
        consecutive_reverts=_counters(data.get("consecutive_reverts")),
        probe_learnings=tuple(learned),
        cycles=_cycles(data.get("cycles")),
        halts=tuple(halts),
    )


# ---------------------------------------------------------------------------
# Reading.


def _label(path: Path) -> str:
    # Errors name the file the way the user knows it, not by a long absolute path.
    if path.name == "auto-memory.yaml" and path.parent.name == ".deepflow":
        return LABEL
    return str(path)


def _read(path: Path) -> str | None:
    try:
        return read_text(path)
    except UnicodeDecodeError as exc:
        raise InputError(_label(path), f"not UTF-8 text ({exc.reason})", hint=HINT) from exc


@functools.cache
def _constructor() -> Any:
    from ruamel.yaml.constructor import RoundTripConstructor

    class Constructor(RoundTripConstructor):
        """No field is a float, but a bare short hash like `1234e56` is one to YAML
        1.2 (not to PyYAML's 1.1); keep such scalars as the text they are."""

    def float_as_text(constructor: Any, node: Any) -> Any:
        return constructor.construct_scalar(node)

    # add_constructor copies the table into the subclass: ruamel's stays untouched.
    Constructor.add_constructor("tag:yaml.org,2002:float", float_as_text)
    return Constructor


def _ruamel() -> Any:
    from ruamel.yaml import YAML  # lazy: ruamel costs tens of ms to import

    yaml = YAML(typ="rt")
    yaml.Constructor = _constructor()
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
        mem = _to_memory(root)
    except _Invalid as exc:
        raise InputError(_label(path), exc.message, _locate(root, exc.path), HINT) from exc
    preamble = text if root is None and text.strip() else ""
    return mem, Doc(root, preamble)


_INT = "tag:yaml.org,2002:int"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_STR = "tag:yaml.org,2002:str"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_BOOLS = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
# What ruamel's YAML 1.2 resolver reads as a number but PyYAML's 1.1 one may keep as
# a string (1e5, 0o17, .5e3 ...). Deliberately loose: a false hit only costs speed.
_NUMBER_12 = re.compile(
    r"[-+]?(?:0b[01_]+|0o?[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
    r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?|\.(?:inf|Inf|INF))|\.(?:nan|NaN|NAN)"
)

_NUMBER_START = frozenset("+-.0123456789")


def _ambiguous(tag: str, value: str) -> bool:
    """Could this plain scalar mean something else to ruamel (YAML 1.2) than to
    PyYAML (YAML 1.1)? Octal `0123`, `yes`/`no`, `1_000`, `1e5`, floats ..."""
    if tag == _INT:
        return not _PLAIN_INT.fullmatch(value)
    if tag == _BOOL:
        return value not in _BOOLS
    if tag == _NULL:
        return value not in _NULLS
    if tag == _STR:
        # Cheap first-character test before the regex: this runs for every scalar.
        return value[:1] in _NUMBER_START and bool(_NUMBER_12.fullmatch(value))
    return tag != _TIMESTAMP  # floats, merge keys, ...: no field wants them anyway


@functools.cache
def _fast_loader() -> Any:
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class FastLoader(base):  # type: ignore[misc]
        def construct_scalar(self, node: Any) -> Any:
            # A plain scalar has style None from the Python parser, '' from the C one.
            if not node.style and _ambiguous(node.tag, node.value):
                raise _Fallback
            return super().construct_scalar(node)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            # PyYAML keeps the last of duplicate keys; ruamel (and `load`) rejects them.
            keys = [key.value for key, _ in node.value if isinstance(key, yaml.ScalarNode)]
            if len(keys) != len(set(keys)):
                raise _Fallback
            return super().construct_mapping(node, deep=deep)

    return FastLoader


def load_fast(path: PathLike, root: Path | None = None) -> Memory:
    """Same Memory as `load(path)[0]`, for read-only callers on the hot path. With
    the repository ``root``, a parse of the same bytes is reused (gtd.auto.cache)."""
    path = Path(path)
    text = _read(path)
    if text is None:
        return Memory()
    if root is None:
        return _parse_fast(path, text)
    from gtd.auto import cache

    data = text.encode("utf-8")
    return _to_memory(cache.through(root, "memory", data, lambda: plain(_parse_fast(path, text))))


def plain(mem: Memory) -> dict[str, Any]:
    """``mem`` as JSON-safe data in the file's own shape: `_to_memory(plain(m)) == m`."""
    lists = ("revert_history", "probe_learnings", "cycles", "halts")
    return {
        "task_results": {
            task: {k: v for k, v in _result_fields(res) if v is not None}
            for task, res in mem.task_results.items()
        },
        "consecutive_reverts": dict(mem.consecutive_reverts),
        **{
            name: [{k: v for k, v in fields if v is not None} for fields in _list_fields(name, mem)]
            for name in lists
        },
    }


def _parse_fast(path: Path, text: str) -> Memory:
    import yaml

    try:
        return _to_memory(yaml.load(text, Loader=_fast_loader()))  # a SafeLoader subclass
    except (_Fallback, _Invalid, yaml.YAMLError):
        # Rare (a hand edit, a bad file): let ruamel decide, with its line numbers.
        return load(path)[0]


# ---------------------------------------------------------------------------
# Writing.

_TOP_KEYS = (
    "task_results",
    "revert_history",
    "consecutive_reverts",
    "probe_learnings",
    "cycles",
    "halts",
)
# Free-text fields are always double-quoted, as deepflow writes `reason: "..."`.
_PROSE = frozenset({"reason", "title", "probe", "insight", "learning", "at"})
_Scalar = str | int | bool | None


def _needs_quotes(text: str) -> bool:
    """Would a bare `text` read back as something other than this string, by either
    parser? ruamel quotes what *it* would misread; PyYAML's 1.1 rules are ours to
    cover (`yes`, `0123`, `1_0`), and 1.2 numbers are quoted too so our own output
    never sends `load_fast` down the slow path."""
    import yaml

    resolver: Any = yaml.resolver.Resolver()
    tag = resolver.resolve(yaml.ScalarNode, text, (True, False))
    return tag != _STR or bool(_NUMBER_12.fullmatch(text))


def _out(key: str, value: _Scalar) -> Any:
    if isinstance(value, str):
        from ruamel.yaml.scalarstring import DoubleQuotedScalarString

        if key in _PROSE or _needs_quotes(value):
            return DoubleQuotedScalarString(value)
    return value


def _same(raw: object, value: _Scalar, key: str) -> bool:
    """Does the value already in the file mean `value`? Then leave the node alone, so
    a human's formatting of untouched entries survives."""
    if value is None:
        return raw is None
    if isinstance(value, bool) or isinstance(raw, bool):
        return raw is value
    if isinstance(value, int):
        return isinstance(raw, int) and int(raw) == value
    try:
        return _text(raw, (key,), timestamp=True) == value
    except _Invalid:
        return False


def _flow(fields: Iterable[tuple[str, _Scalar]]) -> Any:
    from ruamel.yaml.comments import CommentedMap

    entry = CommentedMap((key, _out(key, value)) for key, value in fields if value is not None)
    entry.fa.set_flow_style()  # deepflow's `T1: { status: success, ... }`, one per line
    return entry


def _sync_entry(
    container: Any, key: Step, fields: list[tuple[str, _Scalar]], managed: Iterable[str]
) -> None:
    """Make container[key] say `fields`, touching only what differs. Keys we do not
    manage (a human's `note:`) are kept; managed keys absent from `fields` go."""
    current = container[key] if _has(container, key) else None
    if not isinstance(current, Mapping):
        if _has(container, key):
            container[key] = _flow(fields)
        else:
            container.append(_flow(fields))
        return
    wanted = dict(fields)
    for name in managed:
        value = wanted.get(name)
        if value is None:
            if name in current:
                del current[name]  # type: ignore[attr-defined]
        elif not _same(current.get(name), value, name):
            current[name] = _out(name, value)  # type: ignore[index]


def _has(container: Any, key: Step) -> bool:
    if isinstance(key, int):
        return key < len(container)
    return key in container


def _result_fields(res: TaskResult) -> list[tuple[str, _Scalar]]:
    return [
        ("status", res.status),
        ("commit", res.commit),
        ("reason", res.reason),
        ("cycle", res.cycle),
    ]


def _record_fields(rec: CycleRecord) -> list[tuple[str, _Scalar]]:
    return [
        ("cycle", rec.cycle),
        ("task", rec.task),
        ("title", rec.title or None),
        ("status", rec.status),
        ("commit", rec.commit),
        ("reason", rec.reason),
        ("at", rec.at),
        ("tests_passed", rec.tests_passed),
        ("tests_total", rec.tests_total),
        ("build_ok", rec.build_ok),
        ("spike", True if rec.spike else None),
        ("learning", rec.learning),
    ]


def _list_fields(name: str, mem: Memory) -> list[list[tuple[str, _Scalar]]]:
    if name == "revert_history":
        return [
            [("task", r.task), ("cycle", r.cycle), ("reason", r.reason)] for r in mem.revert_history
        ]
    if name == "probe_learnings":
        return [
            [("spike", p.spike), ("probe", p.probe), ("insight", p.insight)]
            for p in mem.probe_learnings
        ]
    if name == "cycles":
        return [_record_fields(rec) for rec in mem.cycles]
    return [
        [
            ("cycle", h.cycle),
            ("task", h.task),
            ("count", h.failures),
            ("reason", h.reason),
            ("at", h.at),
        ]
        for h in mem.halts
    ]


def _sync_section(root: Any, name: str, mem: Memory) -> None:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    is_map = name in ("task_results", "consecutive_reverts")
    size = len(getattr(mem, name))
    current: Any = root.get(name)
    if size == 0:
        # An empty (or `~`) section stays as the human wrote it; a missing one is
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
    if name == "task_results":
        for task in [k for k in current if str(k) not in mem.task_results]:
            del current[task]
        for task, res in mem.task_results.items():
            key = next((k for k in current if str(k) == task), task)
            fields = _result_fields(res)
            if _has(current, key):
                _sync_entry(current, key, fields, ("status", "commit", "reason", "cycle"))
            else:
                current[key] = _flow(fields)
        return
    entries = _list_fields(name, mem)
    del current[len(entries) :]
    for index, fields in enumerate(entries):
        _sync_entry(current, index, fields, [key for key, _ in fields])


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
    for name in _TOP_KEYS:
        if name == "halts" and not mem.halts and name not in root:
            continue
        if new or name in root or len(getattr(mem, name)):
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
