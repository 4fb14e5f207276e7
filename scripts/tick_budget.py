#!/usr/bin/env python3
"""Measure the bytes one /gtd:auto-cycle tick puts into the main conversation.

A tick is the body of commands/auto-cycle.md (after its frontmatter) with each
`` !`gtd ...` `` line replaced by that command's output, exactly as Claude Code
expands it before the model reads it. The implementer's brief goes to the subagent,
not to the main conversation, so it is reported but not counted.

    scripts/tick_budget.py                     # run the real helper in a temp repo
    scripts/tick_budget.py --begin-output F    # use a saved `gtd cycle begin` output
    scripts/tick_budget.py --json              # one JSON object on stdout

Generating needs the helper importable by this Python (`.venv/bin/python
scripts/tick_budget.py`) with `gtd auto setup` and `gtd cycle begin` working; until
then pass --begin-output. Exit 1 when the tick is over --limit bytes (default 4096).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMAND = ROOT / "commands" / "auto-cycle.md"
INJECTION = re.compile(r"!`([^`]*)`")
# deepflow 0.1.73's /df:auto-cycle tick: its command text plus the /df:execute skill
# and agent prompts it loads into the same conversation, about 35 KB (issue 3).
DEEPFLOW_TICK_BYTES = 35_000
DEFAULT_LIMIT = 4096

PLAN = """\
# Plan

### shapes

- [x] **T1** [SPIKE]: Check that area() can stay a pure function of the dimensions ✓ (1a2b3c4)
  - Files: shapes.py
  - Blocked by: none
- [ ] **T2**: Add `perimeter(kind, *dims)` for squares and rectangles
  - Files: shapes.py, tests/test_perimeter.py
  - Blocked by: T1
  - Done when tests/test_perimeter.py covers both shapes and a bad kind raising ValueError.
- [ ] **T3**: Support circles in `area` and `perimeter`
  - Files: shapes.py, tests/test_circle.py
  - Blocked by: T2
- [ ] **T4**: Document the shapes API in the README
  - Files: README.md
  - Blocked by: T3

## Spec Gaps

- [ ] Should negative dimensions raise or return 0?
"""

MODULE = '''\
"""Areas of simple shapes."""


def area(kind: str, *dims: float) -> float:
    if kind == "square":
        return dims[0] * dims[0]
    if kind == "rectangle":
        return dims[0] * dims[1]
    raise ValueError(kind)
'''

TESTS = """\
import pytest

from shapes import area


def test_square() -> None:
    assert area("square", 3) == 9


def test_rectangle() -> None:
    assert area("rectangle", 2, 5) == 10


def test_unknown() -> None:
    with pytest.raises(ValueError):
        area("hexagon", 1)
