"""`gtd cycle begin|end|reset`: thin wrappers that print the cycle's answers.

The plain-text form is what a slash command injects into the model's context every
tick, so it is a few `key: value` lines with the status first, nothing more."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gtd.auto.cycle.answers import Answer
from gtd.cli.output import emit, root
from gtd.names import one_line

if TYPE_CHECKING:
    from typing import Any

# Keys that only make sense in JSON (the brief itself is in the brief file).
_JSON_ONLY = frozenset({"brief_text", "baseline"})
# A tick injects this text into the model's context: long lists are cut short.
_MAX_ITEMS = 10


def begin(as_json: bool, tick: bool = False) -> int:
    """With ``tick`` (the form a slash command injects with `!`), an operational
    error is answered as `status: error` with exit 0: a non-zero exit would abort
    the whole tick, while an answer lets the tick stop the loop and report."""
    from gtd.auto.cycle import Cycle
    from gtd.clock import now
    from gtd.errors import GtdError

    answer: Answer
    try:
        from gtd import session

        answer = Cycle(root(), now()).begin(session.current())
    except GtdError as exc:
        if not tick:
            raise
        answer = {
            "status": "error",
            "message": exc.render().replace("\n", " "),
            "next": "stop the loop and show the user this message",
        }
    fence(answer)
    emit(answer, render(answer), as_json)
    return 0


def end(
    as_json: bool, learning: str | None, cycle: int | None = None, review: str | None = None
) -> int:
    from gtd.auto.cycle import Cycle
    from gtd.clock import now

    answer = Cycle(root(), now()).end(learning, cycle=cycle, review=review)
    fence(answer)
    emit(answer, render(answer), as_json)
    return 0


def reset(as_json: bool, task: str | None, budget: bool = False) -> int:
    from gtd.auto.cycle import Cycle
    from gtd.clock import now

    if budget:
        from gtd.auto.cycle import ceiling

        answer = ceiling.reset(root(), now())
    else:
        answer = Cycle(root(), now()).reset(task)
    emit(answer, render(answer), as_json)
    return 0


def fence(answer: Any) -> None:
    """Claude Code's sandbox settings follow the loop (gtd.auto.sandbox)."""
    from gtd.auto import sandbox
    from gtd.errors import GtdError

    try:
        here = root()
    except GtdError:
        return
    sandbox.follow(here, answer)
    if sandbox.ends(answer):
        from gtd.auto import user_settings

        with contextlib.suppress(OSError, GtdError):  # never in the way of the answer
            user_settings.release(here)  # the night's no-prompt key, if held


def render(answer: Mapping[str, Any]) -> str:
    lines = []
    for key, value in answer.items():
        if key in _JSON_ONLY or value is None or value == []:
            continue
        lines.append(f"{key}: {_value(value)}")
    return "\n".join(lines)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        shown = ", ".join(_value(v) for v in value[:_MAX_ITEMS])
        more = len(value) - _MAX_ITEMS
        return f"{shown} … (+{more} more)" if more > 0 else shown
    if isinstance(value, dict):
        head = value.get("id", "")
        rest = ", ".join(f"{k}={_value(v)}" for k, v in value.items() if k != "id")
        return f"{head} ({rest})" if head else rest
    return one_line(str(value))
