"""The morning report, read the way a person reads it: a night that halts on the
circuit breaker, the commands the report gives followed literally, the run resumed
and finished, then verified — on a real repository with real cycles, git and pytest."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from gtd.exits import EXIT_HALTED
from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import gtd_json
from tests.integration.test_loop import BAD_AGENT, DIV, GOOD_AGENT, make_project, short


def report(repo: Repo) -> str:
    return (repo.path / ".deepflow/auto-report.md").read_text()


def section(text: str, title: str) -> str:
    return text.split(f"## {title}\n\n", 1)[1].split("\n## ", 1)[0]


def commands(text: str) -> list[str]:
    """The commands a section tells the reader to run, in order."""
    return re.findall(r"`((?:gtd|git) [^`]*)`", text)


@pytest.mark.slow
def test_a_halted_night_read_and_resumed_from_the_report(repo: Repo) -> None:
    bad = make_project(repo, BAD_AGENT, "circuit_breaker_threshold: 2\n")
    repo.git("switch", "-q", "-c", "gtd-auto")  # as the README says: a branch of its own
    assert run_gtd(repo.path, "loop", "--agent", bad).code == EXIT_HALTED

    # 1. The top of the report says the loop stopped, where, why, and how to go on.
    text = report(repo)
    state = section(text, "State")
    assert state.startswith(
        "**Halted** at T1: Add mul — Circuit breaker tripped: T1 failed 2 consecutive times. "
        "Reason: tests failed: 1 of 2 (tests/test_calc.py::"
    )
    assert state.endswith("Plan: 0 of 2 tasks done, 2 tasks remaining (T1, T2).\n")
    show, reset = commands(state)[:2]
    assert show == "git show refs/gtd/reverted/cycle-2 --stat"
    assert reset == "gtd cycle reset T1"

    # 2. The kept work is where the report says, and its command shows it.
    shown = subprocess.run(
        shlex.split(show), cwd=repo.path, capture_output=True, text=True, check=True
    ).stdout
    assert "calc.py" in shown
    assert "gtd: reverted work of cycle 2 (T1)" in shown
    reverted = section(text, "Reverted Tasks")
    for n in (1, 2):
        assert f"| T1 | Add mul | {n} | tests failed: 1 of 2 (tests/test_calc.py::" in reverted
        assert f"| `git show refs/gtd/reverted/cycle-{n} --stat` |" in reverted

    # 3. Tasks and cycles are told apart; health is the branch's (nothing passed yet).
    summary = section(text, "Summary")
    assert "| Total cycles run | 2 |" in summary
    assert "| Cycles reverted | 2 |" in summary
    assert "| Tasks with reverts | 1 (T1 ×2): not done yet |" in summary
    assert "| Tasks remaining | 2 of 2 |" in summary
    assert re.search(r"\| Test time \| \d+\.\d s in 2 runs \|", summary)
    health = section(text, "Health Score")
    assert "| Tests | — |" in health
    assert "| Last cycle | cycle 2 (T1) reverted; the branch is as it was at setup |" in health
    chart = section(text, "Run Chart")
    assert '  commit id: "1 T1 reverted" type: REVERSE\n' in chart
    assert '  commit id: "2 T1 reverted" type: REVERSE tag: "breaker tripped at T1"\n' in chart
    events = section(text, "Events")
    assert "Circuit breaker tripped: T1 failed 2 consecutive times." in events

    # 4. Follow the report: reset as it says, start the loop again (one cycle).
    res = run_gtd(repo.path, *shlex.split(reset)[1:])
    assert res.code == 0, res.stderr
    assert res.stdout.startswith("status: reset")
    assert "**In progress** — no cycle in flight; the next task is T1: Add mul." in report(repo)
    script = repo.path.parent / "good_agent.py"
    script.write_text(GOOD_AGENT)
    good = f"{sys.executable} {script}"
    assert run_gtd(repo.path, "loop", "--agent", good, "--max-cycles", "1").code == 0
    text = report(repo)
    t1 = short(repo, "T1: Add mul")
    assert section(text, "State") == (
        "**In progress** — no cycle in flight; the next task is T2: Add div.\n"
        "\n"
        "Plan: 1 of 2 tasks done, 1 task remaining (T2).\n"
    )
    health = section(text, "Health Score")
    assert "| Tests | 3 passed, 0 failed, 0 skipped/xfail |" in health
    assert f"| Measured on | cycle 3 (T1, {t1}) |" in health
    assert "| Ratchet | green |" in health
    assert "Last cycle" not in health
    assert re.search(
        rf"\| 3 \| T1 \| Add mul \| passed \| {t1} \| — \| 3 passed, 0 failed, "
        r"0 skipped/xfail \| \d+\.\d s \|",
        section(text, "Cycle Log"),
    )
    assert "| Tasks committed | 1 |" in text

    # 5. While a cycle runs, the report says what is in flight.
    assert gtd_json(repo, "cycle", "begin")["task"] == "T2"
    assert section(report(repo), "State").startswith(
        "**Running** — cycle 4, T2: Add div: the agent is working on it (since "
    )
    repo.write("calc.py", DIV)
    assert gtd_json(repo, "cycle", "end")["status"] == "passed"
    state = section(report(repo), "State")
    assert state.startswith(
        "**Complete** — 2 tasks done, none remaining.\n\nNot verified yet: run `gtd verify`.\n"
    )

    # 6. Verified: the state says so, and the Health Score lists the levels.
    assert gtd_json(repo, "verify")["status"] == "passed"
    text = report(repo)
    assert "Verified: `gtd verify` passed (L0 build skipped, L1 files" in section(text, "State")
    assert "| Verify L4 (tests) | ✓ passed (3 / 3 tests passed) |" in text
    assert repo.status() == ""
