"""The judge's box: the clean room's commands run in bubblewrap (``bwrap``).

A regression can take the machine down (a function that builds an endless list,
a test that starts a server and never stops it, one that writes into a person's
home). Where ``bwrap`` is on ``PATH`` and can make namespaces, every command the
ratchet runs in the clean room (gtd.auto.ratchet.commands, gtd.auto.ratchet.held)
runs as ``[prlimit --as=N --] bwrap ... -- <command>``:

- the whole file system read-only (``--ro-bind / /``), except the room's
  checkout and the run's report folder (``--bind``); a fresh ``/dev`` and
  ``/proc``; a private, empty ``/tmp`` (a ``TMPDIR`` under it made again,
  empty; one elsewhere pointed at it). Paths under ``/tmp``
  the run reads (the live repository the room's links lead to, the command's
  environment) are bound read-only again on top of it;
- its own PID namespace (``--unshare-pid``) and ``--die-with-parent``: when the
  command ends, or the helper dies, every process it started ends with it (a
  daemon that left its process group and session included);
- no network (``--unshare-net``) unless ``ratchet.network`` is true;
- a memory limit: RLIMIT_AS (each process's address space) of
  ``ratchet.memory_limit_mb`` (default: half the machine's memory; 0: none),
  set by ``prlimit(1)`` before bwrap starts, so it holds for every process
  inside. An allocation past it fails (Python raises MemoryError) instead of
  the machine swapping or the kernel's OOM killer picking a victim. A cgroup
  would count resident memory instead, but an ordinary user rarely has one to
  write to without systemd; RLIMIT_AS needs nothing.

The pipes the helper passes (the report's, the gate's, stdout and stderr) are
inherited through bwrap, and the report files are in the bound folder: the test
session talks back to the helper as it does unboxed.

Where ``bwrap`` is missing or cannot start (no unprivileged user namespaces),
the commands run unboxed and the run says so (:attr:`Box.described`: doctor,
``.deepflow/check.log``, `gtd ratchet run`); ``ratchet.box: false`` switches the
box off. Never a silent downgrade.
"""

from __future__ import annotations

import functools
import os
import signal
from typing import TYPE_CHECKING

from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from gtd.auto.config import AutoConfig
    from gtd.auto.ratchet.model import CommandRun

INSTALL = (
    "install bubblewrap (Debian/Ubuntu: `apt install bubblewrap`; Fedora: `dnf install "
    "bubblewrap`; Arch: `pacman -S bubblewrap`); macOS and Windows have no box yet"
)
_MIB = 1 << 20
_TMP = "/tmp"


class Box(NamedTuple):
    """How the room's commands run: ``bwrap`` the program (None: unboxed, and
    ``why_not`` says why), the memory limit in bytes (0: none), the network."""

    bwrap: str | None
    memory_bytes: int = 0
    network: bool = False
    why_not: str | None = None
    prlimit: str | None = None

    @property
    def boxed(self) -> bool:
        return self.bwrap is not None

    @property
    def described(self) -> str:
        """One line: boxed or not, and what the box holds."""
        if self.bwrap is None:
            return f"judge not boxed: {self.why_not}"
        memory = (
            f"memory limit {mib(self.memory_bytes)}" if self.memory_bytes else "no memory limit"
        )
        network = "network allowed" if self.network else "no network"
        return (
            "judge boxed (bubblewrap: read-only outside the room, private /tmp, own PID "
            f"namespace, {network}, {memory})"
        )


UNBOXED = Box(None, why_not="ratchet.box is false")


def mib(size: int) -> str:
    return f"{size / (1 << 30):.1f} GiB" if size >= 1 << 30 else f"{size // _MIB} MiB"


def plan(config: AutoConfig) -> Box:
    """The box the config asks for, as far as this machine can make it."""
    if not config.box:
        return UNBOXED
    if os.environ.get("GTD_BOX") == "off":
        # The person's loop environment (as GTD_SANDBOX=off for the sandbox): a
        # run whose tests must reach a file outside the room, said in the log.
        return Box(None, why_not="GTD_BOX=off in the loop's environment")
    from gtd.executables import which

    bwrap = which("bwrap", os.environ.get("PATH"))
    if bwrap is None:
        return Box(None, why_not=f"bwrap not found; {INSTALL}")
    problem = probe(bwrap)
    if problem is not None:
        return Box(None, why_not=problem)
    limit = config.memory_limit_mb
    memory = default_memory() if limit is None else int(limit * _MIB)
    return Box(
        bwrap,
        memory,
        config.network,
        None,
        which("prlimit", os.environ.get("PATH")) if memory else None,
    )


