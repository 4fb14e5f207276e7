"""The morning report and run chart of a real wave (docs/report.md#waves): the
real CLI's `gtd cycle begin`/`end` on a real repository, then the report a
person opens, read as they read it."""

from __future__ import annotations

import json
import re
import time

from tests.conftest import Repo
from tests.integration.test_waves import (
    MUL,
    MUL_TEST,
    SUB,
    SUB_TEST,
    end,
    project,
    records,
    wave_trees,
    write,
)


def _seconds(text: str) -> float:
    """``4.2 s`` or ``1 min 05 s``, as the report writes a duration."""
    found = re.fullmatch(r"(?:(\d+) min )?(\d+(?:\.\d)?) s", text)
    assert found, text
    return int(found.group(1) or 0) * 60 + float(found.group(2))


def _row(table: str, first: str) -> list[str]:
    line = next(line for line in table.splitlines() if line.startswith(f"| {first} |"))
    return [c.strip() for c in line.strip()[1:-1].split("|")]


def _report(repo: Repo) -> str:
    return (repo.path / ".deepflow/auto-report.md").read_text()


def _since(repo: Repo) -> str:
    wave = json.loads(repo.git("show", "refs/gtd/state:wave.json"))
    return str(wave["started_at"])


def test_the_report_names_the_tasks_that_ran_together(repo: Repo) -> None:
    project(repo)
    trees = wave_trees(repo)
    assert (
        _report(repo)
        .split("## State\n\n", 1)[1]
        .startswith(
            f"**Running** — wave 1 (since {_since(repo)}): T1: Add mul, being implemented; "
            "T2: Add sub, being implemented.\n"
        )
    )
    time.sleep(1.0)  # the implementers at work, together
    write(trees[0], "mul.py", MUL)
    write(trees[0], "tests/test_mul.py", MUL_TEST)
    write(trees[1], "sub.py", SUB)
    write(trees[1], "tests/test_sub.py", SUB_TEST)
    assert end(repo, 1)["status"] == "passed"
    middle = _report(repo)
    assert "T1: Add mul, landed; T2: Add sub, being implemented." in middle
    together = _row(middle.split("### Waves\n\n", 1)[1], "1")[1]
    assert re.fullmatch(r"T1: passed, [0-9.]+ s; T2: in flight", together), together
    assert end(repo, 2)["status"] == "passed"

    # What each record measured: from the wave's start, and its own turn.
    first, second = records(repo)
    assert first["wave_s"] >= 1.0  # type: ignore[operator]
    assert 0 < first["turn_s"] < first["wave_s"]  # type: ignore[operator]
    # T2's verdict came after T1's turn and its own
    assert second["wave_s"] >= first["turn_s"] + second["turn_s"]  # type: ignore[operator]

    report = _report(repo)
    assert report.split("## State\n\n", 1)[1].startswith("**Complete**")
    log = report.split("## Cycle Log\n\n", 1)[1].split("\n## ", 1)[0]
    assert log.startswith("| Cycle | Wave | Task |")
    assert _row(log, "1")[1:4] == ["1", "T1", "Add mul"]
    assert _row(log, "2")[1:4] == ["1", "T2", "Add sub"]

    waves = report.split("### Waves\n\n", 1)[1].split("\n## ", 1)[0]
    number, together, wall, one_by_one, saved = _row(waves, "1")
    assert number == "1"
    found = re.fullmatch(r"T1: passed, (.+); T2: passed, (.+)", together)
    assert found, together
    own = [_seconds(found.group(1)), _seconds(found.group(2))]
    assert all(t >= 1.0 for t in own)  # each counts the implementers' second
    assert _seconds(wall) == round(float(second["wave_s"]), 1)  # type: ignore[arg-type]
    assert _seconds(one_by_one) > _seconds(wall)  # the implementers' time overlapped
    assert saved.endswith("%)")

    chart = report.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert "  branch wave1-T1\n" in chart
    assert "  branch wave1-T2\n" in chart
    assert chart.index('merge wave1-T1 id: "wave 1 landed 1 T1"') < chart.index(
        'merge wave1-T2 id: "wave 1 landed 2 T2"'
    )
