"""How long the loop waits after a harness failure (docs/harness-failures.md).
Pure: the wait from what stopped the agent and the pause in force.

The pause itself is folded from the sealed records (gtd.auto.memory.Pause: the
paused cycles since the last judged one), like the breaker's counters: no flag
the agent could write, and `gtd cycle reset` ends it.
"""

from __future__ import annotations

import calendar
import time
from typing import TYPE_CHECKING

from gtd.auto.memory import Memory, Pause

if TYPE_CHECKING:
    from gtd.auto.harness import Stop  # an annotation only: harness reads files


def wait_until(stop: Stop, earlier: Pause | None, now: float, first: float, cap: float) -> float:
    """When to try again: the reset the harness stated (a minute after it: the
    limit's own clock may lag ours), else a backoff doubling with each pause in a
    row, from ``first`` up to ``cap`` seconds."""
    if stop.reset_epoch is not None and stop.reset_epoch > now:
        return stop.reset_epoch + 60.0
    count = earlier.attempts if earlier is not None else 0
    return now + min(cap, first * (2.0 ** min(count, 30)))


def too_long(pause: Pause, longest: float) -> bool:
    """The pause in force has lasted, or will have by its end, longer than ``longest``."""
    return epoch(pause.until) - epoch(pause.since) > longest


def current(mem: Memory, now: float) -> Pause | None:
    """The pause still in force at ``now`` (None: none, or its time is over)."""
    pause = mem.pause
    if pause is None or epoch(pause.until) <= now:
        return None
    return pause


def iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def epoch(stamp: str) -> float:
    try:
        return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return 0.0


def clock(stamp: str) -> str:
    """``03:10 UTC`` (the day too when it is not within a day)."""
    return time.strftime("%H:%M UTC", time.gmtime(epoch(stamp)))


def describe(pause: Pause) -> str:
    """``Paused until 03:10 UTC — usage limit: …`` (the report's State, the answer)."""
    return f"Paused until {clock(pause.until)} — {pause.reason}"
