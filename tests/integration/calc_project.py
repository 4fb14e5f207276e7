"""A small calculator project with a real pytest suite: the sample repository the
auto-mode integration tests run cycles in."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.conftest import CliResult, Repo, run_gtd

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"

CALC = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from calc import add\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_add_negative():\n    assert add(-1, 1) == 0\n"
)
PLAN = """\
# Calculator

### spec-calc

- [ ] **T1**: Add mul
  - Files: calc.py, tests/test_mul.py
  - Blocked by: none
- [ ] **T2**: Add div
  - Files: calc.py
  - Blocked by: T1
- [ ] **T3** [SPIKE]: Try a parser
  - Files: parse.py
  - Blocked by: none
"""
MUL = CALC + "\n\ndef mul(a, b):\n    return a * b\n"
MUL_TEST = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"


CONFTEST = "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n"


def make_project(
    repo: Repo,
    *,
    plan: str = PLAN,
    tests: bool = True,
    conftest: bool = True,
    config_extra: str = "",
) -> Repo:
    """Write and commit the project, then run `gtd auto setup` (which must be ready)."""
    repo.write("calc.py", CALC)
    if tests:
        repo.write("tests/test_calc.py", TESTS)
    if conftest:
        repo.write("conftest.py", CONFTEST)
    repo.write("PLAN.md", plan)
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {PYTEST}\n{config_extra}")
    repo.commit_all("initial")
    res = run_gtd(repo.path, "auto", "setup", "--json")
    while res.code == 0 and res.json["status"] == "checking":  # a baseline longer than the wait
        time.sleep(0.3)
        res = run_gtd(repo.path, "auto", "setup", "--json")
    assert res.code == 0, res.stderr
    assert res.json["status"] == "ready", res.json
    return repo


def gtd_json(repo: Repo, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    res = run_cli(repo, *args, "--json", env=env)
    assert res.code == 0, res.stderr
    data = res.json
    assert isinstance(data, dict)
    return data


def run_cli(repo: Repo, *args: str, env: dict[str, str] | None = None) -> CliResult:
    if env is None:
        return run_gtd(repo.path, *args)
    proc = subprocess.run(
        [sys.executable, "-m", "gtd", *args],
        cwd=repo.path,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)
