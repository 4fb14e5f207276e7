"""The step core stays pure: importing any of its modules (each from a clean module
table, in a fresh interpreter) loads no subprocess, no git or process seam, no
file-writing helper and none of the edge's modules (docs/step-mode.md, "How it is
built")."""

from __future__ import annotations

import json
import subprocess
import sys

CORE = (
    "gtd.step.subjects",
    "gtd.step.events",
    "gtd.step.steering",
    "gtd.step.counters",
    "gtd.step.bases",
    "gtd.step.review_diff",
    "gtd.step.actions",
    "gtd.step.checks",
    "gtd.step.script",
    "gtd.step.predict",
    "gtd.step.machine",
)
EDGE = ("subprocess", "gtd.proc", "gtd.git", "gtd.fsio", "gtd.step.gather", "gtd.step.edge")


def test_the_core_modules_load_no_edge() -> None:
    # One fresh interpreter per module: each must be pure on its own.
    code = (
        "import importlib, json, sys\n"
        f"for module in {list(CORE)!r}:\n"
        "    before = set(sys.modules)\n"
        "    importlib.import_module(module)\n"
        f"    print(json.dumps([module, [m for m in {list(EDGE)!r} if m in sys.modules]]))\n"
        "    for name in set(sys.modules) - before:\n"
        "        del sys.modules[name]\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = dict(json.loads(line) for line in res.stdout.splitlines())
    assert loaded == {module: [] for module in CORE}
