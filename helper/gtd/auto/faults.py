"""The points where the fault tests kill the helper (`GTD_CRASH_AT=<name>`), as a
power cut would: every step of a cycle's `end`, the rendering, the notifier. A
module of its own, below everything that calls it, so none of them imports the
cycle engine for it."""

from __future__ import annotations

import os
import signal


def crash_point(name: str, *others: int) -> None:
    """Test hook: `GTD_CRASH_AT=<name>` kills the helper here (and the processes
    ``others`` first), as a power cut would. The fault tests use it to prove every
    point of `end` is recoverable."""
    if os.environ.get("GTD_CRASH_AT") == name:
        for pid in others:
            os.kill(pid, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
