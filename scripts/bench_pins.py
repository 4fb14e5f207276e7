#!/usr/bin/env python3
"""What pinning a person's refs and ignored files adds to `gtd cycle begin` and
`gtd cycle end` (docs/your-work-is-safe.md, "Cost").

Builds two repositories in a temp folder — a large one (7,001 refs, 2,000
commits, 3 stash entries, 20 small ignored files, a 3,000-file ignored `.venv/`)
and a small one — then times, best of --runs, the calls the cycle engine makes:
`gtd.auto.cycle.pins.take` (begin) the first time, again with nothing new, after
one new commit, and `gtd.auto.cycle.yours.after` (end) with nothing changed.

Usage: .venv/bin/python scripts/bench_pins.py [--runs N]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gtd.auto.cycle import pins, yours
from gtd.auto.journal import Journal
from gtd.git import Git

_ID = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]


def _git(root: Path, *args: str, data: bytes | None = None) -> None:
    subprocess.run(["git", *_ID, *args], cwd=root, input=data, check=True, capture_output=True)


def _large(root: Path) -> None:
    _git(root, "init", "-q", "-b", "main")
    stream = []
    for i in range(1, 2001):
        msg, data = f"c{i}\n", f"content {i}\n"
        parent = f"from :{i - 1}\n" if i > 1 else ""
        stream.append(
            f"commit refs/heads/main\nmark :{i}\ncommitter a <a@b> {1700000000 + i} +0000\n"
            f"data {len(msg)}\n{msg}{parent}M 100644 inline f{i % 50}.txt\n"
            f"data {len(data)}\n{data}\n"
        )
    stream += [f"reset refs/heads/b{b}\nfrom :{b % 2000 + 1}\n\n" for b in range(5000)]
    stream += [f"reset refs/tags/t{t}\nfrom :{t % 2000 + 1}\n\n" for t in range(2000)]
    _git(root, "fast-import", "--quiet", data="".join(stream).encode())
    _git(root, "checkout", "-q", "main")
    _git(root, "pack-refs", "--all")
    for i in range(3):
        with (root / "f1.txt").open("a") as handle:
            handle.write(f"stashed {i}\n")
        _git(root, "stash", "-q")
    (root / ".git/info/exclude").write_text("build/\n.env\n.venv/\n")
    (root / "build").mkdir()
    for i in range(20):
        (root / f"build/f{i}").write_text(f"x{i}\n")
    (root / ".env").write_text("SECRET=1\n")
    (root / ".venv/lib").mkdir(parents=True)
    for i in range(3000):
        (root / f".venv/lib/m{i}.py").write_text(f"{i}\n")


def _small(root: Path) -> None:
    _git(root, "init", "-q", "-b", "main")
    (root / "a").write_text("a\n")
    _git(root, "add", "a")
    _git(root, "commit", "-q", "-m", "a")
    _git(root, "branch", "feature")
    (root / ".git/info/exclude").write_text(".env\n")
    (root / ".env").write_text("SECRET=1\n")


def _best(fn: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def measure(root: Path, runs: int) -> list[float]:
    git = Git(root, hardened=True)
    ignored = git.ignored()
    start = time.perf_counter()
    pins.take(git, ignored)
    first = (time.perf_counter() - start) * 1000
    again = _best(lambda: pins.take(git, ignored), runs)
    _git(root, "commit", "-q", "--allow-empty", "-m", "new")
    start = time.perf_counter()
    seal = pins.take(git, ignored)
    one_new = (time.perf_counter() - start) * 1000
    journal = Journal(
        cycle=1, task="T1", title="bench", kind="task", spike=False, base="", branch="main",
        started_at="", started_epoch=0.0, seals={yours.SEAL: seal},
    )  # fmt: skip
    assert yours.after(git, journal) == []
    end = _best(lambda: yours.after(git, journal), runs)
    return [first, again, one_new, end]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print("| repository | begin, first | begin, nothing new | begin, one new commit | end |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in (("large", _large), ("small", _small)):
            root = Path(tmp) / name
            root.mkdir()
            build(root)
            cells = " | ".join(f"{ms:.0f} ms" for ms in measure(root, args.runs))
            print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