def default_memory() -> int:
    """Half the machine's memory (0 where it cannot be known: no limit)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) // 2
    except (ValueError, OSError):
        return 0


@functools.lru_cache(maxsize=4)
def probe(bwrap: str) -> str | None:
    """None where ``bwrap`` starts a box as the ratchet makes it; else why not.
    Asked once a process (~10 ms, on the judge's critical path), and a box that
    started is remembered (:func:`_known_good`) until anything it depends on
    changes. Only success is remembered: a forged note can at worst make a run
    try a box that fails, which fails the run aloud, never one that goes unboxed
    in silence."""
    key = _machine_key(bwrap)
    note = os.path.join(_cache_home(), _GOOD_NOTE)
    if key is not None and _known_good(note, key):
        return None
    problem = _probe(bwrap)
    if problem is None and key is not None:
        try:
            from pathlib import Path

            from gtd.fsio import atomic_write_bytes

            os.makedirs(os.path.dirname(note), exist_ok=True)
            atomic_write_bytes(Path(note), key)
        except Exception:  # a read-only cache: the next process probes again
            pass
    return problem


_GOOD_NOTE = "box-starts"  # beside the rooms folder (which holds repositories' only)
# What a box's start depends on besides bwrap itself: the boot, and the switches
# for unprivileged user namespaces.
_SWITCHES = (
    "/proc/sys/kernel/random/boot_id",
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
)


def _cache_home() -> str:
    from gtd.auto.ratchet import early

    return os.path.dirname(early.rooms_home())


def _machine_key(bwrap: str) -> bytes | None:
    """bwrap's identity (path, inode, size, change time), the user, the boot and
    the namespace switches; None where bwrap cannot be looked at."""
    try:
        st = os.stat(bwrap)
    except OSError:
        return None
    parts = [bwrap, str(st.st_ino), str(st.st_size), str(st.st_ctime_ns), str(os.getuid())]
    for path in _SWITCHES:
        try:
            with open(path, "rb") as handle:
                parts.append(handle.read(200).decode("ascii", "replace").strip())
        except OSError:
            parts.append("-")
    return ("\n".join(parts) + "\n").encode()


def _known_good(note: str, key: bytes) -> bool:
    from pathlib import Path

    from gtd.fsio import read_bytes

    try:  # (only a regular file's: a named pipe there never blocks the judge)
        return read_bytes(Path(note), limit=len(key) + 1) == key
    except OSError:
        return False


def _probe(bwrap: str) -> str | None:
    from gtd import proc

    argv = [bwrap, *_namespaces(network=False), "--ro-bind", "/", "/", "--", "true"]
    try:
        result = proc.run(argv, os.sep, timeout=10)
    except Exception as exc:  # any failure to start: unboxed, said plainly
        return f"bwrap cannot start ({exc})"
    if result.ok:
        return None
    said = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
    return (
        f"bwrap cannot make a box here ({said}); allow unprivileged user namespaces "
        "(sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04+ "
        "kernel.apparmor_restrict_unprivileged_userns=0), or set ratchet.box: false"
    )


def _namespaces(*, network: bool) -> list[str]:
    return ["--die-with-parent", "--unshare-pid", *(() if network else ("--unshare-net",))]


def wrap(
    box: Box,
    argv: Sequence[str],
    cwd: str,
    *,
    writable: Sequence[str],
    readable: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    left_fd: int | None = None,
) -> list[str]:
    """``argv`` as it runs in ``box`` from ``cwd`` (unchanged when unboxed):
    ``writable`` folders bound read-write, ``readable`` ones made visible again
    where the private ``/tmp`` would hide them. ``environ``: the command's
    environment, whose temporary folders (:data:`_TEMP_VARIABLES`) are made
    again, empty, in the private ``/tmp`` (or pointed at it, where they lie
    elsewhere: read-only there). ``left_fd``: a pipe's writing end (passed to
    the command) where the processes the command leaves running are listed
    when it ends (gtd.auto.ratchet.leftovers)."""
    if box.bwrap is None:
        return list(argv)
    out: list[str] = []
    if box.memory_bytes:
        if box.prlimit is not None:
            out += [box.prlimit, f"--as={box.memory_bytes}", "--"]
        else:
            import sys

            out += [sys.executable, "-I", "-S", "-c", _SET_LIMIT, str(box.memory_bytes)]
    out += [box.bwrap, *_namespaces(network=box.network)]
    if left_fd is not None:
        # The lister is the namespace's process 1 (no reaper of bwrap's): no
        # process inside can kill it, and the namespace ends when it does.
        from gtd.auto.ratchet import leftovers

        out.append("--as-pid-1")
        argv = leftovers.wrapped(argv, left_fd)
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", _TMP]
    env = os.environ if environ is None else environ
    searched = [
        entry
        for name in ("PATH", "PYTHONPATH")
        for entry in env.get(name, "").split(os.pathsep)
        if os.path.isabs(entry)
    ]
    for path in _under_tmp([*readable, _HELPER, *_environment_of(argv), *searched]):
        out += ["--ro-bind-try", path, path]
    for path in dict.fromkeys(os.path.abspath(p) for p in writable):
        out += ["--bind", path, path]
    for name in _TEMP_VARIABLES:
        value = env.get(name)
        if value and _under_tmp([value]):
            out += ["--dir", os.path.abspath(value)]
        elif value:
            out += ["--setenv", name, _TMP]
    out += ["--chdir", cwd, "--", *argv]
    return out


# The helper's own package: the test process loads the ratchet's plugin and its
# parts (gtd.auto.ratchet.plugin) from it by path, so a helper installed under
# /tmp must stay visible through the private /tmp, or the plugin runs without
# its parts' watches.
_HELPER = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The environment's temporary folders (pytest's base for tmp_path among them).
_TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP", "PYTEST_DEBUG_TEMPROOT")
# Without prlimit(1): the limit set by a Python that then becomes bwrap.
_SET_LIMIT = (
    "import os,resource,sys;n=int(sys.argv[1]);"
    "resource.setrlimit(resource.RLIMIT_AS,(n,n));os.execv(sys.argv[2],sys.argv[2:])"
)


def _environment_of(argv: Sequence[str]) -> list[str]:
    """What the command names by absolute path: the environment an absolute
    executable belongs to (a virtualenv's ``bin/python`` needs the folder above
    ``bin``), and every other absolute path among its words (a script it runs,
    a config it reads; in a shell's command string too, split at blanks)."""
    out = []
    for word in argv:
        for piece in word.split():
            path = piece.strip("'\"").partition("=")[2] or piece.strip("'\"")
            if os.path.isabs(path):
                folder = os.path.dirname(path)
                is_bin = os.path.basename(folder) == "bin"
                out.append(os.path.dirname(folder) if is_bin else path)
    return out


def _under_tmp(paths: Sequence[str]) -> list[str]:
    out: dict[str, None] = {}
    for path in paths:
        full = os.path.abspath(path)
        if full.startswith(_TMP + os.sep):
            out[full] = None
    return list(out)


def signal_of(exit_code: int, boxed: bool) -> int | None:
    """The signal that ended a command: a negative exit status (the process
    itself), or 128 + N from bwrap or a shell."""
    if exit_code < 0:
        return -exit_code
    if exit_code > 128 and (boxed or exit_code - 128 in _COMMON):
        number = exit_code - 128
        return number if number < 65 else None
    return None


_COMMON = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV, signal.SIGABRT})


