#!/usr/bin/env python3
"""What loading the ratchet's pytest plugin costs each test process
(docs/performance.md): the entry point (gtd.auto.ratchet.pytest_report) loaded
by path, as the run's entry point loads it, in a process that has imported
pytest, with and without the settings a run gives it (with them it also starts
its watchers: the values recorded, the bytecode guard, the import watch).

It copies the plugin (or the one under --plugin, an older checkout's
``helper/gtd/auto/ratchet`` folder) into a temp folder, writes its bytecode
caches, and reports the median wall time of --runs fresh processes and, where
valgrind is installed, the CPU instructions over the same process that loads
nothing (``PYTHONHASHSEED=0``: counts repeat to a few parts in a million).

Usage: .venv/bin/python scripts/bench_plugin_load.py [--runs N] [--plugin DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RATCHET = Path(__file__).resolve().parents[1] / "helper" / "gtd" / "auto" / "ratchet"
# The child: pytest imported as a test process has it, then the plugin loaded by
# path and timed (argv: plugin file, "plain" | "settings", or either after "none-":
# the same process, loading nothing).
CHILD = """
import importlib.util, json, os, sys, tempfile, time
import pytest, _pytest.assertion.rewrite, _pytest.doctest, _pytest.python
path, mode = sys.argv[1], sys.argv[2]
if mode.endswith("settings"):
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "settings.json"), "w") as f:
        json.dump({"v": 2, "report": os.path.join(d, "lines"), "root": d,
                   "guarded": ["tests/test_a.py"], "forbidden": [d + "/live"],
                   "live": d + "/live", "room": d, "env_since": 1}, f)
    os.environ["GTD_RATCHET_SETTINGS"] = os.path.join(d, "settings.json")
if not mode.startswith("none"):
    t = time.perf_counter()
    spec = importlib.util.spec_from_file_location("gtd_ratchet_report", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print((time.perf_counter() - t) * 1e3)
"""


def _copy(source: Path, into: Path) -> Path:
    """The plugin's files (entry point, contract, parts if any), bytecode written."""
    for name in ("pytest_report.py", "contract.py"):
        shutil.copy(source / name, into / name)
    if (source / "plugin").is_dir():
        shutil.copytree(
            source / "plugin", into / "plugin", ignore=shutil.ignore_patterns("__pycache__")
        )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into)], check=True, env=env)
    return into / "pytest_report.py"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"
    return env


def _median_ms(plugin: Path, mode: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(plugin), mode],
            capture_output=True, text=True, check=True, env=_env(),
        )  # fmt: skip
        times.append(float(out.stdout))
    return statistics.median(times)


def _instructions(plugin: Path, mode: str) -> int:
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         sys.executable, "-c", CHILD, str(plugin), mode],
        capture_output=True, text=True, check=True, env=_env(),
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", out.stderr)
    assert found is not None, out.stderr[-2000:]
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--plugin", type=Path, default=RATCHET)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        plugin = _copy(args.plugin, Path(tmp))
        counted = shutil.which("valgrind") is not None
        for mode in ("plain", "settings"):
            line = f"{mode:9} median {_median_ms(plugin, mode, args.runs):6.2f} ms"
            if counted:
                extra = (_instructions(plugin, mode) - _instructions(plugin, f"none-{mode}")) / 1e6
                line += f", {extra:6.2f} M instructions"
            print(line)
        if not counted:
            print("(valgrind not found: no instruction counts)")


if __name__ == "__main__":
    main()
