"""The waves of a real night, as the report shows them (docs/report.md#waves):
the waves benchmark's plan of six independent tasks (scripts/bench_waves.py),
a scripted implementer taking ``AGENT_S`` seconds a task, `gtd loop --parallel
3`; prints the report's Waves part, Cycle Log and Run Chart.

    .venv/bin/python scripts/wave_report_example.py [AGENT_S]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_waves import AGENT, PY, _loop, _make


def _part(report: str, start: str, end: str = "\n## ") -> str:
    return start + report.split(start, 1)[1].split(end, 1)[0]


def main(agent_s: float) -> None:
    with tempfile.TemporaryDirectory(prefix="gtd-wave-report-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "GTD_SANDBOX": "off", "XDG_STATE_HOME": str(home / "state")}
        script = home / "agent.py"
        script.write_text(AGENT)
        repo = home / "night"
        _make(repo, env)
        _loop(repo, f"{PY} {script} {agent_s}", env, 3)
        report = (repo / ".deepflow/auto-report.md").read_text()
    for start in ("### Waves", "## Run Chart", "## Cycle Log"):
        print(_part(report, start).rstrip() + "\n")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0)
