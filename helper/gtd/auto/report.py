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
"""

from __future__ import annotations

import math
import re

from gtd import paths
from gtd.auto import breaker, chart, defaults
from gtd.auto.journal import Journal
from gtd.auto.memory import (
    CycleRecord,
    Memory,
    ProbeLearning,
    Quarantine,
    find_cycle,
)
from gtd.auto.plan import Plan, pick
from gtd.tuples import NamedTuple

TYPE_CHECKING = False  # typing's own to the type checker (see gtd.hints)
if TYPE_CHECKING:
    from typing import Literal

    from gtd.auto.budget import Decision

    VerifyStatus = Literal["passed", "failed", "warning", "skipped"]
else:
    VerifyStatus = str

DASH = "—"
PROBE_PLACEHOLDER = "_(empty until a probe/spike task runs)_"
REVERT_PLACEHOLDER = "_(tasks that were reverted with their failure reasons)_"
_VERIFY_MARK: dict[str, str] = {"passed": "✓", "failed": "✗", "warning": "⚠", "skipped": "–"}
_MAX_REASON = 200  # characters of a reason in a table cell
_MAX_TEST_ID = 120  # characters of a test id in a table cell
_MAX_LISTED = 10  # task ids named in one line
_TAIL_LINES = 20  # lines of a failed agent's output shown
RESTART = '`/gtd:auto` in Claude Code, or `gtd loop --agent "<your agent command>"`'


class VerifyResult(NamedTuple):
    """One level of the final verification (deepflow's L0 build, L1 files, L2
    coverage, L4 tests). Filled by `gtd verify`; shown under Health Score."""

    level: str  # "L0", "L1", ...
    status: VerifyStatus
    name: str = ""  # what the level checks, e.g. "build"
    detail: str = ""  # e.g. "no coverage tool"


class Health(NamedTuple):
    verify: tuple[VerifyResult, ...] = ()


# -- text helpers -----------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _lines(text: str) -> list[str]:
    """Visible lines of `text`: terminal colour codes (test output carries them) and
    other control characters dropped, tabs as spaces, split on every line break
    Python knows (\\f, \\u2028 ... too), so no cell can spill onto a new line."""
    text = _ANSI.sub("", text).replace("\t", " ")
    return [_CONTROL.sub("", line).strip() for line in text.splitlines()]


def _code_lines(text: str) -> list[str]:
    """Lines of program output for a code block: like `_lines`, but indentation
    kept; blank lines at either end dropped."""
    text = _ANSI.sub("", text).replace("\t", "    ")
    found = [_CONTROL.sub("", line).rstrip() for line in text.splitlines()]
    while found and not found[0]:
        found.pop(0)
    while found and not found[-1]:
        found.pop()
    return found


def _flat(text: str) -> str:
    return " ".join(" ".join(_lines(text)).split())


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


def short(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (see gtd.auto.readable: the one way a
    reason or a kilobyte test id is cut for a reader)."""
    from gtd.auto.readable import readable

    return readable(text, limit)


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def duration(seconds: float | None) -> str:
    """``4.2 s``, ``2 min 05 s``, ``1 h 02 min``; a dash for no (or no sane) value."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return DASH
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def tests_line(rec: CycleRecord | None) -> str:
    """Passed, failed and skipped/xfail apart: "5063 / 5344 passed" alone reads as
    if the other 281 failed. Records older than the split show the old form."""
    if rec is None or rec.tests_passed is None or rec.tests_total is None:
        return DASH
    if rec.tests_failed is None or rec.tests_skipped is None:
        return f"{rec.tests_passed} / {rec.tests_total} passed"
    # xfailed and xpassed tests are counted in neither passed nor skipped.
    rest = max(0, rec.tests_total - rec.tests_passed - rec.tests_failed)
    return f"{rec.tests_passed} passed, {rec.tests_failed} failed, {rest} skipped/xfail"


def kept_ref(rec: CycleRecord) -> str:
    """The ref holding a reverted cycle's work; "" when there was none to keep (the
    cycle changed nothing); records from before `kept` was recorded: the default."""
    return f"{paths.REVERTED_REF}{rec.cycle}" if rec.kept is None else rec.kept


def show_command(ref: str) -> str:
    return cell(f"`git show {ref} --stat`")


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: tuple[str, ...], rows: list[str]) -> list[str]:
    return [_row(*header), "|" + "|".join("-" * (len(h) + 2) for h in header) + "|", *rows]


def _section(title: str, placeholder: str | None, body: list[str]) -> list[str]:
    head = [f"## {title}", ""]
    if placeholder is not None:
        head += [placeholder, ""]
    return [*head, *body, ""]


def _named(task: str, title: str) -> str:
    """``T2: Add div`` (or the id alone when the title is unknown)."""
    title = _flat(title)
    return f"{task}: {title}" if title else task


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:_MAX_LISTED])
    return shown + (f" and {len(ids) - _MAX_LISTED} more" if len(ids) > _MAX_LISTED else "")


# -- the state of the run -----------------------------------------------------------


class _Run(NamedTuple):
    mem: Memory
    cycles: list[CycleRecord]
    plan: Plan | None
    journal: Journal | None
    threshold: int
    health: Health | None
    failing: tuple[int, list[str]] = (0, [])  # tests failing at the baseline
    now: str = ""
    budget: Decision | None = None  # the night's budget for the next task (gtd.auto.budget)

    def title_of(self, task: str) -> str:
        if self.plan is not None:
            found = self.plan.get(task)
            if found is not None:
                return found.title
        rec = next((r for r in reversed(self.cycles) if r.task == task), None)
        return rec.title if rec is not None else ""

    def latest_revert(self, task: str) -> CycleRecord | None:
        return next(
            (r for r in reversed(self.cycles) if r.task == task and r.status == "reverted"), None
        )


_PHASES = {
    "agent": "the agent is working on it",
    "checking": "the ratchet is checking its work",
    "committing": "its work is being committed",
    "reverting": "its work is being reverted",
}


def _state(run: _Run) -> list[str]:
    journal = run.journal
    if journal is not None and journal.blocked:
        where = f"cycle {journal.cycle} ({_named(journal.task, journal.title)})"
        return [
            f"**Halted** — {where} could not finish: {_flat(journal.blocked)}",
            "",
            "To resume:",
            "",
            "1. Fix what the message names.",
            "2. Run `gtd cycle begin`: it finishes the cycle.",
            f"3. Start the loop again: {RESTART}.",
        ]
    if journal is not None:
        since = f"(since {journal.started_at})"
        if journal.kind == "baseline":
            return [f"**Running** — {_flat(journal.title)} {since}."]
        what = _PHASES.get(journal.phase, journal.phase)
        where = f"cycle {journal.cycle}, {_named(journal.task, journal.title)}"
        return [f"**Running** — {where}: {what} {since}."]
    pending = (
        [t.id for t in run.plan.pending]
        if run.plan is not None
        else [task for task, count in run.mem.consecutive_reverts.items() if count]
    )
    trip = breaker.check(run.mem, run.threshold, pending)
    if trip is not None:
        return _halted(run, trip)
    held = run.mem.pause
    if held is not None and run.now and held.until > run.now:  # ISO UTC: ordered as text
        from gtd.auto.pause import clock

        return [
            f"**Paused** until {clock(held.until)} — {_flat(held.reason)}.",
            "",
            f"The harness stopped the agent on {held.task} ({held.attempts} in a row since "
            f"{held.since}); its work is kept, the breaker did not count it, and the loop "
            "tries again at that time by itself. `gtd cycle reset` ends the pause now.",
        ]
    if run.plan is None:
        if not run.cycles:
            return ["**Ready** — no cycle has run yet."]
        return ["**In progress** — no cycle in flight."]
    choice = pick(run.plan)
    if choice.kind == "complete":
        return _complete(run)
    if choice.kind == "blocked":
        waiting = "; ".join(f"{t.id} by {', '.join(b)}" for t, b in choice.blocked)
        return [
            f"**Blocked** — every remaining task waits on a blocker that is not done: {waiting}.",
            "",
            f"Resolve the blockers in PLAN.md by hand, then start the loop again: {RESTART}.",
        ]
    assert choice.task is not None
    if run.budget is not None and run.budget.halt is not None:
        from gtd.auto.budget import halted_lines

        return halted_lines(run.budget, RESTART)
    nxt = _named(choice.task.id, choice.task.title)
    if not run.cycles:
        return [f"**Ready** — no cycle has run yet; the first task is {nxt}."]
    return [f"**In progress** — no cycle in flight; the next task is {nxt}."]


def _halted(run: _Run, trip: breaker.Trip) -> list[str]:
    task = trip.task
    if task == "baseline":
        return [
            f"**Halted** — {_flat(trip.message)}",
            "",
            "To resume:",
            "",
            "1. Fix the test suite or its environment, and commit.",
            "2. Run `gtd cycle reset`.",
            f"3. Start the loop again: {RESTART}.",
        ]
    head = f"**Halted** at {_named(task, run.title_of(task))} — {_flat(trip.message)}"
    steps: list[str] = []
    last = run.latest_revert(task)
    if last is not None and kept_ref(last):
        steps.append(
            f"See what the agent tried last: {show_command(kept_ref(last))} "
            "(every reverted cycle is listed under Reverted Tasks)."
        )
    steps += [
        f"Fix {task} by hand and commit, or rewrite or split the task in PLAN.md.",
        f"Run `gtd cycle reset {task}`.",
        f"Start the loop again: {RESTART}.",
    ]
    return [head, "", "To resume:", "", *(f"{n}. {step}" for n, step in enumerate(steps, 1))]


def _complete(run: _Run) -> list[str]:
    assert run.plan is not None
    done = sum(1 for t in run.plan.tasks if t.status == "done")
    lines = [f"**Complete** — {plural(done, 'task')} done, none remaining."]
    results = run.health.verify if run.health is not None else ()
    if not results:
        return [*lines, "", "Not verified yet: run `gtd verify`."]
    levels = ", ".join(f"{r.level} {r.name or 'check'} {r.status}" for r in results)
    failed = [r for r in results if r.status == "failed"]
    if failed:
        names = ", ".join(f"{r.level} {r.name}".rstrip() for r in failed)
        verdict = f"Verification failed ({names}): {levels}. Fix it, then run `gtd verify` again."
    else:
        verdict = (
            f"Verified: `gtd verify` passed ({levels}). The branch is ready for review; "
            "gtd never merges or pushes."
        )
    return [*lines, "", verdict]


def _budget(run: _Run) -> list[str]:
    from gtd.auto.budget import report_lines

    return report_lines(run.budget) if run.budget is not None else []


def _plan_line(run: _Run) -> list[str]:
    if run.plan is None or not run.plan.tasks or not run.plan.pending:
        return []  # a complete plan: the state line already says so
    tasks = run.plan.tasks
    done = sum(1 for t in tasks if t.status == "done")
    skipped = sum(1 for t in tasks if t.status == "skipped")
    remaining = [t.id for t in run.plan.pending]
    text = f"Plan: {done} of {plural(len(tasks), 'task')} done"
    if skipped:
        text += f", {skipped} skipped"
    text += f", {plural(len(remaining), 'task')} remaining"
    text += f" ({_ids(remaining)})." if remaining else "."
    return ["", text]


# -- the tables ---------------------------------------------------------------------


def _summary(run: _Run) -> list[str]:
    cycles = run.cycles
    tasks = [r for r in cycles if r.task != paths.BOOTSTRAP]
    committed = {r.task for r in tasks if r.status == "passed"}
    reverts: dict[str, int] = {}
    for rec in tasks:
        if rec.status == "reverted":
            reverts[rec.task] = reverts.get(rec.task, 0) + 1
    reverted = _reverted_tasks(run, reverts, committed)
    rows = [
        _row("Total cycles run", str(len(cycles))),
        _row("Cycles committed", str(sum(1 for r in cycles if r.status == "passed"))),
        _row("Cycles reverted", str(sum(1 for r in cycles if r.status == "reverted"))),
    ]
    skipped = sum(1 for r in cycles if r.status == "skipped")
    if skipped:
        rows.append(_row("Cycles skipped", str(skipped)))
    rows += [
        _row("Tasks committed", str(len(committed))),
        _row("Tasks with reverts", cell(reverted)),
    ]
    if run.plan is not None:
        left = len(run.plan.pending)
        rows.append(_row("Tasks remaining", f"{left} of {len(run.plan.tasks)}"))
    timed = [t for t in (r.duration_s for r in cycles) if t is not None and duration(t) != DASH]
    if timed:
        rows.append(_row("Test time", f"{duration(sum(timed))} in {plural(len(timed), 'run')}"))
    return _table(("Metric", "Value"), rows)


def _reverted_tasks(run: _Run, reverts: dict[str, int], committed: set[str]) -> str:
    """``2 (T2 ×2, T3): both later done``: a task reverted once and done on its
    next try is not a task "reverted" beside "Tasks committed 4 of 4"; what
    became of each is said."""
    if not reverts:
        return "0"
    named = _ids([f"{t} ×{n}" if n > 1 else t for t, n in reverts.items()])
    done = {t.id for t in run.plan.tasks if t.status == "done"} if run.plan is not None else set()
    done |= committed
    later = [t for t in reverts if t in done]
    open_ = [t for t in reverts if t not in done]
    if not open_:
        fate = {1: "later done", 2: "both later done"}.get(len(later), "all later done")
    elif not later:
        fate = {1: "not done yet", 2: "neither done yet"}.get(len(open_), "none done yet")
    else:
        fate = f"{_ids(later)} later done; {_ids(open_)} not done yet"
    return f"{len(reverts)} ({named}): {fate}"


def _cycle_row(run: _Run, rec: CycleRecord, *extra: str) -> str:
    notes: list[str] = []
    if rec.status == "passed":
        outcome, reason = cell(rec.commit), ""
    elif rec.status == "reverted":
        ref = kept_ref(rec)
        outcome = cell(f"work kept at `{ref}`" if ref else "nothing to keep")
        reason = short(rec.reason or "", _MAX_REASON)
    elif rec.status == "paused":  # the harness stopped the agent: kept, not judged
        outcome = cell(f"kept at `{kept_ref(rec)}`")
        reason = short(f"{rec.reason or ''} (retried after {rec.until})", _MAX_REASON)
    else:
        outcome, reason = DASH, short(rec.reason or "", _MAX_REASON)
    if rec.flaky:
        notes.append(f"flaky, tolerated: {short(', '.join(rec.flaky), _MAX_TEST_ID)}")
    if rec.env_skipped:
        skipped = short(", ".join(rec.env_skipped), _MAX_TEST_ID)
        notes.append(f"skipped, as the base commit's code is now (environment): {skipped}")
    if rec.yours:
        notes.append("your work: " + "; ".join(rec.yours))
    if rec.agent_exit:
        notes.append(f"agent exited {rec.agent_exit} (see Agent Output)")
    reason = "; ".join(part for part in (reason, *notes) if part)
    return _row(
        str(rec.cycle),
        cell(rec.task),
        cell(_flat(rec.title or run.title_of(rec.task)) or None),
        rec.status,
        outcome,
        cell(reason or None),
        tests_line(rec),
        duration(rec.duration_s),
        cell(rec.at),
        *extra,
    )


def _probe_rows(mem: Memory, cycles: list[CycleRecord]) -> list[str]:
    """A spike competes with the code as it was: if the ratchet kept it, the spike's
    approach won over the baseline; if it was reverted, the baseline stands."""
    rows: list[str] = []
    shown: set[tuple[str, str]] = set()
    for rec in cycles:
        if not rec.spike:
            continue
        probe = f"{rec.task}: {rec.title}" if rec.title.strip() else rec.task
        tests = tests_line(rec)
        metric = "ratchet" if tests == DASH else f"ratchet (tests {tests})"
        if rec.status == "passed":
            winner = f"spike ({rec.commit})" if rec.commit else "spike"
            loser = "baseline"
        elif rec.status == "reverted":
            winner, loser = "baseline", "spike (reverted)"
        else:
            winner = loser = DASH
        failed = rec.status == "reverted"
        notes = rec.learning or (short(rec.reason or "", _MAX_REASON) if failed else None)
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


def _health(run: _Run) -> list[str]:
    """The branch as it is now: every revert restores it, so its tests are those of
    the latest cycle that passed (or the baseline, before any did)."""
    ran = [r for r in run.cycles if r.status != "skipped"]
    passed = next((r for r in reversed(ran) if r.status == "passed"), None)
    last = ran[-1] if ran else None
    refresh = run.mem.refreshes[-1] if run.mem.refreshes else None
    stop = run.mem.stop

    measured = DASH
    if passed is not None:
        measured = f"cycle {passed.cycle} ({passed.task}, {passed.commit or 'committed'})"
        if refresh is not None and refresh.at > passed.at:
            measured += f"; the snapshot was refreshed since, after {refresh.commit} by a person"
    build = DASH
    if passed is not None and passed.build_ok is not None:
        build = "passing" if passed.build_ok else "failing"
    ratchet = DASH
    if stop is not None and stop.task == "baseline":
        ratchet = "red (the baseline is broken; see State)"
    elif passed is not None or refresh is not None:
        ratchet = "green"
    rows = [
        _row("Tests", tests_line(passed)),
        _row("Measured on", cell(measured)),
        _row("Build status", build),
        _row("Ratchet", ratchet),
    ]
    if last is not None and last.status == "reverted":
        since = f"as cycle {passed.cycle} left it" if passed is not None else "as it was at setup"
        what = f"cycle {last.cycle} ({last.task}) reverted; the branch is {since}"
        rows.append(_row("Last cycle", cell(what)))
    rows += [_verify_row(result) for result in (run.health.verify if run.health else ())]
    return _table(("Check", "Status"), rows)


def _reverted(run: _Run) -> tuple[list[str], bool]:
    rows: list[str] = []
    # `refs/gtd/reverted/cycle-`, or a linked worktree's own (gtd.paths.refs_of):
    # what the rows' refs were kept under
    kept_under = paths.REVERTED_REF
    for rev in run.mem.revert_history:
        rec = find_cycle(run.mem, rev.cycle)
        kept = DASH
        if rec is not None and rec.task == rev.task and not kept_ref(rec):
            kept = "nothing to keep"
        elif rec is not None and rec.task == rev.task:
            ref = kept_ref(rec)
            kept = show_command(ref)
            if ref.endswith(f"cycle-{rec.cycle}"):
                kept_under = ref.removesuffix(str(rec.cycle))
        title = rec.title if rec is not None else run.title_of(rev.task)
        rows.append(
            _row(
                cell(rev.task),
                cell(_flat(title) or None),
                str(rev.cycle),
                cell(short(rev.reason, _MAX_REASON)),
                kept,
            )
        )
    body = _table(("Task", "Title", "Cycle", "Reason", "Kept work"), rows)
    if rows:
        body += [
            "",
            "A reverted cycle's whole working tree is kept under "
            f"`{kept_under}N`: `git show {kept_under}N --stat` lists what "
            f"it changed, `git checkout {kept_under}N -- <path>` brings a file back.",
        ]
    return body, bool(rows)


def _flaky(run: _Run) -> list[str]:
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
            _row(
                cell(short(entry.test, _MAX_TEST_ID)),
                "quarantined",
                f"{found} ({by})",
                cycles,
                cell(short(entry.evidence, _MAX_REASON)),
            )
        )
    for test, cycles_seen in seen.items():
        if test in run.mem.quarantined:
            continue
        rows.append(
            _row(
                cell(short(test, _MAX_TEST_ID)),
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
    return _section(
        "Flaky Tests",
        None,
        [intro, "", *_table(("Test", "Status", "Found", "Flaky in cycles", "Evidence"), rows)],
    )


def _agent_output(run: _Run) -> list[str]:
    failed = [r for r in run.cycles if r.agent_exit]
    if not failed:
        return []
    body: list[str] = []
    for rec in failed:
        log = f"{paths.AGENT_LOGS}/cycle-{rec.cycle}.log"
        body.append(
            f"- Cycle {rec.cycle} ({_named(rec.task, rec.title)}): the agent exited "
            f"{rec.agent_exit}; full log `{log}`."
        )
        tail = _code_lines(rec.agent_tail or "")[-_TAIL_LINES:]
        if tail:
            # An indented code block (inside the list item): the output is shown as
            # it was, and nothing in it (backticks, a fence, markdown) can end it.
            body += ["", *(f"      {line}" if line else "" for line in tail), ""]
    while body and not body[-1]:
        body.pop()
    return _section("Agent Output", None, body)


def _look_at(run: _Run) -> list[str]:
    """What the diff reader flagged in committed work: it passed the tests, and a
    person should read it (docs/diff-reader.md)."""
    body = [
        f"- Cycle {rec.cycle} ({_named(rec.task, rec.title)}): `{cell(finding)}`"
        for rec in run.cycles
        for finding in rec.look_at
    ]
    if not body:
        return []
    intro = (
        "The diff reader flagged these in committed work: the tests passed, but the "
        "code may special-case them. Read each line it names."
    )
    return _section("Look at These", None, [intro, "", *body])


def _reviews(run: _Run) -> list[str]:
    """The reviewer's verdict on each cycle it read (review.agent)."""
    rows = [
        _row(
            str(rec.cycle),
            cell(_named(rec.task, rec.title)),
            cell(rec.review),
            duration(rec.review_s),
        )
        for rec in run.cycles
        if rec.review
    ]
    if not rows:
        return []
    return _section("Reviews", None, _table(("Cycle", "Task", "Verdict", "Time"), rows))


