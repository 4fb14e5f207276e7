"""A stand-in for the Claude Code client, for the tests of sessions: a real process
named `claude` (a link of that name to this Python, so the kernel names it so)
that runs commands as its children, the way Claude Code runs its Bash tool's and
its commands' injected ones. The helper finds it as it finds Claude Code, by its
name in /proc; nothing of the helper is replaced."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult

# The client's loop: one JSON request a line ({"argv", "cwd", "env"}), one JSON
# answer a line ({"code", "stdout", "stderr"}).
_SERVE = """
import json, os, subprocess, sys
print("ready", flush=True)
for line in sys.stdin:
    ask = json.loads(line)
    res = subprocess.run(ask["argv"], cwd=ask["cwd"], capture_output=True, text=True,
                         env={**os.environ, **ask["env"]}, timeout=300)
    print(json.dumps({"code": res.returncode, "stdout": res.stdout, "stderr": res.stderr}),
          flush=True)
"""


def start_time(pid: int) -> int:
    """Field 22 of /proc/<pid>/stat: when the process started, in clock ticks."""
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    return int(raw[raw.rfind(b")") + 2 :].split()[19])


class Client:
    """One session: a live `claude` process until :meth:`kill`."""

    def __init__(self, folder: Path) -> None:
        if not Path("/proc/self/stat").exists():
            pytest.skip("sessions are found through /proc (Linux only)")
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / "claude"
        if not link.exists():
            link.symlink_to(sys.executable)
        # The suite's commands look for no session (tests/conftest.py); this one's do.
        env = {k: v for k, v in os.environ.items() if k != "GTD_NO_SESSION"}
        self.proc = subprocess.Popen(
            [str(link), "-c", _SERVE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.pid = self.proc.pid
        # Popen returns while the kernel may still be naming the new program: its
        # first line says it runs.
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline() == "ready\n"
        name = Path(f"/proc/{self.pid}/comm").read_text().strip()
        assert name == "claude", f"the stand-in client is named {name!r}"

    def run(self, cwd: Path, *args: str, env: dict[str, str] | None = None) -> CliResult:
        """`gtd <args>` run by the client, as its child."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        ask = {"argv": [sys.executable, "-m", "gtd", *args], "cwd": str(cwd), "env": env or {}}
        self.proc.stdin.write(json.dumps(ask) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the stand-in client died"
        got: dict[str, Any] = json.loads(line)
        return CliResult(got["code"], got["stdout"], got["stderr"])

    def begin(self, cwd: Path) -> dict[str, Any]:
        res = self.run(cwd, "cycle", "begin", "--json")
        assert res.code == 0, res.stderr
        answer: dict[str, Any] = res.json
        return answer

    def kill(self) -> None:
        """As a crash ends Claude Code: SIGKILL, nothing of it runs after."""
        crash(self.proc, self.pid)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def crash(proc: subprocess.Popen[bytes] | subprocess.Popen[str], pid: int) -> None:
    """End a stand-in session (``pid``, run by ``proc``) as a crash ends Claude
    Code: SIGKILL, nothing of it runs after; its pipes closed."""
    if proc.poll() is None:
        os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=30)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()
