"""What `gtd cycle begin|end|reset` answer. Pure: values in, typed answers out.

Every answer is a flat mapping with ``status`` first; the CLI prints it as
``key: value`` lines (what a tick injects into the model's context) or as one JSON
object. A verdict is never an error: `end` answers ``passed`` or ``reverted``
(or ``checking`` when the tests outlive its wait) with ``next:`` saying whether the
loop goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gtd import paths
from gtd.auto.breaker import Trip
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord, Pause
from gtd.auto.next_task import BlockedInfo

if TYPE_CHECKING:
    from typing import Literal, TypedDict

    Status = Literal[
        # begin
        "task",
        "wave",
        "busy",
        "paused",
        "halted",
        "blocked",
        "dirty",
        "complete",
        "error",
        # end
        "passed",
        "queued",
        "reverted",
        "checking",
        "review",
        # reset
        "reset",
        "unchanged",
    ]

    Next = Literal["continue", "halt", "complete"]

    class _Required(TypedDict):
        status: Status

    class Answer(_Required, total=False):
        cycle: int
        task: str
        title: str
        kind: str
        spike: bool
        phase: str
        since: str
        files: list[str]
        brief: str
        brief_text: str
        paths: list[str]
        blocked: list[BlockedInfo]
        done: int
        commit: str
        reason: str
        kept: str
        tests: str
        remaining: int
        tasks: list[str]
        pid: int
        duration_s: float
        flaky: list[str]
        skipped_by_environment: list[str]
        look_at: list[str]
        install_metadata: str
        new_tests: str
        review: str
        your_work: list[str]
        recovered: str
        budget: str
        previous: str
        ended_before: str
        until: str
        message: str
        next: str
        wave: int
        cycles: list[int]
        briefs: list[str]
        worktrees: list[str]
else:
    Status = str
    Next = str
    _Required = dict
    Answer = dict


_MAX_REASON = 300  # a reason longer than this is cut in answers (memory keeps it whole)


def short(text: str, limit: int = _MAX_REASON) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, marked with …, and
    every over-long word (a test id of kilobytes) cut in its middle."""
    from gtd.auto.shorten import shorten

    return shorten(text, limit)


def review(journal: Journal, brief: str) -> Answer:
    """The change waits for the reviewer (review.agent): the loop runs it on the
    brief, then `gtd cycle end --cycle N --review '<its Verdict line>'`."""
    return {
        "status": "review",
        "cycle": journal.cycle,
        "task": journal.task,
        "brief": brief,
        "next": f"run gtd:reviewer on the brief, then gtd cycle end --cycle {journal.cycle} "
        "--review '<its Verdict line>'",
    }


def busy(journal: Journal) -> Answer:
    if journal.kind == "baseline":
        return {
            "status": "busy",
            "phase": journal.phase,
            "since": journal.started_at,
            "message": journal.title or "the ratchet is taking a new baseline",
            "next": "end this tick; the baseline run finishes on its own",
        }
    return _cycle_busy(
        journal,
        f"cycle {journal.cycle} ({journal.task}) is in flight ({journal.phase})",
        "end this tick; the running cycle finishes on its own"
        if journal.phase != "agent"
        # An agent at work ends its own cycle; a cycle still here at a tick is
        # most often one whose `end` failed (a full disk, a file git refused),
        # judged on its own only after the agent timeout.
        else "end this tick; once no agent is at work on it, `gtd cycle end` judges it",
    )


def judging(journal: Journal) -> Answer:
    """`begin` judges a cycle whose tick ended without `gtd cycle end` (its session
    asks again, or is gone), and the tests outlived its wait."""
    return _cycle_busy(
        journal,
        f"cycle {journal.cycle} ({journal.task}) ended without `gtd cycle end`: its tests run now",
        "end this tick; a later tick reports the verdict",
    )


def _cycle_busy(journal: Journal, message: str, next_step: str) -> Answer:
    return {
        "status": "busy",
        "cycle": journal.cycle,
        "task": journal.task,
        "phase": journal.phase,
        "since": journal.started_at,
        "message": message,
        "next": next_step,
    }


