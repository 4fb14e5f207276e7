"""The shape of `.deepflow/auto-memory.yaml`: its schema (gtd.schema) and the field
list of each entry, the one description both reading and writing the file use.

Pure: parsed YAML (plain or ruamel containers) in, a :class:`Memory` out, or
:class:`gtd.schema.Invalid` naming the path to the offending part (the file edge,
gtd.auto.memory_file, turns that path into a line).

The four deepflow keys come first (``task_results``, ``revert_history``,
``consecutive_reverts``, ``probe_learnings``), then gtd's: ``cycles`` (the cycle
log), ``halts`` (breaker trips), ``quarantined`` (tests whose failures do not
count), ``refreshes`` (snapshots re-taken after a person's commit) and ``stop``
(a forced halt in force). Keys a person adds to an entry are ignored here and
kept by the writer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gtd import schema
from gtd.auto.memory import (
    CYCLE_STATUSES,
    LEGACY_STATUSES,
    CycleRecord,
    Halt,
    Memory,
    ProbeLearning,
    Quarantine,
    Refresh,
    Revert,
    TaskResult,
)
from gtd.auto.usage import Usage

Scalar = str | int | float | bool | list[str] | None
FieldList = list[tuple[str, Scalar]]

# The sections, in the order the file lists them.
SECTIONS = (
    "task_results",
    "revert_history",
    "consecutive_reverts",
    "probe_learnings",
    "cycles",
    "halts",
    "quarantined",
    "refreshes",
    "stop",
    "task_costs",
)
# Sections keyed by task id or test id (the rest are lists, and `stop` one entry).
KEYED = frozenset({"task_results", "consecutive_reverts", "quarantined", "task_costs"})
# Sections a file shows only once they hold something (deepflow's four and the
# cycle log are always written, so the schema is visible in a new file).
OPTIONAL = frozenset({"halts", "quarantined", "refreshes", "stop", "task_costs"})
# Free-text fields are always double-quoted, as deepflow writes `reason: "..."`.
PROSE = frozenset(
    {"reason", "title", "probe", "insight", "learning", "at", "evidence", "agent_tail", "until"}
)


def _digits(value: object) -> str | None:
    """An unquoted all-digit short hash (deepflow writes them bare) parses as an
    int; ruamel remembers the width, so leading zeros come back too."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    digits = str(int(value))
    width = getattr(value, "_width", None)
    if isinstance(width, int) and value >= 0:
        digits = digits.zfill(width)
    return digits


def _timestamp(value: object) -> str | None:
    import datetime as dt  # only a non-string value gets this far

    if isinstance(value, dt.datetime):
        offset = value.utcoffset()
        if offset is not None and not offset:
            return value.strftime("%Y-%m-%dT%H:%M:%SZ")
        return dt.datetime.isoformat(value)
    return _digits(value)


TEXT = schema.Text(convert=_digits)
WHEN = schema.Text(convert=_timestamp)
COUNT = schema.Integer(0)
NUMBER = schema.Integer(1)
SECONDS = schema.Number(0, inclusive=True, text=True)
FLAG = schema.Flag()

