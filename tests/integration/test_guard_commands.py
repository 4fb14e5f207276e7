"""The text guard's Bash decisions, table-driven, on a real repository with a
cycle in flight: ordinary work (compound lines that mention a protected file
while writing something else) always goes through, with Claude Code's sandbox
on or off; what remains refused is exact — the helper's commands, git's
history-changing ones, and, where the sandbox is off, a literal write of a
protected path by a simple command that writes its operands."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gtd.auto import guard, sandbox
from gtd.git import Git
from tests.conftest import Repo, shared_outcome_home
from tests.integration.calc_project import gtd_json, make_project

# Ordinary commands a model sends while it works: never refused.
ORDINARY = [
    "sed -i 's/a/b/' calc.py && pytest -q tests/test_calc.py",
    "sed -i.bak -e 's/a/b/' calc.py; python -m pytest tests/test_calc.py -q",
    "cp calc.py /tmp/calc.bak && pytest -q tests/test_calc.py",
    "mv calc_new.py calc.py && pytest tests/test_calc.py",
    "touch calc.py && pytest -q tests/test_calc.py",
    "touch tests/test_calc.py",
    "rm -rf .pytest_cache && pytest tests/test_calc.py",
    "rm -rf .pytest_cache __pycache__ && python -m pytest -q tests/",
    "cat tests/test_calc.py > /tmp/before.txt",
    "pytest -q tests/test_calc.py > /tmp/out.txt 2>&1",
    "pytest -q tests/test_calc.py 2>&1 | tee /tmp/log.txt",
    "grep '>' tests/test_calc.py",
    "grep -n 'assert' tests/test_calc.py | head -5 > notes.txt",
    "echo 'tests/test_calc.py is protected' > notes.txt",
    "ln -s tests/test_calc.py /tmp/view.py",
    "cp tests/test_calc.py tests/test_calc_copy.py",
    "cp -r tests /tmp/tests-copy",
    "diff tests/test_calc.py /tmp/x > /tmp/diff.txt || true",
    "python - <<'EOF'\nprint(open('tests/test_calc.py').read())\nrm tests/test_calc.py\nEOF",
    "cat > tests/test_new.py <<'EOF'\nfrom calc import add\n\n"
    "def test_new():\n    assert add(1, 1) == 2\nEOF",
    "for f in tests/*.py; do wc -l $f; done",
    "cd tests && ls -la && cd ..",
    "git status && git diff -- tests/test_calc.py",
    "git log --oneline -5; git show HEAD:tests/test_calc.py",
    "gtd plan check",
    "FOO=1 pytest -q tests/test_calc.py",
    "python -c \"print(open('tests/test_calc.py').read())\"",
    "dd if=tests/test_calc.py of=/tmp/copy.py",
    "sed -n '1,5p' tests/test_calc.py",
    "perl -ne 'print if /assert/' tests/test_calc.py",
    "rm -f /tmp/scratch.txt; pytest tests/test_calc.py --tb=short",
    "echo unterminated 'quote > tests/test_calc.py",
    "cd /tmp && tee PLAN.md < /dev/null",
    'cd "$WORK" && echo x > tests/test_calc.py',
]

# Written where the sandbox is off: a literal protected path, a simple command
# that writes it. (With the sandbox on the operating system refuses these; the
# hook lets them reach it.)
WRITES = [
    "echo 'def test_add(): pass' > tests/test_calc.py",
    "echo x >| tests/test_calc.py",
    "echo x 1<> tests/test_calc.py",
    "pytest -q && echo x >> conftest.py",
    "sed -i 's/== 5/is not None/' tests/test_calc.py",
    "sed -e 's/5/6/' -i tests/test_calc.py",
    "perl -p -i -e 's/5/6/' tests/test_calc.py",
    "rm conftest.py",
    "rm -rf .pytest_cache && rm tests/test_calc.py",
    "mv tests/test_calc.py /tmp/gone.py",
    "cp /tmp/x tests/test_calc.py",
    "cp -t tests /tmp/test_calc.py",
    "dd if=/dev/null of=tests/test_calc.py",
    "truncate -s 0 tests/test_calc.py",
    "cd tests && echo x > test_calc.py",
    "tee PLAN.md < /dev/null",
    "printf x >> PLAN.md",
    "env FOO=1 rm .deepflow/cycle.json",
]

# Refused with the sandbox on or off: the loop's commands and git's history.
HELPER = [
    "gtd cycle begin",
    "pytest -q && gtd cycle reset",
    "gtd ratchet snapshot",
    "gtd loop --agent claude",
    "git commit -qam 'done'",
    "pytest -q tests/ && git stash",
    "git -C . reset --hard HEAD",
    "git branch -f main HEAD~1 ; git checkout main",
]


@pytest.fixture(scope="module")
def flight(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    path = tmp_path_factory.mktemp("guard") / "repo"
    path.mkdir()
    repo = Repo(path)
    # The tests' own environment: the default template, not one of its own.
    with shared_outcome_home(tmp_path_factory):
        repo.git("init", "-q", "-b", "main")
        make_project(repo)
        assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    return repo


def decide(repo: Repo, command: str, **extra: Any) -> str | None:
    event = {
        "cwd": str(repo.path),
        "tool_name": "Bash",
        "tool_input": {"command": command, **extra.pop("tool_input", {})},
        **extra,
    }
    return guard.decide(repo.path, event)


@pytest.fixture(params=["sandbox off", "sandbox on"])
def mode(request: pytest.FixtureRequest, flight: Repo) -> Iterator[str]:
    git = Git(flight.path)
    if request.param == "sandbox on":
        if not sandbox.apply(flight.path, git):
            pytest.skip(f"Claude Code's sandbox cannot start here: {sandbox.unavailable()}")
    else:
        sandbox.remove(flight.path, git)
    assert sandbox.recorded(flight.path) == (request.param == "sandbox on")
    yield request.param
    sandbox.remove(flight.path, git)


@pytest.mark.parametrize("command", ORDINARY)
def test_ordinary_commands_go_through(flight: Repo, mode: str, command: str) -> None:
    assert decide(flight, command) is None


@pytest.mark.parametrize("command", WRITES)
def test_a_literal_write_of_a_protected_path_is_refused_only_without_the_sandbox(
    flight: Repo, mode: str, command: str
) -> None:
    reason = decide(flight, command)
    if mode == "sandbox on":
        assert reason is None  # the operating system refuses it (tests/e2e)
    else:
        assert reason is not None
        assert "protected while a cycle is in flight" in reason


@pytest.mark.parametrize("command", HELPER)
def test_the_loops_commands_are_refused_in_either_mode(
    flight: Repo, mode: str, command: str
) -> None:
    reason = decide(flight, command)
    assert reason is not None
    assert "not allowed while a cycle is in flight" in reason


@pytest.mark.parametrize(
    "command", ["gtd cycle end --cycle 1", "gtd cycle end", "gtd auto setup", "gtd verify"]
)
def test_the_helpers_unsandboxed_commands_are_refused_from_a_subagent(
    flight: Repo, mode: str, command: str
) -> None:
    """Claude Code runs them outside the sandbox (excludedCommands): the loop's
    door. From the implementer (a subagent: `agent_id` in the event) they are
    refused; from the loop's own conversation `gtd cycle end` goes through."""
    reason = decide(flight, command, agent_id="a1", agent_type="gtd:implementer")
    assert reason is not None
    assert "the loop's to run" in reason
    if command.startswith("gtd cycle end"):
        assert decide(flight, command) is None
    assert decide(flight, "gtd plan check", agent_id="a1") is None


