"""The report's cost parts (docs/cost.md): the Cycle Log's Tokens and Cost
columns, the Summary's cost rows, and a Mermaid chart of cost per task.

Pure: the sealed cycle records in, markdown out. Shown only once a cycle has
recorded what it spent, so a run that never does (an agent that reports nothing)
reads as before, with one Summary row saying its tokens are unknown.

``billing``: ``api`` (the harness charges per token: the cost is the bill) or
``subscription`` (it does not: the same arithmetic is labelled API-equivalent).
"""

from __future__ import annotations

from collections.abc import Sequence

from gtd import paths
from gtd.auto.memory import CycleRecord
from gtd.auto.usage import Usage, total

DASH = "—"
UNKNOWN = "unknown"


def shown(cycles: Sequence[CycleRecord]) -> bool:
    return any(rec.usage is not None for rec in cycles)


def label(billing: str) -> str:
    return "Cost (API-equivalent)" if billing == "subscription" else "Cost"


def dollars(usd: float | None) -> str:
    if usd is None:
        return UNKNOWN
    return f"${usd:,.4f}" if usd < 1 else f"${usd:,.2f}"


def tokens(usage: Usage | None) -> str:
    return DASH if usage is None else f"{usage.tokens:,}"


def cost(usage: Usage | None) -> str:
    return DASH if usage is None else dollars(usage.usd)


def header(billing: str) -> tuple[str, str]:
    return ("Tokens", label(billing))


def cells(rec: CycleRecord) -> tuple[str, str]:
    return tokens(rec.usage), cost(rec.usage)


def per_task(cycles: Sequence[CycleRecord]) -> dict[str, Usage]:
    """Each task's total over its cycles (those that recorded any), in the order
    the tasks were first tried."""
    out: dict[str, Usage] = {}
    for rec in cycles:
        if rec.usage is not None:
            out[rec.task] = out[rec.task].plus(rec.usage) if rec.task in out else rec.usage
    return out


def _tasks(count: int) -> str:
    return "1 task" if count == 1 else f"{count} tasks"


def _share(part: float | None, whole: float | None) -> str:
    if part is None or not whole:
        return ""
    return f" ({part / whole:.0%})"


def summary_rows(cycles: Sequence[CycleRecord], billing: str) -> list[tuple[str, str]]:
    """(metric, value) rows for the Summary."""
    ran = [r for r in cycles if r.status != "skipped"]
    if not ran:
        return []
    known = [r for r in ran if r.usage is not None]
    if not known:
        return [("Tokens", "unknown: the harness reported none (docs/cost.md)")]
    name = label(billing)
    all_of = total([r.usage for r in known])
    assert all_of is not None
    rows: list[tuple[str, str]] = []
    missing = len(ran) - len(known)
    note = f" ({missing} of {len(ran)} cycles reported none)" if missing else ""
    unpriced = [
        m for r in known if r.usage is not None and r.usage.usd is None for m in r.usage.models
    ]
    if all_of.usd is None:
        note += " (no price for " + ", ".join(dict.fromkeys(unpriced) or ["a model"]) + ")"
    rows.append(
        (
            f"Total {name[0].lower()}{name[1:]}",
            f"{dollars(all_of.usd)} for {all_of.tokens:,} tokens{note}",
        )
    )
    committed = [r for r in known if r.status == "passed" and r.task != paths.BOOTSTRAP]
    tasks = {r.task for r in committed}
    if tasks:
        spent = total([u for t, u in per_task(known).items() if t in tasks])
        usd = None if spent is None or spent.usd is None else spent.usd / len(tasks)
        rows.append(
            (f"{name} per committed task", f"{dollars(usd)} ({_tasks(len(tasks))}, all cycles)")
        )
    reverted = total([r.usage for r in known if r.status == "reverted"])
    if reverted is not None:
        rows.append(
            (f"{name} of reverted work", dollars(reverted.usd) + _share(reverted.usd, all_of.usd))
        )
    tick = total([r.usage_tick for r in known])
    if tick is not None:
        work = None if all_of.usd is None or tick.usd is None else all_of.usd - tick.usd
        rows.append(
            (
                "Tick overhead vs agent work",
                f"{dollars(tick.usd)}{_share(tick.usd, all_of.usd)} vs "
                f"{dollars(work)}{_share(work, all_of.usd)}",
            )
        )
    review = total([r.usage_review for r in known])
    if review is not None:
        rows.append(
            ("Reviewer (in agent work)", dollars(review.usd) + _share(review.usd, all_of.usd))
        )
    return rows


def chart(cycles: Sequence[CycleRecord], billing: str, limit: int = 20) -> list[str]:
    """A Mermaid pie of cost per task (the costliest ``limit``, the rest as one
    slice); empty when no cost is known."""
    costs = [(t, u.usd) for t, u in per_task(cycles).items() if u.usd]
    if not costs:
        return []
    costs.sort(key=lambda item: -(item[1] or 0.0))
    slices = costs[:limit]
    rest = sum(usd or 0.0 for _, usd in costs[limit:])
    body = ["```mermaid", "pie showData", f"  title {label(billing)} per task (USD)"]
    body += [f'  "{_safe(task)}" : {usd:.4f}' for task, usd in slices]
    if rest:
        body.append(f'  "{len(costs) - limit} more tasks" : {rest:.4f}')
    body.append("```")
    caption = (
        "What each task cost, all its cycles (reverted ones included), from the "
        "tokens the harness recorded and the price table (docs/cost.md)."
    )
    return [caption, "", *body]


def _safe(task: str) -> str:
    # Mermaid has no escape for a quote in a label (as gtd.auto.chart)
    from gtd.auto.chart import _safe as safe

    return safe(task, 20)