def _name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def cause(cmd: CommandRun, box: Box) -> str:
    """How the test process ended, and the likely cause: the timeout, the
    memory limit, a kill from outside (the OOM killer, a person)."""
    limit = f" of {mib(box.memory_bytes)} (ratchet.memory_limit_mb)" if box.memory_bytes else ""
    if cmd.timed_out:
        return f"the test process was ended at the timeout of {cmd.timeout_s:g} s"
    number = signal_of(cmd.exit_code, box.boxed)
    if "MemoryError" in cmd.output_tail and box.memory_bytes:
        return f"the test process ran out of memory: it reached the memory limit{limit}"
    if number is None:
        return f"the test process exited with status {cmd.exit_code}"
    said = f"the test process was killed by {_name(number)} (exit status {cmd.exit_code})"
    if number == signal.SIGKILL:
        likely = (
            "killed from outside: the system's out-of-memory killer or a person"
            if not box.memory_bytes
            else "killed from outside: the system's out-of-memory killer or a person "
            f"(the box's memory limit{limit} ends an allocation, not the process)"
        )
    elif number in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS) and box.memory_bytes:
        likely = f"a crash, possibly an allocation refused by the memory limit{limit}"
    elif number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        likely = "stopped from outside (a person, a shutdown)"
    else:
        likely = "a crash or a kill from outside"
    return f"{said}: likely {likely}"


def killed(cmd: CommandRun | None, box: Box) -> str | None:
    """How a signal ended the test process, and the likely cause (:func:`cause`);
    None when it exited by itself or at the timeout."""
    if cmd is None or cmd.timed_out or signal_of(cmd.exit_code, box.boxed) is None:
        return None
    return cause(cmd, box)


def memory_note(cmd: CommandRun | None, box: Box) -> str | None:
    """Where a finished run's tests failed on MemoryError under the box's limit:
    the words that name the limit."""
    if cmd is None or not box.memory_bytes or "MemoryError" not in cmd.output_tail:
        return None
    return f"MemoryError: a test reached the memory limit of {mib(box.memory_bytes)} " + (
        "(ratchet.memory_limit_mb)"
    )


# What a test meets at the box's walls (its own words, in the run's output), and
# what the revert's reason adds: the wall, not the code, may be what to change.
# (said, note, whether the wall is the network's)
_WALLS = (
    (
        "Read-only file system",
        "Read-only file system: a test wrote outside the clean room, which the "
        "judge's box refuses (only the room and a private /tmp are writable)",
        False,
    ),
    (
        "Network is unreachable",
        "Network is unreachable: a test used the network, which the judge's box "
        "has none of (ratchet.network)",
        True,
    ),
    (
        "Connection refused",
        "Connection refused: the judge's box has a network of its own, and no "
        "server outside it is reachable (ratchet.network)",
        True,
    ),
)


def wall_note(cmd: CommandRun | None, box: Box) -> str | None:
    """Where a finished run's tests failed at one of the box's walls (the memory
    limit, the read-only file system, the network): the words that name it."""
    memory = memory_note(cmd, box)
    if memory is not None or cmd is None or not box.boxed:
        return memory
    for said, note, network in _WALLS:
        if said in cmd.output_tail and not (network and box.network):
            return note
    return None
