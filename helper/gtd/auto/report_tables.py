"""The morning report's tables (gtd.auto.report): Summary, the Cycle Log's rows,
Probe Results, Health Score and Reverted Tasks, the skeleton deepflow's report
has.

Pure: the run's values in (gtd.auto.report_state.Run), markdown lines out."""

from __future__ import annotations

from gtd import paths
from gtd.auto import report_waves
from gtd.auto.memory import CycleRecord, Memory, ProbeLearning, find_cycle
from gtd.auto.report_state import Run, VerifyResult
from gtd.auto.report_text import (
    DASH,
    MAX_REASON,
    MAX_TEST_ID,
    cell,
    duration,
    flat,
    id_list,
    kept_ref,
    plural,
    row,
    short,
    show_command,
    table,
    tests_line,
)

_VERIFY_MARK: dict[str, str] = {"passed": "✓", "failed": "✗", "warning": "⚠", "skipped": "–"}


def summary_table(run: Run) -> list[str]:
    cycles = run.cycles
    tasks = [r for r in cycles if r.task != paths.BOOTSTRAP]
    committed = {r.task for r in tasks if r.status == "passed"}
    reverts: dict[str, int] = {}
    for rec in tasks:
        if rec.status == "reverted":
            reverts[rec.task] = reverts.get(rec.task, 0) + 1
    reverted = _reverted_tasks(run, reverts, committed)
    rows = [
        row("Total cycles run", str(len(cycles))),
        row("Cycles committed", str(sum(1 for r in cycles if r.status == "passed"))),
        row("Cycles reverted", str(sum(1 for r in cycles if r.status == "reverted"))),
    ]
    # The four words a cycle ends with; the rows add up to the total.
    for status in ("skipped", "paused"):
        count = sum(1 for r in cycles if r.status == status)
        if count:
            rows.append(row(f"Cycles {status}", str(count)))
    rows += [
        row("Tasks committed", str(len(committed))),
        row("Tasks with reverts", cell(reverted)),
    ]
    if run.plan is not None:
        left = len(run.plan.pending)
        rows.append(row("Tasks remaining", f"{left} of {len(run.plan.tasks)}"))
    timed = [t for t in (r.duration_s for r in cycles) if t is not None and duration(t) != DASH]
    if timed:
        rows.append(row("Test time", f"{duration(sum(timed))} in {plural(len(timed), 'run')}"))
    return table(("Metric", "Value"), rows)


def _reverted_tasks(run: Run, reverts: dict[str, int], committed: set[str]) -> str:
    """``2 (T2 ×2, T3): both later done``: a task reverted once and done on its
    next try is not a task "reverted" beside "Tasks committed 4 of 4"; what
    became of each is said."""
    if not reverts:
        return "0"
    named = id_list([f"{t} ×{n}" if n > 1 else t for t, n in reverts.items()])
    done = {t.id for t in run.plan.tasks if t.status == "done"} if run.plan is not None else set()
    done |= committed
    later = [t for t in reverts if t in done]
    open_ = [t for t in reverts if t not in done]
    if not open_:
        fate = {1: "later done", 2: "both later done"}.get(len(later), "all later done")
    elif not later:
        fate = {1: "not done yet", 2: "neither done yet"}.get(len(open_), "none done yet")
    else:
        fate = f"{id_list(later)} later done; {id_list(open_)} not done yet"
    return f"{len(reverts)} ({named}): {fate}"


def cycle_row(run: Run, rec: CycleRecord, *extra: str, waved: bool = False) -> str:
    """One Cycle Log row; ``waved``: the log has a Wave column (a cycle ran in
    one, gtd.auto.report_waves)."""
    notes: list[str] = []
    if rec.status == "passed":
        outcome, reason = cell(rec.commit), ""
    elif rec.status == "reverted":
        ref = kept_ref(rec)
        outcome = cell(f"work kept at `{ref}`" if ref else "nothing to keep")
        reason = short(rec.reason or "", MAX_REASON)
    elif rec.status == "paused":  # the harness stopped the agent: kept, not judged
        outcome = cell(f"kept at `{kept_ref(rec)}`")
        reason = short(f"{rec.reason or ''} (retried after {rec.until})", MAX_REASON)
    else:
        outcome, reason = DASH, short(rec.reason or "", MAX_REASON)
    if rec.flaky:
        notes.append(f"flaky, tolerated: {short(', '.join(rec.flaky), MAX_TEST_ID)}")
    if rec.env_skipped:
        skipped = short(", ".join(rec.env_skipped), MAX_TEST_ID)
        notes.append(f"skipped, as the base commit's code is now (environment): {skipped}")
    if rec.yours:
        notes.append("your work: " + "; ".join(rec.yours))
    if rec.agent_exit:
        notes.append(f"agent exited {rec.agent_exit} (see Agent Output)")
    reason = "; ".join(part for part in (reason, *notes) if part)
    return row(
        str(rec.cycle),
        *((report_waves.log_cell(rec),) if waved else ()),
        cell(rec.task),
        cell(flat(rec.title or run.title_of(rec.task)) or None),
        rec.status,
        outcome,
        cell(reason or None),
        tests_line(rec),
        duration(rec.duration_s),
        cell(rec.at),
        *extra,
    )


def probe_rows(mem: Memory, cycles: list[CycleRecord]) -> list[str]:
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
        notes = rec.learning or (short(rec.reason or "", MAX_REASON) if failed else None)
        rows.append(row(cell(probe), metric, cell(winner), loser, cell(notes)))
        if rec.learning:
            shown.add((rec.task, rec.learning.strip()))
    # Learnings with no spike cycle behind them (a deepflow-era file) still belong here.
    for learned in mem.probe_learnings:
        if (learned.spike, learned.insight) not in shown:
            rows.append(_legacy_probe_row(learned))
    return rows


def _legacy_probe_row(learned: ProbeLearning) -> str:
    probe = f"{learned.spike}: {learned.probe}" if learned.probe.strip() else learned.spike
    return row(cell(probe), DASH, DASH, DASH, cell(learned.insight))


def _verify_row(result: VerifyResult) -> str:
    label = f"Verify {result.level}" + (f" ({result.name})" if result.name else "")
    status = f"{_VERIFY_MARK.get(result.status, '?')} {result.status}"
    if result.detail:
        status += f" ({result.detail})"
    return row(cell(label), cell(status))


def health_table(run: Run) -> list[str]:
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
        row("Tests", tests_line(passed)),
        row("Measured on", cell(measured)),
        row("Build status", build),
        row("Ratchet", ratchet),
    ]
    if last is not None and last.status == "reverted":
        since = f"as cycle {passed.cycle} left it" if passed is not None else "as it was at setup"
        what = f"cycle {last.cycle} ({last.task}) reverted; the branch is {since}"
        rows.append(row("Last cycle", cell(what)))
    rows += [_verify_row(result) for result in (run.health.verify if run.health else ())]
    return table(("Check", "Status"), rows)


def reverted_table(run: Run) -> tuple[list[str], bool]:
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
            row(
                cell(rev.task),
                cell(flat(title) or None),
                str(rev.cycle),
                cell(short(rev.reason, MAX_REASON)),
                kept,
            )
        )
    body = table(("Task", "Title", "Cycle", "Reason", "Kept work"), rows)
    if rows:
        body += [
            "",
            "A reverted cycle's whole working tree is kept under "
            f"`{kept_under}N`: `git show {kept_under}N --stat` lists what "
            f"it changed, `git checkout {kept_under}N -- <path>` brings a file back.",
        ]
    return body, bool(rows)
