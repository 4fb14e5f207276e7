"""The helper's layout, declared and checked from its source (docs/layout.md).

This file is the one map of the purity line: every module of ``helper/gtd`` is
declared CORE or EDGE here, one by one or by its folder (``gtd.cli.*``: the
package and everything under it). A module declared nowhere fails the test, so a
new module is placed on one side before it lands (deny by default).

The rule of the core, checked over every import (module level, inside functions,
``importlib.import_module("…")`` with a literal; not ``if TYPE_CHECKING:``), read
with ``ast`` by tests/import_graph.py:

- it imports only core modules, and of the rest only STDLIB_ALLOWED: modules
  that compute, with no process, file, socket, clock or environment in them;
- of ``os``, ``sys`` and ``time`` it uses only NAMES_ALLOWED (path arithmetic,
  the interpreter's version, time formatting): no ``os.environ``, no
  ``os.path.realpath`` (a read of the file system), no ``time.time()``;
- it calls nothing that reads, writes or asks the clock, whatever the receiver
  (``open``, ``print``, ``.read_text``, ``.exists``, ``.now`` ...: IO_BUILTINS
  and IO_METHODS in tests/import_graph.py), except where CORE_READS says why;
- its packages' ``__init__`` modules import only core modules at load (Python
  runs them first); ``gtd`` itself is edge, and imports nothing at load but
  ``sys`` (its held test run starts only for `gtd ratchet run`'s argv).

The graph has no circles, lazy imports included: an import inside a function
delays its cost, it does not change who depends on whom.
No module but ``gtd.git`` builds a git command line.

tests/unit/test_pure_core.py imports each core module in a fresh interpreter, as
a second look at what a static read cannot see (a name computed at run time).
"""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path

import pytest

from tests import import_graph as g

ROOT = Path(__file__).resolve().parents[2] / "helper" / "gtd"
WHERE = "tests/unit/test_layout.py"

CORE = (
    # helper/gtd: what both modes share
    "gtd.paths",
    "gtd.errors",
    "gtd.exits",
    "gtd.fences",
    "gtd.schema",
    "gtd.names",
    "gtd.tuples",
    "gtd.digest",
    "gtd.templates",
    "gtd.command_words",
    "gtd.git_parse",
    "gtd.git_objects",
    # helper/gtd/auto
    "gtd.auto",
    "gtd.auto.plan",
    "gtd.auto.plan_fields",
    "gtd.auto.plan_graph",
    "gtd.auto.next_task",
    "gtd.auto.plan_tick",
    "gtd.auto.memory",
    "gtd.auto.memory_schema",
    "gtd.auto.records",
    "gtd.auto.usage",
    "gtd.auto.budget",
    "gtd.auto.prices",
    "gtd.auto.agent_usage",
    "gtd.auto.report_cost",
    "gtd.auto.breaker",
    "gtd.auto.pause",
    "gtd.auto.report",
    "gtd.auto.report_text",
    "gtd.auto.report_state",
    "gtd.auto.report_tables",
    "gtd.auto.report_notes",
    "gtd.auto.report_waves",
    "gtd.auto.chart",
    "gtd.auto.brief",
    "gtd.auto.journal",
    "gtd.auto.shorten",
    "gtd.auto.defaults",
    "gtd.auto.notify",
    "gtd.auto.status",
    "gtd.auto.cmdline",
    "gtd.auto.install_metadata",
    "gtd.auto.wave",
    "gtd.auto.wave_journal",
    "gtd.auto.cycle.answers",
    "gtd.auto.cycle.manifest",
    "gtd.auto.cycle.overtaken",
    "gtd.auto.diffread.*",
    # helper/gtd/auto/ratchet
    "gtd.auto.ratchet",
    "gtd.auto.ratchet.model",
    "gtd.auto.ratchet.verdict",
    "gtd.auto.ratchet.snapshot",
    "gtd.auto.ratchet.junit",
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
    "gtd.auto.ratchet.edits",
    "gtd.auto.ratchet.newtests",
    # helper/gtd/step
    "gtd.step",
    "gtd.step.subjects",
    "gtd.step.events",
    "gtd.step.states",
    "gtd.step.steering",
    "gtd.step.counters",
    "gtd.step.bases",
    "gtd.step.review_diff",
    "gtd.step.actions",
    "gtd.step.checks",
    "gtd.step.script",
    "gtd.step.predict",
    "gtd.step.machine",
    "gtd.step.settings",
    "gtd.step.precedence",
    "gtd.step.prompts",
    "gtd.step.errors",
    # helper/gtd/steering
    "gtd.steering.*",
)

