"""Render `.deepflow/auto-report.md`: the morning report of an unattended run.

Pure and total: the whole file is re-rendered from the folded records, the plan and
the work in flight each time instead of being patched in place (deepflow's "append
a row" rules), so the summary can never disagree with the log, a crashed half-write
cannot leave a torn table, and the same inputs always give the same bytes.

The skeleton is deepflow 0.1.73's, section for section (Summary, Cycle Log, Probe
Results, Health Score, Reverted Tasks), with what a person needs first put first:

- **State**, at the top: running (what is in flight), halted (why, at which task,
  and the exact commands that resume), blocked, complete (verified or not), or in
  progress between cycles — decided the way `gtd cycle begin` decides, from the
  same values;
- in a night with waves, the Summary's **Waves** part and the Cycle Log's Wave
  column (gtd.auto.report_waves);
- **Run Chart** (gitGraph, gtd.auto.chart) after the Summary;
- after Reverted Tasks, only when they have something to say: **Flaky Tests**
  (quarantined, with their evidence), **Agent Output** (a headless agent that
  failed: exit status, the end of its output, its log) and **Events** (breaker
  trips, forced halts, snapshot refreshes after a person's commit).

Counts keep tasks and cycles apart ("Cycles reverted 10", "Tasks with reverts 4
(T2 ×4, T3 ×3, T4, T5 ×2): T2, T3 later done; T4, T5 not done yet"); the
Health Score describes the branch as it is (its latest passing run, not the last
reverted attempt); long test ids and reasons are cut to a readable length (memory
keeps them whole).

The parts: gtd.auto.report_text (cells, tables, sections), .report_state (the
State, and the run's values), .report_tables (Summary, the Cycle Log's rows,
Probe Results, Health Score, Reverted Tasks), .report_cost and .report_notes.
This module renders the sections that appear only when they have something to
say, and places every part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gtd import paths
from gtd.auto import breaker, chart, defaults, report_state, report_tables, report_waves
from gtd.auto.journal import Journal
from gtd.auto.memory import Memory, Quarantine
from gtd.auto.plan import Plan
from gtd.auto.report_state import RESTART, Health, Run, VerifyResult, VerifyStatus
from gtd.auto.report_text import (
    DASH,
    MAX_REASON,
    MAX_TEST_ID,
    cell,
    code_lines,
    duration,
    flat,
    kept_ref,
    named_task,
    plural,
    row,
    section,
    short,
    show_command,
    table,
    tests_line,
)

if TYPE_CHECKING:
    from gtd.auto.budget import Decision
    from gtd.auto.wave_journal import Wave as WaveJournal

__all__ = [
    "DASH",
    "PROBE_PLACEHOLDER",
    "RESTART",
    "REVERT_PLACEHOLDER",
    "Health",
    "VerifyResult",
    "VerifyStatus",
    "cell",
    "duration",
    "kept_ref",
    "plural",
    "render",
    "short",
    "show_command",
    "tests_line",
]


PROBE_PLACEHOLDER = "_(empty until a probe/spike task runs)_"
REVERT_PLACEHOLDER = "_(tasks that were reverted with their failure reasons)_"
_TAIL_LINES = 20  # lines of a failed agent's output shown


def _flaky(run: Run) -> list[str]:
    """Quarantined tests with their evidence, then tests a re-run found flaky in a
    cycle that are not (or no longer) quarantined."""
    seen: dict[str, list[int]] = {}
    for rec in run.cycles:
        for test in rec.flaky:
            seen.setdefault(test, []).append(rec.cycle)
    rows: list[str] = []
    entries: list[Quarantine] = sorted(
        run.mem.quarantined.values(), key=lambda q: (q.cycle, q.test)
    )
    for entry in entries:
        found = "baseline" if entry.cycle == 0 else f"cycle {entry.cycle}"
        by = "a person" if entry.by == "person" else "a re-run"
        cycles = ", ".join(str(c) for c in seen.get(entry.test, [])) or DASH
        rows.append(
            row(
                cell(short(entry.test, MAX_TEST_ID)),
                "quarantined",
                f"{found} ({by})",
                cycles,
                cell(short(entry.evidence, MAX_REASON)),
            )
        )
    for test, cycles_seen in seen.items():
        if test in run.mem.quarantined:
            continue
        rows.append(
            row(
                cell(short(test, MAX_TEST_ID)),
                "not quarantined",
                f"cycle {cycles_seen[0]}",
                ", ".join(str(c) for c in cycles_seen),
                "failed, then passed when run again",
            )
        )
    if not rows:
        return []
    intro = (
        "A quarantined test still runs and is reported, but its failure alone never "
        "reverts a cycle (see docs/ratchet.md to release one)."
    )
    return section(
        "Flaky Tests",
        None,
        [intro, "", *table(("Test", "Status", "Found", "Flaky in cycles", "Evidence"), rows)],
    )


def _agent_output(run: Run) -> list[str]:
    failed = [r for r in run.cycles if r.agent_exit]
    if not failed:
        return []
    body: list[str] = []
    for rec in failed:
        log = f"{paths.AGENT_LOGS}/cycle-{rec.cycle}.log"
        body.append(
            f"- Cycle {rec.cycle} ({named_task(rec.task, rec.title)}): the agent exited "
            f"{rec.agent_exit}; full log `{log}`."
        )
        tail = code_lines(rec.agent_tail or "")[-_TAIL_LINES:]
        if tail:
            # An indented code block (inside the list item): the output is shown as
            # it was, and nothing in it (backticks, a fence, markdown) can end it.
            body += ["", *(f"      {line}" if line else "" for line in tail), ""]
    while body and not body[-1]:
        body.pop()
    return section("Agent Output", None, body)


def _look_at(run: Run) -> list[str]:
    """What the diff reader flagged in committed work: it passed the tests, and a
    person should read it (docs/diff-reader.md)."""
    body = [
        f"- Cycle {rec.cycle} ({named_task(rec.task, rec.title)}): `{cell(finding)}`"
        for rec in run.cycles
        for finding in rec.look_at
    ]
    if not body:
        return []
    intro = (
        "The diff reader flagged these in committed work: the tests passed, but the "
        "code may special-case them. Read each line it names."
    )
    return section("Look at These", None, [intro, "", *body])


def _reviews(run: Run) -> list[str]:
    """The reviewer's verdict on each cycle it read (review.agent)."""
    rows = [
        row(
            str(rec.cycle),
            cell(named_task(rec.task, rec.title)),
            cell(rec.review),
            duration(rec.review_s),
        )
        for rec in run.cycles
        if rec.review
    ]
    if not rows:
        return []
    return section("Reviews", None, table(("Cycle", "Task", "Verdict", "Time"), rows))


