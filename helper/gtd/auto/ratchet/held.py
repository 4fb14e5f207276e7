"""The test command started before its clean room is ready, held at a gate.

A pytest run spends its first few hundred milliseconds starting the interpreter
and importing pytest, none of which reads the room; the helper spends ~100 ms
before the run building the candidate tree and bringing the room to it. Held,
the two happen side by side: :func:`hold` starts the test process as soon as the
command is known, and :meth:`Held.release` lets it go once the room is synced and
checked. The room is no less clean for it:

- Before the gate the process runs the interpreter, the environment's ``.pth``
  files, and a ``sitecustomize`` the helper wrote into the run's own folder
  (:data:`GATE`, first on the test process's sys.path through ``PYTHONPATH``):
  it imports pytest and its built-in plugins from the environment (no folder of
  the room is on sys.path yet: Python adds the working directory after
  ``site``), tells the helper it has arrived, and waits for the gate's message.
  Nothing reads the room. (Third-party plugins load after the gate, as pytest
  loads them: one imported earlier could not have its asserts rewritten.)
- The message is the room's device and inode as the helper synced it; the
  process runs on only if its working directory is that very directory (a room
  replaced by a link, or started over, since the process began is another one).
  An empty message (the run called off, or the helper killed: the pipe closes)
  ends it at once.
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
import re
import select
import stat

from gtd import proc
from gtd.auto.ratchet import reports
from gtd.tuples import NamedTuple

TYPE_CHECKING = False  # typing's own to the type checker (see gtd.hints)
if TYPE_CHECKING:
    from gtd.auto.config import AutoConfig
    from gtd.auto.ratchet import room
    from gtd.auto.ratchet.results import Report

ENV_GATE = "GTD_RATCHET_GATE"  # "<gate fd>:<arrival fd>", popped by the gate
_NOT_AT_GATE = proc.Result(
    (),
    1,
    "",
    "gtd: the test process did not wait at the gate for the clean room (something "
    "in its environment ran first: a .pth file, a sitecustomize?); its run does not count",
    0.0,
)
_PYTHON = re.compile(r"python[0-9.]*")
_SCRIPTS = frozenset({"pytest", "py.test"})
_ARRIVED = b"r"
_REFUSED = b"x"  # the process found itself in another folder than the room

# The sitecustomize of a held run (any Python 3 that pytest supports reads it).
GATE = '''\
"""The gtd ratchet's gate for one held test run (gtd.auto.ratchet.held)."""
import os as _os
import sys as _sys


def _gtd_gate(spec):
    gate, came = [int(x) for x in spec.split(":")]
    here = _os.path.dirname(_os.path.abspath(__file__))
    rest = [p for p in _sys.path if p and _os.path.abspath(p) != here]
    try:
        from importlib.machinery import PathFinder

        hidden = PathFinder.find_spec("sitecustomize", rest)
    except Exception:
        hidden = None
    if hidden is None:
        try:
            import importlib

            import pytest  # noqa: F401  the environment's: the room is not on sys.path yet
            from _pytest.config import default_plugins

            for name in default_plugins:  # what pytest imports first thing after
                try:
                    importlib.import_module("_pytest." + name)
                except Exception:
                    pass  # pytest imports it again itself, and says what is wrong
        except Exception:
            pass  # only time is lost: pytest loads as it would have
    _os.write(came, b"r")
    said = b""
    while True:
        chunk = _os.read(gate, 256)
        if not chunk:
            break
        said += chunk
    _os.close(gate)
    here_now = _os.stat(".")
    if said.strip() != ("%d:%d" % (here_now.st_dev, here_now.st_ino)).encode():
        if said:
            _os.write(came, b"x")
        _os._exit(1)
    _os.close(came)
    if hidden is not None:
        import importlib.util

        module = importlib.util.module_from_spec(hidden)
        _sys.modules["sitecustomize"] = module
        hidden.loader.exec_module(module)


_gtd_spec = _os.environ.pop("GTD_RATCHET_GATE", None)
if _gtd_spec:
    _gtd_gate(_gtd_spec)