RESULT = schema.Fields(
    {"status": TEXT, "cycle": COUNT, "commit": TEXT, "reason": TEXT},
    required=("status",),
    closed=False,
)
REVERT = schema.Fields(
    {"task": TEXT, "cycle": COUNT, "reason": TEXT}, required=("task", "cycle"), closed=False
)
LEARNING = schema.Fields(
    {"spike": TEXT, "probe": TEXT, "insight": TEXT}, required=("spike", "insight"), closed=False
)
CYCLE = schema.Fields(
    {
        "cycle": NUMBER,
        "task": TEXT,
        "title": TEXT,
        "status": schema.Choice(CYCLE_STATUSES, LEGACY_STATUSES),
        "commit": TEXT,
        "reason": TEXT,
        "at": WHEN,
        "tests_passed": COUNT,
        "tests_total": COUNT,
        "tests_failed": COUNT,
        "tests_skipped": COUNT,
        "build_ok": FLAG,
        "spike": FLAG,
        "learning": TEXT,
        "duration_s": SECONDS,
        "kept": TEXT,
        "agent_exit": schema.Integer(-(2**31)),
        "agent_tail": TEXT,
        "flaky": schema.Each(TEXT),
        "skipped_by_environment": schema.Each(TEXT),
        "your_work": schema.Each(TEXT),
        "until": WHEN,
        "harness": TEXT,
        "new_tests": TEXT,
        "wave": COUNT,
    },
    required=("cycle", "task", "status", "at"),
    closed=False,
)
HALT = schema.Fields(
    {"cycle": COUNT, "task": TEXT, "count": COUNT, "reason": TEXT, "at": WHEN, "forced": FLAG},
    required=("cycle", "task", "count", "at"),
    closed=False,
)
QUARANTINE = schema.Fields(
    {"cycle": COUNT, "at": WHEN, "evidence": TEXT, "by": TEXT},
    required=("cycle", "at"),
    closed=False,
)
REFRESH = schema.Fields(
    {"commit": TEXT, "at": WHEN, "reason": TEXT}, required=("commit", "at"), closed=False
)
FILE = schema.Fields(
    {
        "task_results": schema.Table(RESULT, "a mapping of task id → result", key=TEXT),
        "revert_history": schema.Each(REVERT),
        "consecutive_reverts": schema.Table(COUNT, "a mapping of task id → count", key=TEXT),
        "probe_learnings": schema.Each(LEARNING),
        "cycles": schema.Each(CYCLE),
        "halts": schema.Each(HALT),
        "quarantined": schema.Table(QUARANTINE, "a mapping of test id → entry", key=TEXT),
        "refreshes": schema.Each(REFRESH),
        "stop": schema.Fields(
            HALT.fields, required=tuple(HALT.required), closed=False, nullable=True
        ),
    },
    closed=False,
    expected="a mapping of sections",
)


def decode(data: object) -> Memory:
    """The Memory a parsed file holds (None: an empty file); schema.Invalid if any
    part is malformed."""
    if data is None:
        return Memory()
    found: dict[str, Any] = FILE.check(data, ())
    cycles = [_cycle(entry) for entry in found.get("cycles", [])]
    seen: set[int] = set()
    for index, rec in enumerate(cycles):
        if rec.cycle in seen:
            raise schema.Invalid(
                ("cycles", index, "cycle"),
                "rule",
                detail=f"is {rec.cycle}: cycle {rec.cycle} is logged twice",
            )
        seen.add(rec.cycle)
    stop = found.get("stop")
    return Memory(
        task_results={
            task: TaskResult(e["status"], e.get("cycle"), e.get("commit"), e.get("reason"))
            for task, e in found.get("task_results", {}).items()
        },
        revert_history=(
            Revert(e["task"], e["cycle"], e.get("reason", ""))
            for e in found.get("revert_history", [])
        ),
        consecutive_reverts=found.get("consecutive_reverts", {}),
        probe_learnings=(
            ProbeLearning(e["spike"], e.get("probe", ""), e["insight"])
            for e in found.get("probe_learnings", [])
        ),
        cycles=cycles,
        halts=(_halt(e) for e in found.get("halts", [])),
        quarantined={
            test: Quarantine(test, e["cycle"], e["at"], e.get("evidence", ""), e.get("by", "gtd"))
            for test, e in found.get("quarantined", {}).items()
        },
        refreshes=(
            Refresh(e["commit"], e["at"], e.get("reason", "")) for e in found.get("refreshes", [])
        ),
        stop=_halt(stop) if stop else None,
    )


