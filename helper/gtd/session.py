"""Which Claude Code session a command runs under, and whether it still runs
(docs/crash-safety.md, "Crash safety").

Claude Code names its session in no variable of the Bash tool's environment, so
the helper walks its own process ancestry (Linux: ``/proc/<pid>/stat``) to the
nearest Claude Code client and keys it by process id and start time (field 22 of
that file, in clock ticks since boot): a process id the kernel hands to a later
process comes with another start time. The boot id and the pid namespace say
which process table the pair belongs to; a session recorded under another one
(another machine sharing the repository, another container, a boot since) is one
this process cannot see, and is never taken for gone. Without /proc (macOS)
there is no session, and auto mode behaves as it did before sessions were known.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Literal

    Relation = Literal["same", "gone", "other", "unknown"]
else:
    Relation = str

# The client's process name: `claude`, what the kernel names a program run as
# `claude` (Claude Code's native binary, through its `claude` link however it was
# installed: seen so for the pinned 2.1.332 under tests/e2e).
_CLIENT_NAMES = (b"claude",)
# An npm install that runs it as `node .../@anthropic-ai/claude-code/cli.js`: its
# script is the second word of the command line.
_CLIENT_SCRIPT = b"claude-code/cli.js"
_MAX_DEPTH = 64  # a loop in a broken /proc never walks forever
# A test hook: the test suite's own commands look for no session, so a suite run
# from inside Claude Code behaves as one run from a terminal (tests/conftest.py).
# It can only take a session away (the behaviour of a headless run), never make one.
_NO_SESSION = "GTD_NO_SESSION"


class Session(NamedTuple):
    pid: int
    start: int  # clock ticks after boot: with the pid, one process ever
    boot: str  # /proc/sys/kernel/random/boot_id
    ns: str  # the pid namespace (readlink /proc/self/ns/pid)


class _Stat(NamedTuple):
    name: bytes
    state: bytes
    ppid: int
    start: int


def _stat(pid: int) -> _Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    # The name is in parentheses and may hold any character, ")" included: the
    # fields after it are read from the last one.
    close = raw.rfind(b")")
    fields = raw[close + 2 :].split()
    try:
        return _Stat(raw[raw.find(b"(") + 1 : close], fields[0], int(fields[1]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def _place() -> tuple[str, str] | None:
    """This process's boot id and pid namespace, or None without /proc."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            boot = handle.read().strip()
        ns = os.readlink("/proc/self/ns/pid")
    except (OSError, UnicodeDecodeError):
        return None
    return (boot, ns) if boot and ns else None


def _is_client(pid: int, stat: _Stat) -> bool:
    if stat.name in _CLIENT_NAMES:
        return True
    if stat.name != b"node":
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read().split(b"\0")
    except OSError:
        return False
    return len(words) > 1 and words[1].endswith(_CLIENT_SCRIPT)


def current() -> Session | None:
    """The Claude Code session this process runs under: its nearest ancestor that
    is the client. None outside one (a terminal, `gtd loop`, cron), or without
    /proc."""
    if os.environ.get(_NO_SESSION):
        return None
    place = _place()
    if place is None:
        return None
    pid = os.getppid()
    for _ in range(_MAX_DEPTH):
        if pid <= 1:
            return None
        stat = _stat(pid)
        if stat is None:
            return None
        if _is_client(pid, stat):
            return Session(pid, stat.start, *place)
        pid = stat.ppid
    return None


def relation(recorded: Session, asker: Session | None) -> Relation:
    """What ``recorded`` (the session that began a cycle) is to this process,
    which runs under ``asker``: ``same`` session, ``gone`` (it exited, or its
    process id now names another process), ``other`` (another session that still
    runs), or ``unknown`` (recorded where this process cannot look)."""
    if _place() != (recorded.boot, recorded.ns):
        return "unknown"
    stat = _stat(recorded.pid)
    if stat is None or stat.start != recorded.start or stat.state in (b"Z", b"X"):
        # A zombie has exited: in a container whose pid 1 is no init it may never
        # be reaped (gtd.processes.alive).
        return "gone"
    if asker is not None and asker == recorded:
        return "same"
    return "other"


def to_json(session: Session) -> dict[str, int | str]:
    return dict(session._asdict())


def from_json(data: object) -> Session | None:
    """The session a journal recorded; None for none, or for anything that is not
    one (a journal is sealed, so that would be a journal of another version)."""
    if not isinstance(data, dict):
        return None
    pid, start, boot, ns = (data.get(k) for k in Session._fields)
    if not (isinstance(pid, int) and isinstance(start, int) and pid > 1 and start >= 0):
        return None
    if not (isinstance(boot, str) and isinstance(ns, str) and boot and ns):
        return None
    return Session(pid, start, boot, ns)
