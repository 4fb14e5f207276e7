"""Render `.deepflow/auto-report.md` from memory.

Pure and total: the whole file is re-rendered from the records each cycle instead of
being patched in place (deepflow's "append a row" rules), so the summary can never
disagree with the log, a crashed half-write cannot leave a torn table, and the same
memory always gives the same bytes. The skeleton is deepflow 0.1.73's, section for
section.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gtd.auto.memory import CycleRecord, Memory, ProbeLearning, latest_ratchet_record

VerifyStatus = Literal["passed", "failed", "warning", "skipped"]

DASH = "—"
PROBE_PLACEHOLDER = "_(empty until a probe/spike task runs)_"
REVERT_PLACEHOLDER = "_(tasks that were reverted with their failure reasons)_"
_VERIFY_MARK: dict[str, str] = {"passed": "✓", "failed": "✗", "warning": "⚠", "skipped": "–"}


@dataclass(frozen=True)
class VerifyResult:
    """One level of the final verification (deepflow's L0 build, L1 files, L2
    coverage, L4 tests). Filled by `gtd verify`; shown under Health Score."""

    level: str  # "L0", "L1", ...
    status: VerifyStatus
    name: str = ""  # what the level checks, e.g. "build"
    detail: str = ""  # e.g. "no coverage tool"


@dataclass(frozen=True)
class Health:
    verify: tuple[VerifyResult, ...] = ()


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _lines(text: str) -> list[str]:
    """Visible lines of `text`: terminal colour codes (test output carries them) and
    other control characters dropped, tabs as spaces, split on every line break
    Python knows (\\f, \\u2028 ... too), so no cell can spill onto a new line."""
    text = _ANSI.sub("", text).replace("\t", " ")
    return [_CONTROL.sub("", line).strip() for line in text.splitlines()]


def cell(text: str | None) -> str:
    """One markdown table cell: never empty, never breaks the row.

    Newlines become `<br>` (GFM renders it; the row stays one line). A pipe is
    escaped as `\\|`, and a backslash right before a pipe is doubled first, or it
    would escape our escape and split the cell.
    """
    if text is None:
        return DASH
    flat = "<br>".join(line for line in _lines(text) if line)
    if not flat:
        return DASH
    flat = re.sub(r"\\(?=\|)", r"\\\\", flat)
    return flat.replace("|", "\\|")


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: tuple[str, ...], rows: list[str]) -> list[str]:
    return [_row(*header), "|" + "|".join("-" * (len(h) + 2) for h in header) + "|", *rows]


def _readable(reason: str | None) -> str | None:
    """A reason as the report shows it: a kilobyte test id is cut (memory keeps it)."""
    from gtd.auto.readable import readable

    return None if reason is None else readable(reason)


def _cycle_row(rec: CycleRecord) -> str:
    if rec.status == "passed":
        outcome, reason = cell(rec.commit), DASH
    elif rec.status == "failed":
        outcome, reason = "reverted", cell(_readable(rec.reason))
    else:
        outcome, reason = DASH, cell(_readable(rec.reason))
    return _row(str(rec.cycle), cell(rec.task), rec.status, outcome, reason, cell(rec.at))


def _tests(rec: CycleRecord | None) -> str:
    if rec is None or rec.tests_passed is None or rec.tests_total is None:
        return DASH
    return f"{rec.tests_passed} / {rec.tests_total}"


def _probe_rows(mem: Memory, cycles: list[CycleRecord]) -> list[str]:
    """A spike competes with the code as it was: if the ratchet kept it, the spike's
    approach won over the baseline; if it was reverted, the baseline stands."""
    rows: list[str] = []
    shown: set[tuple[str, str]] = set()
    for rec in cycles:
        if not rec.spike:
            continue
        probe = f"{rec.task}: {rec.title}" if rec.title.strip() else rec.task
        tests = _tests(rec)
        metric = "ratchet" if tests == DASH else f"ratchet (tests {tests})"
        if rec.status == "passed":
            winner = f"spike ({rec.commit})" if rec.commit else "spike"
            loser = "baseline"
        elif rec.status == "failed":
            winner, loser = "baseline", "spike (reverted)"
        else:
            winner = loser = DASH
        notes = rec.learning or (_readable(rec.reason) if rec.status == "failed" else None)
        rows.append(_row(cell(probe), metric, cell(winner), loser, cell(notes)))
        if rec.learning:
            shown.add((rec.task, rec.learning.strip()))
    # Learnings with no spike cycle behind them (a deepflow-era file) still belong here.
    for learned in mem.probe_learnings:
        if (learned.spike, learned.insight) not in shown:
            rows.append(_legacy_probe_row(learned))
    return rows


def _legacy_probe_row(learned: ProbeLearning) -> str:
    probe = f"{learned.spike}: {learned.probe}" if learned.probe.strip() else learned.spike
    return _row(cell(probe), DASH, DASH, DASH, cell(learned.insight))


def _verify_row(result: VerifyResult) -> str:
    label = f"Verify {result.level}" + (f" ({result.name})" if result.name else "")
    status = f"{_VERIFY_MARK.get(result.status, '?')} {result.status}"
    if result.detail:
        status += f" ({result.detail})"
    return _row(cell(label), cell(status))


def _section(title: str, placeholder: str | None, table: list[str]) -> list[str]:
    body = [f"## {title}", ""]
    if placeholder is not None:
        body += [placeholder, ""]
    return [*body, *table, ""]


def render(title: str, mem: Memory, now: str, health: Health | None = None) -> str:
    cycles = sorted(mem.cycles, key=lambda rec: rec.cycle)
    passed = sum(1 for rec in cycles if rec.status == "passed")
    failed = sum(1 for rec in cycles if rec.status == "failed")
    latest = latest_ratchet_record(mem)

    build = DASH
    if latest is not None and latest.build_ok is not None:
        build = "passing" if latest.build_ok else "failing"
    ratchet = DASH if latest is None else ("green" if latest.status == "passed" else "red")
    health_rows = [
        _row("Tests passed", _tests(latest)),
        _row("Build status", build),
        _row("Ratchet", ratchet),
        *(_verify_row(result) for result in (health.verify if health else ())),
    ]

    probes = _probe_rows(mem, cycles)
    reverts = [
        _row(cell(rev.task), str(rev.cycle), cell(_readable(rev.reason)))
        for rev in mem.revert_history
    ]
    heading = " ".join(" ".join(_lines(title)).split()) or DASH
    lines = [
        f"# Auto Mode Report — {heading}",
        "",
        f"_Last updated: {now}_",
        "",
        *_section(
            "Summary",
            None,
            _table(
                ("Metric", "Value"),
                [
                    _row("Total cycles run", str(len(cycles))),
                    _row("Tasks committed", str(passed)),
                    _row("Tasks reverted", str(failed)),
                ],
            ),
        ),
        *_section(
            "Cycle Log",
            None,
            _table(
                ("Cycle", "Task", "Status", "Commit / Revert", "Reason", "Timestamp"),
                [_cycle_row(rec) for rec in cycles],
            ),
        ),
        *_section(
            "Probe Results",
            None if probes else PROBE_PLACEHOLDER,
            _table(("Probe", "Metric", "Winner", "Loser", "Notes"), probes),
        ),
        *_section("Health Score", None, _table(("Check", "Status"), health_rows)),
        *_section(
            "Reverted Tasks",
            None if reverts else REVERT_PLACEHOLDER,
            _table(("Task", "Cycle", "Reason"), reverts),
        ),
    ]
    return "\n".join(lines[:-1]) + "\n"
