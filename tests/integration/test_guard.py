"""The plugin's PreToolUse hook (`gtd hook pre-tool-use`): while a cycle's
implementer works, edits of what the ratchet protects are refused up front with a
reason the model can act on; everything else, and everything outside a cycle, goes
through. Real repository, real CLI, the JSON Claude Code sends."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, run_gtd, shared_outcome_home
from tests.integration.calc_project import MUL, MUL_TEST, gtd_json, make_project


def hook(
    repo: Repo, tool: str, *, cwd: Path | None = None, agent: str | None = None, **tool_input: Any
) -> str | None:
    """The hook's refusal reason for one tool call, or None when it lets it through
    (``agent``: the subagent's id Claude Code sends for a subagent's call)."""
    event = {
        "session_id": "s",
        "hook_event_name": "PreToolUse",
        "cwd": str(cwd or repo.path),
        **({"agent_id": agent} if agent is not None else {}),
        "tool_name": tool,
        "tool_input": tool_input,
    }
    res = run_gtd(repo.path, "hook", "pre-tool-use", input_text=json.dumps(event))
    assert res.code == 0, res.stderr
    if not res.stdout.strip():
        return None
    answer = json.loads(res.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "PreToolUse"
    assert answer["permissionDecision"] == "deny"
    reason = answer["permissionDecisionReason"]
    assert isinstance(reason, str)
    return reason


def _cycle_in_flight(repo: Repo) -> Repo:
    from gtd.auto import sandbox
    from gtd.git import Git

    make_project(repo)
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    sandbox.remove(repo.path, Git(repo.path))
    assert not sandbox.recorded(repo.path)
    return repo


@pytest.fixture(scope="module")
def in_cycle(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """A cycle in flight where Claude Code's sandbox is not set (the text guard's
    fallback: no bubblewrap, native Windows). One for the module's tests: the
    hook only reads (its answers are all these tests look at), so a cycle begun
    for each test was ~0.2 s of CPU spent on the same state."""
    path = tmp_path_factory.mktemp("guard") / "repo"
    path.mkdir()
    repo = Repo(path)
    with shared_outcome_home(tmp_path_factory):
        repo.git("init", "-q", "-b", "main")
        return _cycle_in_flight(repo)


@pytest.fixture
def own_cycle(repo: Repo) -> Repo:
    """The same, for a test that changes what the hook reads."""
    return _cycle_in_flight(repo)


def path(repo: Repo, rel: str) -> str:
    return str(repo.path / rel)


@pytest.mark.parametrize(
    ("rel", "why"),
    [
        ("tests/test_calc.py", "snapshot"),
        ("conftest.py", "conftest"),
        ("PLAN.md", "plan"),
        (".deepflow/config.yaml", "helper"),
        (".git/config", "helper"),
        ("pytest.ini", "pytest"),
    ],
)
def test_edits_of_protected_files_are_refused_with_a_reason(
    in_cycle: Repo, rel: str, why: str
) -> None:
    for tool, extra in (
        ("Edit", {"old_string": "a", "new_string": "b"}),
        ("Write", {"content": "x"}),
        ("MultiEdit", {"edits": []}),
    ):
        reason = hook(in_cycle, tool, file_path=path(in_cycle, rel), **extra)
        assert reason is not None, (tool, rel)
        assert rel in reason
        assert why in reason.lower()
        assert "new test files" in reason  # what to do instead


def test_the_agents_own_files_go_through(in_cycle: Repo) -> None:
    assert hook(in_cycle, "Write", file_path=path(in_cycle, "calc.py"), content=MUL) is None
    assert hook(in_cycle, "Write", file_path="tests/test_mul.py", content=MUL_TEST) is None
    assert hook(in_cycle, "Edit", file_path=path(in_cycle, "README.md")) is None
    assert hook(in_cycle, "Write", file_path="/tmp/elsewhere.txt", content="x") is None


@pytest.mark.parametrize(
    "command",
    [
        "echo 'def test_add(): pass' > tests/test_calc.py",
        "sed -i 's/== 5/is not None/' tests/test_calc.py",
        "rm conftest.py",
        "cp /tmp/x tests/test_calc.py",
        "printf x >> PLAN.md",
        "git commit -am wip",
        "git -C . stash",
        "git checkout -- tests/test_calc.py",
        "cd . && git reset --hard",
        "tee .deepflow/cycle.json < /dev/null",
    ],
)
def test_shell_commands_that_write_protected_files_are_refused(
    in_cycle: Repo, command: str
) -> None:
    assert hook(in_cycle, "Bash", command=command) is not None


@pytest.mark.parametrize(
    "command",
    [
        "python -m pytest -q",
        "cat tests/test_calc.py",
        "grep -n add tests/test_calc.py conftest.py",
        "cp tests/test_calc.py /tmp/copy.py",
        "git status && git diff",
        "echo hi > notes.txt",
        "gtd cycle end",
    ],
)
def test_reading_and_running_go_through(in_cycle: Repo, command: str) -> None:
    assert hook(in_cycle, "Bash", command=command) is None


def test_the_helpers_own_commands_are_the_loops(in_cycle: Repo) -> None:
    """What changes the cycle's judge, or begins or ends a cycle, is the loop's to
    run: the implementer is told so (the ratchet refuses each anyway, or the
    loop's `gtd cycle end --cycle N` halts on it). One cycle for all of them: each
    call is a refusal, which changes nothing."""
    for command in (
        "gtd ratchet snapshot",
        "gtd ratchet quarantine tests/test_calc.py::test_add --reason flaky",
        "gtd ratchet release tests/test_calc.py::test_add",
        "gtd cycle begin --json",
        "gtd cycle reset",
        "gtd auto setup",
        "cd . && /usr/local/bin/gtd loop --agent claude",
    ):
        reason = hook(in_cycle, "Bash", command=command)
        assert reason is not None, command
        assert "the loop runs the helper's commands" in reason, reason
    for command in ("gtd cycle end --cycle 1", "gtd ratchet run", "gtd plan next"):
        assert hook(in_cycle, "Bash", command=command) is None, command


def test_git_configuration_outside_the_repository_is_refused(in_cycle: Repo) -> None:
    home = Path(os.environ["HOME"])
    for target in (home / ".gitconfig", home / ".config/git/attributes"):
        reason = hook(in_cycle, "Write", file_path=str(target), content="[filter]")
        assert reason is not None, target
        assert str(target) in reason
        assert "halts" in reason
    for command in ("echo '[filter \"x\"]' >> ~/.gitconfig", "cp x ~/.config/git/config"):
        assert hook(in_cycle, "Bash", command=command) is not None, command
    assert hook(in_cycle, "Write", file_path=str(home / "notes.txt"), content="x") is None


def test_nothing_is_refused_outside_a_cycle(repo: Repo) -> None:
    make_project(repo)
    assert hook(repo, "Write", file_path=path(repo, "tests/test_calc.py"), content="x") is None
    gtd_json(repo, "cycle", "begin")
    assert hook(repo, "Write", file_path=path(repo, "tests/test_calc.py"), content="x") is not None
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    assert gtd_json(repo, "cycle", "end")["status"] == "passed"
    assert hook(repo, "Write", file_path=path(repo, "tests/test_calc.py"), content="x") is None


def test_a_broken_event_never_blocks(in_cycle: Repo, tmp_path: Path) -> None:
    for text in ("", "not json", "[]", json.dumps({"tool_name": "Edit"})):
        res = run_gtd(in_cycle.path, "hook", "pre-tool-use", input_text=text)
        assert (res.code, res.stdout) == (0, "")
    elsewhere = {"cwd": str(tmp_path), "tool_name": "Write", "tool_input": {"file_path": "a"}}
    res = run_gtd(in_cycle.path, "hook", "pre-tool-use", input_text=json.dumps(elsewhere))
    assert (res.code, res.stdout) == (0, "")


@pytest.mark.parametrize("mirror", [".deepflow/cycle.json", ".deepflow/auto-snapshot.json"])
def test_a_named_pipe_in_place_of_a_state_mirror_never_blocks(own_cycle: Repo, mirror: str) -> None:
    """The hook reads the state mirrors on every tool call: a pipe in one's place (a
    `mkfifo` the hook cannot see as a write) would hold each call of the agent's
    until Claude Code's hook timeout. It answers at once, from what it can read."""
    (own_cycle.path / mirror).unlink()
    os.mkfifo(own_cycle.path / mirror)
    event = {"cwd": str(own_cycle.path), "tool_name": "Write", "tool_input": {"file_path": "a"}}
    res = run_gtd(own_cycle.path, "hook", "pre-tool-use", input_text=json.dumps(event), timeout=30)
    assert res.code == 0, res.stderr