EDGE = (
    # helper/gtd
    "gtd",
    "gtd.__main__",
    "gtd.clock",
    "gtd.proc",
    "gtd.spawned",
    "gtd.processes",
    "gtd.threads",
    "gtd.pipes",
    "gtd.executables",
    "gtd.git",
    "gtd.git_locks",
    "gtd.git_blockers",
    "gtd.gitindex",
    "gtd.fsio",
    "gtd.reading",
    "gtd.own_files",
    "gtd.session",
    "gtd.detect",
    "gtd.project_runner",
    "gtd.doctor",
    # helper/gtd/auto
    "gtd.auto.state",
    "gtd.auto.config",
    "gtd.auto.plan_file",
    "gtd.auto.memory_file",
    "gtd.auto.rendering",
    "gtd.auto.faults",
    "gtd.auto.setup",
    "gtd.auto.main_line",
    "gtd.auto.baseline",
    "gtd.auto.verify",
    "gtd.auto.headless",
    "gtd.auto.headless_wave",
    "gtd.auto.harness",
    "gtd.auto.guard",
    "gtd.auto.sandbox",
    "gtd.auto.user_settings",
    "gtd.auto.agent_fence",
    "gtd.auto.notifier",
    # helper/gtd/auto/cycle
    "gtd.auto.cycle",
    "gtd.auto.cycle.engine",
    "gtd.auto.cycle.worker",
    "gtd.auto.cycle.steps",
    "gtd.auto.cycle.recovery",
    "gtd.auto.cycle.end",
    "gtd.auto.cycle.begin",
    "gtd.auto.cycle.judging",
    "gtd.auto.cycle.finish",
    "gtd.auto.cycle.keep",
    "gtd.auto.cycle.seals",
    "gtd.auto.cycle.forged",
    "gtd.auto.cycle.large",
    "gtd.auto.cycle.litter",
    "gtd.auto.cycle.named_pipes",
    "gtd.auto.cycle.paused",
    "gtd.auto.cycle.ceiling",
    "gtd.auto.cycle.spent",
    "gtd.auto.transcripts",
    "gtd.auto.cycle.pins",
    "gtd.auto.cycle.ignored",
    "gtd.auto.cycle.yours",
    "gtd.auto.cycle.review",
    "gtd.auto.cycle.diff_reading",
    "gtd.auto.cycle.worktrees",
    "gtd.auto.cycle.replay",
    "gtd.auto.cycle.waves",
    "gtd.auto.cycle.wave_landing",
    # helper/gtd/auto/ratchet
    "gtd.auto.ratchet.check",
    "gtd.auto.ratchet.candidate",
    "gtd.auto.ratchet.judge",
    "gtd.auto.ratchet.baseline_run",
    "gtd.auto.ratchet.room_run",
    "gtd.auto.ratchet.trust",
    "gtd.auto.ratchet.hooks_seen",
    "gtd.auto.ratchet.sites",
    "gtd.auto.ratchet.reruns",
    "gtd.auto.ratchet.checklog",
    "gtd.auto.ratchet.room",
    "gtd.auto.ratchet.seats",
    "gtd.auto.ratchet.hypotables",
    "gtd.auto.ratchet.commands",
    "gtd.auto.ratchet.report_listener",
    "gtd.auto.ratchet.report_lines",
    "gtd.auto.ratchet.held",
    "gtd.auto.ratchet.early",
    "gtd.auto.ratchet.box",
    "gtd.auto.ratchet.leftovers",
    "gtd.auto.ratchet.unittest_channel",
    "gtd.auto.ratchet.unittest_guard",
    "gtd.auto.ratchet.in_process",
    "gtd.auto.ratchet.unittest_report",
    "gtd.auto.ratchet.environment",
    "gtd.auto.ratchet.pytest_report.*",
    "gtd.auto.ratchet.plugin",
    "gtd.auto.ratchet.plugin.*",
    # helper/gtd/step
    "gtd.step.edge",
    "gtd.step.gather",
    "gtd.step.inlines",
    "gtd.step.sketch",
    "gtd.step.detached_check",
    "gtd.step.config_file",
    # whole folders
    "gtd.cli.*",
    "gtd.lsp.*",
    "gtd.demo.*",
)

