"""`gtd loop --agent CMD` runs the agent under bubblewrap with the protected
paths read-only: an agent that writes a snapshot test, a test the previous cycle
added, PLAN.md and git's folder fails at each, its own work is committed, and the
loop runs the plan to the end. Real CLI, real bubblewrap, real git and pytest."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import MUL, MUL_TEST
from tests.integration.test_loop import DIV, make_project

AGENT = f"""\
import sys
from pathlib import Path
brief = sys.stdin.read()

def attempt(rel, text):
    try:
        Path(rel).write_text(text)
        print("WROTE", rel)
    except OSError as exc:
        print("REFUSED", rel, exc.strerror)

attempt("tests/test_calc.py", "def test_add():\\n    pass\\n")
attempt("PLAN.md", "")
attempt(".git/HEAD", "ref: refs/heads/elsewhere\\n")
if "— T1:" in brief:
    Path("calc.py").write_text({MUL!r})
    Path("tests/test_mul.py").write_text({MUL_TEST!r})
elif "— T2:" in brief:
    attempt("tests/test_mul.py", "def test_mul():\\n    pass\\n")
    Path("calc.py").write_text({DIV!r})
"""


@pytest.mark.slow
def test_the_headless_agent_cannot_write_protected_files(repo: Repo) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: the agent would run unfenced")
    agent = make_project(repo, AGENT)
    before = {rel: (repo.path / rel).read_bytes() for rel in ("tests/test_calc.py", "PLAN.md")}
    res = run_gtd(repo.path, "loop", "--agent", agent)
    assert res.code == 0, res.stdout + res.stderr
    assert "unfenced" not in res.stdout + res.stderr
    logs = "".join(p.read_text() for p in sorted((repo.path / ".deepflow/agent-logs").iterdir()))
    assert "WROTE" not in logs, logs
    for rel in ("tests/test_calc.py", "PLAN.md", ".git/HEAD", "tests/test_mul.py"):
        assert f"REFUSED {rel} Read-only file system" in logs, (rel, logs)
    assert (repo.path / "tests/test_calc.py").read_bytes() == before["tests/test_calc.py"]
    assert (repo.path / "tests/test_mul.py").read_text() == MUL_TEST
    subjects = repo.git("log", "--format=%s").splitlines()
    assert any(s.startswith("T1:") for s in subjects), subjects
    assert any(s.startswith("T2:") for s in subjects), subjects
    assert repo.git("status", "--porcelain") == ""
    assert not (repo.path / ".claude/settings.local.json").exists()  # the loop's end
