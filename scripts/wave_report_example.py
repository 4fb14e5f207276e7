"""The waves of a real night, as the report shows them (docs/report.md#waves):
the waves benchmark's plan of six independent tasks (scripts/bench_waves.py),
a scripted implementer taking ``AGENT_S`` seconds a task, `gtd loop --parallel
3`; prints the report's Waves part, Run Chart and Cycle Log. With ``--serial``
the same plan also runs one task at a time on a copy of the repository, and
the report's "One by one" (summed over the waves) is set against that run's
wall time: how close the report's estimate of one by one comes.

    .venv/bin/python scripts/wave_report_example.py [AGENT_S] [--serial]
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_waves import AGENT, PY, _loop, _make


def _part(report: str, start: str, end: str = "\n## ") -> str:
    return start + report.split(start, 1)[1].split(end, 1)[0]


def _seconds(text: str) -> float:
    found = re.fullmatch(r"(?:(\d+) min )?(\d+(?:\.\d)?) s", text.strip())
    if found is None:
        raise SystemExit(f"not a duration: {text!r}")
    return int(found.group(1) or 0) * 60 + float(found.group(2))


def main(agent_s: float, serial: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="gtd-wave-report-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "GTD_SANDBOX": "off", "XDG_STATE_HOME": str(home / "state")}
        script = home / "agent.py"
        script.write_text(AGENT)
        agent = f"{PY} {script} {agent_s}"
        repo = home / "night"
        _make(repo, env)
        if serial:
            shutil.copytree(repo, home / "serial", symlinks=True)
        took = _loop(repo, agent, env, 3)
        report = (repo / ".deepflow/auto-report.md").read_text()
        serial_s = _loop(home / "serial", agent, env, None) if serial else None
    for start in ("### Waves", "## Run Chart", "## Cycle Log"):
        print(_part(report, start).rstrip() + "\n")
    if serial_s is not None:
        lines = _part(report, "### Waves").splitlines()
        rows = [line.split("|") for line in lines if re.match(r"\| \d+ \|", line)]
        ones = sum(_seconds(r[4]) for r in rows)
        print(f"the loop with --parallel 3: {took:.1f} s")
        print(f"the report's One by one, summed: {ones:.1f} s")
        print(f"the loop one task at a time: {serial_s:.1f} s")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--serial"]
    main(float(args[0]) if args else 5.0, "--serial" in sys.argv[1:])
