"""The demo's night, headless: `gtd auto setup`, then `gtd loop` with the scripted
implementer as the agent command until the plan is done, then `gtd verify` — each
a real `gtd` process in the demo's repository — and a check that it went as the
script says (gtd.demo.implementer).

The loop is run one cycle at a time (``--max-cycles 1``) so each cycle's line is
printed as soon as it is decided; the line is read from the memory gtd keeps
(``.deepflow/auto-memory.yaml``), not from the loop's wording.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gtd import paths, proc
from gtd.auto.memory import CycleRecord
from gtd.demo import implementer
from gtd.git import Git

Say = Callable[[str], None]
AGENT = f"{shlex.quote(sys.executable)} -m gtd.demo.implementer"
_TIMEOUT_S = 600.0


class DemoFailed(Exception):
    """The night did not go as the script says: the reason, for the exit message."""


def gtd(root: Path, env: Mapping[str, str], *args: str) -> proc.Result:
    """`gtd ARGS` in the demo's repository, by the interpreter running the demo."""
    return proc.run([sys.executable, "-m", "gtd", *args], root, env=env, timeout=_TIMEOUT_S)


def gtd_json(root: Path, env: Mapping[str, str], *args: str) -> dict[str, Any]:
    res = gtd(root, env, *args, "--json")
    try:
        answer = json.loads(res.stdout)
    except ValueError:
        answer = None
    if not res.ok or not isinstance(answer, dict):
        raise DemoFailed(f"`gtd {' '.join(args)}` failed (exit {res.returncode}): {_tail(res)}")
    return answer


def cycles(root: Path) -> list[CycleRecord]:
    from gtd.auto import memory_file

    return list(memory_file.load(root / paths.MEMORY)[0].cycles)


def cycle_line(rec: CycleRecord) -> str:
    head = f"cycle {rec.cycle}  {rec.task} {rec.title}"
    if rec.status == "passed":
        return f"{head}: passed, committed {rec.commit}"
    return f"{head}: reverted: {rec.reason or 'no reason given'}"


def setup(root: Path, env: Mapping[str, str], say: Say) -> None:
    res = gtd(root, env, "auto", "setup", "--json")
    try:
        answer = json.loads(res.stdout)
    except ValueError:
        answer = None
    # A refused baseline exits 1 with its answer, which says why: show that.
    if not isinstance(answer, dict):
        raise DemoFailed(f"`gtd auto setup` failed (exit {res.returncode}): {_tail(res)}")
    if answer.get("status") != "ready":
        raise DemoFailed(
            f"`gtd auto setup` answered {answer.get('status')}: {answer.get('message')}"
        )
    say(f"gtd auto setup: ready ({answer.get('tests') or 'baseline taken'})")


def run_loop(root: Path, env: Mapping[str, str], say: Say, agent: str = AGENT) -> list[str]:
    """`gtd loop --max-cycles 1` until a run starts no cycle; the loop's final
    words. At most one run more than the script has cycles."""
    limit = len(implementer.expected()) + 1
    seen = len(cycles(root))
    for _ in range(limit):
        res = gtd(root, env, "loop", "--agent", agent, "--max-cycles", "1")
        if not res.ok:
            raise DemoFailed(f"`gtd loop` failed (exit {res.returncode}): {_tail(res)}")
        now = cycles(root)
        for rec in now[seen:]:
            say(cycle_line(rec))
        if len(now) == seen:
            return [line for line in res.stdout.splitlines() if line.strip()]
        seen = len(now)
    raise DemoFailed(f"the loop was still going after {limit} cycles")


def verify(root: Path, env: Mapping[str, str], say: Say) -> dict[str, Any]:
    answer = gtd_json(root, env, "verify")
    levels = ", ".join(f"{lv['level']} {lv['status']}" for lv in answer.get("levels", []))
    say(f"gtd verify: {answer.get('status')} ({levels})")
    return answer


def check(
    root: Path,
    records: Sequence[CycleRecord],
    verified: Mapping[str, Any],
    in_claude: bool = False,
) -> list[str]:
    """Where the night differs from the script: one line per difference."""
    problems: list[str] = []
    want = implementer.expected(in_claude)
    if [r.task for r in records] != [task for task, _ in want]:
        ran = [r.task for r in records]
        problems.append(f"cycles ran {ran}, the script has {[task for task, _ in want]}")
    for rec, (_, refused) in zip(records, want, strict=False):
        where = f"cycle {rec.cycle} ({rec.task})"
        if refused is None and rec.status != "passed":
            problems.append(f"{where} should pass; it was reverted: {rec.reason}")
        elif refused is not None and (rec.status == "passed" or refused not in (rec.reason or "")):
            got = "passed" if rec.status == "passed" else f"reverted: {rec.reason}"
            problems.append(f"{where} should be reverted for {refused!r}; it {got}")
    git = Git(root)
    for rec in records:
        kept = rec.kept or f"{paths.REVERTED_REF}{rec.cycle}"
        if rec.status != "passed" and not git.ok("rev-parse", "--verify", "--quiet", kept):
            problems.append(f"cycle {rec.cycle} ({rec.task}) was reverted but {kept} is missing")
    if verified.get("status") != "passed":
        problems.append(f"gtd verify: {verified.get('message')}")
    dirty = git.run("status", "--porcelain")
    if dirty.strip():
        problems.append(f"the working tree is not clean after the night:\n{dirty}")
    if (root / "cart.py").read_text(encoding="utf-8") != implementer.final_cart():
        problems.append("cart.py is not the scripted final version")
    return problems


def _tail(res: proc.Result, lines: int = 12) -> str:
    text = (res.stdout + res.stderr).strip().splitlines()
    return "\n".join(text[-lines:]) or "(no output)"
