#!/usr/bin/env python3
"""Benchmark `gtd next --json` (step mode's per-beat command).

Builds, with `git fast-import`, a repository whose `main` has 5,000 commits and a
`feature` branch 1,000 first-parent commits past it, the last few of which are a
gtd cycle resting at `building` (so `next` folds the range and renders a prompt
with the package's task inlined). Prints the median wall time of real subprocess
runs, plus the same on `main` (the whole-history fallback) for contrast.

Usage: .venv/bin/python scripts/bench_step.py [--runs N] [--main N] [--feature N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

# Run as a script, so scripts/ is on sys.path: one environment and one way to call
# the installed console script for both benchmarks.
from bench import ENV, PY, gtd_cmd

CYCLE: list[tuple[str, dict[str, str | None]]] = [
    ("gtd(human): grilling", {"idea.md": "make it faster\n"}),
    ("gtd(agent): grilling", {".gtd/TODO.md": "# Plan\n\nMake it faster.\n"}),
    ("gtd(human): grilling", {}),
    ("gtd: grilled", {}),
    ("gtd(agent): grilled", {".gtd/01-speed/01-task.md": "# Task\n\n- [ ] faster\n"}),
    ("gtd: planning", {".gtd/TODO.md": None}),
]


def _data(text: str) -> bytes:
    raw = text.encode()
    return b"data %d\n" % len(raw) + raw + b"\n"


def _commit(
    branch: str, mark: int, message: str, files: Mapping[str, str | None], parent: int | None
) -> bytes:
    out = b"commit refs/heads/%s\nmark :%d\n" % (branch.encode(), mark)
    out += b"committer Bench <bench@example.com> %d +0000\n" % (1_700_000_000 + mark)
    out += _data(message)
    if parent is not None:
        out += b"from :%d\n" % parent
    for path, content in files.items():
        if content is None:
            out += b"D %s\n" % path.encode()
        else:
            out += b"M 100644 inline %s\n" % path.encode() + _data(content)
    return out


def build(repo: Path, main_commits: int, feature_commits: int) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=ENV)
    chunks: list[bytes] = []
    mark = 1
    first = {".gtdrc.json": json.dumps({"testCommand": "true"}) + "\n", "src/app.txt": "0\n"}
    chunks.append(_commit("main", mark, "chore: init", first, None))
    for i in range(1, main_commits):
        mark += 1
        chunks.append(
            _commit("main", mark, f"feat: main change {i}", {"src/app.txt": f"{i}\n"}, None)
        )
    fork = mark
    plain = feature_commits - len(CYCLE)
    for i in range(plain):
        mark += 1
        files = {f"src/feature/{i % 50}.txt": f"{i}\n"}
        chunks.append(
            _commit("feature", mark, f"feat: feature change {i}", files, fork if i == 0 else None)
        )
    for subject, changes in CYCLE:
        mark += 1
        chunks.append(_commit("feature", mark, subject, changes, None))
    subprocess.run(
        ["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(chunks), check=True, env=ENV
    )
    subprocess.run(["git", "checkout", "-q", "-f", "feature"], cwd=repo, check=True, env=ENV)
    _settle(repo)


def _settle(repo: Path) -> None:
    """Let the index's stat data settle, as in any working repository: gtd's own
    reads never write the index (GIT_OPTIONAL_LOCKS=0), so a freshly checked-out
    tree would otherwise be re-hashed by every `git status`."""
    time.sleep(1.1)  # past the racy-git window of the checkout
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=repo, env=ENV, check=False)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def median_ms(argv: list[str], cwd: Path, runs: int) -> tuple[float, float, str]:
    """Median wall time and median CPU time (the process and its git children) —
    the CPU figure is what the wall time would be on an otherwise idle machine."""
    last = ""
    wall: list[float] = []
    cpu: list[float] = []
    for i in range(runs + 1):
        cpu_start, start = _cpu_s(), time.perf_counter()
        res = subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, text=True)
        elapsed = (time.perf_counter() - start) * 1000
        used = (_cpu_s() - cpu_start) * 1000
        if res.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {res.stderr}")
        last = res.stdout
        if i:  # the first run warms the caches
            wall.append(elapsed)
            cpu.append(used)
    return statistics.median(wall), statistics.median(cpu), last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--main", type=int, default=5000)
    parser.add_argument("--feature", type=int, default=1000)
    args = parser.parse_args()
    # An installed package ships its bytecode; make sure a source checkout has it too
    # (PYTHONDONTWRITEBYTECODE would otherwise make every run recompile the helper).
    import compileall

    import gtd

    compileall.compile_dir(str(Path(gtd.__file__).parent), quiet=1)
    with tempfile.TemporaryDirectory(prefix="gtd-bench-step-") as tmp:
        repo = Path(tmp) / "repo"
        build(repo, args.main, args.feature)
        cmd = gtd_cmd("next", "--json")
        feature_ms, feature_cpu, out = median_ms(cmd, repo, args.runs)
        state = json.loads(out)
        python_ms, python_cpu, _ = median_ms([PY, "-c", "pass"], repo, args.runs)
        subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True, env=ENV)
        _settle(repo)
        main_ms, main_cpu, _ = median_ms(cmd, repo, args.runs)
    load = os.getloadavg()[0]
    print(f"median of {args.runs} runs (load average {load:.2f}); wall ms / cpu ms")
    print(f"python -c pass                              {python_ms:7.1f} / {python_cpu:6.1f}")
    print(
        f"gtd next --json, feature +{args.feature} past {args.main}-commit main "
        f"{feature_ms:7.1f} / {feature_cpu:6.1f}  (state {state['state']}, actor {state['actor']})"
    )
    print(f"gtd next --json on main (whole history)     {main_ms:7.1f} / {main_cpu:6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
