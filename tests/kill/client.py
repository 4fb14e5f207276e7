"""A stand-in Claude Code session for the kill trials that judge a cycle left in
its agent phase (docs/crash-safety.md, "Crash safety").

As in tests/integration/session_client.py, a real process named `claude` (a link
of that name to this Python, so the kernel names it so) runs the helper as its
child, and the helper finds it by its name in /proc; nothing of the helper is
replaced. Unlike that client, this one hands back the child's pid as soon as it
starts: the harness must be able to `kill -9` a `begin` of the session at its
moment, as it kills the commands it runs itself. Its working directory lies
outside the trial's folder, so the harness's kills and waits (tests/kill/procs.py)
never take the session for a process of the trial: a tick's helper dies, Claude
Code goes on.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.integration.session_client import crash

# One JSON request a line ({"argv", "cwd", "env", "out", "err"}); for each, a line
# {"pid"} once the child runs, then a line {"code"} once it ended (the client
# reaps it, as Claude Code reaps its Bash tool's commands).
_SERVE = """
import json, subprocess, sys
print("ready", flush=True)
for line in sys.stdin:
    ask = json.loads(line)
    with open(ask["out"], "wb") as out, open(ask["err"], "wb") as err:
        child = subprocess.Popen(ask["argv"], cwd=ask["cwd"], env=ask["env"],
                                 stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    print(json.dumps({"pid": child.pid}), flush=True)
    print(json.dumps({"code": child.wait()}), flush=True)
"""


class Session:
    """One Claude Code session: a live `claude` process until :meth:`close`.
    Commands run one at a time, as a session's ticks do."""

    def __init__(self, folder: Path, env: Mapping[str, str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / "claude"
        if not link.exists():
            link.symlink_to(sys.executable)
        # Its own commands look for their session: the harness's turn that off
        # for every other command (tests/kill/scene.py, clean_env).
        self.env = {k: v for k, v in env.items() if k != "GTD_NO_SESSION"}
        self.proc = subprocess.Popen(
            [str(link), "-c", _SERVE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,  # select() below sees every byte not yet read
            env=self.env,
            cwd="/",  # outside the trial's folder: never one of its processes
        )
        self.pid = self.proc.pid
        self._buffer = b""
        self._running: Command | None = None
        # Popen returns while the kernel may still be naming the new program: its
        # first line says it runs under its name.
        if self._line(30.0) != "ready":
            raise RuntimeError("the stand-in session did not start")
        name = Path(f"/proc/{self.pid}/comm").read_text().strip()
        if name != "claude":
            raise RuntimeError(f"the stand-in session is named {name!r}")

    def start(
        self,
        argv: Sequence[str],
        cwd: Path,
        out: Path,
        err: Path,
        extra: Mapping[str, str] | None = None,
    ) -> Command:
        """Start ``argv`` as the session's child (its output into ``out`` and
        ``err``, ``extra`` added to its environment)."""
        assert self._running is None, "one command at a time"
        assert self.proc.stdin is not None
        env = {**self.env, **(extra or {})}
        ask = {"argv": list(argv), "cwd": str(cwd), "env": env, "out": str(out), "err": str(err)}
        self.proc.stdin.write((json.dumps(ask) + "\n").encode())
        line = self._line(30.0)
        if line is None:
            raise RuntimeError("the stand-in session did not start the command")
        self._running = Command(self, int(json.loads(line)["pid"]))
        return self._running

    def _ended(self, timeout: float) -> int | None:
        """The exit status of the running command, once it ended (a kill's is
        -9); None while it runs."""
        line = self._line(timeout)
        if line is None:
            return None
        self._running = None
        code: int = json.loads(line)["code"]
        return code

    def _line(self, timeout: float) -> str | None:
        """The client's next line, or None when none came within ``timeout``."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError("the stand-in session died")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def close(self) -> None:
        """As a crash ends Claude Code: SIGKILL, nothing of it runs after (its
        children, the helper's commands, are the harness's to stop)."""
        crash(self.proc, self.pid)


class Command:
    """A command the session runs: what the harness needs of a `subprocess.Popen`."""

    def __init__(self, session: Session, pid: int) -> None:
        self.session = session
        self.pid = pid
        self.code: int | None = None

    def poll(self) -> int | None:
        if self.code is None:
            self.code = self.session._ended(0.0)
        return self.code

    def wait(self, timeout: float = 120.0) -> int:
        if self.code is None:
            self.code = self.session._ended(timeout)
        if self.code is None:
            raise TimeoutError(f"the session's command ran past {timeout:.0f}s")
        return self.code
