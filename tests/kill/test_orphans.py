"""A killed worker whose parent never reaps it.

`gtd cycle end` forks its worker into a session of its own; when `end` dies the
worker is re-parented to the nearest "subreaper" or to pid 1. In a container
whose pid 1 is not an init (a shell, node, `sleep infinity`), nothing ever
reaps an orphan: a killed worker stays a zombie for as long as the container
runs, and a zombie still answers `kill(pid, 0)`. The loop must count it as dead
(it will never finish anything), or every later `begin` answers busy forever.

The scene: a parent process that makes itself the subreaper of what it starts
and reaps only its own child (as such a pid 1 does) runs `gtd cycle end`; once
the worker's tests run, `end`, the worker and the tests are killed. The worker
is then a zombie of that parent, and `gtd cycle begin` must recover the cycle.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.kill import procs, scene

# The parent: subreaper of its descendants, waits for its own child only, then
# lives on (never reaping the orphans that come to it) until its stdin closes.
NO_REAPER = """\
import ctypes, subprocess, sys
if ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    sys.exit(3)
child = subprocess.Popen(sys.argv[1:])
print(child.pid, flush=True)
child.wait()
sys.stdin.read()
"""


def _subreaper_available() -> bool:
    if not sys.platform.startswith("linux") or not procs.available():
        return False
    try:
        return hasattr(ctypes.CDLL(None), "prctl")
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not _subreaper_available(), reason="needs Linux's prctl and /proc")
def test_a_killed_worker_left_a_zombie_does_not_keep_begin_busy(
    kill_setup: tuple[scene.Templates, int], tmp_path: Path
) -> None:
    templates, _ = kill_setup
    repo = templates.copy("inflight", tmp_path / "repo")
    env = templates.env_for(tmp_path / "cache")
    base_head = scene.git(repo, "rev-parse", "HEAD").strip()
    base = scene.tree_state(repo)
    scene.write_files(repo, scene.AGENT_PASS)

    parent = subprocess.Popen(
        [sys.executable, "-c", NO_REAPER, *scene.gtd_argv("cycle", "end", "--json")],
        cwd=repo,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert parent.stdout is not None
        end_pid = int(parent.stdout.readline())
        # Wait until the worker runs the tests: `end` is then provably mid-check.
        deadline = time.monotonic() + 60
        while True:
            table = procs.scan()
            members = procs.family([end_pid], [])
            running = [p for p in members if b"pytest" in _cmdline(p)]
            if running:
                break
            assert time.monotonic() < deadline, "the worker never started the tests"
            assert end_pid in table, "gtd cycle end finished before its tests were seen"
            time.sleep(0.01)
        killed = procs.kill_family([end_pid], [])
        assert len(killed) >= 3, killed  # end, its worker, the tests
        # SIGKILL takes effect as each process is next scheduled: wait (boundedly)
        # for the worker to be a zombie of the parent that never reaps it.
        deadline = time.monotonic() + 10
        while not (zombies := _zombie_children(parent.pid)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert zombies, "the worker should be a zombie of the non-reaping parent"

        answers = []
        for _ in range(3):
            ran = scene.run_gtd(repo, env, "cycle", "begin", "--json")
            answers.append(ran.out or ran.err)
            if '"status": "task"' in ran.out:
                break
        assert '"status": "task"' in answers[-1], (
            f"begin stays busy on a worker that is dead but not reaped (a zombie): {answers}"
        )
        assert '"recovered"' in answers[-1], answers
    finally:
        parent.communicate("", timeout=60)

    assert scene.git(repo, "rev-parse", "HEAD").strip() == base_head
    assert scene.state_diff(base, scene.tree_state(repo)) == []
    for rel, text in scene.AGENT_PASS.items():
        kept = subprocess.run(
            ["git", "show", f"refs/gtd/reverted/cycle-1:{rel}"], cwd=repo, capture_output=True
        )
        assert kept.stdout == text.encode(), f"{rel} is not kept"


def _cmdline(pid: int) -> bytes:
    try:
        return (procs.PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def _zombie_children(pid: int) -> list[int]:
    return [p.pid for p in procs.scan().values() if p.ppid == pid and p.state == "Z"]


@pytest.mark.skipif(not procs.available(), reason="needs /proc to tell a zombie")
def test_a_zombie_is_not_alive() -> None:
    """The check behind busy answers and git locks: a child that exited and is not
    reaped yet is a zombie, and counts as dead; a running one as alive."""
    from gtd import processes

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert processes.alive(sleeper.pid)
    finally:
        sleeper.kill()
    deadline = time.monotonic() + 10
    while procs.scan().get(sleeper.pid, procs.Proc(0, 0, "Z", None)).state != "Z":
        assert time.monotonic() < deadline, "the killed child never became a zombie"
        time.sleep(0.01)
    try:
        assert not processes.alive(sleeper.pid)
    finally:
        sleeper.wait()
    assert not processes.alive(sleeper.pid)
    assert not processes.alive(None)
