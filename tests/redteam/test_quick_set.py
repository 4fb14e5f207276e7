"""The quick loop's red-team tests are exactly those `QUICK` names, and every
file of the suite has its entry (tests/redteam/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.redteam.conftest import QUICK

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def _collected(*args: str) -> set[str]:
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-p", "no:xdist", *args, str(HERE)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    return {ln.removeprefix("tests/redteam/") for ln in res.stdout.splitlines() if "::" in ln}


def test_the_quick_red_team_tests_are_the_ones_listed() -> None:
    listed = {f"{name}::{test}" for name, tests in QUICK.items() for test in tests}
    assert _collected("-m", "not slow") == listed
    assert set(QUICK) == {p.name for p in HERE.glob("test_*.py")}
