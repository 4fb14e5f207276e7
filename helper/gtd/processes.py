"""What Linux's ``/proc`` says of running processes: whether one still runs, whether
one sleeps on a named pipe, which files some process holds open. Elsewhere (macOS)
each answers what it can without ``/proc``."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

# What /proc/<pid>/wchan says of a process asleep in the kernel's pipe code: opening
# a named pipe that has no other end yet, or reading one that has no data.
_OPEN_WAIT = b"wait_for_partner"
_READ_WAITS = (b"pipe_read", b"anon_pipe_read", b"pipe_wait", b"pipe_wait_readable")


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
