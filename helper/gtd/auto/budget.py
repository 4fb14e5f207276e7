"""The budget ceiling of a night: what was spent, what the next task is expected to
cost, and whether the loop warns or halts before starting it.

Pure: the sealed records (gtd.auto.records) and the sealed config in, values out.
The spend is folded from the cycle records' ``usage`` (gtd.auto.usage), which
only the helper writes into its sealed state, so an agent can neither lower the
count nor raise the ceiling (the config it is read from is sealed with the
snapshot). The decision is re-derived at every `gtd cycle begin`, like the
breaker's: raising the ceiling (a committed config) resumes the loop with no
second piece of state to keep in sync. What *is* recorded is what a person is
told, once: a ``budget`` record for a warning, a halt and a reset
(:class:`BudgetEvent`), from which gtd.auto.notify derives ``budget-warning``
and ``budget-halt``.

"The night" is everything since auto mode was set up here, or since the last
``gtd cycle reset --budget`` (a ``reset`` event).

What is not known is never guessed (docs/budget.md, "Unknown usage"): a cycle
without usage (an agent that reports none, a run killed before it reported)
counts nothing and is said; a cycle whose tokens are known but whose model has
no price counts its tokens, and halts a night whose only ceiling is in dollars.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gtd import paths, schema
from gtd.auto.memory import CycleRecord
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Any, Literal

    from gtd.auto.config import AutoConfig
    from gtd.auto.plan import Plan
    from gtd.auto.records import Record

    Kind = Literal["warning", "halt", "reset"]
else:
    Kind = str

WARN_AT = 0.8  # the default share of a ceiling at which the loop warns
EVENTS: tuple[Kind, ...] = ("warning", "halt", "reset")
CONFIG_FILE = paths.CONFIG
# Floating-point sums of dollars: a spend this close to the ceiling is at it.
_EPSILON = 1e-9


# -- the config section ------------------------------------------------------------------


class _Share(schema.Number):
    """A share of the ceiling: above 0, at most 1. A percentage (80) is the likely
    mistake, so the message says which form is meant."""

    def __init__(self) -> None:
        super().__init__(0, inclusive=False, unit="the ceiling's share")
        self.expected = "a share of the ceiling above 0 and at most 1 (0.8 warns at 80 %)"

    def check(self, value: object, path: schema.Path) -> float:
        share = super().check(value, path)
        if share > 1:
            raise schema.Invalid(
                path,
                "rule",
                self,
                value,
                f"must be a share of the ceiling from 0 to 1, not {share:g}",
                hint=f"write {share / 100:g} for {share:g} %" if share <= 100 else None,
            )
        return share


class _Tokens(schema.Integer):
    hint = "write the count in full (5000000, or 5_000_000), not as 5e6"


# `.deepflow/config.yaml`'s ``budget:`` section (gtd.auto.config).
SCHEMA = schema.Fields(
    {
        "usd": schema.Number(0, inclusive=False, below=1e9, unit="US dollars"),
        "tokens": _Tokens(1),
        "warn_at": _Share(),
    }
)


class Ceiling(NamedTuple):
    """The night's ceilings as sealed: dollars and/or tokens, and the share of
    either at which the loop warns."""

    usd: float | None = None
    tokens: int | None = None
    warn_at: float = WARN_AT


def ceiling_of(config: AutoConfig) -> Ceiling | None:
    """The sealed config's ceiling; None when it sets neither."""
    if config.budget_usd is None and config.budget_tokens is None:
        return None
    return Ceiling(config.budget_usd, config.budget_tokens, config.budget_warn_at)


# -- the sealed events ----------------------------------------------------------------


class BudgetEvent(NamedTuple):
    """A ``budget`` record: a warning or a halt told (once), or a reset that
    starts a new night. The spend and the ceiling as they were, for the audit
    trail and the notification."""

    event: Kind
    at: str
    usd: float | None = None  # the night's known dollars then
    tokens: int | None = None
    ceiling_usd: float | None = None
    ceiling_tokens: int | None = None
    task: str | None = None  # halt: the task not started
    message: str | None = None  # one line for a person


def check_event(event: object) -> str | None:
    """Why a decoded ``budget`` record's event is not one (records' decode)."""
    return None if event in EVENTS else f"unknown budget event {event!r}"


# -- the fold ---------------------------------------------------------------------------


