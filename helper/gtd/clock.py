"""The one place the helper reads the clock; the core takes times as values."""

from __future__ import annotations

import time
from typing import NamedTuple


class Now(NamedTuple):
    iso: str  # ISO-8601 UTC, second precision: 2026-01-15T10:00:00Z
    epoch: float


def now() -> Now:
    t = time.time()
    return Now(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)), t)
