"""The state lock (`.deepflow/.gtd.lock`, a flock): one that stays taken is named
by the process holding it, so a person knows what to stop."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gtd.errors import GtdError, LockTimeout
from gtd.fsio import locked, state_lock

HOLD = """\
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(300)
"""


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="no /proc/locks to name a holder")
def test_a_lock_held_too_long_names_the_process_that_holds_it(tmp_path: Path) -> None:
    """A process left running (an agent's) that takes the state lock and keeps it:
    every command waits, then says which process to stop."""
    lock = tmp_path / ".gtd.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(LockTimeout) as caught, locked(lock, timeout_s=0.2):
            pass
        said = caught.value.render()
        assert f"by process {holder.pid} (" in said, said
        assert f"kill {holder.pid}" in said, said
    finally:
        holder.kill()
        holder.wait()
    with locked(lock, timeout_s=5):
        pass


def test_the_state_folder_is_never_taken_through_a_link(tmp_path: Path) -> None:
    """A link at `.deepflow` is removed before the lock is taken (the folder it
    leads to stays as it was); a file there is a person's, and an error names it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".deepflow").symlink_to(elsewhere)
    with locked(state_lock(root)):
        pass
    assert (root / ".deepflow").is_dir()
    assert not (root / ".deepflow").is_symlink()
    assert list(elsewhere.iterdir()) == []
    shutil.rmtree(root / ".deepflow")
    (root / ".deepflow").write_text("mine\n")
    with pytest.raises(GtdError, match="not a folder"):
        state_lock(root)
    assert (root / ".deepflow").read_text() == "mine\n"


def test_a_folder_in_place_of_the_lock_is_set_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An agent's folder at `.deepflow/.gtd.lock` (or any of the helper's files)
    stopped every command at the lock's open with an unexpected error. It is set
    aside, kept whole, and the lock is taken."""
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    lock = root / ".deepflow/.gtd.lock"
    lock.mkdir(parents=True)
    (lock / "inside").write_text("x\n")
    with locked(state_lock(root)):
        pass
    assert lock.is_file()
    (kept,) = (root / ".git/gtd/set-aside").glob("*/.gtd.lock")
    assert (kept / "inside").read_text() == "x\n"
    assert f"moved to {kept}" in capsys.readouterr().err
