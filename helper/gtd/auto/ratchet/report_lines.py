"""The lines gtd.auto.ratchet.pytest_report wrote → per-test results, collected
items, sessions and tamper evidence: lines in, a value out (edge only because it
resolves links, docs/layout.md).

The line format is gtd.auto.ratchet.contract's. Lines come from a pipe and a file,
from several pytest processes at once, and from inside the process under test, so
nothing is taken on trust: a line that is not well-formed is counted and skipped;
a test reported more than once keeps its worst outcome (a later "passed" never
hides a failure); lines naming a session that never started are not the plugin's
and are left out; a session that did not end, or whose end line counts other
outcomes than its test lines say, is a problem that makes the report incomplete.

Node ids are relative to pytest's rootdir; they are rewritten relative to the
repository (``tests/test_api.py::test_x``, the ids JUnit reports resolve to), so a
command that runs pytest from a subdirectory names its tests the way people type
them from the root. Files outside the repository keep pytest's own id.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

from gtd.auto.ratchet import contract as C
from gtd.auto.ratchet.model import OUTCOMES, Outcome
from gtd.auto.ratchet.results import (
    ITEM_KINDS,
    Environment,
    Evidence,
    Item,
    ItemKind,
    Plugin,
    Result,
    Session,
    worst,
)
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Any


class Recorded(NamedTuple):
    tests: dict[str, Result]
    items: tuple[Item, ...]
    sessions: tuple[Session, ...]
    evidence: tuple[Evidence, ...]
    problems: tuple[str, ...]


class _Session:
    """One session's lines while they are read."""

    def __init__(self, start: dict[str, Any], base: str) -> None:
        self.start = start
        self.ids = _Ids(os.path.realpath(str(start["root"])), base)
        self.end: dict[str, Any] | None = None
        self.tests: list[tuple[str, Result]] = []  # (pytest's node id, result)
        self.named: list[tuple[str, Result]] = []  # the same, repository-relative
        self.items: list[Item] = []
        self.evidence: list[dict[str, Any]] = []
        self.collecting: str | None = None  # the last module whose collection began


def parse(lines: Iterable[str], repo_root: str, *, selection: bool = False) -> Recorded:
    """``selection``: the run asked for one; a session that did not apply it is a
    problem."""
    reading = Reading(repo_root)
    for line in lines:
        reading.feed(line)
    return reading.result(selection=selection)


class Reading:
    """:func:`parse` a line at a time: the report reader feeds each line as the
    pipe delivers it, while the tests still run, so the verdict does not wait for
    ~550 JSON decodes (a 500-test run) after the tests end. ``repo_root``: what
    test ids are made relative to."""

    def __init__(self, repo_root: str) -> None:
        self.base = os.path.realpath(repo_root)
        self.sessions: dict[str, _Session] = {}
        self.orphans: list[dict[str, Any]] = []
        self.unreadable = 0

    def feed(self, line: str) -> None:
        if self._plain_test(line):
            return
        record = _record(line)
        if record is None:
            self.unreadable += line.strip() != ""
            return
        kind, sid = record[C.KIND], record[C.SESSION]
        if kind == C.START:
            if sid not in self.sessions and isinstance(record.get("root"), str):
                self.sessions[sid] = _Session(record, self.base)
            return
        session = self.sessions.get(sid)
        if session is None:
            self.orphans.append(record)
        elif kind == C.TEST:
            test = _test(record)
            if test is None:
                self.unreadable += 1
            else:
                node_id, result = test
                session.tests.append(test)
                session.named.append((session.ids.test(node_id), session.ids.result(result)))
        elif kind == C.ITEMS:
            session.items.extend(_items(record, session.ids))
            session.collecting = None
        elif kind == C.COLLECTING and isinstance(record.get("file"), str):
            session.collecting = record["file"]
        elif kind == C.EVIDENCE:
            session.evidence.append(record)
        elif kind == C.END and session.end is None:
            session.end = record

    def _plain_test(self, line: str) -> bool:
        """Take ``line`` if it is a plain outcome of a test of a session that
        started (see :data:`_PLAIN_TEST`); False for any other line."""
        plain = _PLAIN_TEST.fullmatch(line)
        if plain is None:
            return False
        sid, node_id, outcome = plain.group(1, 2, 3)
        session = self.sessions.get(sid)
        result = _PLAIN_RESULTS.get(outcome)
        if session is None or result is None:
            return False  # an orphan, or no outcome: as the whole decode says
        session.tests.append((node_id, result))
        session.named.append((session.ids.test(node_id), result))
        return True

    def result(self, *, selection: bool = False) -> Recorded:
        """What the lines fed so far say (reads nothing more; may be asked again)."""
        return _assemble(self.sessions, self.orphans, self.unreadable, selection)


