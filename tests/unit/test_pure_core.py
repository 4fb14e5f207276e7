"""The pure core stays pure: importing any of its modules (each from a clean module
table, in a fresh interpreter) loads no subprocess, no git or process seam, no
file-writing helper and none of the edge's modules. Auto mode's decisions (plan,
memory, records, breaker, report, brief, the cycle's answers, the ratchet's
verdict and formats) and step mode's machine are values in, values out; the IO is
at their edges (docs/step-mode.md, "How it is built"; docs/layout.md,
"The folders")."""

from __future__ import annotations

import json
import subprocess
import sys

SHARED = ("gtd.paths", "gtd.errors", "gtd.fences", "gtd.schema")
AUTO = (
    "gtd.auto.plan",
    "gtd.auto.memory",
    "gtd.auto.records",
    "gtd.auto.usage",
    "gtd.auto.prices",
    "gtd.auto.agent_usage",
    "gtd.auto.report_cost",
    "gtd.auto.breaker",
    "gtd.auto.report",
    "gtd.auto.brief",
    "gtd.auto.journal",
    "gtd.auto.cycle.answers",
    "gtd.auto.cycle.manifest",
    "gtd.auto.chart",
    "gtd.auto.readable",
    "gtd.auto.defaults",
    "gtd.auto.memory_schema",
    "gtd.auto.diffread.patterns",
    "gtd.auto.diffread.lines",
    "gtd.auto.diffread.tests_seen",
    "gtd.auto.diffread.reader",
    "gtd.auto.notify",
    "gtd.auto.status",
)
RATCHET = (
    "gtd.auto.ratchet.model",
    "gtd.auto.ratchet.verdict",
    "gtd.auto.ratchet.snapshot",
    "gtd.auto.ratchet.junit",
    "gtd.auto.ratchet.recorded",
    "gtd.auto.ratchet.results",
    "gtd.auto.ratchet.contract",
    "gtd.auto.ratchet.sections",
    "gtd.auto.ratchet.invocation",
    "gtd.auto.ratchet.doctests",
    "gtd.auto.ratchet.rules",
    "gtd.auto.ratchet.diagnose",
    "gtd.auto.ratchet.protect",
    "gtd.auto.ratchet.files",
    "gtd.auto.ratchet.gate",
    "gtd.auto.ratchet.leaned",
)
STEP = (
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
    "gtd.step.config",
    "gtd.step.prompts",
)
STEERING = (
    "gtd.steering",
    "gtd.steering.findings",
    "gtd.steering.questions",
    "gtd.steering.review",
)
CORE = (*SHARED, *AUTO, *RATCHET, *STEP, *STEERING)
EDGE = (
    "subprocess",
    "gtd.proc",
    "gtd.git",
    "gtd.fsio",
    "gtd.step.gather",
    "gtd.step.edge",
    "gtd.step.inlines",
    "gtd.auto.state",
    "gtd.auto.cycle.engine",
    "gtd.auto.ratchet.check",
    "gtd.auto.ratchet.room",
    "gtd.auto.ratchet.runner",
    "gtd.auto.ratchet.worktree",
)


def _loaded_edges(modules: tuple[str, ...]) -> dict[str, list[str]]:
    # One fresh interpreter, and a clean module table per module: each must be pure
    # on its own, not only after another module happened to load first.
    code = (
        "import importlib, json, sys\n"
        f"for module in {list(modules)!r}:\n"
        "    before = set(sys.modules)\n"
        "    importlib.import_module(module)\n"
        f"    print(json.dumps([module, [m for m in {list(EDGE)!r} if m in sys.modules]]))\n"
        "    for name in set(sys.modules) - before:\n"
        "        del sys.modules[name]\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return dict(json.loads(line) for line in res.stdout.splitlines())


def test_the_core_modules_load_no_edge() -> None:
    assert _loaded_edges(CORE) == {module: [] for module in CORE}


def test_the_check_can_fail() -> None:
    # The edge modules themselves load what the core must not: the probe sees it.
    found = _loaded_edges(("gtd.step.inlines", "gtd.auto.ratchet.worktree"))
    assert {"subprocess", "gtd.git"} <= set(found["gtd.step.inlines"])
    assert {"subprocess", "gtd.git"} <= set(found["gtd.auto.ratchet.worktree"])
