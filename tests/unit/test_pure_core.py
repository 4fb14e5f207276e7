"""The pure core stays pure when it runs: importing any core module (each from a
clean module table, in a fresh interpreter) loads no subprocess and no edge
module. The core and the edge are the ones declared in tests/unit/test_layout.py,
whose static read of every import is the main check; this one sees what a static
read cannot (a module name computed at run time, an import hook). The edge
packages that hold core modules (``gtd``, ``gtd.auto.cycle``) are loaded by
Python before those modules: test_layout checks what they import at load."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

from tests import import_graph as g
from tests.unit.test_layout import CORE as DECLARED_CORE
from tests.unit.test_layout import EDGE as DECLARED_EDGE
from tests.unit.test_layout import ROOT, expand, scanned


@functools.cache
def _core_and_edge() -> tuple[tuple[str, ...], tuple[str, ...]]:
    # Read when a test runs, not when the file is collected: every test process
    # collects it, and the read of the package (~1 s of CPU) is then paid once.
    modules = scanned(ROOT, "gtd")
    core = tuple(sorted(expand(DECLARED_CORE, modules)[0]))
    parents = {parent for name in core for parent in g.ancestors(name)}
    edge = ("subprocess", *sorted(expand(DECLARED_EDGE, modules)[0] - parents))
    return core, edge


def _loaded_edges(modules: tuple[str, ...]) -> dict[str, list[str]]:
    edge = _core_and_edge()[1]
    # One fresh interpreter, and a clean module table per module: each must be pure
    # on its own, not only after another module happened to load first.
    code = (
        "import importlib, json, sys\n"
        f"for module in {list(modules)!r}:\n"
        "    before = set(sys.modules)\n"
        "    importlib.import_module(module)\n"
        f"    print(json.dumps([module, [m for m in {list(edge)!r} if m in sys.modules]]))\n"
        "    for name in set(sys.modules) - before:\n"
        "        del sys.modules[name]\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return dict(json.loads(line) for line in res.stdout.splitlines())


def test_the_core_modules_load_no_edge() -> None:
    core = _core_and_edge()[0]
    assert _loaded_edges(core) == {module: [] for module in core}


def test_the_check_can_fail() -> None:
    # The edge modules themselves load what the core must not: the probe sees it.
    found = _loaded_edges(("gtd.step.inlines", "gtd.auto.ratchet.room"))
    assert {"subprocess", "gtd.git"} <= set(found["gtd.step.inlines"])
    assert {"subprocess", "gtd.git"} <= set(found["gtd.auto.ratchet.room"])