class Spend(NamedTuple):
    """What the night's cycles used, as far as it is known."""

    usd: float = 0.0  # the dollars of the cycles whose cost is known
    tokens: int = 0  # the tokens of the cycles whose usage is known
    cycles: int = 0  # every cycle of the night
    unmeasured: tuple[int, ...] = ()  # cycles with no usage recorded
    unpriced: tuple[int, ...] = ()  # cycles with tokens but no known cost
    unpriced_models: tuple[str, ...] = ()
    since: str | None = None  # the reset that began the night; None: set-up


def night(history: Sequence[Record]) -> tuple[list[CycleRecord], str | None]:
    """The cycle records since the last budget reset (each cycle once: a number
    recorded twice counts as its last record), and when that reset was."""
    start = _night_start(history)
    began = history[start - 1] if start else None
    return _once(history[start:]), began.at if isinstance(began, BudgetEvent) else None


def _once(history: Sequence[Record]) -> list[CycleRecord]:
    by_number: dict[int, CycleRecord] = {}
    for rec in history:
        if isinstance(rec, CycleRecord):
            by_number.pop(rec.cycle, None)  # (kept in the order of its last record)
            by_number[rec.cycle] = rec
    return list(by_number.values())


def spend(cycles: Sequence[CycleRecord], since: str | None = None) -> Spend:
    usd, tokens = 0.0, 0
    unmeasured: list[int] = []
    unpriced: list[int] = []
    models: list[str] = []
    for rec in cycles:
        used = rec.usage
        if used is None:
            unmeasured.append(rec.cycle)
            continue
        tokens += used.tokens
        if used.usd is None:
            unpriced.append(rec.cycle)
            models += [m for m in used.models if m not in models]
        else:
            usd += used.usd
    return Spend(usd, tokens, len(cycles), tuple(unmeasured), tuple(unpriced), tuple(models), since)


class Expected(NamedTuple):
    """What the next task is expected to cost, per kind (None: no history to go
    by), and what each figure comes from: ``task`` (its own earlier cycles) or
    ``night`` (the night's average per cycle)."""

    usd: float | None = None
    tokens: int | None = None
    usd_basis: str | None = None
    tokens_basis: str | None = None


def expected(history: Sequence[Record], cycles: Sequence[CycleRecord], task: str) -> Expected:
    """The average cost per cycle of ``task``'s own earlier cycles (any night:
    a task tried before costs about what it cost then), else of the night's
    cycles; per kind, only the cycles where it is known."""
    own = [r for r in _once(history) if r.task == task]
    usd, usd_basis = _average_usd(own), "task"
    if usd is None:
        usd, usd_basis = _average_usd(cycles), "night"
    tokens, tokens_basis = _average_tokens(own), "task"
    if tokens is None:
        tokens, tokens_basis = _average_tokens(cycles), "night"
    return Expected(
        usd,
        tokens,
        usd_basis if usd is not None else None,
        tokens_basis if tokens is not None else None,
    )


def _average_usd(cycles: Sequence[CycleRecord]) -> float | None:
    known = [r.usage.usd for r in cycles if r.usage is not None and r.usage.usd is not None]
    return sum(known) / len(known) if known else None


def _average_tokens(cycles: Sequence[CycleRecord]) -> int | None:
    known = [r.usage.tokens for r in cycles if r.usage is not None]
    return round(sum(known) / len(known)) if known else None


# -- the decision -----------------------------------------------------------------------


class Decision(NamedTuple):
    ceiling: Ceiling
    spent: Spend
    expected: Expected
    task: str
    warn: bool  # the spend is at or over the warning share of a ceiling
    halt: str | None  # why the task must not start: "usd", "tokens", "unpriced"; None: start
    message: str  # one line: the halt's, else the warning's, else the spend
    told: tuple[BudgetEvent, ...] = ()  # every budget record of the history, for the report


def decide(history: Sequence[Record], ceiling: Ceiling, task: str) -> Decision:
    """Whether ``task`` may start under ``ceiling``, given the sealed history."""
    cycles, since = night(history)
    spent = spend(cycles, since)
    guess = expected(history, cycles, task)
    warn = _over(spent.usd, ceiling.usd, ceiling.warn_at) or _over(
        spent.tokens, ceiling.tokens, ceiling.warn_at
    )
    halt = _halt(spent, guess, ceiling)
    told = tuple(r for r in history if isinstance(r, BudgetEvent))
    decision = Decision(ceiling, spent, guess, task, warn, halt, "", told)
    return decision._replace(message=_message(decision))


def _over(spent: float, limit: float | None, share: float = 1.0) -> bool:
    return limit is not None and spent >= limit * share - _EPSILON


def _crosses(spent: float, guess: float | None, limit: float | None) -> bool:
    return limit is not None and guess is not None and spent + guess > limit + _EPSILON


