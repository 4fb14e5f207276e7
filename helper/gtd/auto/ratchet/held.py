"""The test command started before its clean room is ready, held at a gate.

A pytest run spends its first few hundred milliseconds starting the interpreter
and importing pytest, none of which reads the room; the helper spends ~100 ms
before the run building the candidate tree and bringing the room to it. Held,
the two happen side by side: :func:`hold` starts the test process as soon as the
command is known, and :meth:`Held.release` lets it go once the room is synced and
checked. The room is no less clean for it:

- The process starts in its run's own folder (outside the room and the
  repository). Before the gate it runs the interpreter, the environment's
  ``.pth`` files, and a ``sitecustomize`` the helper wrote into that folder
  (gtd.auto.ratchet.gate, first on the test process's sys.path through
  ``PYTHONPATH``): it imports pytest and its built-in plugins from the
  environment (no folder of the room is on sys.path yet: Python adds the
  working directory after ``site``), tells the helper it has arrived, and waits
  for the gate's word. Nothing reads the room. (Third-party plugins load after
  the gate, as pytest loads them: one imported earlier could not have its
  asserts rewritten.)
- The word is the room's path, device and inode as the helper synced it; the
  process enters that folder and runs on only if it is that very directory (a
  room replaced by a link, or started over, since the helper looked is another
  one). No word (the run called off, or the helper killed: the pipe closes)
  ends it at once.
- `gtd ratchet run` starts the process before it has even loaded (from the
  command its last held run started: gtd.auto.ratchet.early); :func:`hold`
  adopts it where it is the very command the sealed config asks for, in the
  same environment, and ends it otherwise.
- Only commands whose first process is Python, honouring ``PYTHONPATH`` and
  ``site``, are held: ``<python> -m pytest ...`` and a ``pytest`` console script
  whose ``#!`` line names a Python with no options. Their executable must not
  depend on the room's contents: an absolute path, a name found on a ``PATH``
  of absolute folders, or a path in the room that leads to the same file as
  the same path in the live repository (a configured link: ``.venv/bin/python``).
  ``PYTHONPATH`` must hold absolute folders only. A build command runs first, a
  shell, ``uv run`` or ``make`` read the room before any Python starts: not held.
- Where another ``sitecustomize`` exists on the path (the distribution's), it is
  run after the gate, and pytest is not imported early (that one may change how
  pytest imports): the run is held, but gains little.
- A process that never arrives (something in its environment ran before the
  gate and did not stop there) fails the run: what it ran may have run in the
  room while it was synced and checked, so neither its results nor the room
  count.
"""

from __future__ import annotations

import contextlib
import os
import select
import stat
from typing import TYPE_CHECKING

from gtd import proc
from gtd.auto.ratchet import early, gate, hypotables, leftovers, report_listener
from gtd.spawned import Spawned, start_logged
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from collections.abc import Callable

    from gtd.auto.config import AutoConfig
    from gtd.auto.ratchet import room
    from gtd.auto.ratchet.results import Report

_NOT_AT_GATE = proc.Result(
    (),
    1,
    "",
    "gtd: the test process did not wait at the gate for the clean room (something "
    "in its environment ran first: a .pth file, a sitecustomize?); its run does not count",
    0.0,
)


class Released(NamedTuple):
    """The held run's command result and what its tests reported."""

    result: proc.Result
    report: Report
    left: tuple[str, ...] | None = None  # what it left running in the box (leftovers)


