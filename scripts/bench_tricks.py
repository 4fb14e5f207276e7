"""What each start-up trick saves on the commands that run every tick or every
tool call (docs/dependencies.md, "Start-up tricks").

Each trick is switched off from outside, in the same process, before the helper
loads: ``gtd.tuples.NamedTuple`` replaced by typing's, and the three removed
tricks' arms, ``typing``, ``urllib.parse`` and ``hashlib`` imported first, which
measure nothing on a helper that loads them anyway (run the script at an earlier
commit to see what they saved). Each variant's helper
process is counted in CPU instructions by valgrind (cachegrind; they do not move
with the machine's load), and, for the commands that can repeat, timed in pairs
interleaved with the helper as it is (order alternating): the median of the
pairs' differences in CPU time (user + system) and in wall time.

    .venv/bin/python scripts/bench_tricks.py --pairs 20
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_OFF = {
    "typing": "import typing",
    "urllib.parse": "import urllib.parse",
    "NamedTuple": "import typing, gtd.tuples; gtd.tuples.NamedTuple = typing.NamedTuple",
    "hashlib": "import hashlib",
}
_OFF["all"] = "; ".join(_OFF.values())
_RUN = "import sys; sys.argv = ['gtd', *sys.argv[1:]]\nfrom gtd.cli import main\nsys.exit(main())"

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def _project(root: Path) -> None:
    env = {**os.environ, **_GIT_ENV}

    def sh(*cmd: str) -> None:
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)

    (root / "tests").mkdir()
    (root / "tests" / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    (root / "PLAN.md").write_text("# Plan\n\n- [ ] **T1**: a task\n  - Files: app.py\n")
    (root / ".gitignore").write_text("__pycache__/\n")
    sh("git", "init", "-q")
    sh("git", "add", "-A")
    sh("git", "commit", "-q", "-m", "project")
    sh(sys.executable, "-c", _RUN, "auto", "setup", "--json")


def _cpu_wall(argv: list[str], cwd: Path, stdin: str | None) -> tuple[float, float]:
    """The child's CPU time (user + system, from this process's reaped-children
    total) and its wall time, in seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, input=stdin or "", text=True, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return cpu, wall


def _instructions(argv: list[str], cwd: Path, stdin: str | None) -> int | None:
    """CPU instructions the helper's own process executes (not its git children,
    the same in every variant), by valgrind's cachegrind; None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    with tempfile.TemporaryDirectory() as logs:
        log = Path(logs) / "count.log"
        subprocess.run(
            [
                "valgrind", "--tool=cachegrind", "--cache-sim=no",
                "--cachegrind-out-file=/dev/null", f"--log-file={log}", *argv,
            ],
            cwd=cwd, input=stdin or "", text=True, capture_output=True, check=False,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )  # fmt: skip
        refs = log.read_text().rpartition("I   refs:")[2].split()
        return int(refs[0].replace(",", "")) if refs else None


def _gtd(words: list[str], pre: str = "") -> list[str]:
    return [sys.executable, "-c", (pre + "\n" if pre else "") + _RUN, *words]


def _paired(
    words: list[str], stdin: str | None, pre: str, root: Path, pairs: int
) -> dict[str, float]:
    """Median differences (trick off minus as is) over ``pairs`` interleaved pairs."""
    plain, off = _gtd(words), _gtd(words, pre)
    cpu_d: list[float] = []
    wall_d: list[float] = []
    for i in range(pairs):
        got = {}
        for name, argv in (("on", plain), ("off", off)) if i % 2 else (("off", off), ("on", plain)):
            got[name] = _cpu_wall(argv, root, stdin)
        cpu_d.append((got["off"][0] - got["on"][0]) * 1000)
        wall_d.append((got["off"][1] - got["on"][1]) * 1000)
    return {
        "cpu_ms": round(statistics.median(cpu_d), 1),
        "wall_ms": round(statistics.median(wall_d), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _project(root)
        hook = json.dumps(
            {
                "hook_event_name": "PreToolUse",
                "cwd": str(root),
                "tool_name": "Edit",
                "tool_input": {"file_path": str(root / "app.py")},
            }
        )

        def quietly(*words: str) -> None:
            subprocess.run(_gtd(list(words)), cwd=root, capture_output=True, check=False)

        # (label, argv words, stdin, what runs before each run: None = nothing,
        # timed: whether paired timings are taken too, not only the counts)
        begin = ["cycle", "begin", "--tick"]
        steps: list[tuple[str, list[str], str | None, bool]] = [
            ("cycle begin --tick, answering a task", begin, None, False),
            ("cycle begin --tick, answering busy", begin, None, True),
            ("cycle end, nothing in flight", ["cycle", "end"], None, True),
            ("hook pre-tool-use (an Edit)", ["hook", "pre-tool-use"], hook, True),
        ]
        results: dict[str, dict[str, object]] = {}
        for label, words, stdin, timed in steps:
            task = label.endswith("a task")

            def ready(task: bool = task) -> None:
                if task:  # no cycle in flight, no tripped breaker: begin starts one
                    quietly("cycle", "end")
                    quietly("cycle", "reset")

            out: dict[str, object] = {}
            ready()
            said = subprocess.run(
                _gtd(words), cwd=root, input=stdin or "", text=True, capture_output=True
            )
            out["answer"] = (said.stdout or said.stderr).strip().splitlines()[:1]
            ready()
            base = _instructions(_gtd(words), root, stdin)
            if base is not None:
                out["M_instructions_as_is"] = round(base / 1e6, 1)
            for trick, pre in _OFF.items():
                entry: dict[str, float] = {}
                ready()
                more = _instructions(_gtd(words, pre), root, stdin)
                if base is not None and more is not None:
                    entry["M_instructions"] = round((more - base) / 1e6, 1)
                if timed:
                    entry.update(_paired(words, stdin, pre, root, args.pairs))
                out[trick] = entry
            if timed:
                cpu = [_cpu_wall(_gtd(words), root, stdin)[0] for _ in range(9)]
                out["cpu_ms_as_is"] = round(statistics.median(cpu) * 1000, 1)
            results[label] = out
            print(json.dumps({label: out}), flush=True)
    print(json.dumps({"pairs": args.pairs, "load": os.getloadavg(), "results": results}))


if __name__ == "__main__":
    main()