def _halt(spent: Spend, guess: Expected, ceiling: Ceiling) -> str | None:
    if _over(spent.usd, ceiling.usd):
        return "usd"
    if _over(spent.tokens, ceiling.tokens):
        return "tokens"
    if _crosses(spent.usd, guess.usd, ceiling.usd):
        return "usd"
    if _crosses(spent.tokens, guess.tokens, ceiling.tokens):
        return "tokens"
    # Tokens spent at a price nobody knows: a ceiling in dollars alone cannot be
    # kept, and a careful person would rather be asked than billed.
    if ceiling.usd is not None and ceiling.tokens is None and spent.unpriced:
        return "unpriced"
    return None


# -- words ------------------------------------------------------------------------------


def usd(amount: float) -> str:
    """Dollars as a person reads them: cents, or four places under a cent."""
    if 0 < amount < 0.01:
        return f"${amount:.4f}"
    return f"${amount:,.2f}"


def tokens(count: int) -> str:
    return f"{count:,} tokens"


def since(spent: Spend) -> str:
    return f"since the budget reset at {spent.since}" if spent.since else "since setup"


def spent_line(spent: Spend, ceiling: Ceiling) -> str:
    """``$0.85 of $1.00 (85 %) and 120,000 of 500,000 tokens (24 %)``: each ceiling set."""
    parts = []
    if ceiling.usd is not None:
        shown = usd(spent.usd) + (" or more" if spent.unpriced else "")
        parts.append(f"{shown} of {usd(ceiling.usd)} ({_percent(spent.usd, ceiling.usd)})")
    if ceiling.tokens is not None:
        parts.append(
            f"{spent.tokens:,} of {tokens(ceiling.tokens)} "
            f"({_percent(spent.tokens, ceiling.tokens)})"
        )
    return " and ".join(parts)


def _percent(part: float, whole: float) -> str:
    return f"{part / whole * 100:.0f} %"


def unknown_note(spent: Spend) -> str:
    """What the spend leaves out, or "" when nothing."""
    notes = []
    if spent.unmeasured:
        notes.append(f"{_cycles(spent.unmeasured)} recorded no usage (counted as nothing)")
    if spent.unpriced:
        models = f" ({', '.join(spent.unpriced_models)})" if spent.unpriced_models else ""
        notes.append(f"{_cycles(spent.unpriced)} of a model with no price{models}")
    return "; ".join(notes)


def _cycles(numbers: Sequence[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:5]) + (", …" if len(numbers) > 5 else "")
    return f"cycle {shown}" if len(numbers) == 1 else f"cycles {shown}"


def key(decision: Decision) -> str:
    """The config key a person raises to go on."""
    return "budget.tokens" if decision.halt == "tokens" else "budget.usd"


def how(decision: Decision) -> str:
    """What a person does to go on after ``decision``'s halt."""
    if decision.halt == "unpriced":
        return (
            f"add the model's price (docs/cost.md) and run `gtd cycle reset --budget`, or set "
            f"budget.tokens as well in {CONFIG_FILE} and commit it"
        )
    return (
        f"raise {key(decision)} in {CONFIG_FILE} and commit it, or run "
        "`gtd cycle reset --budget` to start a new night"
    )


def _message(decision: Decision) -> str:
    spent, ceiling, task = decision.spent, decision.ceiling, decision.task
    line = f"{spent_line(spent, ceiling)} {since(spent)}"
    if decision.halt == "unpriced":
        return (
            f"Budget ceiling cannot be kept: {_cycles(spent.unpriced)} used tokens of a model "
            f"with no price ({', '.join(spent.unpriced_models) or 'unknown'}) and budget.usd "
            f"is the only ceiling; spent {line}; {task} not started"
        )
    if decision.halt is not None:
        reached = (
            _over(spent.usd, ceiling.usd)
            if decision.halt == "usd"
            else _over(spent.tokens, ceiling.tokens)
        )
        if reached:
            return f"Budget ceiling reached: spent {line}; {task} not started"
        guess = decision.expected
        cost, basis = (
            (usd(guess.usd or 0.0), guess.usd_basis)
            if decision.halt == "usd"
            else (tokens(guess.tokens or 0), guess.tokens_basis)
        )
        what = "its own earlier cycles" if basis == "task" else "the night's average per cycle"
        return (
            f"Budget ceiling would be crossed: spent {line}, and {task} is expected to "
            f"cost {cost} more ({what}); {task} not started"
        )
    if decision.warn:
        return warning(decision)
    return f"Budget: spent {line}"