"""


@dataclass(frozen=True)
class Budget:
    command_bytes: int
    injected_bytes: int
    tick_bytes: int
    limit: int
    deepflow_bytes: int
    percent_of_deepflow: float
    begin_source: str
    brief_bytes: int | None  # read by the subagent, not counted

    @property
    def ok(self) -> bool:
        return self.tick_bytes <= self.limit


def command_body(path: Path = COMMAND) -> str:
    text = path.read_text(encoding="utf-8")
    if text.startswith("---\n"):
        end = text.index("\n---\n", 4)
        return text[end + len("\n---\n") :]
    return text


def measure(
    begin_output: str, source: str, limit: int = DEFAULT_LIMIT, brief: int | None = None
) -> Budget:
    body = command_body()
    commands = INJECTION.findall(body)
    if [c.strip() for c in commands] != ["gtd cycle begin --tick"]:
        raise SystemExit(
            f"expected one !`gtd cycle begin --tick` in {COMMAND.name}, found {commands}"
        )
    tick = INJECTION.sub(lambda _: begin_output.rstrip("\n"), body)
    size = len(tick.encode("utf-8"))
    return Budget(
        command_bytes=len(body.encode("utf-8")),
        injected_bytes=len(begin_output.rstrip("\n").encode("utf-8")),
        tick_bytes=size,
        limit=limit,
        deepflow_bytes=DEEPFLOW_TICK_BYTES,
        percent_of_deepflow=round(100 * size / DEEPFLOW_TICK_BYTES, 1),
        begin_source=source,
        brief_bytes=brief,
    )


def generate_begin_output(python: str = sys.executable) -> tuple[str, int | None]:
    """Run `gtd auto setup` and `gtd cycle begin` in a throwaway repository with the
    plan above; return begin's stdout and the size of the brief it wrote."""
    with tempfile.TemporaryDirectory(prefix="gtd-tick-") as tmp:
        repo = Path(tmp) / "repo"
        home = Path(tmp) / "home"
        (repo / "tests").mkdir(parents=True)
        home.mkdir()
        gitconfig = home / ".gitconfig"
        gitconfig.write_text("[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n")
        env = {
            **os.environ,
            "HOME": str(home),
            "GIT_CONFIG_GLOBAL": str(gitconfig),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Tick Budget",
            "GIT_AUTHOR_EMAIL": "tick@example.com",
            "GIT_COMMITTER_NAME": "Tick Budget",
            "GIT_COMMITTER_EMAIL": "tick@example.com",
            # the temp repo's tests run with this interpreter's pytest
            "PATH": os.pathsep.join([str(Path(python).parent), os.environ.get("PATH", "")]),
        }
        (repo / "PLAN.md").write_text(PLAN)
        (repo / "shapes.py").write_text(MODULE)
        (repo / "tests" / "test_shapes.py").write_text(TESTS)
        (repo / "pytest.ini").write_text("[pytest]\npythonpath = .\n")

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                args, cwd=repo, env=env, capture_output=True, text=True, timeout=300
            )

        for git in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "shapes")):
            done = run("git", *git)
            if done.returncode != 0:
                raise SystemExit(f"git {' '.join(git)} failed: {done.stderr.strip()}")
        for step in (("auto", "setup"), ("cycle", "begin")):
            done = run(python, "-m", "gtd", *step)
            if done.returncode != 0 or not done.stdout.startswith("status:"):
                raise SystemExit(
                    f"`gtd {' '.join(step)}` did not answer (exit {done.returncode}):\n"
                    f"{done.stdout}{done.stderr}\n"
                    "Pass --begin-output FILE until the helper's cycle commands work."
                )
        if not done.stdout.startswith("status: task"):
            raise SystemExit(f"expected a task from `gtd cycle begin`, got:\n{done.stdout}")
        brief = repo / ".deepflow" / "cycle-brief.md"
        return done.stdout, brief.stat().st_size if brief.is_file() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--begin-output",
        type=Path,
        help="a saved `gtd cycle begin` output (default: run the helper in a temp repo)",
    )
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="bytes allowed")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)

    if args.begin_output:
        output, brief = args.begin_output.read_text(encoding="utf-8"), None
        source = str(args.begin_output)
    else:
        output, brief = generate_begin_output()
        source = "generated"
    budget = measure(output, source, args.limit, brief)

    if args.json:
        print(json.dumps({**asdict(budget), "ok": budget.ok}))
    else:
        print(f"auto-cycle.md body:        {budget.command_bytes:6d} bytes")
        print(f"gtd cycle begin output:    {budget.injected_bytes:6d} bytes ({source})")
        print(f"tick in main conversation: {budget.tick_bytes:6d} bytes (limit {budget.limit})")
        print(
            f"deepflow /df:auto-cycle:   ~{budget.deepflow_bytes:5d} bytes -> this tick is "
            f"{budget.percent_of_deepflow} % of it "
            f"({budget.deepflow_bytes / budget.tick_bytes:.0f}x smaller)"
        )
        if brief is not None:
            print(f"implementer brief:         {brief:6d} bytes (subagent context, not counted)")
    return 0 if budget.ok else 1


if __name__ == "__main__":
    sys.exit(main())