def _learnings(run: Run) -> list[str]:
    from gtd.auto.report_notes import learnings

    named = {
        rec.task: named_task(rec.task, rec.title or run.title_of(rec.task)) for rec in run.cycles
    }
    found = learnings(run.cycles, named)
    return section("Learnings", None, found) if found else []


def _events(run: Run) -> list[str]:
    events: list[tuple[str, str]] = []
    for halt in run.mem.halts:
        if halt.forced:
            text = breaker.forced_message(halt.task, halt.reason)
        else:
            text = breaker.message(halt.task, halt.failures, halt.reason)
            text += f" (after cycle {halt.cycle})"
        events.append((halt.at, short(text, MAX_REASON + 80)))
    for refresh in run.mem.refreshes:
        events.append((refresh.at, f"{refresh.reason}: its commit is the new baseline"))
    if run.budget is not None:
        from gtd.auto.budget import event_rows

        events += event_rows(run.budget)
    if not events:
        return []
    events.sort(key=lambda e: e[0])
    rows = [row(cell(at), cell(text)) for at, text in events]
    return section("Events", None, table(("When", "Event"), rows))


def render(
    title: str,
    mem: Memory,
    now: str,
    health: Health | None = None,
    *,
    plan: Plan | None = None,
    journal: Journal | None = None,
    threshold: int = defaults.THRESHOLD,
    failing: tuple[int, list[str]] = (0, []),
    budget: Decision | None = None,
    billing: str = "api",
    waiting: str | None = None,
    main_line: str | None = None,
    wave: WaveJournal | None = None,
) -> str:
    """The report. ``plan``: PLAN.md as it is (titles, what remains); ``journal``:
    the work in flight, if any; ``threshold``: the breaker's, so the State says
    halted exactly when `gtd cycle begin` would; ``failing``: how many tests
    failed at the baseline and the first few (gtd.auto.report_notes); ``budget``:
    the night's budget decision for the next task, when a ceiling is set;
    ``billing``: how the cost is labelled (gtd.auto.report_cost); ``waiting``:
    why the last tick started nothing (gtd.auto.report_state); ``main_line``: the
    branch checked out, when it is the main line; ``wave``: the wave journal, when
    a wave is in flight (gtd.auto.report_waves)."""
    from gtd.auto import report_cost

    cycles = sorted(mem.cycles, key=lambda r: r.cycle)
    run = Run(
        mem, cycles, plan, journal, threshold, health, failing, now, budget, waiting, main_line,
        wave,
    )  # fmt: skip
    picture = chart.mermaid(mem)
    probes = report_tables.probe_rows(mem, run.cycles)
    reverted, any_reverted = report_tables.reverted_table(run)
    heading = flat(title) or DASH
    log_header: tuple[str, ...] = (
        "Cycle", "Task", "Title", "Status", "Commit / Revert", "Reason", "Tests", "Test time",
        "Timestamp",
    )  # fmt: skip
    waved = report_waves.any_wave(cycles)  # a Wave column only for a night with waves
    if waved:
        log_header = (log_header[0], "Wave", *log_header[1:])
    costed = report_cost.shown(cycles)
    if costed:
        log_header += report_cost.header(billing)
    log = [
        report_tables.cycle_row(run, r, *(report_cost.cells(r) if costed else ()), waved=waved)
        for r in run.cycles
    ]
    summary = report_tables.summary_table(run)
    summary += [row(cell(k), cell(v)) for k, v in report_cost.summary_rows(cycles, billing)]
    summary += report_waves.summary(cycles, wave)
    spending = report_cost.chart(cycles, billing)
    lines = [
        f"# Auto Mode Report — {heading}",
        "",
        f"_Last updated: {now}_",
        "",
        *section("State", None, report_state.body(run)),
        *section("Summary", None, summary),
        *(section("Run Chart", None, picture) if picture else []),
        *(section("Cost Chart", None, spending) if spending else []),
        *section("Cycle Log", None, table(log_header, log)),
        *section(
            "Probe Results",
            None if probes else PROBE_PLACEHOLDER,
            table(("Probe", "Metric", "Winner", "Loser", "Notes"), probes),
        ),
        *section("Health Score", None, report_tables.health_table(run)),
        *section("Reverted Tasks", None if any_reverted else REVERT_PLACEHOLDER, reverted),
        *_look_at(run),
        *_reviews(run),
        *_learnings(run),
        *_flaky(run),
        *_agent_output(run),
        *_events(run),
    ]
    return "\n".join(lines[:-1]) + "\n"