def decision(repo: Repo, tool: str, **tool_input: Any) -> tuple[str, str] | None:
    """The hook's (decision, reason) for one tool call, or None when it says nothing."""
    event = {"cwd": str(repo.path), "tool_name": tool, "tool_input": tool_input}
    res = run_gtd(repo.path, "hook", "pre-tool-use", input_text=json.dumps(event))
    assert res.code == 0, res.stderr
    if not res.stdout.strip():
        return None
    answer = json.loads(res.stdout)["hookSpecificOutput"]
    return answer["permissionDecision"], answer["permissionDecisionReason"]


def test_the_loops_tick_runs_without_asking_once_auto_mode_is_set_up(repo: Repo) -> None:
    """Claude Code asks the person to approve each tick the loop's cron job delivers
    (a Skill call): the night would stop at its second tick. In a repository set up
    for auto mode the hook allows that one call; nothing else, and nowhere else."""
    assert decision(repo, "Skill", skill="gtd:auto-cycle") is None  # no .deepflow/
    (repo.path / ".deepflow").mkdir()
    assert decision(repo, "Skill", skill="gtd:auto-cycle") is None  # not set up
    (repo.path / ".deepflow").rmdir()
    make_project(repo)
    for skill in ("gtd:auto-cycle", "/gtd:auto-cycle"):
        answer = decision(repo, "Skill", skill=skill)
        assert answer is not None, skill
        assert answer[0] == "allow", skill
        assert "gtd:auto-cycle" in answer[1]
    for skill in ("gtd:auto", "gtd:step", "loop", "gtd:auto-cycle-other", "other:auto-cycle"):
        assert decision(repo, "Skill", skill=skill) is None, skill
    assert decision(repo, "Skill", command="gtd:auto-cycle") is None
    # during a cycle too: the tick that finds a cycle in flight reports it
    gtd_json(repo, "cycle", "begin")
    assert answer is not None
    assert decision(repo, "Skill", skill="gtd:auto-cycle") == ("allow", answer[1])


