"""Kills at random moments of a wave (docs/parallel.md, "Crash safety"): `kill -9`
of the whole process family of a `gtd cycle begin` that starts a wave, or of a
`gtd cycle end --cycle N` of one of its tasks (with its worker and tests), at a
moment drawn from the trial's seed; then the loop goes on as its ticks would,
and every task must be landed exactly once or queued with its work kept, never
both; no worktree or wave branch of the helper's is left; the person's files are
as they were. ``GTD_WAVE_KILLS`` trials (default 8), slow."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time

import pytest

from tests.conftest import Repo
from tests.integration.calc_project import gtd_json, run_cli
from tests.integration.test_waves import (
    MUL,
    MUL_TEST,
    SUB,
    SUB_TEST,
    helper_leftovers,
    project,
    records,
    settled,
    subjects,
    write,
)
from tests.kill import procs

KILLS = int(os.environ.get("GTD_WAVE_KILLS", "8"))
WORK = {"T1": {"mul.py": MUL, "tests/test_mul.py": MUL_TEST},
        "T2": {"sub.py": SUB, "tests/test_sub.py": SUB_TEST}}  # fmt: skip

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not procs.available(), reason="needs /proc to kill a process family"),
]


def _killed(repo: Repo, args: list[str], after_s: float) -> bool:
    """Run ``gtd <args>`` and kill its whole family ``after_s`` seconds in;
    whether the kill met it still running (else it had finished first)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "gtd", *args],
        cwd=repo.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(after_s)
    hit = child.poll() is None
    procs.kill_family([child.pid], [repo.path])
    child.wait()
    left = procs.wait_quiet([repo.path], 60)
    assert not left, procs.describe(left)  # no stall: nothing of the trial runs on
    tally = os.environ.get("GTD_WAVE_KILLS_LOG")  # (the figure of docs/parallel.md)
    if tally:
        with open(tally, "a") as out:
            out.write(f"{args[1]} {after_s:.2f} {'hit' if hit else 'missed'}\n")
    return hit


def _implement(answer: dict[str, object]) -> None:
    trees, tasks = answer["worktrees"], answer["tasks"]
    assert isinstance(trees, list)
    assert isinstance(tasks, list)
    for task, tree in zip(tasks, trees, strict=True):
        for rel, text in WORK[str(task)].items():
            write(tree, rel, text)


@pytest.mark.parametrize("seed", range(KILLS))
def test_a_kill_at_any_moment_of_a_wave_loses_nothing(repo: Repo, seed: int) -> None:
    draw = random.Random(seed)
    project(repo)
    base = repo.git("rev-parse", "HEAD").strip()
    kind = ("begin", "end-1", "end-2")[seed % 3]
    if kind == "begin":
        _killed(repo, ["cycle", "begin", "--json"], draw.uniform(0.0, 1.5))
    answer = settled(repo)
    if answer["status"] == "busy" and answer.get("phase") == "agent":
        # Killed after the wave was sealed ready, before its answer: no one
        # works on it; once the agent timeout has passed it is abandoned.
        late = {"GTD_CLOCK_OFFSET_S": "86400"}
        answer = gtd_json(repo, "cycle", "begin", env=late)
        assert "abandoned" in str(answer.get("recovered")), answer
    if answer["status"] == "wave":
        _implement(answer)
        cycles = answer["cycles"]
        assert isinstance(cycles, list)
        first, second = (str(c) for c in cycles)
        if kind == "end-2":
            assert run_cli(repo, "cycle", "end", "--cycle", first).code == 0
        if kind != "begin":
            which = first if kind == "end-1" else second
            _killed(repo, ["cycle", "end", "--cycle", which, "--json"], draw.uniform(0.0, 4.0))
        # The loop goes on as its ticks would: each task not yet ended is ended
        # (once: ending an ended cycle after others is a halt, as for any cycle).
        for cycle in (first, second):
            if int(cycle) not in [r["cycle"] for r in records(repo)]:
                assert run_cli(repo, "cycle", "end", "--cycle", cycle).code == 0
    # Whatever is left in the queue runs alone, as a serial cycle.
    for _ in range(3):
        answer = settled(repo)
        if answer["status"] != "task":
            break
        for rel, text in WORK[str(answer["task"])].items():
            repo.write(rel, text)
        ended = run_cli(repo, "cycle", "end", "--cycle", str(answer["cycle"]))
        assert ended.code == 0, ended.stderr
    final = settled(repo)
    assert final["status"] == "complete", (final, records(repo))

    landed = [s for s in subjects(repo, base) if "mark done" not in s]
    assert sorted(landed) == ["T1: Add mul", "T2: Add sub"]  # each exactly once
    for task, files in WORK.items():
        for rel, text in files.items():
            assert (repo.path / rel).read_text() == text, (task, rel)
        ref = f"refs/gtd/queued/{task}"
        assert not repo.git("for-each-ref", ref).strip()  # dropped once it landed
    assert helper_leftovers(repo) == []
    assert repo.status() == ""
    # Nothing of the person's changed but what landed.
    assert repo.git("diff", "--stat", base, "HEAD", "--", "calc.py", "tests/test_calc.py") == ""