# The standard library (and the two parsers) a core module may import: each
# computes on values. Left out on purpose: subprocess, socket, shutil, tempfile,
# signal, select, threading, glob, io, logging, inspect, importlib, zoneinfo (reads
# the time-zone files), random, uuid, and os/sys/time beyond NAMES_ALLOWED.
STDLIB_ALLOWED = frozenset(
    {
        "__future__", "abc", "ast", "base64", "binascii", "bisect", "calendar", "codecs",
        "collections", "configparser", "contextlib", "copy", "dataclasses", "datetime",
        "difflib", "doctest", "enum", "errno", "fnmatch", "functools", "hashlib", "_sha1",
        "_sha2", "_sha256", "heapq", "itertools", "json", "keyword", "math", "operator",
        "pathlib", "posixpath", "re", "shlex", "stat", "string", "struct", "textwrap",
        "tomllib", "types", "typing", "unicodedata", "xml.etree", "zlib",
        "os", "sys", "time",  # checked name by name: NAMES_ALLOWED
        "tomli", "iniconfig", "pathspec",  # parsers of text handed in (docs/dependencies.md)
    }
)  # fmt: skip
NAMES_ALLOWED = frozenset(
    {
        "os.path.join", "os.path.split", "os.path.basename", "os.path.dirname",
        "os.path.normpath", "os.path.splitext", "os.path.isabs", "os.path.commonpath",
        "os.sep", "os.altsep", "os.pardir", "os.curdir", "os.fspath", "os.fsdecode",
        "os.fsencode", "os.PathLike",
        "sys.version_info", "sys.stdlib_module_names", "sys.maxsize", "sys.intern",
        "sys.byteorder", "sys.platform", "sys.implementation",
        "time.strftime", "time.strptime", "time.gmtime",
    }
)  # fmt: skip
# Core modules allowed a read, and why it leaves them pure.
CORE_READS = {
    "gtd.templates": "reads its own package data: the templates ship with the code, like source",
}


def expand(declared: tuple[str, ...], modules: dict[str, g.Module]) -> tuple[set[str], list[str]]:
    names: set[str] = set()
    stale: list[str] = []
    for entry in declared:
        if entry.endswith(".*"):
            folder = entry[:-2]
            found = {n for n in modules if n == folder or n.startswith(folder + ".")}
            if not found:
                stale.append(f"{entry} is declared in {WHERE} but names no module")
            names |= found
        else:
            names.add(entry)
    return names, stale


@functools.cache
def scanned(root: Path, package: str) -> dict[str, g.Module]:
    """The package read once per test process (the tests below do not change it)."""
    return g.scan(root, package)


def problems(root: Path, package: str, core: tuple[str, ...], edge: tuple[str, ...]) -> list[str]:
    """Everything wrong with the package at ``root`` against the map, in words."""
    modules = g.scan(root, package) if root != ROOT else scanned(root, package)
    core_set, stale_core = expand(core, modules)
    edge_set, stale_edge = expand(edge, modules)
    found = stale_core + stale_edge + g.undeclared(modules, core_set, edge_set, WHERE)
    found += g.impurities(
        modules, core_set, package, set(STDLIB_ALLOWED), set(NAMES_ALLOWED), CORE_READS
    )
    return found


def test_every_module_is_declared_and_the_core_is_pure() -> None:
    assert problems(ROOT, "gtd", CORE, EDGE) == []


def test_no_import_circles_lazy_imports_included() -> None:
    modules = scanned(ROOT, "gtd")
    assert g.circles(g.graph(modules, "gtd", functions=True)) == []


def test_only_git_py_builds_a_git_command_line() -> None:
    assert g.git_command_lines(scanned(ROOT, "gtd"), {"gtd.git"}) == []


# -- the checks can fail: a small package with each mistake planted --------------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for rel, text in {"__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_a_core_module_importing_subprocess_in_a_function_fails(tmp_path: Path) -> None:
    root = _package(tmp_path, {"pure.py": "def f():\n    import subprocess\n"})
    assert problems(root, "pkg", ("pkg", "pkg.pure"), ()) == [
        "pkg.pure line 2 (inside a function) imports subprocess (standard library), which a "
        "core module may not: not on the allowed list"
    ]


def test_a_core_module_importing_an_edge_module_fails(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pure.py": "import importlib\ndef f():\n    return importlib.import_module('pkg.io')\n",
            "also.py": "from . import io\n",
            "io.py": "import os\n",
        },
    )
    found = problems(root, "pkg", ("pkg", "pkg.pure", "pkg.also"), ("pkg.io",))
    assert "pkg.also line 1 imports pkg.io, which is not core" in found
    assert "pkg.pure line 3 (inside a function) imports pkg.io, which is not core" in found
    # importlib itself is not on the allowed list either
    assert any(p.startswith("pkg.pure line 1 imports importlib") for p in found)