def test_leaving_the_sandbox_is_refused_in_a_cycle(flight: Repo, mode: str) -> None:
    reason = decide(flight, "pytest -q", tool_input={"dangerouslyDisableSandbox": True})
    if mode == "sandbox on":
        assert reason is not None
        assert "dangerouslyDisableSandbox" in reason
    else:
        assert reason is None


def test_outside_a_cycle_only_a_subagents_helper_command_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "repo"
    path.mkdir()
    repo = Repo(path)
    repo.git("init", "-q", "-b", "main")
    make_project(repo)
    for command in [*WRITES, *HELPER]:
        assert decide(repo, command) is None, command
    assert decide(repo, "gtd cycle begin", agent_id="a1") is not None


@pytest.mark.parametrize("command", [*ORDINARY[:6], *WRITES[:6]])
def test_the_implementers_sandboxed_bash_runs_without_asking(
    flight: Repo, mode: str, command: str
) -> None:
    """Nobody answers a prompt at night: with the sandbox on, the implementer's
    Bash call is approved by the hook (the operating system fences its writes);
    never a call that leaves the sandbox or runs the helper, never without it."""
    sub = {"agent_id": "a1", "agent_type": "gtd:implementer"}
    event = {"cwd": str(flight.path), "tool_name": "Bash", "tool_input": {"command": command}}
    allowed = guard.sandboxed_bash(flight.path, {**event, **sub})
    assert (allowed is not None) == (mode == "sandbox on")
    assert guard.sandboxed_bash(flight.path, event) is None  # the loop's own: Claude decides
    out = {**event, **sub, "tool_input": {"command": command, "dangerouslyDisableSandbox": True}}
    assert guard.sandboxed_bash(flight.path, out) is None
    helper = {**event, **sub, "tool_input": {"command": f"{command}; gtd cycle end"}}
    assert guard.sandboxed_bash(flight.path, helper) is None
