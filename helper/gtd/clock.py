"""The one place the helper reads the clock; the core takes times as values."""

from __future__ import annotations

import time

from gtd.tuples import NamedTuple


class Now(NamedTuple):
    iso: str  # ISO-8601 UTC, second precision: 2026-01-15T10:00:00Z
    epoch: float


def now() -> Now:
    t = time.time() + _offset()
    return Now(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)), t)


def _offset() -> float:
    """Test hook: ``GTD_CLOCK_OFFSET_S`` moves the helper's clock (the fault tests
    use it to make a cycle look abandoned without waiting 45 minutes)."""
    import os

    raw = os.environ.get("GTD_CLOCK_OFFSET_S")
    try:
        return float(raw) if raw else 0.0
    except ValueError:
        return 0.0
