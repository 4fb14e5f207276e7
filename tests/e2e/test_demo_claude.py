"""`gtd demo --claude` with the real Claude Code: the demo's night ticks through
`claude -p /gtd:auto-cycle` with the pack loaded, against the scripted model the
other end-to-end tests use, and goes as the script says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import indented_block
from tests.e2e.harness import git

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def commits_aside(text: str) -> str:
    return re.sub(r"committed [0-9a-f]{7,}", "committed <commit>", text)


def test_the_night_inside_claude_code_goes_as_scripted(claude: str, tmp_path: Path) -> None:
    where = tmp_path / "cart"
    started = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "gtd", "demo", "--claude", "--keep", str(where)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ},
    )
    print(f"gtd demo --claude took {time.monotonic() - started:.1f} s")
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert "Scripted: only the model's replies, served on 127.0.0.1" in out
    assert "with the pack from" in out
    ticks = [ln for ln in out.splitlines() if ln.startswith("tick ") and ": cycle " in ln]
    assert [t.split(":")[0] for t in ticks] == [f"tick {n}" for n in range(1, 7)]
    assert "T2 Discount codes: reverted: tests failed: 1 of" in ticks[1]
    # Inside Claude Code the guard hook refuses the edit to the protected test
    # before the ratchet sees it; the bulk price from two items then fails it.
    assert "tick 4: the guard hook refused the agent's Write of a protected test" in out
    assert "T3 Bulk price: reverted: tests failed" in ticks[3]
    assert "test_cart.py::test_adding_an_item_again_adds_to_its_quantity" in ticks[3]
    assert "T4 Receipt: passed, committed" in ticks[5]
    # the last tick found the plan complete, stopped the loop and verified (the
    # model's own `gtd verify` in Claude Code), then the demo checked it again
    assert "Claude Code's last word: passed: Verification passed" in out
    assert "The night went as scripted: 6 cycles, 4 committed, 2 reverted" in out
    # what each tick cost, read from the session's transcripts of the scripted
    # model's answers (their usage numbers), priced from the table
    assert "| Tokens | Cost |" in out
    assert "    | Total cost | $" in out
    assert "    | Tick overhead vs agent work | $" in out
    assert git(where, "status", "--porcelain") == ""
    # the sandbox block was set and taken out within the night: gtd's list of
    # such repositories, in the person's state folder, never named this one
    assert not (Path(os.environ["XDG_STATE_HOME"]) / "gtd" / "sandboxed.json").exists()
    kept = git(where, "for-each-ref", "--format=%(refname)", "refs/gtd/reverted/")
    assert kept.split() == ["refs/gtd/reverted/cycle-2", "refs/gtd/reverted/cycle-4"]
    # docs/demo.md shows these ticks as a real run printed them
    doc = (ROOT / "docs" / "demo.md").read_text(encoding="utf-8")
    shown = indented_block(doc.split("The ticks of a real", 1)[1])
    printed = [ln for ln in out.splitlines() if ln.startswith("tick ")]
    assert commits_aside("\n".join(printed)) == commits_aside(shown)
    # the implementer's Write calls really went through Claude Code's tools
    assert "def receipt(self) -> str:" in (where / "cart.py").read_text()
