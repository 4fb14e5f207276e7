"""`gtd doctor`: one line per check (ok / warn / fail), or one JSON object with the
checks list. Exit 0 when no check fails, 1 otherwise. Runs anywhere, in a repository
or not; `--installation` leaves the repository's checks out (what install.py runs)."""

from __future__ import annotations

import os
from pathlib import Path

from gtd.cli.output import emit


def doctor(as_json: bool, installation: bool = False) -> int:
    from gtd import doctor as doctor_mod

    checks = doctor_mod.run_checks(Path.cwd(), Path.home(), os.environ, installation=installation)
    answer = doctor_mod.report(checks)
    emit(answer, render(answer), as_json)
    return 1 if answer["status"] == "fail" else 0


def render(answer: dict[str, object]) -> str:
    checks = answer["checks"]
    assert isinstance(checks, list)
    lines = [f"{c['status']:<4} {c['name']}: {c['detail']}" for c in checks]
    fails = sum(c["status"] == "fail" for c in checks)
    warns = sum(c["status"] == "warn" for c in checks)
    lines.append(f"doctor: {answer['status']} ({fails} failed, {warns} warnings)")
    return "\n".join(lines)
