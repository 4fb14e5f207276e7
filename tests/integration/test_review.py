"""The optional reviewer (review.agent): `gtd cycle end` asks for a review once,
with a brief holding the task, the diff reader's findings and the change; the
verdict the loop passes back decides only an objection (a revert, counted); an
approval, or a line that is no verdict, leaves the judging to the tests."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import CALC, MUL, MUL_TEST, gtd_json, make_project

REVIEW = "review:\n  agent: true\n"


@pytest.fixture
def project(repo: Repo) -> Repo:
    make_project(repo, config_extra=REVIEW)
    return repo


def _asked(repo: Repo, calc: str) -> dict[str, object]:
    began = gtd_json(repo, "cycle", "begin")
    assert began["status"] == "task"
    repo.write("calc.py", calc)
    repo.write("tests/test_mul.py", MUL_TEST)
    asked = gtd_json(repo, "cycle", "end", "--cycle", str(began["cycle"]))
    assert asked["status"] == "review", asked
    assert asked["brief"] == ".deepflow/review-brief.md"
    return asked


def _reviewed(repo: Repo, asked: dict[str, object], said: str) -> dict[str, object]:
    """The cycle's second end, with the reviewer's reply."""
    return gtd_json(repo, "cycle", "end", "--cycle", str(asked["cycle"]), "--review", said)


def test_the_brief_holds_the_task_the_findings_and_the_change(project: Repo) -> None:
    cheat = MUL.replace("return a * b", "return a * b if a != 12 else 144")
    cheat = "import sys\n\nFLAG = 'pytest' in sys.modules\n\n\n" + cheat
    _asked(project, cheat)
    brief = (project.path / ".deepflow/review-brief.md").read_text()
    assert "# Review of cycle 1: T1 — Add mul" in brief
    assert "- [ ] **T1**: Add mul" in brief  # the plan's own words
    assert "- `calc.py:3: test-sniffing: looks for a test framework in sys.modules`" in brief
    assert "+def mul(a, b):" in brief
    assert "+++ b/tests/test_mul.py" in brief  # a new file, whole
    assert "Verdict: approve" in brief


def test_an_objection_reverts_and_counts(project: Repo) -> None:
    asked = _asked(project, MUL)
    said = "Looks fine at first.\nVerdict: object: mul ignores negative numbers"
    answer = _reviewed(project, asked, said)
    assert answer["status"] == "reverted", answer
    assert answer["reason"] == "the reviewer objected: mul ignores negative numbers"
    assert answer["review"] == "object: mul ignores negative numbers"
    assert (project.path / "calc.py").read_text() == CALC
    mem = yaml.safe_load((project.path / ".deepflow/auto-memory.yaml").read_text())
    assert mem["consecutive_reverts"]["T1"] == 1
    (cycle,) = mem["cycles"]
    assert cycle["review"] == "object: mul ignores negative numbers"
    assert cycle["review_s"] >= 0
    report = (project.path / ".deepflow/auto-report.md").read_text()
    assert "## Reviews" in report
    assert "| 1 | T1: Add mul | object: mul ignores negative numbers |" in report


@pytest.mark.slow
def test_an_approval_leaves_the_verdict_to_the_tests(project: Repo) -> None:
    asked = _asked(project, MUL)
    answer = _reviewed(project, asked, "Verdict: approve")
    assert answer["status"] == "passed", answer
    assert answer["review"] == "approve"
    broken = MUL.replace("return a + b", "return a - b")
    asked = _asked(project, broken)
    answer = _reviewed(project, asked, "Verdict: approve")
    assert answer["status"] == "reverted", answer
    assert str(answer["reason"]).startswith("tests failed"), answer


@pytest.mark.slow
def test_a_reply_that_is_no_verdict_goes_to_the_tests(project: Repo) -> None:
    asked = _asked(project, MUL)
    answer = _reviewed(project, asked, "I could not decide.")
    assert answer["status"] == "passed", answer
    assert answer["review"] == "none: I could not decide."


REVIEWING_AGENT = f"""\
import sys
from pathlib import Path
brief = sys.stdin.read()
if brief.startswith("# Review of cycle 1"):
    print("Verdict: object: the first attempt is never good enough")
elif brief.startswith("# Review"):
    print("Verdict: approve")
else:
    Path("calc.py").write_text({MUL!r})
    Path("tests/test_mul.py").write_text({MUL_TEST!r})
"""


def test_gtd_loop_runs_the_review_with_the_agent_command(repo: Repo) -> None:
    import sys

    make_project(repo, config_extra=REVIEW)
    script = repo.path.parent / "agent.py"
    script.write_text(REVIEWING_AGENT)
    res = run_gtd(repo.path, "loop", "--agent", f"{sys.executable} {script}", "--max-cycles", "2")
    assert res.code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith(
        "cycle 1 T1 reverted: the reviewer objected: the first attempt is never good enough"
    ), res.stdout
    assert lines[1].startswith("cycle 2 T1 passed"), res.stdout
    mem = yaml.safe_load((repo.path / ".deepflow/auto-memory.yaml").read_text())
    assert [c["review"] for c in mem["cycles"]] == [
        "object: the first attempt is never good enough",
        "approve",
    ]
