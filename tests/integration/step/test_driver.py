"""The bash driver in docs/step-mode.md ("Driving step mode"), taken from the docs as
written and run against a real repository — with scripted checks and in gtd 2.x
mode — with a stand-in agent that acts on each prompt. It must carry the cycle from
building to the human's review, running every check as the protocol says."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.step.conftest import StepRepo

ROOT = Path(__file__).resolve().parents[3]
pytestmark = [
    pytest.mark.skipif(shutil.which("jq") is None, reason="the documented driver uses jq"),
    pytest.mark.skipif(shutil.which("bash") is None, reason="the documented driver is bash"),
]

# The agent: reads the state from the prompt's header and makes that state's move.
AGENT = """\
import re, sys
from pathlib import Path

prompt = sys.argv[1]
state = re.search(r"^# gtd step mode — (\\S+) \\(agent turn\\)$", prompt, re.M).group(1)
log = Path(sys.argv[0]).with_suffix(".log")
log.write_text(log.read_text() + state + "\\n" if log.exists() else state + "\\n")
if state == "building":
    Path("value.txt").write_text("almost\\n")  # red at first
elif state == "fixing":
    assert "FAILED test_value" in prompt
    Path("value.txt").write_text("ok\\n")
elif state == "agentic-review":
    Path(".gtd/FEEDBACK.md").write_text("")
elif state == "review":
    Path(".gtd").mkdir(exist_ok=True)
    Path(".gtd/REVIEW.md").write_text(
        "# Review: v\\n\\n<!-- base: abc -->\\n\\n## The value\\n\\n- [ ] ./value.txt#1 — ok\\n"
    )
else:
    sys.exit(f"the agent did not expect {state}")
"""
TODO = "# Plan\n\nok\n\n## Open Questions\n\n### Spelling?\n\nSuggested default: ok\n"


def documented_driver() -> str:
    text = (ROOT / "docs" / "step-mode.md").read_text(encoding="utf-8")
    section = text.split("## Driving step mode", 1)[1].split("\n## ", 1)[0]
    blocks: list[str] = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the section holds exactly one driver"
    return blocks[0]


def test_the_driver_is_ten_lines() -> None:
    code = [
        line
        for line in documented_driver().splitlines()
        if line.strip() and not line.startswith("#!")
    ]
    assert len(code) == 10, code


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["scripted", "inline"])
def test_the_documented_driver_runs_a_cycle(step_repo: StepRepo, tmp_path: Path, mode: str) -> None:
    r = step_repo
    r.config(checks=mode, squash=False)
    r.commit_all("chore: mode")
    r.write("idea.md", "make the value ok\n")
    r.ok("step")
    r.write(".gtd/TODO.md", TODO)
    r.ok("step-agent")
    r.ok("step")
    r.write(".gtd/01-value/01-task.md", "# Task\n\nWrite ok into value.txt.\n\n- [ ] ok\n")
    r.ok("step-agent")
    start = len(r.first_parent())

    driver = tmp_path / "driver.sh"
    driver.write_text(documented_driver())
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "AGENT": f"{sys.executable} {agent}",
    }
    res = subprocess.run(
        ["bash", str(driver)], cwd=r.path, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr
    assert "await-review" in res.stdout  # the human's prompt, printed at the hand-off
    assert agent.with_suffix(".log").read_text().split() == [
        "building",
        "fixing",
        "agentic-review",
        "review",
    ]
    checks = {
        "scripted": [
            "gtd(agent): building",
            "gtd: testing",
            "gtd(check): test-failed",
            "gtd(agent): fixing",
            "gtd: testing",
            "gtd(check): agentic-review",
        ],
        "inline": [
            "gtd(agent): building",
            "gtd: errors",
            "gtd(agent): fixing",
            "gtd: tests green",
        ],
    }[mode]
    assert r.first_parent()[start:] == [
        *checks,
        "gtd(agent): agentic-review",
        "gtd: package done",
        "gtd(agent): review",
        "gtd: awaiting review",
    ]
    assert r.status() == ""