def warning(decision: Decision) -> str:
    """The warning's words, whatever else the decision says."""
    line = f"{spent_line(decision.spent, decision.ceiling)} {since(decision.spent)}"
    return f"Budget warning: spent {line} (warns at {decision.ceiling.warn_at * 100:.0f} %)"


# -- what to seal --------------------------------------------------------------------------


def due(history: Sequence[Record], decision: Decision, at: str) -> list[BudgetEvent]:
    """The events ``decision`` makes that the night has not sealed yet: a warning,
    a halt, each once per night and ceiling (a raised ceiling crossed again is
    news again). Sealed under the state lock, so two ticks seal each once."""
    told = [
        rec
        for rec in history[_night_start(history) :]
        if isinstance(rec, BudgetEvent)
        and (rec.ceiling_usd, rec.ceiling_tokens) == (decision.ceiling.usd, decision.ceiling.tokens)
    ]
    out: list[BudgetEvent] = []
    if decision.warn and not any(r.event == "warning" for r in told):
        out.append(_event("warning", decision, at, warning(decision)))
    if decision.halt is not None and not any(r.event == "halt" for r in told):
        out.append(_event("halt", decision, at, f"{decision.message}. To go on: {how(decision)}"))
    return out


def reset(history: Sequence[Record], at: str) -> BudgetEvent | None:
    """The reset event that begins a new night; None when the night has no cycle
    to forget (nothing would change)."""
    cycles, since_at = night(history)
    if not cycles:
        return None
    spent = spend(cycles, since_at)
    return BudgetEvent("reset", at, usd=spent.usd, tokens=spent.tokens)


def _night_start(history: Sequence[Record]) -> int:
    start = 0
    for index, rec in enumerate(history):
        if isinstance(rec, BudgetEvent) and rec.event == "reset":
            start = index + 1
    return start


def _event(kind: Kind, decision: Decision, at: str, message: str) -> BudgetEvent:
    return BudgetEvent(
        kind,
        at,
        usd=decision.spent.usd,
        tokens=decision.spent.tokens,
        ceiling_usd=decision.ceiling.usd,
        ceiling_tokens=decision.ceiling.tokens,
        task=decision.task if kind == "halt" else None,
        message=message,
    )


# -- glances ------------------------------------------------------------------------------


def as_json(decision: Decision) -> dict[str, Any]:
    """`gtd auto status --json`'s ``budget``."""
    spent, ceiling = decision.spent, decision.ceiling
    return {
        "usd": round(spent.usd, 6),
        "tokens": spent.tokens,
        "ceiling_usd": ceiling.usd,
        "ceiling_tokens": ceiling.tokens,
        "warn_at": ceiling.warn_at,
        "since": spent.since,
        "warning": decision.warn,
        "halted": decision.halt is not None,
        "unmeasured": list(spent.unmeasured),
        "unpriced": list(spent.unpriced),
    }


def report_lines(decision: Decision) -> list[str]:
    """The report State's budget paragraph."""
    spent, ceiling = decision.spent, decision.ceiling
    text = f"Budget: spent {spent_line(spent, ceiling)} {since(spent)}"
    text += f"; warns at {ceiling.warn_at * 100:.0f} %"
    if decision.warn and decision.halt is None:
        text = "**Warning** — " + text
    note = unknown_note(spent)
    return ["", text + "." + (f" Not counted: {note}." if note else "")]


def event_rows(decision: Decision) -> list[tuple[str, str]]:
    """(when, what) for the report's Events: each warning, halt and reset."""
    out = []
    for rec in decision.told:
        if rec.event == "reset":
            before = f"{usd(rec.usd or 0.0)} and {tokens(rec.tokens or 0)}"
            text = f"Budget reset: {before} spent before it"
        else:
            text = (rec.message or f"Budget {rec.event}").partition(". To go on:")[0]
        out.append((rec.at, text))
    return out


def halted_lines(decision: Decision, restart: str) -> list[str]:
    """The report State when the budget stops the next task."""
    return [
        f"**Halted** — {decision.message}.",
        "",
        "To resume:",
        "",
        f"1. {how(decision)[0].upper()}{how(decision)[1:]}.",
        f"2. Start the loop again: {restart}.",
    ]


def for_next(history: Sequence[Record], ceiling: Ceiling | None, plan: Plan) -> Decision | None:
    """The decision for the task `gtd cycle begin` would start next (None without
    a ceiling): what the report and the status show. With no task to start
    (complete, blocked) it still tells the spend; its halt is then nobody's."""
    if ceiling is None:
        return None
    from gtd.auto.next_task import pick

    chosen = pick(plan).task
    return decide(history, ceiling, chosen.id if chosen is not None else "")
