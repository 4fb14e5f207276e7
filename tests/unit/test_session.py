"""gtd.session on this machine's own /proc: a recorded session is the same, gone,
another, or out of sight; a reused process id is never taken for the session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gtd import session
from gtd.session import Session

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="sessions are found through /proc (Linux only)"
)


def start_time(pid: int) -> int:
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    return int(raw[raw.rfind(b")") + 2 :].split()[19])


def place() -> tuple[str, str]:
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return boot, os.readlink("/proc/self/ns/pid")


def this_process() -> Session:
    return Session(os.getpid(), start_time(os.getpid()), *place())


def test_a_running_process_is_the_same_session_to_itself_and_another_to_others() -> None:
    me = this_process()
    assert session.relation(me, me) == "same"
    assert session.relation(me, None) == "other"
    assert session.relation(me, me._replace(pid=1)) == "other"


def test_a_reused_process_id_is_a_session_gone() -> None:
    """The pid runs, but a process started at another time: not the session."""
    me = this_process()
    assert session.relation(me._replace(start=me.start + 1), me) == "gone"


def test_an_exited_process_is_a_session_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    recorded = Session(child.pid, start_time(child.pid), *place())
    child.wait()
    assert session.relation(recorded, None) == "gone"


def test_a_zombie_is_a_session_gone() -> None:
    """Exited, never reaped (a container whose pid 1 is no init keeps it so)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    recorded = Session(child.pid, start_time(child.pid), *place())
    try:
        while Path(f"/proc/{child.pid}/stat").read_bytes().split(b") ")[1][:1] != b"Z":
            pass
        assert session.relation(recorded, None) == "gone"
    finally:
        child.wait()


def test_a_session_of_another_boot_or_pid_namespace_is_out_of_sight() -> None:
    me = this_process()
    assert session.relation(me._replace(boot="another-boot"), me) == "unknown"
    assert session.relation(me._replace(ns="pid:[1]"), me) == "unknown"


def test_the_client_is_found_through_any_depth_of_shells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process named `claude`, a shell under it, the helper under that."""
    monkeypatch.delenv("GTD_NO_SESSION", raising=False)
    link = tmp_path / "claude"
    link.symlink_to(sys.executable)
    inner = "from gtd import session; s = session.current(); print(s.pid, s.start)"
    # `; exit $?`: the shell stays, the helper its child (a lone command it would exec)
    outer = (
        "import os, shlex, subprocess, sys; print(os.getpid(), flush=True); "
        "subprocess.run(['/bin/sh', '-c', "
        f"shlex.join([sys.argv[1], '-c', {inner!r}]) + '; exit $?'])"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [str(link), "-c", outer, sys.executable], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    client, found = out.stdout.split("\n", 1)
    pid, start = (int(w) for w in found.split())
    assert pid == int(client)
    assert start > 0


def test_the_suites_hook_takes_the_session_away(tmp_path: Path) -> None:
    link = tmp_path / "claude"
    link.symlink_to(sys.executable)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GTD_NO_SESSION": "1"}
    script = "from gtd import session; print(session.current())"
    out = subprocess.run([str(link), "-c", script], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "None", out.stderr


@pytest.mark.parametrize(
    "data",
    [
        None,
        "1234",
        [1, 2, "b", "n"],
        {"pid": "12", "start": 1, "boot": "b", "ns": "n"},
        {"pid": 1, "start": 1, "boot": "b", "ns": "n"},
        {"pid": True, "start": 1, "boot": "b", "ns": "n"},
        {"pid": 12, "start": -1, "boot": "b", "ns": "n"},
        {"pid": 12, "start": 1, "boot": "", "ns": "n"},
        {"pid": 12, "start": 1, "boot": "b"},
    ],
)
def test_anything_but_a_recorded_session_is_none(data: object) -> None:
    assert session.from_json(data) is None


def test_a_recorded_session_reads_back() -> None:
    me = this_process()
    assert session.from_json(session.to_json(me)) == me
