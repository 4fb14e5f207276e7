"""The cap on judged test runs at once (`test_runs:`, gtd.auto.ratchet.seats):
real flocks held by real processes, and real `gtd ratchet run`s side by side
whose tests print when they start and end."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gtd.auto.ratchet import room, seats
from gtd.auto.setup import ensure_excluded
from gtd.git import Git
from tests.conftest import Repo, run_gtd

# A process that holds seat ``k`` of ``base`` until its stdin closes.
_HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys
    path = sys.argv[1]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.read()
    """
)


def _hold(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "held\n"
    return proc


def test_a_run_beyond_the_cap_waits_then_answers_busy(tmp_path: Path) -> None:
    holder = _hold(tmp_path / seats.FOLDER / "0")
    try:
        began = time.monotonic()
        with pytest.raises(seats.Busy) as info, seats.seat(tmp_path, 1, wait_s=0.6):
            pytest.fail("a second run took the only seat")
        assert time.monotonic() - began >= 0.6  # it waited the whole bound
        assert "1 test run of this repository is under way (test_runs: 1)" in info.value.message
        assert info.value.hint is not None
        assert "test_runs" in info.value.hint
        # Another seat under a cap of two is free: no wait.
        with seats.seat(tmp_path, 2, wait_s=0) as number:
            assert number == 1
    finally:
        holder.communicate("")
    # The holder is gone (as a killed run is): its seat is free again.
    with seats.seat(tmp_path, 1, wait_s=0) as number:
        assert number == 0


def test_a_waiting_run_takes_the_seat_as_soon_as_it_is_free(tmp_path: Path) -> None:
    holder = _hold(tmp_path / seats.FOLDER / "0")
    with ThreadPoolExecutor(1) as pool:

        def free_later() -> None:
            time.sleep(0.5)
            holder.communicate("")

        pool.submit(free_later)
        began = time.monotonic()
        with seats.seat(tmp_path, 1, wait_s=30) as number:
            waited = time.monotonic() - began
    assert number == 0
    assert 0.4 <= waited < 5, waited


def test_a_room_inside_a_run_shares_its_seat(repo: Repo) -> None:
    """A baseline taken inside a judged run (a room within a room, in one
    thread) is the same run: with a cap of one it must not wait for itself."""
    repo.write("a.py", "A = 1\n")
    repo.commit_all("initial")
    git = Git(repo.path, hardened=True)
    with room.acquire(git, runs=1) as outer, room.acquire(git, runs=1) as inner:
        assert outer.slot != inner.slot


# -- two `gtd ratchet run`s at once ------------------------------------------------

PYTEST = f"{shlex.quote(sys.executable)} -m pytest -q -s -p no:cacheprovider"
# The suite writes when it starts and ends, each run to a file of its own
# (its pid's) in LOG, outside the room: the judge's box is off in these
# repositories for that alone (the seat is taken before any box starts).
SLOW_TEST = textwrap.dedent(
    """
    import os
    import time

    LOG = {log!r}


    def test_slow():
        with open(os.path.join(LOG, str(os.getpid())), "a") as out:
            out.write(f"{{time.time():.3f}}\\n")
            out.flush()
            time.sleep(1.5)
            out.write(f"{{time.time():.3f}}\\n")
    """
)


def _slow_project(repo: Repo, monkeypatch: pytest.MonkeyPatch, cap: int, log: Path) -> Repo:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    log.mkdir()
    repo.write("tests/test_slow.py", SLOW_TEST.format(log=str(log)))
    repo.write(".gitignore", "__pycache__/\n")
    config = f"ratchet:\n  test_command: {json.dumps(PYTEST)}\n  box: false\ntest_runs: {cap}\n"
    repo.write(".deepflow/config.yaml", config)
    repo.commit_all("init")
    ensure_excluded(Git(repo.path))
    assert run_gtd(repo.path, "ratchet", "snapshot").code == 0
    for old in log.iterdir():  # the snapshot's own run
        old.unlink()
    return repo


def _two_runs(repo: Repo, log: Path) -> list[tuple[float, float]]:
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda _: run_gtd(repo.path, "ratchet", "run", "--json"), range(2)))
    for res in done:
        assert res.code == 0, res.stderr
        assert res.json["passed"] is True, res.json
    runs = [[float(t) for t in f.read_text().split()] for f in log.iterdir()]
    assert len(runs) == 2, runs
    assert all(len(r) == 2 for r in runs), runs
    return sorted((start, end) for start, end in runs)


@pytest.mark.slow
def test_with_a_cap_of_one_two_runs_never_overlap_and_both_finish(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    project = _slow_project(repo, monkeypatch, 1, log)
    (a_start, a_end), (b_start, b_end) = _two_runs(project, log)
    assert a_end <= b_start, ((a_start, a_end), (b_start, b_end))


@pytest.mark.slow
def test_with_a_cap_of_two_two_runs_overlap(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    project = _slow_project(repo, monkeypatch, 2, log)
    (a_start, a_end), (b_start, b_end) = _two_runs(project, log)
    assert b_start < a_end, ((a_start, a_end), (b_start, b_end))