# The line the plugin writes for most tests (gtd.auto.ratchet.plugin.recorder's
# Recorder.template): a plain outcome, with neither location nor reason. It is
# read without decoding the JSON object: that decode and the dict it makes were
# ~20 M instructions of the ~225 M a 500-test `gtd ratchet run` costs the helper
# (docs/performance.md). Only lines json.loads reads the same match: no
# whitespace, no backslash and no control character in the session, outcome or
# phase or id (an id with an escape, a name that is not ASCII say, is not
# plain). Every other line is decoded whole.
_JSON_CHAR = r'[^"\\\x00-\x1f]'
_PLAIN_TEST = re.compile(
    f'\\{{"{C.KIND}":"{C.TEST}","{C.SESSION}":"({_JSON_CHAR}*)",'
    f'"id":"({_JSON_CHAR}*)","o":"([a-z]+)","w":"{_JSON_CHAR}*"\\}}'
)
_PLAIN_RESULTS: dict[str, Result] = {o: Result(o, None, None) for o in OUTCOMES}


def _record(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # nesting past the decoder's depth
        return None
    if (
        isinstance(record, dict)
        and isinstance(record.get(C.KIND), str)
        and isinstance(record.get(C.SESSION), str)
    ):
        return record
    return None


def _test(record: dict[str, Any]) -> tuple[str, Result] | None:
    node_id, outcome = record.get("id"), record.get("o")
    if not isinstance(node_id, str) or outcome not in OUTCOMES:
        return None
    where, reason = record.get("at"), record.get("r")
    return node_id, Result(
        cast(Outcome, outcome),
        where if isinstance(where, str) else None,
        reason if isinstance(reason, str) else None,
    )


def _assemble(
    sessions: dict[str, _Session],
    orphans: list[dict[str, Any]],
    unreadable: int,
    selection: bool,
) -> Recorded:
    tests: list[tuple[str, Result]] = []
    items: dict[str, Item] = {}
    out_sessions: list[Session] = []
    evidence: list[Evidence] = []
    problems: list[str] = []
    for sid, raw in sessions.items():
        ids = raw.ids
        tests.extend(raw.named)
        for item in raw.items:
            if item.node_id not in items or items[item.node_id].deselected:
                items[item.node_id] = item
        for record in raw.evidence:
            evidence.append(
                Evidence(
                    str(record.get("what")), str(record.get("subject")), _str(record, "detail"), sid
                )
            )
        session = _session(sid, raw, ids)
        out_sessions.append(session)
        who = _who(session)
        if not session.ended:
            where = ids.file(raw.collecting) if raw.collecting else None
            problems.append(f"{who} did not finish" + (f" (collecting {where})" if where else ""))
        elif not session.consistent:
            problems.append(f"{who}: its end line disagrees with its test lines")
        if selection and session.selected is not True:
            problems.append(f"{who} did not apply the selection")
    if orphans:
        problems.append(f"{_lines(len(orphans))} from a session that never started")
    if unreadable:
        problems.append(f"{unreadable} unreadable {'line' if unreadable == 1 else 'lines'}")
    return Recorded(
        worst(tests), tuple(items.values()), tuple(out_sessions), tuple(evidence), tuple(problems)
    )


def _lines(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"


def _who(session: Session) -> str:
    worker = f" (xdist {session.worker})" if session.worker else ""
    # (the helper's unittest runner names its sessions so: gtd.auto.ratchet.unittest_report)
    runner = "unittest" if session.id.startswith("unittest-") else "pytest"
    return f"{runner} session {session.id}{worker}"


def _session(sid: str, raw: _Session, ids: _Ids) -> Session:
    start, end = raw.start, raw.end or {}
    counts: dict[str, int] = {}
    for result in worst(raw.tests).values():
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
    claimed = end.get("counts")
    consistent = raw.end is not None and isinstance(claimed, dict) and claimed == counts
    exit_status = end.get("exit")
    selected = start.get("sel")
    return Session(
        id=sid,
        pid=start["pid"] if isinstance(start.get("pid"), int) else 0,
        worker=start.get("worker") if isinstance(start.get("worker"), str) else None,
        rootpath=str(start["root"]),
        inipath=start.get("ini") if isinstance(start.get("ini"), str) else None,
        via=_str(start, "via"),
        selected=selected if isinstance(selected, bool) else None,
        ended=raw.end is not None,
        consistent=consistent,
        exit_status=exit_status if isinstance(exit_status, int) else None,
        conftests=tuple(ids.file(f) for f in _strs(end.get("conftests"))),
        plugins=tuple(_plugins(end.get("plugins"))),
        environment=_environment(end.get("env")),
    )


def _items(record: dict[str, Any], ids: _Ids) -> list[Item]:
    kind = record.get("kind")
    file = record.get("file")
    if kind not in ITEM_KINDS or not isinstance(file, str):
        return []
    rel = ids.file(file)
    deselected = record.get("d") is True
    node_ids = _strs(record.get("ids"))
    digests = record.get("dg")
    if not isinstance(digests, list) or len(digests) != len(node_ids):
        digests = [None] * len(node_ids)
    return [
        Item(
            ids.test(node_id),
            rel,
            cast(ItemKind, kind),
            deselected,
            digest if isinstance(digest, str) else None,
        )
        for node_id, digest in zip(node_ids, digests, strict=True)
    ]


def _plugins(value: object) -> list[Plugin]:
    out: list[Plugin] = []
    for entry in value if isinstance(value, list) else []:
        if isinstance(entry, list) and len(entry) in (4, 5):
            name, file, hooks, late = entry[:4]
            out.append(
                Plugin(
                    str(name),
                    file if isinstance(file, str) else None,
                    tuple(_strs(hooks)),
                    late is True,
                    tuple(_strs(entry[4])) if len(entry) == 5 else (),
                )
            )
    return out


def _environment(value: object) -> Environment | None:
    if not isinstance(value, dict):
        return None
    return Environment(
        executable=_str(value, C.ENV_EXECUTABLE),
        prefix=_str(value, C.ENV_PREFIX),
        base_prefix=_str(value, C.ENV_BASE_PREFIX),
        python=_str(value, C.ENV_VERSION),
        path=tuple(_strs(value.get(C.ENV_PATH))),
        site=tuple(_strs(value.get(C.ENV_SITE))),
        pth=tuple(_strs(value.get(C.ENV_PTH))),
        pytest=_str(value, C.ENV_PYTEST),
        pluggy=_str(value, C.ENV_PLUGGY),
    )


def _str(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    return value if isinstance(value, str) else ""


def _strs(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


class _Ids:
    """Rewrites one session's node ids and paths relative to the repository."""

    def __init__(self, root: str, base: str) -> None:
        self.root = root
        self.base = base
        self._files: dict[str, str | None] = {}  # pytest's file part -> repository's

    def test(self, node_id: str) -> str:
        if self.root == self.base or not node_id:
            return node_id
        file, sep, rest = node_id.partition("::")
        if file not in self._files:
            self._files[file] = self._relative(os.path.join(self.root, file))
        rel = self._files[file]
        return node_id if rel is None else rel + sep + rest

    def file(self, path: str) -> str:
        """A repository-relative path when inside it, else the path as given."""
        rel = self._relative(os.path.join(self.root, path))
        return path if rel is None else rel

    def result(self, result: Result) -> Result:
        if result.where is None:
            return result
        path, sep, line = result.where.rpartition(":")
        if not sep or not line.isdigit():
            return result
        return result._replace(where=f"{self.file(path)}:{line}")

    def _relative(self, path: str) -> str | None:
        rel = os.path.relpath(os.path.realpath(path), self.base)
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            return None
        return rel.replace(os.sep, "/")
