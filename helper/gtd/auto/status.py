"""`gtd auto status`: the loop at a glance, in one line or one object.

Pure: the sealed state's journal and records, PLAN.md and the clock in; the
status out. The state is derived as `gtd cycle begin` would decide it (the
breaker from the records, complete and blocked from the plan), so the glance
and the next tick never disagree; nothing here waits on the state lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gtd.auto import breaker, records
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord
from gtd.auto.plan import Plan

if TYPE_CHECKING:
    from typing import Any

    from gtd.auto.budget import Decision

# No cycle recorded what it spent (none ran yet, or the agent reports nothing):
# said, never guessed (docs/cost.md).
COST_UNKNOWN = "cost unknown"


def status(
    journal: Journal | None,
    history: Sequence[CycleRecord | Any],
    plan: Plan,
    threshold: int,
    now_epoch: float,
    notifier_failure: str | None = None,
    budget: Decision | None = None,
    billing: str = "api",
) -> dict[str, Any]:
    """``budget``: the night's budget decision for the next task (gtd.auto.budget
    .for_next), when a ceiling is set."""
    state, detail = _state(journal, history, plan, threshold, now_epoch, budget)
    done = sum(1 for t in plan.tasks if t.status == "done")
    left = len(plan.pending)
    last = next((r for r in reversed(history) if isinstance(r, CycleRecord)), None)
    out: dict[str, Any] = {
        "state": state,
        "detail": detail,
        "done": done,
        "left": left,
        "cost": _cost(history, billing),
        "last": _verdict(last) if last is not None else None,
        "budget": None,
    }
    if budget is not None:
        from gtd.auto import budget as budget_mod

        out["budget"] = budget_mod.as_json(budget)
        out["budget"]["line"] = "budget " + budget_mod.spent_line(budget.spent, budget.ceiling)
    if journal is not None and journal.kind != "baseline":
        out["cycle"] = journal.cycle
        out["task"] = journal.task
    if notifier_failure:
        out["notifier"] = notifier_failure
    out["line"] = line(out)
    return out


def _state(
    journal: Journal | None,
    history: Sequence[Any],
    plan: Plan,
    threshold: int,
    now_epoch: float,
    budget: Decision | None = None,
) -> tuple[str, str]:
    if journal is not None:
        if journal.kind == "baseline":
            return "checking", "taking the baseline"
        what = f"{journal.task} ({journal.title})" if journal.title else journal.task
        if journal.blocked:
            return "blocked", f"cycle {journal.cycle} {journal.task}: {journal.blocked}"
        if journal.phase == "agent":
            minutes = max(0, int((now_epoch - journal.started_epoch) // 60))
            return "running", f"the agent on {what} for {minutes} min"
        if journal.phase == "checking":
            return "checking", f"the tests of {what} (cycle {journal.cycle})"
        return "checking", f"finishing {what} (cycle {journal.cycle})"
    last = next((r for r in reversed(history) if isinstance(r, CycleRecord)), None)
    if last is not None and str(last.status) == "paused":  # the harness stopped the agent
        # (a paused cycle is never counted by the breaker: nothing to fold for it)
        return "paused", last.reason or f"{last.task}: the agent's harness stopped it"
    mem = records.fold(history)
    trip = breaker.check(mem, threshold, [t.id for t in plan.pending])
    if trip is not None:
        return "halted", trip.message
    if not plan.pending:
        count = len(plan.tasks)
        return "complete", "its one task done" if count == 1 else f"all {count} tasks done"
    from gtd.auto import next_task

    pick = next_task.pick(plan)
    if pick.kind == "blocked":
        waits = ", ".join(f"{t.id} on {', '.join(b)}" for t, b in pick.blocked)
        return "blocked", f"every remaining task waits on an unfinished one ({waits})"
    if pick.task is not None:
        if budget is not None and budget.halt is not None:
            return "halted", budget.message
        return "idle", f"next: {pick.task.id} ({pick.task.title})"
    return "idle", "waiting for the next tick"


def _cost(history: Sequence[Any], billing: str) -> dict[str, Any] | None:
    """What the night's cycles spent so far, as sealed: dollars (None: a model
    without a price), tokens, and whether the dollars are API-equivalent."""
    from gtd.auto.usage import total

    spent = total([r.usage for r in history if isinstance(r, CycleRecord)])
    if spent is None:
        return None
    return {
        "usd": None if spent.usd is None else round(spent.usd, 6),
        "tokens": spent.tokens,
        "api_equivalent": billing == "subscription",
    }


def _cost_words(cost: dict[str, Any] | None) -> str:
    if cost is None:
        return COST_UNKNOWN
    usd = "unknown" if cost["usd"] is None else f"${cost['usd']:,.2f}"
    label = "cost (API-equivalent)" if cost.get("api_equivalent") else "cost"
    return f"{label} {usd} ({cost['tokens']:,} tokens)"


def _verdict(rec: CycleRecord) -> str:
    head = f"cycle {rec.cycle} {rec.task}"
    if rec.status == "passed":
        return f"{head} passed {rec.commit or ''}".rstrip()
    if rec.status == "reverted":
        return f"{head} reverted ({rec.reason or 'no reason given'})"
    return f"{head} {rec.status}" + (f" ({rec.reason})" if rec.reason else "")


def line(st: dict[str, Any]) -> str:
    parts = [f"{st['state']}: {st['detail']}"]
    total = st["done"] + st["left"]
    parts.append(f"{st['done']} of {total} {'task' if total == 1 else 'tasks'} done")
    parts.append(_cost_words(st.get("cost")))
    if st.get("budget"):
        parts.append(st["budget"]["line"])
    if st.get("last"):
        parts.append(f"last: {st['last']}")
    if st.get("notifier"):
        parts.append(f"notifier failed: {st['notifier']}")
    return " · ".join(parts)
