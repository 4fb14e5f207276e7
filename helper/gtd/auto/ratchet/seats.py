"""How many judged test runs of a repository go at once (`test_runs:`,
docs/configuration.md). A wave's candidates are judged one by one per cycle, but
N cycles ending together, a person's `gtd ratchet run` and the loop's judge all
take a room: on a small machine N test suites at once thrash.

A run holds one *seat* for as long as it holds its room: ``seats/<k>`` under the
repository's rooms folder, ``k`` below the cap, each an ``flock`` (released by
the kernel when the process dies, so a killed run never keeps its seat). A run
that finds every seat held waits, polling, up to a bound, and then answers
busy: it never runs beyond the cap, and never waits forever for a seat a
process left running holds (an agent's: the judge is refused, never fooled).

A run already holding a seat in this thread takes no second one: a room taken
inside another (a baseline inside a judged run) is part of the same run, and
with a cap of one it would otherwise wait for itself.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from gtd.errors import GtdError
from gtd.fsio import held

FOLDER = "seats"
# How long a run waits for a seat before it answers busy: longer than a judged
# run of the default time limits (each command's 600 s), shorter than a night.
WAIT_S = 3600.0
_POLL_S = 0.1

# Whether this thread holds a seat (a room taken inside it shares the seat).
_here = threading.local()


class Busy(GtdError):
    """Every seat stayed held for the whole wait."""


def default() -> int:
    """One test run per two cores, at least one."""
    return max(1, (os.cpu_count() or 1) // 2)


@contextlib.contextmanager
def seat(base: Path, cap: int, wait_s: float = WAIT_S) -> Iterator[int]:
    """Hold one of ``cap`` seats under ``base`` until the block ends; the seat's
    number (-1 when this process already holds one). Raises :class:`Busy` after
    ``wait_s`` seconds of every seat held."""
    if getattr(_here, "seat", False):
        yield -1
        return
    folder = base / FOLDER
    deadline = time.monotonic() + wait_s
    while True:
        for number in range(cap):
            with held(folder / str(number)) as taken:
                if not taken:
                    continue
                _here.seat = True
                try:
                    yield number
                finally:
                    _here.seat = False
                return
        if time.monotonic() >= deadline:
            raise Busy(
                f"{cap} test run{'s' if cap != 1 else ''} of this repository "
                f"{'are' if cap != 1 else 'is'} under way (test_runs: {cap}) and "
                f"no seat came free in {wait_s:.0f} s ({folder})",
                "wait for the other gtd runs to finish, raise test_runs in "
                ".deepflow/config.yaml, or stop a process left holding a seat "
                f"(`fuser {folder}/*` names it)",
            )
        time.sleep(_POLL_S)
