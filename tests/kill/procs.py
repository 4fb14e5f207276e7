"""Processes of one trial, found through /proc, and their killing.

A trial's processes are the helper the harness started and everything it
started, however far they went: `gtd cycle end` and `gtd auto setup` fork a
worker into a session of its own, which outlives them, and the worker starts
git and pytest children; once the helper is dead its orphans are children of
init. So a process belongs to the trial when it descends from the helper (while
the helper lives) or when its working directory lies inside one of the trial's
folders (the repository, and the clean rooms under its cache folder), and then
all of its descendants too. Only processes of this user are looked at.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

PROC = Path("/proc")


class Proc(NamedTuple):
    pid: int
    ppid: int
    state: str  # R, S, D, Z, T... as /proc/<pid>/stat says
    cwd: str | None  # None when unreadable (a zombie, or gone)


def available() -> bool:
    return (PROC / "self" / "stat").exists()


def scan() -> dict[int, Proc]:
    """Every live process of this user, with its parent and working directory."""
    uid = os.getuid()
    out: dict[int, Proc] = {}
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            if entry.stat().st_uid != uid:
                continue
            raw = (PROC / entry.name / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may itself hold spaces or ")".
        fields = raw[raw.rfind(")") + 2 :].split()
        try:
            cwd: str | None = os.readlink(PROC / entry.name / "cwd")
        except OSError:
            cwd = None
        out[pid] = Proc(pid, int(fields[1]), fields[0], cwd)
    return out


def _inside(path: str | None, dirs: Sequence[str]) -> bool:
    return path is not None and any(path == d or path.startswith(d + os.sep) for d in dirs)


def family(roots: Iterable[int], dirs: Sequence[Path]) -> set[int]:
    """The live (non-zombie) processes of a trial: ``roots``, processes working
    inside ``dirs``, and every descendant of those. Never this process."""
    table = scan()
    where = [os.path.realpath(d) for d in dirs]
    members = {pid for pid in roots if pid in table}
    members |= {p.pid for p in table.values() if _inside(p.cwd, where)}
    children: dict[int, list[int]] = {}
    for p in table.values():
        children.setdefault(p.ppid, []).append(p.pid)
    todo = list(members)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in members:
                members.add(child)
                todo.append(child)
    members.discard(os.getpid())
    return {pid for pid in members if table[pid].state not in ("Z", "X")}


def tree(root: int) -> list[int]:
    """``root`` and its descendants, through the kernel's child lists: cheap
    enough to poll every millisecond, and quick enough to stop a short-lived
    git child before it ends."""
    out: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.append(pid)
        try:
            tasks = os.listdir(PROC / str(pid) / "task")
        except OSError:
            continue
        for tid in tasks:
            with contextlib.suppress(OSError, ValueError):
                children = (PROC / str(pid) / "task" / tid / "children").read_text()
                todo.extend(int(c) for c in children.split())
    return out


def running(root: int, name: str) -> bool:
    """Whether a descendant of ``root`` whose command is ``name`` runs now."""
    for pid in tree(root)[1:]:
        with contextlib.suppress(OSError):
            if (PROC / str(pid) / "comm").read_text().strip() == name:
                return True
    return False


def kill_family(roots: Iterable[int], dirs: Sequence[Path]) -> list[str]:
    """``kill -9`` a whole trial at one instant: stop every member first (so none
    can start another after it was looked for), look again until no new member
    turns up, then SIGKILL them all. Returns what was killed (pid: command)."""
    stopped: set[int] = set()
    roots = list(roots)
    for root in roots:  # the helper's own tree first, before a child can end
        for pid in tree(root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
                stopped.add(pid)
    for _ in range(100):
        # kill() returns before the process stops: one in the middle of a fork
        # finishes it first. Looked for too soon, that child is missed, outlives
        # the SIGKILL below (a bwrap child killed that way never gets the death
        # signal of its parent and waits forever), and reads as the helper's leak.
        _wait_stopped(stopped)
        found = family(roots, dirs) - stopped
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
            stopped.add(pid)
    names = describe(stopped)
    for pid in stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return names


def _wait_stopped(pids: Iterable[int], timeout_s: float = 1.0) -> None:
    """Wait until each of ``pids`` is stopped (or gone): at most ``timeout_s``,
    as one in uninterruptible sleep stops only when it wakes."""
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                raw = (PROC / str(pid) / "stat").read_text()
            except OSError:
                break  # gone
            if raw[raw.rfind(")") + 2 :].split()[0] in ("T", "t", "Z", "X"):
                break
            time.sleep(0.001)


def wait_quiet(dirs: Sequence[Path], timeout_s: float) -> set[int]:
    """Wait until no process works inside ``dirs`` (nor descends from one that
    does); returns those still alive at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = family((), dirs)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)  # a scan of /proc costs a few ms: poll gently


def describe(pids: Iterable[int]) -> list[str]:
    out = []
    for pid in sorted(pids):
        try:
            cmd = (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ")
            out.append(f"{pid}: {cmd.decode(errors='replace').strip()[:200]}")
        except OSError:
            out.append(f"{pid}: (gone)")
    return out