def _cycle(e: Mapping[str, Any]) -> CycleRecord:
    return CycleRecord(
        cycle=e["cycle"],
        task=e["task"],
        title=e.get("title", ""),
        status=e["status"],
        commit=e.get("commit"),
        reason=e.get("reason"),
        at=e["at"],
        tests_passed=e.get("tests_passed"),
        tests_total=e.get("tests_total"),
        build_ok=e.get("build_ok"),
        spike=e.get("spike", False),
        learning=e.get("learning"),
        tests_failed=e.get("tests_failed"),
        tests_skipped=e.get("tests_skipped"),
        duration_s=e.get("duration_s"),
        kept=e.get("kept"),
        agent_exit=e.get("agent_exit"),
        agent_tail=e.get("agent_tail"),
        flaky=tuple(e.get("flaky", ())),
        env_skipped=tuple(e.get("skipped_by_environment", ())),
        look_at=tuple(e.get("look_at", ())),
        review=e.get("review"),
        review_s=e.get("review_s"),
        yours=tuple(e.get("your_work", ())),
        until=e.get("until"),
        harness=e.get("harness"),
        new_tests=e.get("new_tests"),
        wave=e.get("wave"),
    )


def _halt(e: Mapping[str, Any]) -> Halt:
    return Halt(
        cycle=e["cycle"],
        task=e["task"],
        failures=e["count"],
        reason=e.get("reason", ""),
        at=e["at"],
        forced=e.get("forced", False),
    )


# -- the fields each entry is written with (None: left out) ---------------------------


def result_fields(res: TaskResult) -> FieldList:
    return [
        ("status", res.status),
        ("commit", res.commit),
        ("reason", res.reason),
        ("cycle", res.cycle),
    ]


def record_fields(rec: CycleRecord) -> FieldList:
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
        ("tests_failed", rec.tests_failed),
        ("tests_skipped", rec.tests_skipped),
        ("build_ok", rec.build_ok),
        ("spike", True if rec.spike else None),
        ("learning", rec.learning),
        ("duration_s", rec.duration_s),
        ("kept", rec.kept),
        ("agent_exit", rec.agent_exit),
        ("agent_tail", rec.agent_tail),
        ("flaky", list(rec.flaky) or None),
        ("skipped_by_environment", list(rec.env_skipped) or None),
        ("look_at", list(rec.look_at) or None),
        ("review", rec.review),
        ("review_s", rec.review_s),
        ("your_work", list(rec.yours) or None),
        ("until", rec.until),
        ("harness", rec.harness),
        ("new_tests", rec.new_tests),
        ("wave", rec.wave),
        *usage_fields(rec.usage),
    ]


def usage_fields(used: Usage | None) -> FieldList:
    """A cycle's or a task's tokens and cost, as the file shows them (the sealed
    records keep the whole value; the file is their rendering)."""
    if used is None:
        return []
    return [
        ("tokens", used.tokens),
        ("input_tokens", used.input),
        ("output_tokens", used.output),
        ("cache_write_tokens", used.cache_write),
        ("cache_read_tokens", used.cache_read),
        ("usd", used.usd),
        ("models", list(used.models) or None),
    ]


def task_cost_fields(mem: Memory) -> dict[str, FieldList]:
    """``task_costs``: each task's tokens and cost over all its cycles."""
    from gtd.auto.report_cost import per_task

    return {
        task: [
            ("cycles", sum(1 for r in mem.cycles if r.task == task and r.usage)),
            *usage_fields(u),
        ]
        for task, u in per_task(sorted(mem.cycles, key=lambda r: r.cycle)).items()
    }


def halt_fields(h: Halt) -> FieldList:
    return [
        ("cycle", h.cycle),
        ("task", h.task),
        ("count", h.failures),
        ("reason", h.reason),
        ("at", h.at),
        ("forced", True if h.forced else None),
    ]


def quarantine_fields(q: Quarantine) -> FieldList:
    return [("cycle", q.cycle), ("at", q.at), ("evidence", q.evidence), ("by", q.by)]


def list_fields(name: str, mem: Memory) -> list[FieldList]:
    """The entries of the list section ``name``, as field lists."""
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
        return [record_fields(rec) for rec in mem.cycles]
    if name == "refreshes":
        return [[("commit", r.commit), ("at", r.at), ("reason", r.reason)] for r in mem.refreshes]
    return [halt_fields(h) for h in mem.halts]
