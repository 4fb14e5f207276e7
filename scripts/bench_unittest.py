#!/usr/bin/env python3
"""The unittest runner's cost on a real unittest suite: more-itertools 10.7.0
(828 tests, its load_tests doctests among them), built as
tests/realsuites/test_unittest_suite.py builds it (its sdist, a bare
virtualenv, `gtd auto setup`).

Paired and interleaved (which goes first alternates; tests/realsuites' own
rule): wall and CPU time of

  * runner: the set-up test command (`.venv/bin/python -m unittest -v`) run
    bare, against the same command run through the helper's unittest runner
    with a report listener (gtd.auto.ratchet.unittest_channel), both from the
    repository, both through gtd.auto.ratchet.commands.run_command;
  * ratchet: the bare command against `gtd ratchet run` (the clean room, the
    box, the old and new tests' sessions: everything a cycle's judgement costs).

Usage: .venv/bin/python scripts/bench_unittest.py [--pairs N] [--only runner|ratchet]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench import ENV, gtd_cmd, median_interval  # noqa: E402


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall ms, CPU ms of the child processes) of one call."""
    cpu, start = _children_cpu(), time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000, (_children_cpu() - cpu) * 1000


def paired(
    first: Callable[[], object], second: Callable[[], object], pairs: int
) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    out = []
    for i in range(pairs):
        order = [(0, first), (1, second)]
        got: list[tuple[float, float]] = [(0.0, 0.0), (0.0, 0.0)]
        for slot, fn in order if i % 2 == 0 else order[::-1]:
            got[slot] = timed(fn)
        out.append((got[0], got[1]))
    return out


def summary(
    label: str, samples: list[tuple[tuple[float, float], tuple[float, float]]], *, cpu: bool = True
) -> None:
    for index, what in ((0, "wall"), (1, "CPU"))[: 2 if cpu else 1]:
        bare = [b[index] for b, _ in samples]
        judged = [j[index] for _, j in samples]
        ratios = [j / b for b, j in zip(bare, judged, strict=True)]
        diffs = [j - b for b, j in zip(bare, judged, strict=True)]
        low, high = median_interval(ratios)
        print(
            f"{label}, {what}: bare {statistics.median(bare):.0f} ms, "
            f"judged {statistics.median(judged):.0f} ms, "
            f"median of paired ratios {statistics.median(ratios):.3f} "
            f"(95 % {low:.3f}-{high:.3f}), "
            f"median of paired differences {statistics.median(diffs):.0f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=11)
    parser.add_argument("--only", choices=("runner", "ratchet"))
    args = parser.parse_args()

    from tests.realsuites.test_unittest_suite import build

    from gtd.auto.ratchet import commands, report_listener

    with tempfile.TemporaryDirectory() as tmp:
        repo, setup = build(Path(tmp))
        assert setup["status"] == "ready", setup
        env = {**ENV, "HOME": str(Path(tmp) / "home"), "XDG_CACHE_HOME": str(Path(tmp) / "xdg")}
        os.environ.update({"HOME": env["HOME"], "XDG_CACHE_HOME": env["XDG_CACHE_HOME"]})
        command = setup["test_command"]
        total = setup["baseline"]["tests_total"]
        print(f"# more-itertools 10.7.0, {total} tests, `{command}`, {args.pairs} pairs")

        def bare() -> None:
            run = commands.run_command(repo, "test", command, 600, {})
            assert run.exit_code == 0, run.output_tail

        def reported() -> None:
            listener = report_listener.start(report_listener.Request(repo), where=Path(tmp))
            run = commands.run_command(
                repo, "test", command, 600, listener.env, pass_fds=listener.pass_fds
            )
            report = listener.finish()
            assert run.exit_code == 0, run.output_tail
            assert len(report.tests) == total, len(report.tests)
            assert not report.problems, report.problems

        def ratchet() -> None:
            ran = subprocess.run(
                gtd_cmd("ratchet", "run", "--json"), cwd=repo, env=env, capture_output=True
            )
            verdict = json.loads(ran.stdout)
            assert verdict["passed"], verdict
            assert verdict["tests_total"] == total, verdict

        bare()  # warm: bytecode, the page cache
        reported()
        if args.only in (None, "runner"):
            summary("runner", paired(bare, reported, args.pairs))
        if args.only in (None, "ratchet"):
            # Wall only: the judged run's tests are no child the helper waits for
            # (a process group of their own, in the box), so its CPU is not counted.
            summary("gtd ratchet run", paired(bare, ratchet, args.pairs), cpu=False)


if __name__ == "__main__":
    main()
