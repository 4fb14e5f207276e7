"""Where the test suite's CPU goes, per test and per file: a pytest plugin and
its report.

Wall time on a shared machine says more about the machine than the tests; CPU
time does not. Each test's CPU is its process's own plus that of the children
it waited for (git, `gtd`, the inner pytest runs), from `os.times()` around
the test's whole protocol (set-up, call, tear-down; a shared fixture counts in
the first test that uses it)::

    CPU_PER_TEST_OUT=/tmp/cpu .venv/bin/python -m pytest \\
        -p scripts.cpu_per_test -m "not slow" -n 2 -q tests/integration
    .venv/bin/python scripts/cpu_per_test.py /tmp/cpu --top 30

(Loaded as ``scripts.cpu_per_test`` from the folder `python -m` runs in, not
through ``PYTHONPATH``: every `gtd` and test run the tests start would inherit
that variable, which the ratchet watches; the held-run tests fail under it.)

Each test process writes ``<CPU_PER_TEST_OUT>.<worker>.jsonl``; the report reads
them all: CPU and wall per folder, file and test, the least wall time a run
of those tests can take on the machine's cores (their CPU over the cores),
and each test process's time in tests (a process left alone with long tests
at the end shows as one figure well above the others). docs/performance.md
("The test suite") has today's figures.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

_ROWS: list[dict[str, Any]] = []


def _cpu() -> tuple[float, float]:
    t = os.times()
    own = t.user + t.system
    return own, own + t.children_user + t.children_system


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Iterator[None]:
    own0, all0 = _cpu()
    wall0 = time.monotonic()
    yield
    own1, all1 = _cpu()
    _ROWS.append(
        {
            "id": item.nodeid,
            "cpu": all1 - all0,
            "own": own1 - own0,
            "wall": time.monotonic() - wall0,
        }
    )


def pytest_sessionfinish(session: Any) -> None:
    out = os.environ.get("CPU_PER_TEST_OUT")
    if not out:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(f"{out}.{worker}.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in _ROWS)


def report(prefix: str, top: int, cores: int = 2) -> str:
    rows = []
    busy = []  # each test process's wall time in tests
    for name in sorted(glob.glob(f"{prefix}.*.jsonl")):
        with open(name, encoding="utf-8") as fh:
            mine = [json.loads(line) for line in fh]
        rows += mine
        if mine:
            busy.append(sum(r["wall"] for r in mine))
    files: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0])
    folders: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for row in rows:
        path = row["id"].split("::")[0]
        for entry in (files[path], folders[os.path.dirname(path)]):
            entry[0] += 1
            entry[1] += row["cpu"]
            entry[2] += row["wall"]
    cpu = sum(r["cpu"] for r in rows)
    lines = [
        f"{len(rows)} tests, {cpu:.1f} s of CPU "
        f"({sum(r['own'] for r in rows):.1f} s in the test processes themselves)",
        # A run whose tests keep every core busy cannot end sooner, whatever
        # the order the tests are handed out in.
        f"on {cores} cores no run of these tests takes less than {cpu / cores:.0f} s",
        # The same in every process: the run ended with all of them busy (no
        # tail of one process left with long tests).
        "each test process's time in tests: " + ", ".join(f"{b:.0f}" for b in sorted(busy)) + " s",
        "",
        "   CPU s   wall s  tests  folder",
    ]
    by_cpu = sorted(folders.items(), key=lambda kv: -kv[1][1])
    lines += [f"{c:8.1f} {w:8.1f} {int(n):6d}  {name}" for name, (n, c, w) in by_cpu]
    lines += ["", "   CPU s   wall s  tests  file"]
    by_cpu = sorted(files.items(), key=lambda kv: -kv[1][1])[:top]
    lines += [f"{c:8.1f} {w:8.1f} {int(n):6d}  {name}" for name, (n, c, w) in by_cpu]
    lines += ["", "   CPU s   wall s  test"]
    slowest = sorted(rows, key=lambda r: -r["cpu"])[:top]
    lines += [f"{r['cpu']:8.2f} {r['wall']:8.2f}  {r['id']}" for r in slowest]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix", help="the CPU_PER_TEST_OUT the run was given")
    parser.add_argument("--top", type=int, default=30, help="files and tests to list")
    parser.add_argument(
        "--cores", type=int, default=os.cpu_count() or 2, help="the machine's, for the floor"
    )
    args = parser.parse_args(argv)
    if not glob.glob(f"{args.prefix}.*.jsonl"):
        print(f"cpu_per_test: no {args.prefix}.*.jsonl: run pytest with -p cpu_per_test first")
        return 1
    print(report(args.prefix, args.top, args.cores))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
