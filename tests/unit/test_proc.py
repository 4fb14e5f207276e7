"""The subprocess seam's command splitting and executable lookup."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gtd.proc import command_argv, run, which
from gtd.processes import pipe_wait
from gtd.threads import Later


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest -q", (["pytest", "-q"], False)),
        ("pytest -k 'a and b'", (["pytest", "-k", "a and b"], False)),
        ("pytest -k a=b", (["pytest", "-k", "a=b"], False)),
        ("PYTHONPATH=src pytest", (["/bin/sh", "-c", "PYTHONPATH=src pytest"], True)),
        ("make test && make lint", (["/bin/sh", "-c", "make test && make lint"], True)),
        ("  npm test  ", (["npm", "test"], False)),
    ],
)
def test_command_argv(command: str, expected: tuple[list[str], bool]) -> None:
    assert command_argv(command) == expected


def test_which_agrees_with_shutil(tmp_path: Path) -> None:
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    (tmp_path / "plain").write_text("")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PATH", "")])
    for name in ("tool", "plain", "git", "sh", "no-such-tool-gtd", str(script), str(tmp_path)):
        assert which(name, path) == shutil.which(name, path=path), name


def test_a_missing_executable_is_reported_not_raised(tmp_path: Path) -> None:
    result = run(["no-such-tool-gtd"], tmp_path)
    assert (result.returncode, result.not_found) == (127, True)


class _GarbledReport(subprocess.Popen):  # type: ignore[type-arg]
    """subprocess as it behaves when another process wrote into the pipe its
    child reports a failed exec through (it can, through /proc): the child ran,
    was reaped, and subprocess raises on what it read."""

    def _execute_child(self, *args: Any, **kwargs: Any) -> None:
        super()._execute_child(*args, **kwargs)  # type: ignore[misc]
        self.wait()
        raise subprocess.SubprocessError('Bad exception data from child: b\'{"k": "t"}\'')


def test_a_garbled_exec_report_is_a_failed_command_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process left running wrote a forged report into that pipe (the red-team
    forger of tests/redteam/test_reruns.py did, by chance): the check went on to a
    verdict only if the seam answers with a failed command."""
    monkeypatch.setattr(subprocess, "Popen", _GarbledReport)
    result = run(["true"], tmp_path)
    assert result.returncode != 0
    assert not result.ok
    assert "could not start true, or not tell" in result.stderr


# -- a child that waits on a named pipe forever ----------------------------------------

needs_proc = pytest.mark.skipif(
    not os.path.isdir("/proc/self"), reason="no /proc here: only the timeout stops such a wait"
)


@needs_proc
def test_a_child_opening_a_pipe_nobody_writes_is_stopped(tmp_path: Path) -> None:
    """`cat fifo` blocks in open() until a writer comes, which is never: without
    the watch the call would wait forever (git reading a `.gitignore` that is a
    named pipe stalled the loop)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    res = run(["cat", str(fifo)], tmp_path, names=True, stuck=pipe_wait, timeout=60)
    assert res.stuck is not None
    assert not res.ok
    assert not res.timed_out
    assert res.duration_s < 10


@needs_proc
def test_a_child_reading_a_pipe_a_writer_holds_names_the_pipe(tmp_path: Path) -> None:
    """The writer holds the pipe open and never writes (a process the agent left
    behind): the reader blocks in read(), where its open descriptors name the pipe."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR)  # a writer that writes nothing (and a reader: no block)
    try:
        res = run(["cat", str(fifo)], tmp_path, names=True, stuck=pipe_wait, timeout=60)
    finally:
        os.close(fd)
    assert res.stuck == (str(fifo),)
    assert not res.timed_out
    assert res.duration_s < 10


def test_a_slow_child_on_anonymous_pipes_is_left_alone(tmp_path: Path) -> None:
    """A command that takes its time reading its own stdin (an anonymous pipe) is
    not a stuck one: it runs to its end."""
    res = run(
        ["sh", "-c", "sleep 1.3; cat"],
        tmp_path,
        names=True,
        stuck=pipe_wait,
        input_text="fed\n",
        timeout=60,
    )
    assert res.ok
    assert res.stuck is None
    assert res.stdout == "fed\n"


def test_a_watched_run_carries_large_input_and_output_whole(tmp_path: Path) -> None:
    """The watched run reads and writes the pipes itself: megabytes each way, and
    the child's stderr apart."""
    data = bytes(range(256)) * 8192  # 2 MiB, every byte value
    res = run(
        ["sh", "-c", "cat; echo said >&2"],
        tmp_path,
        binary=True,
        input_bytes=data,
        stuck=pipe_wait,
        timeout=60,
    )
    assert res.ok
    assert res.stdout_bytes == data
    assert res.stderr == "said\n"


def test_a_watched_run_still_times_out(tmp_path: Path) -> None:
    res = run(["sleep", "30"], tmp_path, names=True, stuck=pipe_wait, timeout=0.3)
    assert res.timed_out
    assert res.duration_s < 10


def test_later_runs_its_call_once_started_and_hands_back_its_value_or_error() -> None:
    import threading

    seen: list[str] = []
    gate = threading.Event()

    def call() -> str:
        gate.wait(5)
        seen.append(threading.current_thread().name)
        return "done"

    later = Later(call)
    later.start()
    later.start()  # once only
    gate.set()
    assert later.result() == "done"
    assert seen == ["gtd-later"]  # in its own thread
    never_started = Later(lambda: threading.current_thread().name)
    assert never_started.result() == threading.current_thread().name  # made where asked

    def fails() -> str:
        raise ValueError("no such tree")

    failing = Later(fails)
    failing.start()
    failing.wait()  # dropped here...
    with pytest.raises(ValueError, match="no such tree"):
        failing.result()  # ...raised here
