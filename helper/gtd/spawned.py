"""A long command (a test suite, a build) whose output is read only now and then:
:func:`start_logged` starts it through the seam (:mod:`gtd.proc`), and
:class:`Spawned` waits for it with its pipes (:mod:`gtd.pipes`) drained in
intervals, keeping each pipe's last MiB."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import pipes
from gtd.proc import KILL_GRACE_S, Result, decoded, popen_child, which

if TYPE_CHECKING:
    from typing import Any

# The first pause before a child is looked at again, where no pidfd tells when it
# ends (see _Exit).
_POLL_S = 0.0005
# A long command's pipes (Spawned, gtd.pipes): how often they are drained, how
# much one read takes, and how much of each is kept (its end).
_DRAIN_S = 0.1
# ... and the longest pause while they stay empty (a quiet suite, a test that
# sleeps): each look costs ~40,000 instructions, which under valgrind (a run 25
# times as long or more) summed to hundreds of millions. Output that comes after a quiet
# second waits at most that long; a writer blocks only if it fills the pipe
# (1 MiB on Linux) in it.
_DRAIN_IDLE_S = 1.0
_DRAIN_CHUNK = 1 << 16
_KEPT_BYTES = 1 << 20


class Spawned:
    """A long command (a test suite, a build) whose output is read while it runs
    only now and then: started by :func:`start_logged`, or through
    ``os.posix_spawn`` (the held test process of gtd.auto.ratchet.early, begun
    before ``subprocess`` is loaded; ``popen`` is then None), in a session of its
    own, stdin /dev/null, stdout and stderr into the pipes whose reading ends are
    ``out`` and ``err``. The same calls as :class:`gtd.proc.Started` (without ``stuck``),
    and the same :class:`Result`: the output's last MiB of each pipe, decoded as
    text mode does.

    - The child's exit is waited for (a pidfd on Linux), and its pipes are
      drained every :data:`_DRAIN_S` (at once again while they come full): a
      pipe read as data arrives wakes this process at every write, which on the
      reference machine cost a 500-test run (a dot and a flush a test) ~14 ms
      (docs/performance.md). Pipes, not a file, because a reader that is gone
      ends a writer: the helper killed mid-run, its test process dies at its
      next write rather than run on in a clean room the next run takes over.
    - The run is over when the child ends, not when every process that
      inherited its pipes has closed them: a test that starts a server and
      never stops it, its output not captured (``pytest -s``), held the run
      until its timeout. What the child left running in its process group is
      ended with SIGKILL as soon as the child has ended, while its pid is still
      held (not yet reaped), so that the group's id names no other process."""

    def __init__(
        self,
        pid: int,
        args: tuple[str, ...],
        out: int,
        err: int,
        begun: float,
        popen: subprocess.Popen[bytes] | None = None,
    ) -> None:
        self.pid = pid
        self.args = args
        self.begun = begun
        self.returncode: int | None = None
        self._pipes = (out, err)
        self._kept: dict[int, list[bytes]] = {out: [], err: []}
        self._popen = popen
        self._closed = False
        for fd in self._pipes:
            os.set_blocking(fd, False)

    def restart_clock(self) -> None:
        self.begun = time.monotonic()

    def kill(self) -> None:
        """End the child's whole group and reap the child."""
        self._end_group()
        self._close()

    def finish(self, timeout: float | None = None) -> Result:
        """Wait for the child, draining its pipes; at ``timeout`` (counted from
        :meth:`restart_clock`) its group is ended."""
        exit_ = _Exit(self.pid)
        try:
            deadline = None if timeout is None else self.begun + timeout
            pause = _DRAIN_S
            while True:
                until = time.monotonic() + pause
                ended = exit_.by(until if deadline is None else min(until, deadline))
                got = self._drain()
                if got is None:  # much: a writer may be waiting for room
                    pause = 0.0
                elif got:
                    pause = _DRAIN_S
                else:  # nothing came: look less often, up to once a second
                    pause = min(max(pause, _DRAIN_S) * 2, _DRAIN_IDLE_S)
                if ended or (deadline is not None and time.monotonic() >= deadline):
                    break
            if ended:
                with contextlib.suppress(OSError):  # none left: the usual case
                    os.killpg(self.pid, signal.SIGKILL)
                self._wait(None)
            else:
                self._end_group()
            self._drain()
        except BaseException:
            # Ctrl-C or a kill of the helper: never leave the child group running.
            self._end_group()
            self._close()
            raise
        finally:
            exit_.close()
        self._close()
        out, err = (_joined(self._kept[fd]) for fd in self._pipes)
        code = self.returncode if self.returncode is not None else -signal.SIGKILL
        duration = time.monotonic() - self.begun
        return Result(self.args, code, decoded(out), decoded(err), duration, not ended)

    def _drain(self) -> int | None:
        """Read what the pipes hold now: how many bytes, None where they held much
        (a writer may be waiting for room)."""
        much = False
        total = 0
        for fd in self._pipes:
            got = 0
            while True:
                try:
                    data = os.read(fd, _DRAIN_CHUNK)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:  # closed under us: nothing more to read
                    break
                if not data:
                    break
                got += len(data)
                _keep(self._kept[fd], data)
            much = much or got >= _DRAIN_CHUNK
            total += got
        return None if much else total

    def _wait(self, deadline: float | None) -> bool:
        """Reap the child, by ``deadline`` (False where it still runs then)."""
        if self.returncode is None:
            exit_ = _Exit(self.pid)
            try:
                if not exit_.by(deadline):
                    return False
            finally:
                exit_.close()
            if self._popen is not None:
                self.returncode = self._popen.wait()
            else:
                _, status = os.waitpid(self.pid, 0)
                self.returncode = os.waitstatus_to_exitcode(status)
        return True

    def _end_group(self) -> None:
        """SIGTERM to the group, SIGKILL after the grace period; then SIGKILL to
        what is left of the group, and the child reaped.

        The child dying of the SIGTERM does not end its group: a process that
        ignores SIGTERM lives on, and the box's process 1 of its own PID
        namespace ignores every signal from outside it but SIGKILL. So the
        group is swept with SIGKILL once the child has ended, before it is
        reaped: its zombie keeps the group's id from naming another."""
        if self.returncode is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                break
            exit_ = _Exit(self.pid)
            try:
                if exit_.by(time.monotonic() + KILL_GRACE_S):
                    break
            finally:
                exit_.close()
        with contextlib.suppress(OSError):  # none left: the group is gone
            os.killpg(self.pid, signal.SIGKILL)
        self._wait(None)

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            for fd in self._pipes:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _keep(chunks: list[bytes], data: bytes) -> None:
    """``data`` added to ``chunks``, whose oldest go once the rest holds
    :data:`_KEPT_BYTES` (only the output's end is ever shown)."""
    chunks.append(data)
    total = sum(map(len, chunks))
    while len(chunks) > 1 and total - len(chunks[0]) >= _KEPT_BYTES:
        total -= len(chunks.pop(0))


