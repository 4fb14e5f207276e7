"""The one subprocess seam. Every external command (git, test runners, agents) runs
through :func:`run`, which owns timeouts, process groups and output capture; a
long command whose output is read only now and then (a test suite) through
:func:`start_logged` (see :class:`Spawned`)."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from gtd import executables, pipes
from gtd.tuples import NamedTuple

TYPE_CHECKING = False  # typing's own to the type checker (see gtd.hints)
if TYPE_CHECKING:
    from typing import Any, TypedDict, TypeVar

    from typing_extensions import Unpack  # typing's own from 3.11; read by the type checker only

    class Spawn(TypedDict, total=False):
        """How :func:`start` starts a child (:func:`run` takes the same)."""

        env: Mapping[str, str] | None
        input_text: str | None
        input_bytes: bytes | None
        check_exists: bool
        binary: bool
        names: bool
        pass_fds: Sequence[int]

    _A = TypeVar("_A")
    _B = TypeVar("_B")


which = executables.which  # the seam's, found without importing anything

# Characters that mean the user wrote shell syntax; such commands go through /bin/sh.
_SHELL_CHARS = frozenset("|&;<>()$`*?~\n")
_KILL_GRACE_S = 3.0
# How often a watched child is looked at (see ``stuck``): a call shorter than this is
# never looked at, so the watch costs the quick calls nothing.
_WATCH_S = 0.5
_CHUNK = 32768
# The first pause before a child is looked at again, where no pidfd tells when it
# ends (see _Exit).
_POLL_S = 0.0005
# A long command's pipes (Spawned, gtd.pipes): how often they are drained, how
# much one read takes, and how much of each is kept (its end).
_DRAIN_S = 0.1
_DRAIN_CHUNK = 1 << 16
_KEPT_BYTES = 1 << 20
# What /proc/<pid>/wchan says of a process asleep in the kernel's pipe code: opening
# a named pipe that has no other end yet, or reading one that has no data.
_OPEN_WAIT = b"wait_for_partner"
_READ_WAITS = (b"pipe_read", b"anon_pipe_read", b"pipe_wait", b"pipe_wait_readable")


class Result(NamedTuple):
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    not_found: bool = False
    stdout_bytes: bytes = b""  # stdout undecoded, for `binary` runs (stdout is then "")
    stuck: tuple[str, ...] | None = None  # killed waiting on these named pipes (see run)

    @property
    def ok(self) -> bool:
        return (
            self.returncode == 0
            and not self.timed_out
            and not self.not_found
            and self.stuck is None
        )

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def command_argv(command: str) -> tuple[list[str], bool]:
    """Split a configured command string. Returns (argv, via_shell).

    Plain word lists run directly so a missing executable is detected exactly;
    anything using shell syntax (pipes, &&, variables) runs under ``sh -c``.
    """
    stripped = command.strip()
    if any(ch in _SHELL_CHARS for ch in stripped) or _assigns(stripped):
        return ["/bin/sh", "-c", stripped], True
    import shlex  # only configured commands are split; git's argv never is

    return shlex.split(stripped), False


def _assigns(command: str) -> bool:
    """`PYTHONPATH=src pytest`: a leading variable assignment is shell syntax too."""
    name, equals, _ = command.split(maxsplit=1)[0].partition("=") if command else ("", "", "")
    return bool(equals) and name.isidentifier()


def run(
    argv: Sequence[str],
    cwd: str | Path,
    *,
    timeout: float | None = None,
    started: Callable[[int], None] | None = None,
    stuck: Callable[[int], tuple[str, ...] | None] | None = None,
    **how: Unpack[Spawn],
) -> Result:
    """Run ``argv`` in its own process group; kill the whole group on timeout.

    Never raises for the command's own failure: the caller decides what a non-zero
    exit, a timeout or a missing executable means. ``binary``: stdout is kept as
    bytes (``stdout_bytes``), for object contents; stdin then takes ``input_bytes``.
    ``names``: stdout and stdin carry file names (git's): stdout is decoded byte
    for byte, a byte that is not UTF-8 as the lone surrogate os.fsdecode makes of
    it (and no newline is translated), so a name read back names the same file
    again; stdin is encoded back the same way. stderr, read by people, shows such
    a byte as ``\\xNN``.
    ``started`` is told the child's process id as soon as it exists.
    ``pass_fds``: descriptors the
    command inherits (every other one is closed in it).
    ``stuck`` (e.g. :func:`pipe_wait`) is asked of the running child every half
    second: when it answers (not None) twice in a row the child's group is killed
    and the result carries its answer as ``stuck``, a wait that would never end.
    """
    child = start(argv, cwd, **how)
    if isinstance(child, Result):
        return child
    if started is not None:
        try:
            started(child.popen.pid)
        except BaseException:
            _kill_group(child.popen)
            raise
    return child.finish(timeout, stuck)


def start(
    argv: Sequence[str],
    cwd: str | Path,
    *,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
    input_bytes: bytes | None = None,
    check_exists: bool = True,
    binary: bool = False,
    names: bool = False,
    pass_fds: Sequence[int] = (),
) -> Started | Result:
    """The first half of :func:`run` (the arguments of :class:`Spawn`, which
    :func:`run` passes on): the child started in its
    own process group, or the Result of a command that could not start. Its
    :meth:`Started.finish` is the second half; until then nothing reads its
    output (a child that writes more than a pipe holds waits)."""
    args = tuple(argv)
    full_env = None if env is None else {**os.environ, **env}
    if check_exists and args and which(args[0], (full_env or os.environ).get("PATH")) is None:
        return Result(args, 127, "", f"command not found: {args[0]}", 0.0, not_found=True)
    raw = binary or names  # the pipes carry bytes; decoded here
    feed: str | bytes | None = input_text
    if input_bytes is not None:
        feed = input_bytes if raw else input_bytes.decode("utf-8", errors="surrogateescape")
    elif raw and input_text is not None:
        feed = input_text.encode("utf-8", errors="surrogateescape" if names else "strict")
    begun = time.monotonic()
    popen = _popen(
        args,
        begun,
        cwd=str(cwd),
        env=full_env,
        stdin=subprocess.PIPE if feed is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=not raw,
        errors=None if raw else "replace",
        pass_fds=tuple(pass_fds),
    )
    if isinstance(popen, Result):
        return popen
    return Started(popen, args, feed, binary, names, begun)


def _popen(args: tuple[str, ...], begun: float, **how: Any) -> subprocess.Popen[Any] | Result:
    """``args`` started in a session of its own, or the Result of a command that
    could not start."""
    try:
        return subprocess.Popen(args, start_new_session=True, **how)
    except FileNotFoundError:
        return Result(args, 127, "", f"command not found: {args[0]}", 0.0, not_found=True)
    except PermissionError as exc:
        return Result(args, 126, "", f"cannot execute {args[0]}: {exc}", 0.0, not_found=True)
    except subprocess.SubprocessError as exc:
        # What the child reports of a failed exec comes back through a pipe of
        # subprocess's own, which another process of the user can open through
        # /proc and write into: the child may well have run (subprocess has
        # reaped it), but what it did is unknown. A failed command, never a crash.
        why = f"could not start {args[0]}, or not tell: {exc}"[:500]
        return Result(args, 1, "", why, time.monotonic() - begun)


class Started:
    """A child :func:`start` began, not yet waited for."""

    def __init__(
        self,
        popen: subprocess.Popen[Any],
        args: tuple[str, ...],
        feed: str | bytes | None,
        binary: bool,
        names: bool,
        begun: float,
    ) -> None:
        self.popen = popen
        self.args = args
        self.begun = begun  # what duration_s counts from (see restart_clock)
        self._feed = feed
        self._binary = binary
        self._names = names

    def restart_clock(self) -> None:
        """Count the duration (and the timeout) from now: a child held back
        before it does its work (gtd.auto.ratchet.held)."""
        self.begun = time.monotonic()

    def kill(self) -> None:
        """End the child's whole group and reap the child."""
        _kill_group(self.popen)
        _rest(self.popen, watched=True)

    def finish(
        self,
        timeout: float | None = None,
        stuck: Callable[[int], tuple[str, ...] | None] | None = None,
    ) -> Result:
        """Wait for the child (see :func:`run`); ``timeout`` counts from when it
        was started, or from the last :meth:`restart_clock`."""
        popen, binary, names = self.popen, self._binary, self._names
        left = None if timeout is None else max(0.0, self.begun + timeout - time.monotonic())
        waited: tuple[str, ...] | None = None
        timed_out = False
        try:
            out, err = _communicate(popen, self._feed, left, stuck)
        except subprocess.TimeoutExpired:
            _kill_group(popen)
            out, err = _rest(popen, stuck is not None)
            timed_out = True
        except _Stuck as exc:
            _kill_group(popen)
            out, err = _rest(popen, stuck is not None)
            waited = exc.paths
        except BaseException:
            # Ctrl-C or a kill of the helper: never leave the child group running.
            _kill_group(popen)
            raise
        duration = time.monotonic() - self.begun
        args, code = self.args, popen.returncode
        if names and not binary:
            stdout = (out or b"").decode("utf-8", errors="surrogateescape")
            stderr = (err or b"").decode("utf-8", errors="backslashreplace")
            return Result(args, code, stdout, stderr, duration, timed_out, stuck=waited)
        if binary:
            error = (err or b"").decode("utf-8", errors="replace")
            return Result(
                args, code, "", error, duration, timed_out, stdout_bytes=out or b"", stuck=waited
            )
        return Result(args, code, out or "", err or "", duration, timed_out, stuck=waited)


class Spawned:
    """A long command (a test suite, a build) whose output is read while it runs
    only now and then: started by :func:`start_logged`, or through
    ``os.posix_spawn`` (the held test process of gtd.auto.ratchet.early, begun
    before ``subprocess`` is loaded; ``popen`` is then None), in a session of its
    own, stdin /dev/null, stdout and stderr into the pipes whose reading ends are
    ``out`` and ``err``. The same calls as :class:`Started` (without ``stuck``),
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
                pause = 0.0 if self._drain() else _DRAIN_S
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
        return Result(self.args, code, _text(out), _text(err), duration, not ended)

    def _drain(self) -> bool:
        """Read what the pipes hold now; whether they held much (a writer may be
        waiting for room)."""
        much = False
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
        return much

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
        """SIGTERM to the group, SIGKILL after the grace period; the child reaped."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.returncode is not None:
                return
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                break
            if self._wait(time.monotonic() + _KILL_GRACE_S):
                return
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
    """:func:`start` for a long command whose output is read only now and then
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
        popen = _popen(
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


def _text(data: bytes) -> str:
    """Bytes as ``Popen(text=True, errors="replace")`` decodes them."""
    import locale

    text = data.decode(locale.getpreferredencoding(False), "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _rest(popen: subprocess.Popen[Any], watched: bool) -> tuple[Any, Any]:
    """What a killed child wrote still unread; a watched run's pipes (which it read
    itself, and may have closed) are closed and its output dropped."""
    if not watched:
        return popen.communicate()
    for pipe in (popen.stdin, popen.stdout, popen.stderr):
        if pipe is not None:
            pipe.close()
    popen.wait()
    return b"", b""


class _Stuck(Exception):
    def __init__(self, paths: tuple[str, ...]) -> None:
        super().__init__(paths)
        self.paths = paths


def _communicate(
    popen: subprocess.Popen[Any],
    feed: str | bytes | None,
    timeout: float | None,
    stuck: Callable[[int], tuple[str, ...] | None] | None,
) -> tuple[Any, Any]:
    """``popen.communicate``, or with ``stuck`` :func:`_watched`."""
    if stuck is None:
        return popen.communicate(feed, timeout=timeout)
    if not isinstance(feed, bytes | None):
        raise TypeError("a watched run carries bytes (names= or binary=)")
    return _watched(popen, feed, timeout, stuck)


def _watched(
    popen: subprocess.Popen[bytes],
    feed: bytes | None,
    timeout: float | None,
    stuck: Callable[[int], tuple[str, ...] | None],
) -> tuple[bytes, bytes]:
    """communicate() for byte pipes, asking ``stuck`` of the child whenever half a
    second passed with no data either way. Raises TimeoutExpired, or _Stuck after
    two answers in a row (one could be a writer that was just coming).

    Not ``communicate(timeout=...)`` in slices: given a timeout, it ends with
    ``wait(timeout)``, which polls the child in sleeps of 0.5 ms and more, ~1.3 ms
    on every call whose child had not quite exited when its pipes closed (most git
    calls); here the child is reaped by a blocking wait."""
    import selectors

    deadline = None if timeout is None else time.monotonic() + timeout
    stdin, stdout, stderr = popen.stdin, popen.stdout, popen.stderr
    assert stdout is not None
    assert stderr is not None
    out_fd, err_fd = stdout.fileno(), stderr.fileno()
    read: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    sent = 0
    before: tuple[str, ...] | None = None
    with selectors.PollSelector() as selector:
        if stdin is not None:
            if feed:
                selector.register(stdin, selectors.EVENT_WRITE)
            else:
                stdin.close()
        selector.register(stdout, selectors.EVENT_READ)
        selector.register(stderr, selectors.EVENT_READ)
        while selector.get_map():
            ready = selector.select(_WATCH_S)
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(popen.args, timeout or 0.0)
            if not ready:
                now = stuck(popen.pid)
                if now is not None and before is not None:
                    raise _Stuck(now or before)
                before = now
                continue
            before = None
            for key, _ in ready:
                if key.fileobj is stdin and stdin is not None and feed is not None:
                    try:
                        sent += os.write(key.fd, feed[sent : sent + _CHUNK])
                    except BrokenPipeError:
                        sent = len(feed)  # the child stopped reading: as communicate
                    if sent >= len(feed):
                        selector.unregister(stdin)
                        stdin.close()
                    continue
                data = os.read(key.fd, _CHUNK)
                if data:
                    read[key.fd].append(data)
                else:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()  # type: ignore[union-attr]
    popen.wait()
    return b"".join(read[out_fd]), b"".join(read[err_fd])


def pipe_wait(pid: int) -> tuple[str, ...] | None:
    """Whether process ``pid`` sleeps on a named pipe: opening one that nobody has
    opened from the other end, or reading one that holds nothing. Answers the
    named pipes it has open (none yet while it opens one), or None when it does
    not wait so, or /proc cannot tell (macOS: there only a timeout ends it). A
    read of an anonymous pipe (its stdin, fed by the caller) is no such wait."""
    try:
        with open(f"/proc/{pid}/wchan", "rb") as handle:
            wchan = handle.read().strip()
    except OSError:
        return None
    if wchan == _OPEN_WAIT:
        return _named_pipes(pid)
    if wchan in _READ_WAITS:
        return _named_pipes(pid) or None
    return None


def _named_pipes(pid: int) -> tuple[str, ...]:
    folder = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(folder)
    except OSError:
        return ()
    out = []
    for fd in fds:
        link = f"{folder}/{fd}"
        try:
            target = os.readlink(link)
            if target.startswith("/") and stat.S_ISFIFO(os.stat(link).st_mode):
                out.append(target)  # "pipe:[…]" is an anonymous one
        except OSError:
            continue  # closed meanwhile
    return tuple(out)


def both(first: Callable[[], _A], second: Callable[[], _B]) -> tuple[_A, _B]:
    """``first()`` and ``second()`` at once, ``first`` in a thread: for two calls
    that mostly wait on a subprocess each (two git reads of different things), so
    the two processes run side by side. An exception of either is raised here,
    once both have ended."""
    import threading

    got: list[_A] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            got.append(first())
        except BaseException as exc:  # handed to the caller below
            failed.append(exc)

    thread = threading.Thread(target=work, name="gtd-both", daemon=True)
    thread.start()
    try:
        other = second()
    finally:
        thread.join()
    if failed:
        raise failed[0]
    return got[0], other


class Later:
    """A call started when :meth:`start` is called (in a thread: a call that
    mostly waits on a subprocess) and whose value :meth:`result` waits for;
    ``result`` alone makes the call where it was never started. For work that
    may begin at a moment another module knows of (when a test command exits)
    while its value is wanted later. An exception is raised by ``result``."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._call = call
        self._got: list[Any] = []
        self._failed: list[BaseException] = []
        self._thread: Any = None

    def start(self) -> None:
        if self._thread is not None:
            return
        import threading

        self._thread = threading.Thread(target=self._work, name="gtd-later", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            self._got.append(self._call())
        except BaseException as exc:  # handed to the caller of result()
            self._failed.append(exc)

    def wait(self) -> None:
        """The call, if started, ended (its value or exception dropped)."""
        if self._thread is not None and self._thread is not True:
            self._thread.join()

    def result(self) -> Any:
        if self._thread is None:
            self._thread = True  # made here, no thread
            self._work()
        elif self._thread is not True:
            self._thread.join()
        if self._failed:
            raise self._failed[0]
        return self._got[0]


def _kill_group(popen: subprocess.Popen[str]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(popen.pid, sig)
        except ProcessLookupError:
            return
        try:
            popen.wait(timeout=_KILL_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def spawn_detached(argv: Sequence[str], cwd: str | Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a session and process group of its own, its stdio detached,
    and return at once: it outlives the caller (a tool call that returns, or is
    killed, while a long test suite runs). The caller owns its lifetime — poll it,
    or kill its group (``os.killpg(pid, ...)``)."""
    return subprocess.Popen(
        list(argv),
        cwd=str(cwd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def held_open(paths: Iterable[str]) -> set[str]:
    """Which of ``paths`` some running process has open (Linux: each process's
    ``/proc/<pid>/fd``, as far as this user may look; elsewhere: none known). A
    lock file a running git holds is live, whatever a note says of its owner."""
    wanted = {os.path.realpath(p) for p in paths}
    found: set[str] = set()
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return found
    for pid in pids:
        folder = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(folder)
        except OSError:  # gone, or not this user's
            continue
        for fd in fds:
            try:
                target = os.readlink(f"{folder}/{fd}")
            except OSError:
                continue
            if target in wanted:
                found.add(target)
    return found


def alive(pid: int | None) -> bool:
    """Whether process ``pid`` still runs. A zombie (exited, not yet reaped) does
    not: an orphan is reaped by pid 1, and in a container whose pid 1 is no init
    (a shell, node, `sleep infinity`) never, yet it answers ``kill(pid, 0)``
    forever. Treating it as alive would keep a dead worker's cycle busy, and a
    dead git child's lock held, for as long as the machine runs."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: it exists
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return not os.path.isdir("/proc/self")  # gone since, or no /proc (macOS)
    except OSError:
        return True
    # The state follows the command name, which is in parentheses and may hold any
    # character, ")" included: read it after the last one.
    state = raw[raw.rfind(b")") + 2 : raw.rfind(b")") + 3]
    return state not in (b"Z", b"X")