'''


class Released(NamedTuple):
    """The held run's command result and what its tests reported."""

    result: proc.Result
    report: Report


class Held:
    """A test process waiting at the gate: :meth:`release` it once, or
    :meth:`cancel` it (either may be called again: the second does nothing)."""

    def __init__(
        self,
        child: proc.Started,
        listener: reports.Listener,
        command: str,
        gate_fd: int,
        came_fd: int,
        where: tuple[int, int],
    ) -> None:
        self.child = child
        self.listener = listener
        self.command = command
        self.where = where  # the room's device and inode the process started in
        self._gate = gate_fd
        self._came = came_fd
        self._done = False

    def release(self, request: reports.Request, timeout_s: float) -> Released | None:
        """Let the process run the tests ``request`` asks for, in the room (its
        root) as it is now. None where it ran nothing of the room's (the room was
        made anew since it started, or it refused): the caller runs the command
        itself. A process that never stopped at the gate fails the run."""
        if self._done:
            return None
        self._done = True
        try:
            where = os.lstat(request.root)
            if (where.st_dev, where.st_ino) != self.where:
                # The room was made anew since (its last run's files untrusted):
                # the process started in the old one.
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
                # The same folder as when it started (a directory, then and now).
                os.write(self._gate, f"{where.st_dev}:{where.st_ino}\n".encode())
                told = True
            except OSError:  # it ended since it arrived: ran nothing of the room's
                told = False
            self._close_gate()
            self.child.restart_clock()
            result = self.child.finish(timeout_s)
        except BaseException:
            self._end()
            raise
        refused = _read_now(self._came) == _REFUSED
        self._close_pipes()
        if refused or not told:
            self.listener.abort()
            return None
        return Released(result, self.listener.finish())

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
        if self._came >= 0:
            _close(self._came)
            self._came = -1


def hold(rm: room.Room, config: AutoConfig, env: dict[str, str]) -> Held | None:
    """The configured test command started in ``rm`` and held at the gate, or None
    where it cannot be held (see the module's docstring) or did not start."""
    command = config.test_command
    if not command or config.build_command:
        return None
    try:
        argv, via_shell = proc.command_argv(command)
    except ValueError:
        return None
    if via_shell or not argv:
        return None
    try:
        where = os.lstat(rm.tree)
    except OSError:
        return None
    if not stat.S_ISDIR(where.st_mode):
        return None
    merged = {**os.environ, **env}
    if not _holdable(argv, rm, merged.get("PATH"), merged.get("PYTHONPATH")):
        return None
    listener = reports.prepare(rm.tree, rm.slot / "reports", gate=GATE)
    gate_r, gate_w = os.pipe()
    came_r, came_w = os.pipe()
    # The gate first on the path (the plugin's entry point is last for unheld
    # runs): it must be the sitecustomize Python finds, and it runs any other
    # (one in a folder of the user's PYTHONPATH, say) once the gate opens.
    theirs = os.environ.get("PYTHONPATH")
    site = str(listener.files.site)
    path_first = f"{site}{os.pathsep}{theirs}" if theirs else site
    try:
        child = proc.start(
            argv,
            rm.tree,
            env={**env, **listener.env, "PYTHONPATH": path_first, ENV_GATE: f"{gate_r}:{came_w}"},
            pass_fds=(*listener.pass_fds, gate_r, came_w),
        )
    except BaseException:
        for fd in (gate_r, gate_w, came_r, came_w):
            _close(fd)
        listener.abort()
        raise
    _close(gate_r)
    _close(came_w)
    if isinstance(child, proc.Result):  # not found: the unheld run says so
        _close(gate_w)
        _close(came_r)
        listener.abort()
        return None
    return Held(child, listener, command, gate_w, came_r, (where.st_dev, where.st_ino))


def _holdable(argv: list[str], rm: room.Room, path: str | None, pythonpath: str | None) -> bool:
    """Whether the command's first process is a Python that goes through the
    gate, found the same whatever the room holds."""
    if pythonpath and not all(os.path.isabs(p) for p in pythonpath.split(os.pathsep)):
        return False  # a relative entry is a folder of the room: read before the gate
    exe = argv[0]
    if os.sep in exe:
        if os.path.isabs(exe):
            found: str | None = exe
        elif _through_link(exe, rm):
            found = os.path.realpath(rm.tree / exe)
        else:
            return False
    else:
        folders = (path or os.defpath).split(os.pathsep)
        if not all(os.path.isabs(f) for f in folders):
            return False
        found = proc.which(exe, path)
    if found is None:
        return False
    name = os.path.basename(exe)
    if _PYTHON.fullmatch(name):
        return argv[1:3] == ["-m", "pytest"]
    return name in _SCRIPTS and _python_script(found)


def _python_script(path: str) -> bool:
    """A script whose ``#!`` line is an absolute Python with no options."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(512)
    except OSError:
        return False
    if not first.startswith(b"#!"):
        return False
    words = first[2:].decode("utf-8", "replace").split()
    return (
        len(words) == 1
        and os.path.isabs(words[0])
        and bool(_PYTHON.fullmatch(os.path.basename(words[0])))
    )


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
    return os.read(fd, 1) == _ARRIVED


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
