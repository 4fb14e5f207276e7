"""The budget ceiling at the edge: `gtd cycle begin`'s gate before a task starts,
and `gtd cycle reset --budget` (docs/budget.md).

The decision is gtd.auto.budget's, from the sealed records and the sealed config.
What it makes a person hear of (a warning, a halt) is sealed as a ``budget``
record in the same state write, under the state lock: a tick killed after the
seal leaves the event for the next one to tell (gtd.auto.notifier), and a tick
killed before it leaves nothing, so the next one seals it; two never do.
"""

from __future__ import annotations

from pathlib import Path

from gtd.auto import budget, state
from gtd.auto.cycle import answers
from gtd.auto.cycle.answers import Answer
from gtd.auto.state import State, sealed_config
from gtd.clock import Now
from gtd.git import Git


def gate(root: Path, git: Git, st: State, task: str, now: Now) -> tuple[State, Answer | None, str]:
    """Before ``task`` starts: the state (with any new budget record sealed), the
    halt answer when the ceiling stops it (None: start it), and the warning to
    add to the task's answer: once, when it is sealed ("" otherwise; every
    tick's answer is read by the model, the report keeps saying it)."""
    ceiling = budget.ceiling_of(sealed_config(st))
    if ceiling is None:
        return st, None, ""
    decision = budget.decide(st.records, ceiling, task)
    new = budget.due(st.records, decision, now.iso)
    if new:
        from gtd.auto import plan_file
        from gtd.auto.faults import crash_point
        from gtd.auto.rendering import render

        st = state.write(git, st, f"budget: {', '.join(e.event for e in new)}", append=new)
        crash_point("budget-sealed")
        render(root, st, plan_file.load(root)[1], now)  # the State says it; told after
    if decision.halt is not None:
        reason = (
            "budget: a cost the ceiling cannot see"
            if decision.halt == "unpriced"
            else f"budget ceiling ({budget.key(decision)})"
        )
        return st, answers.budget_halted(task, reason, decision.message, budget.how(decision)), ""
    warned = any(e.event == "warning" for e in new)
    return st, None, decision.message if warned else ""


def reset(root: Path, now: Now) -> Answer:
    """`gtd cycle reset --budget`: a ``reset`` record begins a new night. Refused
    while a cycle is in flight: its agent (which can run the helper) must not
    be able to clear the count it is spending against."""
    from gtd.auto import plan_file
    from gtd.auto.rendering import render
    from gtd.auto.state import require_setup
    from gtd.errors import GtdError
    from gtd.fsio import locked, state_lock

    git = Git(root, hardened=True)
    with locked(state_lock(root)):
        st = state.read(git)
        require_setup(root, st)
        if st.journal is not None and st.journal.kind != "baseline":
            raise GtdError(
                f"cycle {st.journal.cycle} ({st.journal.task}) is in flight: the budget is "
                "reset between cycles",
                "let it end (or stop the loop; the next `gtd cycle begin` finishes it), then reset",
            )
        event = budget.reset(st.records, now.iso)
        if event is None:
            return {"status": "unchanged", "message": "nothing spent since the night began"}
        st = state.write(git, st, "budget reset", append=[event])
        render(root, st, plan_file.load(root)[1], now)
    spent = budget.usd(event.usd or 0.0)
    return {
        "status": "reset",
        "message": f"budget reset: {spent} and {budget.tokens(event.tokens or 0)} spent "
        "before it; the night's count starts again from zero",
    }
