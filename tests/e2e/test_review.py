"""The optional reviewer through the real Claude Code CLI (review.agent): the tick
runs the gtd:reviewer subagent on the brief `gtd cycle end` names and passes its
verdict back. The scripted reviewer objects once (the cycle is reverted with its
reason and counted) and approves once (the tests judge, the task lands)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.demo.model_rules import implementer_rules, review_rules, tick_rules, write
from gtd.demo.model_server import Block, ModelServer
from tests.e2e.harness import assert_on_script, git, make_project, memory, run_claude
from tests.integration.calc_project import CALC

pytestmark = pytest.mark.slow

TICK = "/gtd:auto-cycle"
MUL = CALC + "\n\ndef mul(a, b):\n    return a * b\n"
MUL_TEST = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"


def edits(task: str, repo: Path) -> list[Block]:
    assert task == "T1", task
    return [write(repo, "calc.py", MUL), write(repo, "tests/test_mul.py", MUL_TEST)]


def test_the_reviewer_objects_once_then_approves(server: ModelServer, tmp_path: Path) -> None:
    repo = make_project(tmp_path / "repo", config_extra="review:\n  agent: true\n")
    base = git(repo, "rev-parse", "HEAD").strip()
    verdicts = ["object: mul has no test for negative numbers", "approve"]
    server.script(*review_rules(repo, verdicts), *tick_rules(), *implementer_rules(repo, edits))
    session = run_claude(server, repo, [TICK] * 2, base=tmp_path / "claude")
    assert_on_script(server, session)

    reviewers = [
        c for c in session.tool_calls("Agent") if c["input"]["subagent_type"] == "gtd:reviewer"
    ]
    assert len(reviewers) == 2
    subjects = git(repo, "log", "--format=%s", f"{base}..HEAD").splitlines()
    assert [s.split(" (")[0] for s in subjects] == ["T1: mark done in PLAN.md", "T1: Add mul"]
    mem = memory(repo)
    first, second = sorted(mem["cycles"], key=lambda c: c["cycle"])
    assert first["status"] != "passed"
    assert first["reason"] == "the reviewer objected: mul has no test for negative numbers"
    assert first["review"] == "object: mul has no test for negative numbers"
    assert second["status"] == "passed"
    assert second["review"] == "approve"
    assert mem["revert_history"][0]["reason"].startswith("the reviewer objected")
    report = (repo / ".deepflow/auto-report.md").read_text()
    assert "## Reviews" in report
    assert "| 2 | T1: Add mul | approve |" in report
