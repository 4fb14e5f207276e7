"""The morning report's State (gtd.auto.report), at the top: running (what is in
flight), halted (why, at which task, and the exact commands that resume),
paused, blocked, complete (verified or not), or in progress between cycles —
decided the way `gtd cycle begin` decides, from the same values. And the values
of the run every section is rendered from.

Pure: values in, markdown lines out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gtd.auto import breaker
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord, Memory
from gtd.auto.next_task import pick
from gtd.auto.plan import Plan
from gtd.auto.report_text import flat, id_list, kept_ref, named_task, plural, show_command
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Literal

    from gtd.auto.budget import Decision
    from gtd.auto.wave_journal import Wave as WaveJournal

    VerifyStatus = Literal["passed", "failed", "warning", "skipped"]
else:
    VerifyStatus = str


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


class Run(NamedTuple):
    mem: Memory
    cycles: list[CycleRecord]
    plan: Plan | None
    journal: Journal | None
    threshold: int
    health: Health | None
    failing: tuple[int, list[str]] = (0, [])  # tests failing at the baseline
    now: str = ""
    budget: Decision | None = None  # the night's budget for the next task (gtd.auto.budget)
    waiting: str | None = None  # why the last tick started nothing (a dirty tree)
    main_line: str | None = None  # the branch checked out, when it is the main line
    wave: WaveJournal | None = None  # the wave in flight, if any (gtd.auto.report_waves)

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


def state(run: Run) -> list[str]:
    journal = run.journal
    if journal is not None and journal.blocked:
        where = f"cycle {journal.cycle} ({named_task(journal.task, journal.title)})"
        return [
            f"**Halted** — {where} could not finish: {flat(journal.blocked)}",
            "",
            "To resume:",
            "",
            "1. Fix what the message names.",
            "2. Run `gtd cycle begin`: it finishes the cycle.",
            f"3. Start the loop again: {RESTART}.",
        ]
    from gtd.auto import report_waves

    if run.wave is not None and report_waves.in_flight(run.wave):
        return report_waves.running(run.wave, journal)
    if journal is not None:
        since = f"(since {journal.started_at})"
        if journal.kind == "baseline":
            return [f"**Running** — {flat(journal.title)} {since}."]
        what = _PHASES.get(journal.phase, journal.phase)
        where = f"cycle {journal.cycle}, {named_task(journal.task, journal.title)}"
        return [f"**Running** — {where}: {what} {since}."]
    if run.waiting:  # `begin` answered dirty: the ticks go on, and start nothing
        return [f"**Waiting** — {flat(run.waiting)}"]
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
            f"**Paused** until {clock(held.until)} — {flat(held.reason)}.",
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
    nxt = named_task(choice.task.id, choice.task.title)
    if not run.cycles:
        return [f"**Ready** — no cycle has run yet; the first task is {nxt}."]
    return [f"**In progress** — no cycle in flight; the next task is {nxt}."]


def _halted(run: Run, trip: breaker.Trip) -> list[str]:
    task = trip.task
    if task == "baseline":
        return [
            f"**Halted** — {flat(trip.message)}",
            "",
            "To resume:",
            "",
            "1. Fix the test suite or its environment, and commit.",
            "2. Run `gtd cycle reset`.",
            f"3. Start the loop again: {RESTART}.",
        ]
    head = f"**Halted** at {named_task(task, run.title_of(task))} — {flat(trip.message)}"
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


def _complete(run: Run) -> list[str]:
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


def budget_lines(run: Run) -> list[str]:
    from gtd.auto.budget import report_lines

    return report_lines(run.budget) if run.budget is not None else []


def plan_line(run: Run) -> list[str]:
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
    text += f" ({id_list(remaining)})." if remaining else "."
    return ["", text]


def tolerated_lines(run: Run) -> list[str]:
    from gtd.auto.report_notes import failing_line

    line = failing_line(*run.failing)
    return ["", line] if line else []


def main_line_lines(run: Run) -> list[str]:
    """Setup warns of a set-up on the main line once; the report says it for as
    long as it is so, where a person looks in the morning."""
    if run.main_line is None:
        return []
    return [
        "",
        f"Branch: the loop commits on `{run.main_line}`, the main line; "
        "`git switch -c gtd-auto` while no cycle is in flight puts the next cycles "
        "on a branch of their own.",
    ]


def body(run: Run) -> list[str]:
    """The State section: the state, then what remains of the plan, the budget,
    the tests already failing at the baseline and a main line checked out, each
    where it has something to say."""
    return [
        *state(run),
        *plan_line(run),
        *budget_lines(run),
        *tolerated_lines(run),
        *main_line_lines(run),
    ]