def _tolerated(run: _Run) -> list[str]:
    from gtd.auto.report_notes import failing_line

    line = failing_line(*run.failing)
    return ["", line] if line else []


def _learnings(run: _Run) -> list[str]:
    from gtd.auto.report_notes import learnings

    named = {rec.task: _named(rec.task, rec.title or run.title_of(rec.task)) for rec in run.cycles}
    found = learnings(run.cycles, named)
    return _section("Learnings", None, found) if found else []


def _events(run: _Run) -> list[str]:
    events: list[tuple[str, str]] = []
    for halt in run.mem.halts:
        if halt.forced:
            text = breaker.forced_message(halt.task, halt.reason)
        else:
            text = breaker.message(halt.task, halt.failures, halt.reason)
            text += f" (after cycle {halt.cycle})"
        events.append((halt.at, short(text, _MAX_REASON + 80)))
    for refresh in run.mem.refreshes:
        events.append((refresh.at, f"{refresh.reason}: its commit is the new baseline"))
    if run.budget is not None:
        from gtd.auto.budget import event_rows

        events += event_rows(run.budget)
    if not events:
        return []
    events.sort(key=lambda e: e[0])
    rows = [_row(cell(at), cell(text)) for at, text in events]
    return _section("Events", None, _table(("When", "Event"), rows))


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
) -> str:
    """The report. ``plan``: PLAN.md as it is (titles, what remains); ``journal``:
    the work in flight, if any; ``threshold``: the breaker's, so the State says
    halted exactly when `gtd cycle begin` would; ``failing``: how many tests
    failed at the baseline and the first few (gtd.auto.report_notes); ``budget``:
    the night's budget decision for the next task, when a ceiling is set;
    ``billing``: how the cost is labelled (gtd.auto.report_cost)."""
    from gtd.auto import report_cost

    cycles = sorted(mem.cycles, key=lambda r: r.cycle)
    run = _Run(mem, cycles, plan, journal, threshold, health, failing, now, budget)
    picture = chart.mermaid(mem)
    probes = _probe_rows(mem, run.cycles)
    reverted, any_reverted = _reverted(run)
    heading = _flat(title) or DASH
    log_header: tuple[str, ...] = (
        "Cycle", "Task", "Title", "Status", "Commit / Revert", "Reason", "Tests", "Test time",
        "Timestamp",
    )  # fmt: skip
    costed = report_cost.shown(cycles)
    if costed:
        log_header += report_cost.header(billing)
    log = [_cycle_row(run, r, *(report_cost.cells(r) if costed else ())) for r in run.cycles]
    summary = _summary(run)
    summary += [_row(cell(k), cell(v)) for k, v in report_cost.summary_rows(cycles, billing)]
    spending = report_cost.chart(cycles, billing)
    lines = [
        f"# Auto Mode Report — {heading}",
        "",
        f"_Last updated: {now}_",
        "",
        *_section("State", None, [*_state(run), *_plan_line(run), *_budget(run), *_tolerated(run)]),
        *_section("Summary", None, summary),
        *(_section("Run Chart", None, picture) if picture else []),
        *(_section("Cost Chart", None, spending) if spending else []),
        *_section("Cycle Log", None, _table(log_header, log)),
        *_section(
            "Probe Results",
            None if probes else PROBE_PLACEHOLDER,
            _table(("Probe", "Metric", "Winner", "Loser", "Notes"), probes),
        ),
        *_section("Health Score", None, _health(run)),
        *_section("Reverted Tasks", None if any_reverted else REVERT_PLACEHOLDER, reverted),
        *_look_at(run),
        *_reviews(run),
        *_learnings(run),
        *_flaky(run),
        *_agent_output(run),
        *_events(run),
    ]
    return "\n".join(lines[:-1]) + "\n"
