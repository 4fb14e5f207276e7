"""The waves benchmark (docs/parallel.md; `scripts/bench.py --only waves`): a plan
of six independent tasks, a scripted implementer that takes ``AGENT_S`` seconds
per task, `gtd loop --parallel 3` against `gtd loop` (one task at a time) on
two copies of one repository in one run. Reports both wall times and their
ratio, and checks both runs end with the same tree (PLAN.md aside: its ticks
name each run's own commits) and one work commit per task in plan order."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASKS = 6
AGENT_S = float(os.environ.get("GTD_BENCH_AGENT_S", "20"))
PY = sys.executable
PYTEST = f"{PY} -m pytest -q -p no:cacheprovider -p no:xdist -p no:hypothesispytest"

AGENT = """\
import re, sys, time
from pathlib import Path
brief = sys.stdin.read()
time.sleep(float(sys.argv[1]))
k = re.search(r"— T(\\d+):", brief).group(1)
Path(f"m{k}.py").write_text(f"def f{k}(x):\\n    return x + {k}\\n")
Path(f"tests/test_m{k}.py").write_text(
    f"from m{k} import f{k}\\n\\n\\ndef test_f{k}():\\n    assert f{k}(1) == {int(k) + 1}\\n"
)
"""


def _plan() -> str:
    rows = [
        f"- [ ] **T{k}**: Add m{k}\n  - Files: m{k}.py, tests/test_m{k}.py\n  - Blocked by: none\n"
        for k in range(1, TASKS + 1)
    ]
    return "# Bench\n\n### spec-bench\n\n" + "".join(rows)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def _make(repo: Path, env: dict[str, str]) -> None:
    repo.mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests/test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (repo / "conftest.py").write_text(
        "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n"
    )
    (repo / "PLAN.md").write_text(_plan())
    (repo / ".deepflow").mkdir()
    (repo / ".deepflow/config.yaml").write_text(
        f"ratchet:\n  test_command: {PYTEST}\n  rerun_failures: 0\n"
    )
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "initial")
    while True:
        done = subprocess.run(
            [PY, "-m", "gtd", "auto", "setup", "--json"],
            cwd=repo, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        if '"checking"' not in done.stdout:
            break
        time.sleep(0.5)


def _loop(repo: Path, agent: str, env: dict[str, str], parallel: int | None) -> float:
    cmd = [PY, "-m", "gtd", "loop", "--agent", agent]
    if parallel is not None:
        cmd += ["--parallel", str(parallel)]
    started = time.monotonic()
    ran = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    took = time.monotonic() - started
    if ran.returncode != 0:
        raise SystemExit(f"gtd loop failed ({ran.returncode}): {ran.stdout}{ran.stderr}")
    return took


def _files(repo: Path) -> list[str]:
    listed = _git(repo, "ls-tree", "-r", "HEAD").splitlines()
    return [line for line in listed if not line.endswith("\tPLAN.md")]


def _work(repo: Path) -> list[str]:
    subjects = _git(repo, "log", "--reverse", "--format=%s").splitlines()
    return [s for s in subjects if "mark done" not in s and s != "initial"]


def bench_waves(runs: int) -> dict[str, float]:
    """One paired run (``runs`` is not used: each side takes minutes)."""
    del runs
    with tempfile.TemporaryDirectory(prefix="gtd-bench-waves-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "GTD_SANDBOX": "off", "XDG_STATE_HOME": str(home / "state")}
        script = home / "agent.py"
        script.write_text(AGENT)
        agent = f"{PY} {script} {AGENT_S}"
        _make(home / "serial", env)
        shutil.copytree(home / "serial", home / "wave", symlinks=True)
        wave_s = _loop(home / "wave", agent, env, 3)
        serial_s = _loop(home / "serial", agent, env, None)
        same = _files(home / "wave") == _files(home / "serial")
        order = [f"T{k}: Add m{k}" for k in range(1, TASKS + 1)]
        in_order = _work(home / "wave") == order and _work(home / "serial") == order
        if not (same and in_order):
            raise SystemExit(
                f"the runs differ: same tree {same}, in plan order {in_order}: "
                f"{_work(home / 'wave')} / {_work(home / 'serial')}"
            )
    return {
        f"waves: {TASKS} tasks, {AGENT_S:g} s each, N = 1 wall (s)": serial_s,
        f"waves: {TASKS} tasks, {AGENT_S:g} s each, N = 3 wall (s)": wave_s,
        "waves: N = 3 / N = 1 wall ratio (same tree, plan order)": wave_s / serial_s,
    }


if __name__ == "__main__":
    for label, value in bench_waves(1).items():
        print(f"{label:<58} {value:8.3f}")
