"""The held test command of `gtd ratchet run`, started at the helper's first
instant.

`gtd ratchet run` is measured against the bare test command, and its test
process can start only once the helper knows the command. Read from the sealed
state, the command is known ~90 ms into the helper (its imports and a git call,
on the reference machine); this module starts the process ~15 ms in, from the
first lines of the package (gtd/__init__.py), before anything else is loaded:

- What it starts is the command the last held run of this repository started
  (the *hint*, ``held-command`` in the repository's rooms folder,
  ``~/.cache/gtd/rooms/<repo>/``, written by gtd.auto.ratchet.held), in the
  environment the helper was given. Only a hint that names a Python the gate
  holds (``<python> -m pytest ...`` or a ``pytest`` script of a plain Python,
  found without the room: an absolute path or a name on an absolute ``PATH``)
  is started.
- It starts as every held process does: in a folder of its own (here
  ``early/ratchet-<pid>.0`` beside the rooms, with the run's plugin entry point
  and gate), held at the gate (gtd.auto.ratchet.gate), through ``posix_spawn``
  (no ``subprocess`` to import), in a session of its own, its output in pipes
  (gtd.pipes).
- gtd.auto.ratchet.held adopts it (:func:`claim`) only where the sealed config
  asks for that very command, in the same environment, in the same repository:
  the run is then exactly the one it would have started. Anything else is ended
  at the gate (:meth:`Early.cancel`), where it has read nothing of the room, and
  the configured command starts as before; the hint is then rewritten.

The hint is a guess, never trusted: like every file of the helper's outside
git, an agent can write it. A forged hint can make the helper start some other
program, which only ever gets the gate's pipes of a run that is then called off
(it is killed, its files removed, and nothing it writes is read): no more than
what a process the agent left running can do anyway (docs/threat-model.md,
"What it cannot guarantee").

This module imports nothing the helper would not load anyway first: ``os`` and
the constant modules beside it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from gtd.auto.ratchet import contract, gate
from gtd.executables import which
from gtd.pipes import long_pipe

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

HINT = "held-command"  # in the repository's rooms folder
FOLDER = "early"  # the early runs' folders, beside the room slots
HINT_HEAD = b"gtd held command 1\n"  # then the argv, each word ended by a NUL
_HINT_MAX = 1 << 16
# What `gtd ratchet run` may carry for the early start to apply (the fast path's).
_FLAGS = frozenset({"--json"})

PLUGIN_NAME = "gtd_ratchet_report"  # the entry point's name: `-p no:gtd_ratchet_report`
PLUGIN_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytest_report.py")
CONTRACT_SOURCE = os.path.join(os.path.dirname(PLUGIN_SOURCE), "contract.py")
PARTS = "plugin"  # the folder beside PLUGIN_SOURCE that holds the parts it loads
# A run's files, inside its folder (gtd.auto.ratchet.report_listener.RunFiles).
SITE, SETTINGS, LINES, JUNIT = "site", "settings.json", "lines.jsonl", "pytest.xml"
STUB = '''\
"""The gtd ratchet's pytest entry point for one run: it loads the reporting
plugin from the installed helper. On any failure pytest goes on without it."""
try:
    import importlib.util as _util
    import sys as _sys

    _spec = _util.spec_from_file_location("{name}", {path!r})
    _module = _util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    _sys.modules[__name__] = _module
except Exception:
    pass
'''
_SCRIPTS = frozenset({"pytest", "py.test"})
# Characters shlex.quote leaves alone (shlex itself costs ~1 M instructions).
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


# -- where a repository's rooms are ------------------------------------------------


def rooms_home() -> str:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "gtd", "rooms")


def repo_key(git_dir: str, top_name: str) -> str:
    """The name of a repository's rooms folder: its root's name, readable, and
    the digest of its git directory's real path."""
    real = os.path.realpath(git_dir).encode("utf-8", errors="surrogateescape")
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in top_name)[:40]
    return f"{name}-{_sha256_hex(real)[:16]}"


def _sha256_hex(data: bytes) -> str:
    from gtd.digest import sha256

    return sha256(data).hexdigest()


# -- which commands a gate can hold ------------------------------------------------


def is_python(name: str) -> bool:
    """``python``, ``python3``, ``python3.11``..."""
    return name.startswith("python") and all(c.isdigit() or c == "." for c in name[6:])


