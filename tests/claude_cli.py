"""The real Claude Code CLI, for the tests that drive it (tests/e2e, the pack's
`claude plugin validate`, the installer's walk-through): the pinned version and the
rule when it is missing.

`scripts/check` installs the pinned version once into `.tools/claude-code/` with npm
and puts it first on PATH, so these tests run on any machine with Node.js. Without
it (no npm, or pytest run directly) they skip and say why; under CI (`CI` or
`GTD_E2E_REQUIRED` set) a missing or different client is a failure instead, so CI
never passes them silently."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pinned() -> str:
    """The version `scripts/check` installs: its CLAUDE_CODE_VERSION line."""
    text = (ROOT / "scripts" / "check").read_text(encoding="utf-8")
    found = re.search(r"^CLAUDE_CODE_VERSION=(\S+)", text, re.MULTILINE)
    assert found, "scripts/check has no CLAUDE_CODE_VERSION= line"
    return found.group(1)


PINNED = pinned()


def required() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("GTD_E2E_REQUIRED"))


@functools.cache
def _version(exe: str) -> str:
    res = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    return (res.stdout.strip() or res.stderr.strip()).split(" ", 1)[0]


def claude_or_skip() -> str:
    """The pinned `claude` on PATH, or a skip with the reason (a failure under CI)."""
    import pytest

    exe = shutil.which("claude")
    if exe is None:
        why = "claude is not on PATH"
    elif _version(exe) != PINNED:
        why = f"claude on PATH ({exe}) is {_version(exe) or 'unknown'}, not the pinned {PINNED}"
    else:
        return exe
    if required():
        pytest.fail(f"{why}, and CI must run the tests that drive the real client")
    pytest.skip(
        f"needs Claude Code {PINNED}: {why} (scripts/check installs it with npm into "
        ".tools/claude-code; is npm installed?)"
    )