def paused(held: Pause) -> Answer:
    """The harness stopped the last agent (a usage limit, an overloaded API): the
    loop waits until ``until``. As short as busy: every tick of the wait says it."""
    from gtd.auto.pause import describe

    return {
        "status": "paused",
        "until": held.until,
        "message": describe(held),
        "next": "end this tick",
    }


def halted(trip: Trip) -> Answer:
    return {
        "status": "halted",
        "task": trip.task,
        "reason": short(trip.reason),
        "message": short(trip.message),
        "next": f"stop the loop; fix {trip.task} by hand, then run `gtd cycle reset {trip.task}`"
        if trip.task != "baseline"
        else "stop the loop; fix the test suite or its environment, then run `gtd cycle reset`",
    }


def budget_halted(task: str, reason: str, message: str, how: str) -> Answer:
    """The night's budget stops ``task`` before it starts (gtd.auto.budget)."""
    return {
        "status": "halted",
        "task": task,
        "reason": reason,
        "message": short(message),
        "next": f"stop the loop; {how}",
    }


def stopped(journal: Journal) -> Answer:
    """A cycle whose check or finish stopped on something only a person can fix."""
    reason = short(journal.blocked or "stopped")
    return {
        "status": "halted",
        "cycle": journal.cycle,
        "task": journal.task,
        "reason": reason,
        "message": f"cycle {journal.cycle} ({journal.task}) could not finish: {reason}",
        "next": "stop the loop; fix it, then run `gtd cycle begin` (it finishes the cycle)",
    }


def dirty(changed: Sequence[str], install_metadata: str | None = None) -> Answer:
    """``install_metadata``: the advice on tracked files the project's install
    regenerates (gtd.auto.install_metadata), where some of ``changed`` are."""
    answer: Answer = {
        "status": "dirty",
        "paths": list(changed),
        "message": f"{plural(len(changed), 'uncommitted change')} not made by a cycle, untouched",
        "next": "end this tick; the human commits or stashes their work",
    }
    if install_metadata:
        answer["next"] = (
            "end this tick; the human runs the install_metadata: command (and commits or "
            "stashes any other work)"
        )
        answer["install_metadata"] = install_metadata
    return answer


def complete(done: int) -> Answer:
    return {
        "status": "complete",
        "done": done,
        "message": f"All tasks complete ({done} done).",
        "next": "stop the loop, then run `gtd verify`",
    }


def blocked(waiting: Sequence[BlockedInfo]) -> Answer:
    """``waiting``: the blocked tasks as gtd.auto.next_task.answer lists them."""
    return {
        "status": "blocked",
        "blocked": list(waiting),
        "message": "All remaining tasks are blocked: "
        + "; ".join(f"{t['id']} by {', '.join(t['blocked_by'])}" for t in waiting),
        "next": "stop the loop; resolve the blockers in PLAN.md by hand",
    }


def refreshing(why: str) -> Answer:
    return {
        "status": "busy",
        "phase": "checking",
        "message": f"{why}: taking a new baseline",
        "next": "end this tick; the next tick starts a task once the baseline is in",
    }


def task(journal: Journal, files: Sequence[str], brief_text: str) -> Answer:
    return {
        "status": "task",
        "cycle": journal.cycle,
        "task": journal.task,
        "title": journal.title,
        "kind": journal.kind,
        "spike": journal.spike,
        "files": list(files),
        "brief": paths.BRIEF,
        "brief_text": brief_text,
        "next": "run the implementer subagent on the brief, then "
        f"`gtd cycle end --cycle {journal.cycle}`",
    }


def wave(
    number: int,
    cycles: Sequence[int],
    tasks: Sequence[str],
    briefs: Sequence[str],
    worktrees: Sequence[str],
) -> Answer:
    """A wave began (docs/parallel.md): one implementer per brief at once, each in
    its worktree, then `gtd cycle end --cycle N` for each cycle in this order."""
    return {
        "status": "wave",
        "wave": number,
        "cycles": list(cycles),
        "tasks": list(tasks),
        "briefs": list(briefs),
        "worktrees": list(worktrees),
        "next": "run one implementer per brief at once, each in its worktree; then "
        "`gtd cycle end --cycle N` for each cycle, in this order",
    }


