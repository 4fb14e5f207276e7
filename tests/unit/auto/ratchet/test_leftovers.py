"""What a boxed test command leaves running (gtd.auto.ratchet.leftovers): the
reason a revert gives, the baseline's excuse, the channel's reading, and the
lister script itself in a real bwrap box."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gtd.auto.ratchet import box, leftovers
from gtd.auto.ratchet.model import CommandRun, RunResult
from gtd.executables import which

BWRAP = which("bwrap", os.environ.get("PATH"))
WORKS = BWRAP is not None and box.probe(BWRAP) is None
if not WORKS and os.environ.get("GTD_BOX_REQUIRED"):
    raise RuntimeError("the judge's box cannot start here, and CI needs it")
needs_bwrap = pytest.mark.skipif(not WORKS, reason="bwrap cannot make a box here")


def _run(*left: str, timed_out: bool = False) -> RunResult:
    return RunResult((CommandRun("test", "pytest", 0, 1.0, 30.0, timed_out, left=left),))


CLEAN = _run()  # a baseline the box looked at: nothing left


def test_a_process_left_is_the_reason() -> None:
    (reason,) = leftovers.reasons(_run("python -m http.server 8000"), CLEAN)
    assert reason == (
        "the tests left a process running: `python -m http.server 8000`: it outlived "
        "the test session (the judge's box ended it)"
    )


def test_several_are_counted_and_the_first_three_named() -> None:
    left = [f"sleep {n}" for n in range(5)]
    (reason,) = leftovers.reasons(_run(*left), CLEAN)
    assert reason.startswith("the tests left 5 processes running: `sleep 0`; `sleep 1`; `sleep 2`")
    assert "(+2 more)" in reason


def test_what_the_baseline_left_too_is_excused_digits_aside() -> None:
    baseline = _run("redis-server --port 6379", "java -jar daemon.jar")
    assert leftovers.reasons(_run("redis-server --port 40123"), baseline) == []
    (reason,) = leftovers.reasons(_run("redis-server --port 1", "nc -l 9"), baseline)
    assert "`nc -l 9`" in reason
    assert "redis" not in reason


def test_nothing_left_or_a_timeout_says_nothing() -> None:
    assert leftovers.reasons(_run(), CLEAN) == []
    assert leftovers.reasons(RunResult(), CLEAN) == []
    # the timeout is the reason then, and the list was never written whole
    assert leftovers.reasons(_run("sleep 9", timed_out=True), CLEAN) == []


def test_a_baseline_nobody_looked_at_holds_nothing_against_the_change() -> None:
    """Taken unboxed, or by a gtd that did not look: the project's own daemon
    and the change's cannot be told apart, so a leaky suite is not refused on
    every cycle after an upgrade."""
    unlooked = RunResult((CommandRun("test", "pytest", 0, 1.0, 30.0),))
    assert unlooked.commands[0].left is None
    assert leftovers.reasons(_run("sleep 300"), unlooked) == []
    assert leftovers.reasons(_run("sleep 300"), RunResult()) == []


def test_collect_reads_what_is_there_and_never_waits() -> None:
    r, w = leftovers.channel()
    os.write(w, b"5 sleep 300 \n\nnot a line\n12 python -c pass \n")
    # the writing end is still open (a daemon kept it): read what is there
    assert leftovers.collect(r) == ("sleep 300", "python -c pass")
    os.close(w)
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(r)  # closed by collect


def _boxed(code: str) -> tuple[int, tuple[str, ...]]:
    assert BWRAP is not None
    plan = box.Box(BWRAP, 0, False, None, None)
    r, w = leftovers.channel()
    argv = box.wrap(plan, [sys.executable, "-c", code], "/", writable=[], left_fd=w)
    try:
        done = subprocess.run(argv, pass_fds=(w,), timeout=60, capture_output=True)
    finally:
        os.close(w)
    return done.returncode, leftovers.collect(r)


@needs_bwrap
def test_the_script_lists_a_daemon_and_keeps_the_exit_status() -> None:
    code, left = _boxed(
        "import os, subprocess, sys\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "sys.exit(3)\n"
    )
    assert code == 3
    assert left == ("sleep 300",)


@needs_bwrap
def test_the_script_lists_no_zombie_and_nothing_after_a_clean_run() -> None:
    code, left = _boxed(
        "import os, subprocess\n"
        "subprocess.Popen(['true'])\n"  # never waited for: a zombie
        "p = subprocess.Popen(['sleep', '300']); p.kill()\n"  # killed, not reaped
    )
    assert (code, left) == (0, ())


@needs_bwrap
def test_a_killed_command_keeps_its_signal_status() -> None:
    code, left = _boxed("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert (code, left) == (128 + 9, ())
