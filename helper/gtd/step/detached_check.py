"""The check script, run detached from whoever asked for it (docs/step-mode.md,
"Scripted checks": ``gtd run``).

A driver whose tool calls have a time limit — Claude Code's Bash tool gives a
foreground command ten minutes at most — cannot wait for a long suite in one call.
So every run of the check script gtd makes itself (``gtd run``, and the human's
``gtd step`` at idle) starts it in a session and process group of its own, which
survives the call returning or being killed, and waits for it: forever, or with
``gtd run --wait <seconds>`` at most that long, answering "still running" after.
A later ``gtd run`` attaches to the same run instead of starting a second one.
When the script has ended, the caller steps the check.

The run is recorded in the git directory — never the working tree, which is the
check's to write — as ``gtd-check.json`` (process id, the HEAD and state it was
started at, start time); the script's exit status lands in ``gtd-check.done`` when
it ends. Crash rules:

- a done file: the run finished; the next ``gtd run`` steps it, even when the one
  that started it was killed meanwhile;
- a record whose process is gone, without a done file: the run died; the next
  ``gtd run`` starts a new one (the script is idempotent: it removes FEEDBACK.md
  before it runs the command);
- a live run started at another HEAD or state: refused, naming its process group
  (someone moved HEAD under a running check);
- ``gtd step check`` while a run is alive is refused: its output is not written
  yet, and an empty check turn would read as green.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import proc
from gtd.errors import GtdError
from gtd.fsio import atomic_write, locked
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from subprocess import Popen

__all__ = ["CheckRunning", "Running", "ensure_idle", "run"]

RECORD = "gtd-check.json"
DONE = "gtd-check.done"
LOCK = "gtd-check.lock"
# Runs the script with bash, then writes its exit status where gtd looks for it.
_SHELL = 'bash -c "$1" gtd-check; echo $? >"$2.tmp" && mv "$2.tmp" "$2"'
_POLL_S = 0.1


class Running(NamedTuple):
    """A run still going after the wait: its process (group) id and start time."""

    pid: int
    started: str


class CheckRunning(GtdError):
    """A detached check run is alive where another may not start, or be stepped."""


def _git_dir(root: Path) -> Path:
    dot_git = root / ".git"
    if dot_git.is_file():
        line = dot_git.read_text(encoding="utf-8").strip()
        if line.startswith("gitdir:"):
            path = Path(line.removeprefix("gitdir:").strip())
            return path if path.is_absolute() else root / path
    return dot_git


def _alive(pid: int) -> bool:
    try:  # our own child (started by this process): reap it if it has ended
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass  # another process's: the kernel's answer below
    try:
        os.kill(pid, 0)
        return os.getpgid(pid) == pid  # still the group leader that was started
    except (ProcessLookupError, PermissionError):
        return False


def _read(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _clear(git_dir: Path) -> None:
    for name in (RECORD, DONE):
        (git_dir / name).unlink(missing_ok=True)


def ensure_idle(root: Path) -> None:
    """Refuse while a detached run is alive (``gtd step check`` must not capture a
    check whose script has not written its output yet)."""
    git_dir = _git_dir(root)
    record = _read(git_dir / RECORD)
    if record is None or (git_dir / DONE).exists():
        return
    pid = record.get("pid")
    if isinstance(pid, int) and _alive(pid):
        raise CheckRunning(
            f"the check script started at {record.get('started')} is still running "
            f"(process group {pid}) — wait for it with `gtd run`"
        )


def run(root: Path, script: str, head: str, state: str, wait: float | None) -> Running | None:
    """Run ``script`` detached (or attach to the run already going for ``head`` and
    ``state``) and wait for it: None when it has ended and exited 0, a
    :class:`Running` when ``wait`` seconds passed first. Raises when the script
    could not run (its exit status is not 0), or a live run belongs elsewhere."""
    git_dir = _git_dir(root)
    with locked(git_dir / LOCK):
        child, pid, started = _start_or_attach(root, git_dir, script, head, state)
    deadline = None if wait is None else time.monotonic() + wait
    done = git_dir / DONE
    try:
        while not done.exists():
            gone = child.poll() is not None if child is not None else not _alive(pid)
            if gone and not done.exists():
                _clear(git_dir)
                raise GtdError(
                    f"the check script's process (group {pid}) died before it finished — "
                    "run `gtd run` again to start it afresh"
                )
            if deadline is not None and time.monotonic() >= deadline:
                return Running(pid, started)
            time.sleep(_POLL_S)
    except KeyboardInterrupt:
        if wait is None:  # a person at a terminal stopped it: stop the check too
            _stop(pid)
            _clear(git_dir)
        raise
    status = done.read_text(encoding="utf-8").strip()
    _clear(git_dir)
    if child is not None:
        child.wait()
    if status == "127":
        raise GtdError("the check script could not run: bash is not installed or not on PATH")
    if status != "0":
        raise GtdError(f"the check script could not run (exit {status or 'unknown'})")
    return None


def _start_or_attach(
    root: Path, git_dir: Path, script: str, head: str, state: str
) -> tuple[Popen[bytes] | None, int, str]:
    record = _read(git_dir / RECORD)
    if record is not None:
        pid = record.get("pid")
        live = isinstance(pid, int) and _alive(pid)
        ours = record.get("head") == head and record.get("state") == state
        if isinstance(pid, int) and (live or (git_dir / DONE).exists()) and ours:
            return None, pid, str(record.get("started"))
        if live:
            raise CheckRunning(
                f"a check script started at {record.get('started')} for "
                f"{record.get('state')} at {str(record.get('head'))[:12]} is still running "
                f"(process group {pid}) — wait for it, or stop it with `kill -- -{pid}`"
            )
    _clear(git_dir)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    child = proc.spawn_detached(["sh", "-c", _SHELL, "gtd-run", script, str(git_dir / DONE)], root)
    record = {"pid": child.pid, "head": head, "state": state, "started": started}
    atomic_write(git_dir / RECORD, json.dumps(record) + "\n")
    return child, child.pid, started


def _stop(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
