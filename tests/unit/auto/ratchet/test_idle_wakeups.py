"""While the tests run, the helper's threads sleep until there is something to
read: the report reader wakes for lines and for the run's end, never on a
clock; the test command's pipes are looked at less often while they stay
empty. Each wake-up costs ~40,000 instructions: a tick of 0.1 s in each
thread was ~4 M a 10 s run, and hundreds of millions under valgrind, which
stretches a run 25 times or more. Counted by the kernel (voluntary context
switches of the thread), not by a mock."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from gtd import spawned
from gtd.auto.ratchet import report_listener
from gtd.proc import Result

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="counts wake-ups in Linux's /proc"
)


def _wakeups(tid: int) -> int:
    status = Path(f"/proc/self/task/{tid}/status").read_text()
    line = next(x for x in status.splitlines() if x.startswith("voluntary_ctxt_switches:"))
    return int(line.split()[1])


def test_the_report_reader_sleeps_while_nothing_is_written(tmp_path: Path) -> None:
    listener = report_listener.start(report_listener.Request(tmp_path), where=tmp_path / "r")
    try:
        thread = listener._thread
        time.sleep(0.2)  # (its start: the nice value, the first poll)
        assert thread.native_id is not None
        before = _wakeups(thread.native_id)
        time.sleep(1.0)
        idle = _wakeups(thread.native_id) - before
    finally:
        started = time.monotonic()
        listener.finish()
    assert idle <= 1, f"the reader woke {idle} times in a second with nothing to read"
    assert time.monotonic() - started < 0.5  # ... and the run's end still wakes it at once


def test_a_quiet_commands_pipes_are_looked_at_less_often(tmp_path: Path) -> None:
    child = spawned.start_logged(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(2.2)"],
        tmp_path,
    )
    assert isinstance(child, spawned.Spawned)
    out: list[object] = []
    waiter = threading.Thread(target=lambda: out.append(child.finish(timeout=30)))
    waiter.start()
    time.sleep(0.5)
    assert waiter.native_id is not None
    before = _wakeups(waiter.native_id)
    time.sleep(1.5)
    quiet = _wakeups(waiter.native_id) - before
    waiter.join()
    result = out[0]
    assert isinstance(result, Result)
    assert result.returncode == 0
    assert result.stdout == "up\n"  # read in full, however rarely looked at
    # A tick of 0.1 s: ~15 looks in 1.5 s; backing off to once a second: 2 or 3.
    assert quiet <= 5, f"the pipes were looked at {quiet} times in 1.5 s of silence"