def runs_gate(argv: Sequence[str], found: str) -> bool:
    """Whether ``argv``, its executable found at ``found``, starts a Python that
    runs pytest, honouring ``PYTHONPATH`` and ``site``."""
    name = os.path.basename(argv[0])
    if is_python(name):
        return list(argv[1:3]) == ["-m", "pytest"]
    return name in _SCRIPTS and python_script(found)


def python_script(path: str) -> bool:
    """A script whose ``#!`` line is an absolute Python with no options."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(512)
    except OSError:
        return False
    if not first.startswith(b"#!"):
        return False
    words = first[2:].decode("utf-8", "replace").split()
    return len(words) == 1 and os.path.isabs(words[0]) and is_python(os.path.basename(words[0]))


def absolute_folders(value: str | None) -> bool:
    """Whether a path list (``PATH``, ``PYTHONPATH``) names absolute folders only:
    a relative one is a folder of wherever the process runs."""
    return value is None or all(os.path.isabs(p) for p in value.split(os.pathsep))


# -- a run's files -----------------------------------------------------------------


def write_site(site: str, plugin: str, gate_source: str | None) -> None:
    """The run's entry point in ``site`` (a new folder): a module with a name no
    file in the repository can have chosen in advance, declared by a
    ``*.dist-info`` as ``pytest11`` plugin ``gtd_ratchet_report``, which loads
    ``plugin`` (the installed helper's); and the gate's ``sitecustomize``."""
    module = f"gtd_ratchet_{os.urandom(8).hex()}"
    dist = os.path.join(site, f"{PLUGIN_NAME}-{contract.VERSION}.dist-info")
    os.makedirs(dist)
    create(os.path.join(site, f"{module}.py"), STUB.format(name=PLUGIN_NAME, path=plugin))
    create(
        os.path.join(dist, "METADATA"),
        f"Metadata-Version: 2.1\nName: {PLUGIN_NAME}\nVersion: {contract.VERSION}\n",
    )
    create(os.path.join(dist, "entry_points.txt"), f"[pytest11]\n{PLUGIN_NAME} = {module}\n")
    if gate_source is not None:
        create(os.path.join(site, "sitecustomize.py"), gate_source)


def plugin_installed(source: str) -> bool:
    """Whether the plugin at ``source`` is installed as plain files: itself, the
    contract, the parts it shares with the unittest runner and the folder of its
    parts beside it (not inside a zip)."""
    folder = os.path.dirname(source)
    return (
        os.path.isfile(source)
        and os.path.isfile(os.path.join(folder, "contract.py"))
        and os.path.isfile(os.path.join(folder, "in_process.py"))
        and os.path.isfile(os.path.join(folder, PARTS, "recorder.py"))
    )


def create(path: str, text: str) -> None:
    """A new file in a directory this run just made: nothing to half-overwrite,
    so no temporary file and rename; exclusive creation refuses any surprise."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def channel() -> tuple[int, int]:
    """A connected pair of descriptors, (the helper's, the test process's), for a
    run's gate, arrival and reports. A socket pair, not a pipe: any process of
    the same user can open ``/proc/<pid>/fd/<n>`` of a pipe, for writing too
    (whichever end it names), and so forge lines or a gate's word into a run it
    did not start; opening a socket's entry there fails (ENXIO). Bytes written
    on one end are read only on the other, so the helper's own end is no way in
    either. ``_socket``, not ``socket``: its enums cost more than the pair."""
    import _socket

    ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    return ours.detach(), theirs.detach()


def run_env(folder: str, fd_spec: str, environ: Mapping[str, str]) -> dict[str, str]:
    """What a run whose files are in ``folder`` adds to ``environ`` for the
    plugin: its entry point last on ``PYTHONPATH`` (the user's own modules win
    any name clash, and the entry point's name is random, so none can shadow
    it), its settings, the report pipe, and pytest's own JUnit XML where the
    plugin does not load."""
    addopts = f"--junitxml={quote(os.path.join(folder, JUNIT))}"
    existing = environ.get("PYTEST_ADDOPTS", "").strip()
    pythonpath = environ.get("PYTHONPATH")
    site = os.path.join(folder, SITE)
    return {
        "PYTEST_ADDOPTS": f"{existing} {addopts}" if existing else addopts,
        "PYTHONPATH": f"{pythonpath}{os.pathsep}{site}" if pythonpath else site,
        contract.ENV_SETTINGS: os.path.join(folder, SETTINGS),
        contract.ENV_FD: fd_spec,
    }


def held_env(
    site: str, run: Mapping[str, str], gate_fds: str, environ: Mapping[str, str]
) -> dict[str, str]:
    """What a held run adds on top of :func:`run_env`: the gate's folder first on
    ``PYTHONPATH`` (its ``sitecustomize`` must be the one Python finds; it runs
    any other once the gate opens), and the gate's pipes."""
    theirs = environ.get("PYTHONPATH")
    return {
        **run,
        "PYTHONPATH": f"{site}{os.pathsep}{theirs}" if theirs else site,
        gate.ENV_GATE: gate_fds,
    }


def quote(word: str) -> str:
    """``shlex.quote``."""
    if word and all(c in _SAFE for c in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


# -- the hint ----------------------------------------------------------------------


def read_hint(base: str) -> list[str] | None:
    """The argv the last held run of the repository whose rooms are in ``base``
    started; None where there is none (or it is not one this helper wrote)."""
    try:
        fd = os.open(os.path.join(base, HINT), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = os.read(fd, _HINT_MAX + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return parse_hint(data)


def parse_hint(data: bytes) -> list[str] | None:
    if len(data) > _HINT_MAX or not data.startswith(HINT_HEAD) or not data.endswith(b"\0"):
        return None
    words = data[len(HINT_HEAD) : -1].split(b"\0")
    if not all(words):
        return None
    return [os.fsdecode(w) for w in words]


def hint_bytes(argv: Sequence[str]) -> bytes:
    return HINT_HEAD + b"".join(os.fsencode(w) + b"\0" for w in argv)


# -- the early start ---------------------------------------------------------------


class Early:
    """The test process :func:`start` began from the hint, waiting at the gate
    until gtd.auto.ratchet.held adopts it, or :meth:`cancel` ends it. The
    descriptors are the helper's ends of its pipes."""

    def __init__(
        self,
        base: str,
        folder: str,
        argv: list[str],
        exe: str,
        environ: dict[str, str],
        pid: int,
        fds: dict[str, int],
        since_ns: int,
        begun: float,
    ) -> None:
        self.base = base  # the repository's rooms folder
        self.folder = folder  # the run's files
        self.argv = argv
        self.exe = exe  # the path it was started from
        self.environ = environ  # the environment it was given, before the run's own
        self.pid = pid
        self.fds = fds  # "gate", "came", "out", "err", "report_r", "report_w"
        self.since_ns = since_ns  # when its run's files were made (time.time_ns)
        self.begun = begun  # time.monotonic() when it started
        self.adopted = False  # gtd.auto.ratchet.held took it over

    def cancel(self) -> None:
        """End it at the gate (closed without a word), and its whole session;
        reap it and remove its files."""
        import contextlib  # not on the early start's way

        for fd in self.fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = {}
        with contextlib.suppress(OSError):
            os.killpg(self.pid, 9)  # SIGKILL: it never ran anything of ours to end well
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        from gtd.fsio import remove_tree

        remove_tree(self.folder, ignore_errors=True)


# The process start() began, until claim() hands it over (one per helper process).
_STARTED: list[Early] = []


def wanted(argv: Sequence[str], orig_argv: Sequence[str]) -> bool:
    """Whether this process is `gtd ratchet run` (the console script, or ``python
    -m gtd``, whose package loads while ``sys.argv[0]`` is still ``-m``)."""
    args = list(argv[1:])
    if args[:2] != ["ratchet", "run"] or not set(args[2:]) <= _FLAGS:
        return False
    if len(set(args[2:])) != len(args[2:]):
        return False
    if os.path.basename(argv[0]) == "gtd":
        return True
    return argv[0] == "-m" and list(orig_argv[1:3]) == ["-m", "gtd"]


def start() -> None:
    """Start the hint's command for this repository, if there is one to start
    (:func:`claim` then has it). Never raises: anything amiss leaves the run to
    the helper's own start."""
    if _STARTED:
        return
    try:
        started = _start()
    except Exception:  # a guess that failed costs nothing: the helper starts its own
        return
    if started is not None:
        _STARTED.append(started)


def claim() -> Early | None:
    """The process :func:`start` began, now the caller's to adopt or cancel."""
    return _STARTED.pop() if _STARTED else None


def discard() -> None:
    """End the process :func:`start` began, if nothing adopted it."""
    taken = claim()
    if taken is not None:
        taken.cancel()


def _start() -> Early | None:
    top = os.getcwd()
    environ = dict(os.environ)
    if "GIT_DIR" in environ or "GIT_WORK_TREE" in environ:
        return None
    git_dir = os.path.join(top, ".git")
    if not _real_dir(git_dir):
        return None
    base = os.path.join(rooms_home(), repo_key(git_dir, os.path.basename(top)))
    argv = read_hint(base)
    if argv is None or not absolute_folders(environ.get("PYTHONPATH")):
        return None
    exe = argv[0]
    if not os.path.isabs(exe):
        if os.sep in exe or not absolute_folders(environ.get("PATH")):
            return None  # a path of the room's (held.py knows the links): the helper's own
        found = which(exe, environ.get("PATH"))
        if found is None:
            return None
        exe = found
    if not runs_gate(argv, exe):
        return None
    runs = os.path.join(base, FOLDER)
    if not _real_dir(base):
        return None
    if not _real_dir(runs):
        os.mkdir(runs, 0o700)  # FileExistsError: a file or link in its place, left alone
    if not _real_dir(runs):
        return None
    folder = os.path.join(runs, f"ratchet-{os.getpid()}.0")
    os.mkdir(folder, 0o700)  # a killed run of a process of the same id: left alone
    try:
        return _spawn(base, folder, argv, exe, environ, top)
    except BaseException:
        from gtd.fsio import remove_tree

        remove_tree(folder, ignore_errors=True)
        raise


def _spawn(
    base: str, folder: str, argv: list[str], exe: str, environ: dict[str, str], top: str
) -> Early:
    import time

    since_ns = time.time_ns()
    site = os.path.join(folder, SITE)
    if not plugin_installed(PLUGIN_SOURCE):
        raise OSError("the plugin is not installed as plain files")  # reports copies it
    write_site(site, PLUGIN_SOURCE, gate.SOURCE)
    # (ours, theirs) each: the output pipes (read, write), the channels' pairs.
    pipes = {name: long_pipe() for name in ("out", "err")}
    pipes.update((name, channel()) for name in ("gate", "came", "report"))
    ours = {
        "gate": pipes["gate"][0],
        "came": pipes["came"][0],
        "out": pipes["out"][0],
        "err": pipes["err"][0],
        "report_r": pipes["report"][0],
        "report_w": pipes["report"][1],
    }
    theirs = (pipes["gate"][1], pipes["came"][1], pipes["out"][1], pipes["err"][1])
    passed = (pipes["gate"][1], pipes["came"][1], pipes["report"][1])
    try:
        report_w = pipes["report"][1]
        st = os.fstat(report_w)
        run = run_env(folder, f"{report_w}:{st.st_dev}:{st.st_ino}", environ)
        env = {**environ, **held_env(site, run, f"{pipes['gate'][1]}:{pipes['came'][1]}", environ)}
        env.pop("PWD", None)  # the gate says where it runs, once it knows
        pid = _posix_spawn(exe, argv, env, folder, top, passed, pipes["out"][1], pipes["err"][1])
    except BaseException:
        for pair in pipes.values():
            for fd in pair:
                os.close(fd)
        raise
    for fd in theirs:
        os.close(fd)
    environ.pop("PWD", None)
    return Early(base, folder, argv, exe, environ, pid, ours, since_ns, time.monotonic())


def _posix_spawn(
    exe: str,
    argv: list[str],
    env: dict[str, str],
    folder: str,
    top: str,
    passed: tuple[int, ...],
    out: int,
    err: int,
) -> int:
    """``exe`` started as ``subprocess.Popen`` would (``start_new_session``, every
    descriptor but ``passed`` closed, SIGPIPE and SIGXFSZ at their defaults),
    in ``folder``; stdin is /dev/null, stdout and stderr ``out`` and ``err``."""
    import _signal  # type: ignore[import-not-found]  # the numbers, without signal's enums

    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, out, 1),
        (os.POSIX_SPAWN_DUP2, err, 2),
    ]
    # Descriptors this process inherited open across exec: Popen closes them.
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in passed:
            try:
                if os.get_inheritable(fd):
                    actions.append((os.POSIX_SPAWN_CLOSE, fd))
            except OSError:
                continue  # the listing's own descriptor, closed by now
    for fd in passed:
        os.set_inheritable(fd, True)
    os.chdir(folder)  # posix_spawn starts the child where its parent is
    try:
        return os.posix_spawn(
            exe,
            argv,
            env,
            file_actions=actions,
            setsid=True,
            setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ),
        )
    finally:
        os.chdir(top)
        for fd in passed:
            os.set_inheritable(fd, False)


def _real_dir(path: str) -> bool:
    """A directory, not a link to one (an agent's link would put the run's files
    where it chose)."""
    import stat

    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
