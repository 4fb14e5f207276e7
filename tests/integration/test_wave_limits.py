"""A whole wave under the budget ceiling and the harness's limits
(docs/parallel.md, "Resources"; docs/harness-failures.md): the ceiling shrinks
a wave to what it affords; a pause in force answers `paused` to a wave as to a
task; an implementer the harness stopped mid-wave pauses the loop, its task
back in the queue and not counted, its work kept, the others landing; and once
the wait is over one task tries the limit before a wave starts again. Real git
repositories, real pytest, `gtd loop --parallel` with scripted agents."""

from __future__ import annotations

import sys
import time

import pytest
import yaml

from tests.conftest import Repo
from tests.integration.calc_project import gtd_json, make_project, run_cli
from tests.integration.test_waves import (
    MUL,
    MUL_TEST,
    SUB,
    SUB_TEST,
    helper_leftovers,
    records,
)

# T1 first; then T2 and T3, independent of each other: a wave of two once T1 is in.
PLAN = """\
# Calculator

### spec-calc

- [ ] **T1**: Add neg
  - Files: neg.py, tests/test_neg.py
  - Blocked by: none
- [ ] **T2**: Add mul
  - Files: mul.py, tests/test_mul.py
  - Blocked by: T1
- [ ] **T3**: Add sub
  - Files: sub.py, tests/test_sub.py
  - Blocked by: T1
- [ ] **T4**: Add one
  - Files: one.py
  - Blocked by: T1
"""
NEG = "def neg(a):\n    return -a\n"
NEG_TEST = "from neg import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n"
FILES = {
    "T1": {"neg.py": NEG, "tests/test_neg.py": NEG_TEST},
    "T2": {"mul.py": MUL, "tests/test_mul.py": MUL_TEST},
    "T3": {"sub.py": SUB, "tests/test_sub.py": SUB_TEST},
    "T4": {"one.py": "ONE = 1\n"},
}
RATE_LIMITED = "API Error: Request rejected (429) · Rate limited"


def agent(repo: Repo, *, limited: str = "") -> str:
    """A scripted implementer: its task's files (in its working directory: the
    wave's worktree), then its usage line ($0.40: 20,000 output tokens of
    claude-opus-5-5); the task ``limited`` ends as Claude Code does when the
    API refuses it after its retries (exit 1, the error its last line)."""
    source = f"""\
import json, re, sys
from pathlib import Path
brief = sys.stdin.read()
task = re.search(r"^# Cycle \\d+ \\S (T\\d+):", brief, re.M).group(1)
for rel, text in {FILES!r}[task].items():
    Path(rel).parent.mkdir(parents=True, exist_ok=True)
    Path(rel).write_text(text)
print(json.dumps({{"gtd_usage": {{"output": 20000, "model": "claude-opus-5-5"}}}}))
if task == {limited!r}:
    print({RATE_LIMITED!r})
    sys.exit(1)
"""
    script = repo.path.parent / "agent.py"
    script.write_text(source)
    return f"{sys.executable} {script}"


def first_task(repo: Repo, config: str, **kw: str) -> str:
    """The project with T1 landed by the real loop (alone: nothing is ready
    beside it), its cost recorded from the agent's line. The agent command."""
    make_project(repo, plan=PLAN, config_extra=f"parallel: 2\n{config}")
    command = agent(repo, **kw)
    ran = run_cli(repo, "loop", "--agent", command, "--max-cycles", "1")
    assert ran.code == 0, (ran.stdout, ran.stderr)
    assert ran.stdout.startswith("cycle 1 T1 passed"), ran.stdout
    return command


@pytest.mark.parametrize(("usd", "started"), [(1.0, ["T2"]), (1.5, ["T2", "T3"])])
def test_the_budget_shrinks_a_wave_to_what_it_affords(
    repo: Repo, usd: float, started: list[str]
) -> None:
    # Spent $0.40 (T1); each task is expected to cost as much. Under $1.00 one
    # more fits ($0.80), two do not ($1.20); under $1.50 both do.
    first_task(repo, f"budget:\n  usd: {usd}\n")

    answer = gtd_json(repo, "cycle", "begin")

    if len(started) == 1:
        assert answer["status"] == "task", answer  # a wave of one: today's cycle
        assert answer["task"] == started[0]
        assert helper_leftovers(repo) == []
    else:
        assert answer["status"] == "wave", answer
        assert answer["tasks"] == started


# A wave whose second task is the one stopped is a variant of its first being stopped
# (the pause held whichever task ended last): slow, kept in the quick loop by [T2].
@pytest.mark.parametrize(
    "limited",
    ["T2", pytest.param("T3", marks=pytest.mark.slow(reason="a variant of [T2]"))],
)
def test_an_implementer_stopped_mid_wave_pauses_the_loop(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, limited: str
) -> None:
    monkeypatch.setenv("GTD_SANDBOX", "off")  # (the wave's fence: docs/parallel.md)
    command = first_task(repo, "pause:\n  first_wait_seconds: 20\n", limited=limited)
    other = "T3" if limited == "T2" else "T2"
    base = repo.git("rev-parse", "HEAD").strip()

    ran = run_cli(repo, "loop", "--agent", command, "--max-cycles", "2", "--parallel", "2")

    assert ran.code == 0, (ran.stdout, ran.stderr)
    lines = ran.stdout.splitlines()
    assert any(line.startswith(f"cycle 2 T2 {'paused' if limited == 'T2' else 'passed'}")
               for line in lines), lines  # fmt: skip
    found = {r["task"]: r for r in records(repo) if r.get("wave") == 1}
    assert found[limited]["status"] == "paused", found
    assert found[other]["status"] == "passed", found
    # The stopped task's work is kept; the other landed; the person's tree as it was.
    number = found[limited]["cycle"]
    name = next(iter(FILES[limited]))
    assert repo.git("show", f"refs/gtd/reverted/cycle-{number}:{name}") == FILES[limited][name]
    work = [s for s in repo.git("log", "--format=%s", f"{base}..HEAD").splitlines()
            if "mark done" not in s]  # fmt: skip
    assert work == [f"{other}: {'Add sub' if other == 'T3' else 'Add mul'}"]
    assert repo.status() == ""
    assert helper_leftovers(repo) == []
    # Not counted: the breaker holds nothing against it, its plan line stays open.
    memory = yaml.safe_load((repo.path / ".deepflow/auto-memory.yaml").read_text())
    assert memory["consecutive_reverts"].get(limited, 0) == 0
    assert f"- [ ] **{limited}**" in (repo.path / "PLAN.md").read_text()

    # The pause holds for a wave as for a task, whichever task of the wave ended last.
    held = gtd_json(repo, "cycle", "begin")
    assert held["status"] == "paused", held
    assert helper_leftovers(repo) == []

    # Once the wait is over, one task tries the limit before a wave starts again.
    time.sleep(max(0.0, _epoch(str(held["until"])) - time.time()) + 0.5)
    probe = gtd_json(repo, "cycle", "begin")
    assert probe["status"] == "task", probe
    assert probe["task"] == limited
    assert helper_leftovers(repo) == []


def _epoch(stamp: str) -> float:
    import calendar

    return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
