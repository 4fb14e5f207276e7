"""A wave through the pinned CLI, from one tick to both tasks landed: with
`parallel: 2` and two independent tasks, `gtd cycle begin --tick` answers
`status: wave`; the scripted main model launches one implementer per brief in
one message; each implementer, slow on purpose (Rule.delay_s), writes its
task's files in its own worktree (in the helper's cache folder: Claude Code's
sandbox and the hook let it, commands/auto-cycle.md's **wave** bullet); then
the main model ends each cycle in order. The model server sees the two
implementers under way at once, and both tasks land in plan order."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from gtd.auto import sandbox
from gtd.auto.cycle import worktrees
from gtd.demo.model_rules import answered_command, field_of, role, rule, tick_rules
from gtd.demo.model_server import Block, ModelServer, Request, Text, ToolUse
from gtd.git import Git
from tests.e2e.harness import git, make_project, run_claude

pytestmark = pytest.mark.slow

TICK = "/gtd:auto-cycle"
HOLD_S = 3.0
MUL = "def mul(a, b):\n    return a * b\n"
MUL_TEST = "from mul import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
SUB = "def sub(a, b):\n    return a - b\n"
SUB_TEST = "from sub import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n"
# T3 waits for T1, so the plan is not complete after the wave (the tick ends
# with a report, not the loop's stop).
PLAN = """\
# Calculator

### spec-calc

- [ ] **T1**: Add mul
  - Files: mul.py, tests/test_mul.py
  - Blocked by: none
- [ ] **T2**: Add sub
  - Files: sub.py, tests/test_sub.py
  - Blocked by: none
- [ ] **T3**: Document mul
  - Files: README.md
  - Blocked by: T1
"""
WORK = {
    "T1": {"mul.py": MUL, "tests/test_mul.py": MUL_TEST},
    "T2": {"sub.py": SUB, "tests/test_sub.py": SUB_TEST},
}


def list_of(text: str, key: str) -> list[str]:
    """The items of the last ``key: a, b, c`` line of a helper's answer."""
    value = field_of(text, key)
    return [] if value is None else [v.strip() for v in value.split(",") if v.strip()]


@pytest.fixture(autouse=True)
def _needs_the_sandbox() -> None:
    # Edit and Write outside the project go through without a question only in
    # the folders the sandbox block opens (permissions.additionalDirectories).
    why = sandbox.unavailable()
    if why is not None:
        pytest.skip(f"Claude Code's sandbox cannot start here: {why}")


def _launch_wave(req: Request) -> list[Block]:
    briefs = list_of(req.last, "briefs")
    assert len(briefs) == 2, req.last
    return [
        ToolUse(
            "Agent",
            {
                "description": f"Implement {task}",
                "subagent_type": "gtd:implementer",
                "prompt": f"Read {brief} and follow it exactly.",
                "run_in_background": False,
            },
        )
        for task, brief in zip(list_of(req.last, "tasks"), briefs, strict=True)
    ]


def _work(req: Request) -> list[Block]:
    """The implementer's edits, in the worktree its brief names (read from
    the brief file the prompt names, as a model's Read would)."""
    found = re.search(r"Read (\S+) and follow it", req.last)
    assert found, req.last
    brief = Path(found.group(1)).read_text()
    where = re.search(r"Your worktree: `([^`]+)`", brief)
    task = re.search(r"# Cycle \d+ \S (T\d+):", brief)
    assert where, brief[:600]
    assert task, brief[:600]
    writes = [
        ToolUse("Write", {"file_path": f"{where.group(1)}/{rel}", "content": text})
        for rel, text in WORK[task.group(1)].items()
    ]
    return [Text(f"Implementing {task.group(1)}."), *writes]


def _run_tests(req: Request) -> list[Block]:
    """The implementer runs the suite in its worktree, inside the sandbox
    (the bytecode it writes there is what the opening allows)."""
    brief = Path(re.findall(r"Read (\S+) and follow it", req.conversation)[0]).read_text()
    where = re.findall(r"Your worktree: `([^`]+)`", brief)[0]
    return [ToolUse("Bash", {"command": f"cd {where} && python -m pytest -q", "timeout": 120000})]


