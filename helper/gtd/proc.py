"""The one subprocess seam. Every external command (git, test runners, agents) runs
through :func:`run`, which owns timeouts, process groups and output capture; a
long command whose output is read only now and then (a test suite) through
:func:`gtd.spawned.start_logged`, which starts it here. What ``/proc`` says of a
running process is :mod:`gtd.processes`; two waits side by side, :mod:`gtd.threads`."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import executables
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Any, TypedDict

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


which = executables.which  # the seam's, found without importing anything

# Characters that mean the user wrote shell syntax; such commands go through /bin/sh.
_SHELL_CHARS = frozenset("|&;<>()$`*?~\n")
KILL_GRACE_S = 3.0
# How often a watched child is looked at (see ``stuck``): a call shorter than this is
# never looked at, so the watch costs the quick calls nothing.
_WATCH_S = 0.5
_CHUNK = 32768


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
    ``stuck`` (e.g. :func:`gtd.processes.pipe_wait`) is asked of the running child every half
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
    popen = popen_child(
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


def popen_child(args: tuple[str, ...], begun: float, **how: Any) -> subprocess.Popen[Any] | Result:
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


def decoded(data: bytes) -> str:
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


def _kill_group(popen: subprocess.Popen[str]) -> None:
    """SIGTERM to the child's group, SIGKILL after the grace period, then SIGKILL
    to what is left of the group; the child reaped (given a grace period more).

    The child dying of the SIGTERM does not end its group: a process that
    ignores SIGTERM lives on (and holds the output pipes open), as the box's
    process 1 of its own PID namespace does with every signal from outside it
    but SIGKILL. The sweep comes before the child is reaped: its zombie keeps
    the group's id from naming another."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(popen.pid, sig)
        except ProcessLookupError:
            break
        if _ended(popen, KILL_GRACE_S):
            break
    import contextlib  # not on the way of a command that ends by itself

    with contextlib.suppress(OSError):  # none left: the group is gone
        os.killpg(popen.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):  # a wait in the kernel
        popen.wait(timeout=KILL_GRACE_S)


def _ended(popen: subprocess.Popen[str], within: float) -> bool:
    """Whether the child has ended within ``within`` seconds, not reaped."""
    deadline = time.monotonic() + within
    pause = 0.0005
    while popen.returncode is None:
        try:
            if os.waitid(os.P_PID, popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                return True
        except ChildProcessError:
            return True  # reaped already
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.05)
    return True


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