def _joined(chunks: list[bytes]) -> bytes:
    """The kept output, from a line's start where the oldest was let go."""
    data = b"".join(chunks)
    if len(data) > _KEPT_BYTES:
        data = data[-_KEPT_BYTES:]
        cut = data.find(b"\n")
        data = data[cut + 1 :] if cut >= 0 else data
    return data


class _Exit:
    """When child ``pid`` ends (without reaping it): a pidfd on Linux, which
    says at once; elsewhere the child is looked at in sleeps (0.5 ms at first,
    50 ms at most)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fd = -1
        opener = getattr(os, "pidfd_open", None)
        if opener is not None:
            with contextlib.suppress(OSError):  # a kernel before 5.3
                self.fd = opener(pid)

    def by(self, deadline: float | None) -> bool:
        """Whether it has ended by ``deadline`` (None: waits as long as it takes)."""
        if self.fd >= 0:
            import select

            poll = select.poll()
            poll.register(self.fd, select.POLLIN)
            left = None if deadline is None else max(0.0, deadline - time.monotonic()) * 1000
            return bool(poll.poll(left))
        pause = _POLL_S
        while True:
            try:
                seen = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return True  # reaped already
            if seen is not None:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            time.sleep(pause if left is None else min(pause, left))
            pause = min(pause * 2, 0.05)

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def start_logged(
    argv: Sequence[str],
    cwd: str | Path,
    *,
    env: Mapping[str, str] | None = None,
    pass_fds: Sequence[int] = (),
) -> Spawned | Result:
    """:func:`gtd.proc.start` for a long command whose output is read only now and then
    (a test suite, a build): stdin /dev/null, stdout and stderr into
    :func:`gtd.pipes.long_pipe` s. See :class:`Spawned` for how it is waited for."""
    args = tuple(argv)
    full_env = None if env is None else {**os.environ, **env}
    if args and which(args[0], (full_env or os.environ).get("PATH")) is None:
        return Result(args, 127, "", f"command not found: {args[0]}", 0.0, not_found=True)
    out_r, out_w = pipes.long_pipe()
    err_r, err_w = pipes.long_pipe()
    begun = time.monotonic()
    popen: subprocess.Popen[Any] | Result | None = None
    try:
        popen = popen_child(
            args,
            begun,
            cwd=str(cwd),
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            pass_fds=tuple(pass_fds),
        )
    finally:
        os.close(out_w)
        os.close(err_w)
        if not isinstance(popen, subprocess.Popen):
            os.close(out_r)
            os.close(err_r)
    if isinstance(popen, Result):
        return popen
    return Spawned(popen.pid, args, out_r, err_r, begun, popen)