def _ended(req: Request) -> list[str]:
    """The cycles the main model has run `gtd cycle end --cycle N` for."""
    out = []
    for msg in req.messages:
        content = msg.get("content")
        for b in content if msg.get("role") == "assistant" and isinstance(content, list) else []:
            command = b.get("input", {}).get("command", "") if isinstance(b, dict) else ""
            out += re.findall(r"^gtd cycle end --cycle (\d+)", str(command))
    return out


def _end_next(req: Request) -> list[Block]:
    """`gtd cycle end --cycle N` for the first cycle of the wave not ended yet."""
    left = [c for c in list_of(req.conversation, "cycles") if c not in _ended(req)]
    assert left, req.conversation[-800:]
    return [ToolUse("Bash", {"command": f"gtd cycle end --cycle {left[0]}", "timeout": 600000})]


def _more_to_end(req: Request) -> bool:
    cycles = list_of(req.conversation, "cycles")
    return answered_command(req).startswith("gtd cycle end") and len(_ended(req)) < len(cycles)


def test_one_tick_runs_a_wave_and_lands_both_in_plan_order(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo", plan=PLAN, config_extra="parallel: 2\n")
    home = worktrees.home(Git(repo))
    assert home.is_dir()  # setup made it, for the sandbox to open
    settings = json.loads((repo / sandbox.SETTINGS).read_text())
    assert settings["sandbox"]["filesystem"]["allowWrite"] == [os.path.realpath(home)]
    assert settings["permissions"]["additionalDirectories"] == [os.path.realpath(home)]
    start = git(repo, "rev-parse", "HEAD").strip()
    server.script(
        rule("main launches the wave", _launch_wave, has=("status: wave", "briefs: ")),
        rule(
            "an implementer works",
            _work,
            agent="implementer",
            after="prompt",
            delay_s=HOLD_S,
            times=2,
        ),
        rule(
            "an implementer runs its tests", _run_tests, agent="implementer", after="Write", times=2
        ),
        rule(
            "an implementer reports",
            [Text("Wrote the task's files in my worktree. Tests: all passed.")],
            agent="implementer",
            after="Bash",
            times=2,
        ),
        rule("main ends the first cycle", _end_next, after="Agent", times=1),
        rule("main ends the next cycle", _end_next, after="Bash", when=_more_to_end),
        *tick_rules(),
    )
    # One cache folder for setup and the CLI, as a person's one environment has
    # (the demo's environment for the CLI would give it a HOME of its own).
    cache = {"XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]}
    session = run_claude(server, repo, [TICK], base=tmp_path / "claude", timeout=400, env=cache)
    assert not server.errors, server.errors
    assert session.returncode == 0, session.stderr[-2000:]
    assert session.permission_denials == [], session.permission_denials
    assert server.unused() == [], server.describe()

    # The two implementers were under way at once.
    implementers = [e for e in server.exchanges if e.rule == "an implementer works"]
    assert len(implementers) == 2, server.describe()
    assert all(role(e.request) == "implementer" for e in implementers)
    together = server.overlapping(lambda e: e.rule == "an implementer works")
    assert together, [(e.started, e.ended) for e in implementers]

    # Each ran its tests in its worktree, in the sandbox, and they passed.
    for e in (e for e in server.exchanges if e.rule == "an implementer reports"):
        assert re.search(r"\b\d+ passed\b", e.request.last), e.request.last[-600:]
        assert "Read-only file system" not in e.request.last

    # Both landed, in plan order, PLAN.md ticked, and nothing of the wave left.
    log = git(repo, "log", "--reverse", "--format=%s", f"{start}..HEAD").splitlines()
    # Each task's work, then its tick in PLAN.md: T1's pair before T2's.
    assert [re.sub(r" \([0-9a-f]+\)$", "", s) for s in log] == [
        "T1: Add mul",
        "T1: mark done in PLAN.md",
        "T2: Add sub",
        "T2: mark done in PLAN.md",
    ], log
    assert (repo / "mul.py").read_text() == MUL
    assert (repo / "sub.py").read_text() == SUB
    plan = (repo / "PLAN.md").read_text()
    assert "- [x] **T1**" in plan
    assert "- [x] **T2**" in plan
    assert "- [ ] **T3**" in plan
    assert git(repo, "status", "--porcelain") == ""
    assert worktrees.listing(Git(repo)) == []
    assert git(repo, "for-each-ref", "refs/gtd/wave/") == ""
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert not home.exists() or list(home.iterdir()) == []