def test_a_core_module_doing_io_through_allowed_modules_fails(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pure.py": """\
                import os
                import time as clock
                from os import environ
                from pathlib import Path
                def f(p: Path):
                    p.write_text("x")
                    return os.path.realpath(p), clock.time(), environ, open(p)
            """,
        },
    )
    found = problems(root, "pkg", ("pkg", "pkg.pure"), ())
    assert found == [
        "pkg.pure line 3 uses os.environ, which a core module may not",
        "pkg.pure line 7 uses os.path.realpath, which a core module may not",
        "pkg.pure line 7 uses time.time, which a core module may not",
        "pkg.pure line 6 calls write_text(), IO a core module may not do",
        "pkg.pure line 7 calls time(), IO a core module may not do",
        "pkg.pure line 7 calls open(), IO a core module may not do",
    ]


def test_type_checking_imports_do_not_count(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pure.py": """\
                TYPE_CHECKING = False
                if TYPE_CHECKING:
                    import subprocess
                else:
                    import json
            """,
        },
    )
    assert problems(root, "pkg", ("pkg", "pkg.pure"), ()) == []
    (root / "pure.py").write_text(
        "TYPE_CHECKING = True\nif not TYPE_CHECKING:\n    import socket\n"
    )
    assert problems(root, "pkg", ("pkg", "pkg.pure"), ()) != []


def test_an_undeclared_module_fails_and_says_where_to_declare_it(tmp_path: Path) -> None:
    root = _package(tmp_path, {"new.py": "", "sub/__init__.py": "", "sub/a.py": ""})
    found = problems(root, "pkg", ("pkg",), ("pkg.sub.*", "pkg.gone"))
    assert found == [
        f"pkg.new ({root / 'new.py'}) is neither core nor edge: declare it in {WHERE} "
        "(CORE if it does no IO, else EDGE)",
        f"pkg.gone is declared in {WHERE} but no such module exists",
    ]


def test_a_core_module_whose_package_loads_the_edge_fails(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {"sub/__init__.py": "from pkg import io\n", "sub/pure.py": "", "io.py": ""},
    )
    found = problems(root, "pkg", ("pkg", "pkg.sub.pure"), ("pkg.sub", "pkg.io"))
    assert found == ["pkg.sub.pure: its package pkg.sub imports pkg.io at load, which is not core"]


def test_circles_are_found_through_lazy_imports(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "a.py": "from pkg import b\n",
            "b.py": "def f():\n    from pkg import c\n",
            "c.py": "def g():\n    import pkg.a\n",
            # A package that loads its module lazily, which uses the package's names:
            # a circle too (gtd.cli and gtd.cli.app were one).
            "d/__init__.py": "def h():\n    from pkg.d import e\n",
            "d/e.py": "from pkg.d import h\n",
        },
    )
    modules = g.scan(root, "pkg")
    assert g.circles(g.graph(modules, "pkg", functions=True)) == [
        ["pkg.a", "pkg.b", "pkg.c"],
        ["pkg.d", "pkg.d.e"],
    ]
    assert g.circles(g.graph(modules, "pkg", functions=False)) == []


def test_a_git_command_line_outside_git_py_is_found(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "git.py": "ARGV = ['git', 'status']\n",
            "doctor.py": "import subprocess\ndef f(args):\n    subprocess.run(('git', *args))\n",
            "edge.py": "def f(proc):\n    proc.run('git', 'commit')\n",
            "fine.py": "NAME = 'git'\nWORDS = ['status', 'git']\n",
        },
    )
    assert g.git_command_lines(g.scan(root, "pkg"), {"pkg.git"}) == [
        "pkg.doctor line 3 builds a git command line: call git through gtd.git.Git",
        "pkg.edge line 2 builds a git command line: call git through gtd.git.Git",
    ]


@pytest.mark.parametrize("entry", ["gtd.steering.*", "gtd.cli.*"])
def test_a_folder_declaration_covers_its_new_modules(entry: str) -> None:
    modules = scanned(ROOT, "gtd")
    names, stale = expand((entry,), modules)
    assert not stale
    assert entry[:-2] in names
    assert len(names) > 1


def test_the_docs_map_names_every_module_on_its_side() -> None:
    """docs/layout.md's "Modules by side" table says what this map says."""
    doc = (ROOT.parents[1] / "docs" / "layout.md").read_text()
    section = doc.split("## Modules by side", 1)[1].split("\n## ", 1)[0]
    modules = scanned(ROOT, "gtd")
    core, _ = expand(CORE, modules)
    edge, _ = expand(EDGE, modules)
    rows = [line for line in section.splitlines() if line.startswith("| `gtd")]
    assert rows
    for row in rows:
        folder, core_cell, edge_cell = (cell.strip() for cell in row.strip("|").split("|"))
        package = folder.strip("`")

        def named(cell: str, package: str = package) -> set[str]:
            return {f"{package}.{w.strip().strip('`')}" for w in cell.split(",") if w.strip()}

        inside = {  # the folder's modules, not its subpackages (their own rows)
            n for n, m in modules.items() if n.rpartition(".")[0] == package and not m.is_package
        } - {f"{package}.__main__"}
        for side, cell, declared in (("core", core_cell, core), ("edge", edge_cell, edge)):
            said, true = named(cell), inside & declared
            assert said == true, (
                f"docs/layout.md, Modules by side, {package}, {side}: "
                f"add {sorted(true - said)}, remove {sorted(said - true)}"
            )
