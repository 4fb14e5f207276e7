"""How often the diff reader speaks up on honest work: run it over the last N
commits of real repositories, each commit read as a cycle's change (its parent
is the base, the parent's test files are the snapshot), and print the share of
commits with a finding and every finding.

    .venv/bin/python scripts/diff_reader_rate.py REPO [REPO ...] [--commits 200]

The figure goes in docs/diff-reader.md: the reader must not cry wolf (at most one
flagged commit in 200 on each well-kept package).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from gtd.auto.diffread.patterns import Finding
from gtd.auto.diffread.reader import Source, read
from gtd.auto.ratchet import files


class _Blobs:
    """One ``git cat-file --batch`` per repository: blobs by ``rev:path``."""

    def __init__(self, repo: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", "-C", str(repo), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.cache: dict[str, str | None] = {}

    def get(self, spec: str) -> str | None:
        if spec in self.cache:
            return self.cache[spec]
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(spec.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        text: str | None = None
        if len(header) == 3:
            data = self.proc.stdout.read(int(header[2]) + 1)[:-1]
            text = data.decode("utf-8", "replace")
        self.cache[spec] = text
        return text


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def commit_findings(repo: Path, blobs: _Blobs, commit: str) -> list[Finding]:
    parent = f"{commit}^"
    changed = _git(repo, "diff", "--name-status", "--no-renames", parent, commit).splitlines()
    sources = []
    for line in changed:
        status, _, path = line.partition("\t")
        if status == "D" or not path.endswith(".py") or files.is_test_path(path):
            continue
        new = blobs.get(f"{commit}:{path}")
        if new is not None:
            sources.append(Source(path, blobs.get(f"{parent}:{path}"), new))
    if not sources:
        return []
    tests = [
        p
        for p in _git(repo, "ls-tree", "-r", "--name-only", parent).splitlines()
        if p.endswith(".py") and files.is_test_file(p)
    ]
    texts = [t for t in (blobs.get(f"{parent}:{p}") for p in tests) if t is not None]
    return read(sources, texts, tests)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument("--commits", type=int, default=200)
    args = parser.parse_args(argv)
    worst = 0.0
    for repo in args.repos:
        blobs = _Blobs(repo)
        log = _git(repo, "log", "--no-merges", f"-n{args.commits}", "--format=%H %s")
        flagged = 0
        commits = log.splitlines()
        for entry in commits:
            commit, _, subject = entry.partition(" ")
            found = commit_findings(repo, blobs, commit)
            if found:
                flagged += 1
                print(f"  {commit[:10]} {subject[:60]}")
                for f in found:
                    print(f"      {f.text()}")
        rate = flagged / max(len(commits), 1)
        worst = max(worst, rate)
        print(f"{repo}: {flagged} of {len(commits)} commits with a finding ({rate:.1%})")
    return 0 if worst <= 1 / 200 else 1


if __name__ == "__main__":
    sys.exit(main())
