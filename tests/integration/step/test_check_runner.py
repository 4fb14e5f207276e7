"""`gtd run --wait`: the check script runs detached from the call (its own session
and process group), a call that stops waiting leaves it running, the next call
attaches to it instead of starting a second run, and crashes on either side lose
nothing (docs/step-mode.md, "Scripted checks"). Real repositories, real processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.step.conftest import StepRepo

# A suite that takes a while, red until value.txt says ok, and counts its runs.
SLOW = """\
import pathlib, sys, time
with open("runs.log", "a") as log:
    log.write("run\\n")
time.sleep(float(pathlib.Path("delay.txt").read_text()))
if pathlib.Path("value.txt").read_text().strip() != "ok":
    print("FAILED test_value: value.txt is not ok")
    sys.exit(1)
"""
TODO = "# Plan\n\nok\n\n## Open Questions\n\n### Spelling?\n\nSuggested default: ok\n"


def _at_testing(r: StepRepo, delay: float) -> None:
    r.write("slow.py", SLOW)
    r.write("delay.txt", f"{delay}\n")
    r.write(".gitignore", "runs.log\n")
    r.config(testCommand="python3 slow.py", checks="scripted")
    r.commit_all("chore: a slow suite")
    r.write("idea.md", "x\n")
    r.ok("step")
    r.write(".gtd/TODO.md", TODO)
    r.ok("step-agent")
    r.ok("step")
    r.write(".gtd/01-value/01-task.md", "# Task\n\n- [ ] ok\n")
    r.ok("step-agent")
    r.write("value.txt", "almost\n")
    assert r.ok("step-agent").committed == ["gtd(agent): building", "gtd: testing"]


def _runs(r: StepRepo) -> int:
    return len(r.read("runs.log").splitlines()) if r.exists("runs.log") else 0


def _record(r: StepRepo) -> dict[str, object]:
    data = json.loads((r.path / ".git" / "gtd-check.json").read_text())
    assert isinstance(data, dict)
    return data


def _wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.slow
def test_a_check_outlives_the_call_and_the_next_call_attaches(step_repo: StepRepo) -> None:
    r = step_repo
    _at_testing(r, 2.0)
    head = r.git("rev-parse", "HEAD")
    out = r.ok("run", "--wait", "0.3")
    assert out.stdout.startswith("checking: the check script started at ")
    assert "run `gtd run --wait 0.3` again to wait for it" in out.stdout
    assert r.git("rev-parse", "HEAD") == head  # nothing captured yet
    assert r.status() == ""  # the run keeps its record in the git directory
    record = _record(r)
    assert record["state"] == "testing"
    # Stepping the check now would read an unwritten verdict as green: refused.
    early = r.gtd("step", "check")
    assert early.code == 1
    assert "is still running" in early.stderr
    as_json = r.ok("run", "--wait", "0.1", "--json").json
    assert (as_json["state"], as_json["checking"], as_json["commits"]) == ("testing", True, [])
    assert r.ok("run").committed == ["gtd(check): test-failed"]
    assert _runs(r) == 1  # attached, never started twice
    assert not (r.path / ".git" / "gtd-check.json").exists()


@pytest.mark.slow
def test_a_run_that_ended_while_no_one_waited_is_stepped_once(step_repo: StepRepo) -> None:
    r = step_repo
    _at_testing(r, 0.5)
    assert r.ok("run", "--wait", "0").stdout.startswith("checking:")
    _wait_for((r.path / ".git" / "gtd-check.done").exists)
    assert r.exists(".gtd/FEEDBACK.md")  # the verdict is in the tree, not yet a turn
    assert r.ok("run", "--json").json["commits"] == ["gtd(check): test-failed"]
    assert _runs(r) == 1


@pytest.mark.slow
def test_a_killed_run_is_started_afresh(step_repo: StepRepo) -> None:
    r = step_repo
    _at_testing(r, 30.0)
    assert r.ok("run", "--wait", "0.2").stdout.startswith("checking:")
    _wait_for(lambda: _runs(r) == 1)
    pid = _record(r)["pid"]
    assert isinstance(pid, int)
    os.killpg(pid, signal.SIGKILL)  # the machine rebooted, or someone killed it
    _wait_for(lambda: not _alive(pid))
    r.write("delay.txt", "0\n")
    r.write("value.txt", "ok\n")  # meanwhile fixed by hand; the new run sees it
    assert r.ok("run").committed == ["gtd(check): agentic-review"]
    assert _runs(r) == 2


@pytest.mark.slow
def test_a_run_for_another_head_is_refused_while_it_lives(step_repo: StepRepo) -> None:
    r = step_repo
    _at_testing(r, 30.0)
    assert r.ok("run", "--wait", "0.1").stdout.startswith("checking:")
    pid = _record(r)["pid"]
    assert isinstance(pid, int)
    r.git("commit", "-q", "--allow-empty", "-m", "gtd: testing")  # HEAD moves under it
    out = r.gtd("run")
    assert out.code == 1
    assert out.stderr.startswith("gtd run: a check script started at ")
    assert f"kill -- -{pid}" in out.stderr
    os.killpg(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:  # gtd ran in this process, so the run may be this process's child
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# `git`, but the first `git status` is followed at once by the check script's
# last act: its verdict written into the tree, as a detached run writes it while
# a `gtd run` (or `gtd status`) is reading the tree.
WRITES_AFTER_STATUS = """\
#!/bin/sh
"$REAL_GIT" "$@"
code=$?
for arg in "$@"; do
  if [ "$arg" = status ] && [ ! -e "$FLAG" ]; then
    : >"$FLAG"
    echo "FAILED test_value: value.txt is not ok" >"$FEEDBACK"
  fi
done
exit $code
"""


def test_a_verdict_written_while_gtd_reads_the_tree_is_read_whole(
    step_repo: StepRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check script writes .gtd/FEEDBACK.md when its suite ends, whoever is
    reading the tree then. A read that took git's status before the write and
    looked for the file on disk after it held a FEEDBACK.md git had not seen
    added: one committed before, at testing the agent's `fixing` (a live `gtd run`
    refused "no check is awaited: fixing awaits an agent turn", the check never
    captured). The file is seen in both or in neither."""
    r = step_repo
    _at_testing(r, 0.1)
    real = shutil.which("git")
    assert real is not None
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "git").write_text(WRITES_AFTER_STATUS)
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("REAL_GIT", real)
    monkeypatch.setenv("FLAG", str(tmp_path / "written"))
    monkeypatch.setenv("FEEDBACK", str(r.path / ".gtd" / "FEEDBACK.md"))
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    status = r.ok("status", "--json").json
    assert (tmp_path / "written").exists()  # the write did land mid-read
    assert (status["state"], status["actor"]) == ("testing", "check")
    monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])
    assert r.ok("step", "check").committed == ["gtd(check): test-failed"]