def test_the_agent_clis_settings_are_refused(in_cycle: Repo) -> None:
    """Claude Code's settings decide the hooks (this one among them), the
    permissions and the variables every shell command gets (the test process
    inherits them: `PYTHONOPTIMIZE` there compiles out an assertion helper's
    `assert`): the project's, the person's local ones and the user's."""
    home = Path(os.environ["HOME"])
    targets = [
        in_cycle.path / ".claude" / "settings.json",
        in_cycle.path / ".claude" / "settings.local.json",
        home / ".claude" / "settings.json",
    ]
    for target in targets:
        edit = '{"env": {"PYTHONOPTIMIZE": "1"}}'
        reason = hook(in_cycle, "Write", file_path=str(target), content=edit)
        assert reason is not None, target
        assert "settings" in reason
    command = "echo '{}' > .claude/settings.local.json"
    assert hook(in_cycle, "Bash", command=command) is not None
    other = in_cycle.path / ".claude" / "commands" / "deploy.md"
    assert hook(in_cycle, "Write", file_path=str(other), content="x") is None


def test_the_implementer_runs_only_inside_a_cycle(repo: Repo) -> None:
    """Launched outside a cycle's agent phase (by a loop that followed some reply
    it read, say), nothing would judge the implementer's work and this hook would
    guard none of it; other agents are the session's own business. (The plugin's
    name for it, and install.py's.)"""
    make_project(repo)
    prompts: list[dict[str, Any]] = [
        {"subagent_type": name, "prompt": "Read x and follow it exactly."}
        for name in ("gtd:implementer", "gtd-implementer")
    ]
    for prompt in prompts:
        reason = hook(repo, "Agent", description="Implement T1", **prompt)
        assert reason is not None
        assert "only inside a cycle" in reason
    assert hook(repo, "Task", description="Implement T1", **prompts[0]) is not None
    assert hook(repo, "Agent", subagent_type="Explore", prompt="look") is None
    gtd_json(repo, "cycle", "begin")
    for prompt in prompts:
        assert hook(repo, "Agent", description="Implement T1", **prompt) is None
    assert hook(repo, "Agent", subagent_type="Explore", prompt="look") is None