class Held:
    """A test process waiting at the gate: :meth:`release` it once, or
    :meth:`cancel` it (either may be called again: the second does nothing)."""

    def __init__(
        self,
        child: Spawned,
        listener: report_listener.Listener,
        command: str,
        gate_fd: int,
        came_fd: int,
        left_fd: int = -1,
    ) -> None:
        self.child = child
        self.listener = listener
        self.command = command
        self._gate = gate_fd
        self._came = came_fd
        self._left = left_fd  # the box's list of what it left (-1: unboxed)
        self._done = False

    def release(
        self,
        request: report_listener.Request,
        timeout_s: float,
        exited: Callable[[], None] | None = None,
    ) -> Released | None:
        """Let the process run the tests ``request`` asks for, in the room (its
        root) as it is now. None where it ran nothing of the room's (the room's
        folder was replaced between the helper's look and the process's: it
        refused): the caller runs the command itself. A process that never
        stopped at the gate fails the run. ``exited``: called once the process
        ran the tests and ended, before its report is read."""
        if self._done:
            return None
        self._done = True
        try:
            root = str(request.root)
            where = os.lstat(root)
            if not stat.S_ISDIR(where.st_mode):
                self._end()
                return None
            if not _arrive(self._came, timeout_s):
                # It never stopped at the gate: whatever it ran, it may have run in
                # the room while it was synced and checked. Nothing of it counts,
                # and the room is not trusted for another run: the run fails.
                self._end()
                from gtd.auto.ratchet.results import NO_REPORT

                stray = _NOT_AT_GATE._replace(argv=self.child.args)
                return Released(stray, NO_REPORT._replace(problems=(stray.stderr,)))
            self.listener.ask(request)
            try:
                os.write(self._gate, gate.word(where.st_dev, where.st_ino, root))
                told = True
            except OSError:  # it ended since it arrived: ran nothing of the room's
                told = False
            self._close_gate()
            self.child.restart_clock()
            result = self.child.finish(timeout_s)
        except BaseException:
            self._end()
            raise
        refused = _read_now(self._came) == gate.REFUSED
        left = self._collect()
        self._close_pipes()
        if refused or not told:
            self.listener.abort()
            return None
        if exited is not None:
            exited()
        return Released(result, self.listener.finish(), left)

    def _collect(self) -> tuple[str, ...] | None:
        if self._left < 0:
            return None  # unboxed: nobody looked
        fd, self._left = self._left, -1
        return leftovers.collect(fd)

    def cancel(self) -> None:
        """The run is not wanted (the candidate was refused before it): the
        process ends without having read anything of the room."""
        if not self._done:
            self._done = True
            self._end()

    def _end(self) -> None:
        """The process and its group ended (the gate closed without a word
        first), the pipes closed, the run's files removed."""
        self._close_gate()
        self.child.kill()
        self._close_pipes()
        self.listener.abort()

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()  # not released by then: not wanted

    def _close_gate(self) -> None:
        if self._gate >= 0:
            _close(self._gate)
            self._gate = -1

    def _close_pipes(self) -> None:
        self._close_gate()
        if self._left >= 0:
            _close(self._left)
            self._left = -1
        if self._came >= 0:
            _close(self._came)
            self._came = -1


def hold(rm: room.Room, config: AutoConfig, env: dict[str, str]) -> Held | None:
    """The configured test command started and held at the gate, or None where it
    cannot be held (see the module's docstring) or did not start. The process
    gtd.auto.ratchet.early started from the hint is adopted where it is that very
    command; otherwise it ends, and the hint is brought up to date."""
    guess = early.claim()
    try:
        return _hold(rm, config, env, guess)
    finally:
        if guess is not None and not guess.adopted:
            guess.cancel()
        # Early runs' files of helpers killed since (off the critical path: the
        # process just started takes far longer to reach its gate).
        report_listener.remove_orphans(rm.slot.parent / early.FOLDER)


def _hold(
    rm: room.Room, config: AutoConfig, env: dict[str, str], guess: early.Early | None
) -> Held | None:
    base = os.path.normpath(rm.slot.parent)
    command = config.test_command
    argv: list[str] = []
    if command and not config.build_command:
        with contextlib.suppress(ValueError):
            argv, via_shell = proc.command_argv(command)
            argv = [] if via_shell else argv
    merged = {**os.environ, **env}
    found = _holdable(argv, rm, merged.get("PATH"), merged.get("PYTHONPATH")) if argv else None
    if found is None:
        _remember(base, None)
        return None
    assert command is not None
    from gtd.auto.ratchet import box

    boxed = box.plan(config)
    if boxed.boxed:
        # The early start (gtd.auto.ratchet.early) runs the hint unboxed: never
        # adopted, and no hint left for it.
        _remember(base, None)
        guess = None
        if not os.path.isabs(argv[0]) and os.sep in argv[0]:
            # A path through the room's link (.venv/bin/python): bwrap would
            # look for it from the run's folder and fail before the gate,
            # which fails the run. It runs unheld, in the room.
            return None
    same = guess is not None and (os.path.normpath(guess.base), guess.argv, guess.exe) == (
        base,
        argv,
        found,
    )
    if guess is not None and same and guess.environ == _without_pwd(merged):
        return _adopt(guess, rm, command)
    listener = report_listener.prepare(rm.tree, rm.slot / "reports", gate=gate.SOURCE)
    gate_w, gate_r = early.channel()  # the helper's end, the process's
    came_r, came_w = early.channel()
    left_r, left_w = leftovers.channel() if boxed.boxed else (-1, -1)
    run = early.held_env(str(listener.files.site), listener.env, f"{gate_r}:{came_w}", os.environ)
    try:
        # In the box, the room and the run's folder are writable; the gate
        # enters the room, bound at its own path (same device and inode).
        folder = str(listener.files.folder)
        storage = str(hypotables.folder(rm.slot))
        if boxed.boxed:
            os.makedirs(rm.tree, exist_ok=True)  # bound before its first sync
            os.makedirs(storage, exist_ok=True)
        spawned = box.wrap(
            boxed, _from_anywhere(argv, rm), folder, writable=(str(rm.tree), folder, storage),
            readable=(str(rm.live),),
            environ={**os.environ, **env, **run}, left_fd=left_w if left_w >= 0 else None,
        )  # fmt: skip
        child = start_logged(
            spawned,
            listener.files.folder,  # the gate enters the room once it is ready
            env={**env, **run},
            pass_fds=(*listener.pass_fds, gate_r, came_w, *((left_w,) if left_w >= 0 else ())),
        )
    except BaseException:
        for fd in (gate_r, gate_w, came_r, came_w, left_r, left_w):
            _close(fd)  # (-1: none)
        listener.abort()
        raise
    _close(gate_r)
    _close(came_w)
    _close(left_w)
    if isinstance(child, proc.Result):  # not found: the unheld run says so
        _close(gate_w)
        _close(came_r)
        _close(left_r)
        listener.abort()
        return None
    child.args = tuple(argv)  # named as configured, not as boxed
    if not boxed.boxed:
        _remember(base, argv)
    return Held(child, listener, command, gate_w, came_r, left_r)