def checking(journal: Journal) -> Answer:
    return {
        "status": "checking",
        "cycle": journal.cycle,
        "task": journal.task,
        "pid": journal.pid or 0,
        "since": journal.started_at,
        "message": f"cycle {journal.cycle} ({journal.task}): the tests are still running "
        "in the background",
        "next": "end this tick; a later tick reports the verdict",
    }


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def ended(rec: CycleRecord, remaining: int, trip: Trip | None) -> Answer:
    answer: Answer = {
        "status": "passed" if rec.status == "passed" else "reverted",
        "cycle": rec.cycle,
        "task": rec.task,
        "remaining": remaining,
    }
    if rec.status == "skipped":  # a wave's task back to the queue (docs/parallel.md)
        answer["status"] = "queued"
    if rec.status == "paused":
        answer["status"] = "paused"
        answer["until"] = rec.until or rec.at
    if rec.commit:
        answer["commit"] = rec.commit
    if rec.status != "passed":
        if rec.reason:
            answer["reason"] = short(rec.reason)
        # "": the cycle changed nothing, so no ref was made for it
        kept = f"{paths.REVERTED_REF}{rec.cycle}" if rec.kept is None else rec.kept
        if kept:
            answer["kept"] = kept
    if rec.tests_total is not None:
        answer["tests"] = f"{rec.tests_passed} / {rec.tests_total}"
    if rec.new_tests:
        answer["new_tests"] = rec.new_tests
    if rec.flaky:
        from gtd.auto.shorten import shorten_word

        answer["flaky"] = [shorten_word(t) for t in rec.flaky]
    if rec.env_skipped:
        from gtd.auto.shorten import shorten_word

        answer["skipped_by_environment"] = [shorten_word(t) for t in rec.env_skipped]
    if rec.look_at:
        answer["look_at"] = [short(f) for f in rec.look_at]
    if rec.review:
        answer["review"] = short(rec.review)
    if rec.yours:
        answer["your_work"] = list(rec.yours)
    if rec.duration_s is not None:
        answer["duration_s"] = rec.duration_s
    if trip is not None:
        answer["next"] = "halt"
        answer["message"] = short(trip.message)
    elif rec.status == "paused":
        answer["next"] = "continue"
        answer["message"] = (
            f"The harness stopped the agent ({rec.harness}); work kept, not counted. "
            f"Paused until {rec.until}."
        )
    elif not remaining:
        answer["next"] = "complete"
        answer["message"] = "All tasks complete. Stop the loop and run `gtd verify`."
    else:
        answer["next"] = "continue"
        done = {"passed": "Cycle passed", "skipped": "Task back to the queue"}.get(
            rec.status, "Cycle reverted"
        )
        answer["message"] = f"{done}. {plural(remaining, 'task')} remaining."
    return answer


def previous(rec: CycleRecord) -> str:
    """One line on a cycle whose verdict no `end` reported (it came in the background)."""
    if rec.status == "passed":
        return f"cycle {rec.cycle} {rec.task} passed {rec.commit or ''}".rstrip()
    if rec.status == "paused":
        return f"cycle {rec.cycle} {rec.task} paused until {rec.until}: {rec.harness}"
    return f"cycle {rec.cycle} {rec.task} reverted: {short(rec.reason or 'no reason', 200)}"


def recovered(journal: Journal, committed: bool) -> str:
    if journal.pause and not committed:
        return (
            f"cycle {journal.cycle} ({journal.task}) was stopped by the harness; "
            f"paused, its work kept: {short(journal.reason or '', 200)}"
        )
    what = "committed" if committed else "reverted"
    text = f"cycle {journal.cycle} ({journal.task}) was interrupted; {what} it"
    if journal.reason and not committed:
        text += f": {short(journal.reason, 200)}"
    return text


def reset(cleared: Sequence[str]) -> Answer:
    return {
        "status": "reset",
        "tasks": list(cleared),
        "message": f"circuit breaker reset for {', '.join(cleared)}; the loop may run again",
    }


def unchanged() -> Answer:
    return {"status": "unchanged", "message": "no tripped circuit breaker to reset"}