def _adopt(guess: early.Early, rm: room.Room, command: str) -> Held:
    """The early process as the held run of ``command`` in ``rm``."""
    guess.adopted = True
    fds = guess.fds
    listener = report_listener.Listener.adopt(
        report_listener.Request(rm.tree),
        guess.folder,
        (fds["report_r"], fds["report_w"]),
        guess.since_ns,
    )
    child = Spawned(guess.pid, tuple(guess.argv), fds["out"], fds["err"], guess.begun)
    return Held(child, listener, command, fds["gate"], fds["came"])


def _from_anywhere(argv: list[str], rm: room.Room) -> list[str]:
    """``argv`` as it starts outside the room (in the run's folder): a path
    through the room's link (``.venv/bin/python``, which :func:`_holdable`
    checked) made absolute in the room, as the unheld run's interpreter sees
    it from there (the real path of its working directory): the same
    ``sys.executable`` and prefix. Left relative, it is looked for in the run's
    folder, fails to start, and the run goes unheld."""
    exe = argv[0]
    if os.path.isabs(exe) or os.sep not in exe:
        return argv
    return [os.path.join(os.path.realpath(rm.tree), exe), *argv[1:]]


def _remember(base: str, argv: list[str] | None) -> None:
    """The hint of ``base`` says ``argv`` (none: removed) from now on, for the
    next run's early start. Never fails the run: the hint only saves time."""
    path = os.path.join(base, early.HINT)
    if argv is not None and early.read_hint(base) == argv:
        return
    if argv is None and not os.path.lexists(path):
        return
    try:
        if argv is None:
            os.unlink(path)
        else:
            from pathlib import Path

            from gtd.fsio import atomic_write_bytes

            atomic_write_bytes(Path(path), early.hint_bytes(argv))  # a link: replaced
    except Exception:  # a read-only cache, say: the next run starts as this one did
        pass


def _without_pwd(environ: dict[str, str]) -> dict[str, str]:
    """The environment as an early start was given it: the gate sets the
    variables that name the room once it knows the room."""
    return {k: v for k, v in environ.items() if k not in ("PWD", hypotables.VARIABLE)}


def _holdable(
    argv: list[str], rm: room.Room, path: str | None, pythonpath: str | None
) -> str | None:
    """Where the command's first process is a Python that goes through the gate,
    found the same whatever the room holds: the executable's path."""
    if not early.absolute_folders(pythonpath):
        return None  # a relative entry is a folder of the room: read before the gate
    exe = argv[0]
    if os.sep in exe:
        if os.path.isabs(exe):
            found: str | None = exe
        elif _through_link(exe, rm):
            found = os.path.realpath(rm.tree / exe)
        else:
            return None
    else:
        if not early.absolute_folders(path or os.defpath):
            return None
        found = proc.which(exe, path)
    if found is None or not early.runs_gate(argv, found):
        return None
    return found


def _through_link(exe: str, rm: room.Room) -> bool:
    """Whether the relative path ``exe`` leads out of the room through a link the
    room's sync makes (``ratchet.link``: to the same path in the live repository)
    before anything of the room's own could stand in: a virtualenv the room
    holds itself would run its ``.pth`` files before the gate."""
    parts = exe.split(os.sep)
    if any(part in ("", ".", "..") for part in parts[:-1]):
        return False
    for i in range(1, len(parts)):
        rel = os.sep.join(parts[:i])
        place = rm.tree / rel
        if place.is_symlink():
            return os.readlink(place) == str(rm.live / rel)
        if not place.is_dir():
            return False
    return False


def _arrive(fd: int, timeout_s: float) -> bool:
    """Wait (at most ``timeout_s``) for the process to say it is at the gate."""
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    if not poll.poll(max(0.0, timeout_s) * 1000):
        return False
    return os.read(fd, 1) == gate.ARRIVED


def _read_now(fd: int) -> bytes:
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    if not poll.poll(0):
        return b""
    try:
        return os.read(fd, 1)
    except OSError:
        return b""


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
