"""The PreToolUse hook for a wave's implementers: a path inside one of the
helper's wave worktrees (gtd.auto.cycle.worktrees, in the cache) is judged
relative to that worktree, so its PLAN.md, .deepflow/, ``.git`` file and
protected tests stay refused there as in the person's tree, and its ordinary
files are let through. The real path is judged: a link in a worktree cannot
lead a write into git's folder or the person's tree. Real repository, a real
wave begun by the real CLI, the JSON Claude Code sends."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo
from tests.integration.test_guard import hook as guard_hook
from tests.integration.test_waves import project, wave_trees


def hook(repo: Repo, tool: str, cwd: Path | None = None, **tool_input: Any) -> str | None:
    """The hook's refusal reason for an implementer's tool call (a subagent's)."""
    return guard_hook(repo, tool, cwd=cwd, agent="a1", **tool_input)


@pytest.fixture
def wave(repo: Repo) -> tuple[Repo, list[Path]]:
    """A wave of two tasks in flight, the sandbox's settings taken out (the text
    guard then also reads Bash writes)."""
    from gtd.auto import sandbox
    from gtd.git import Git

    project(repo)
    trees = wave_trees(repo)
    sandbox.remove(repo.path, Git(repo.path))
    assert len(trees) == 2
    return repo, [Path(str(t)) for t in trees]


@pytest.mark.parametrize(
    ("rel", "why"),
    [
        ("PLAN.md", "only a person changes them"),
        (".deepflow/config.yaml", "the helper's and git's own files"),
        (".git", "the helper's and git's own files"),
        ("tests/test_calc.py", "test"),
        ("tests/conftest.py", "conftest"),
    ],
)
def test_a_worktrees_protected_files_are_refused_there(
    wave: tuple[Repo, list[Path]], rel: str, why: str
) -> None:
    repo, trees = wave
    for tree in trees:
        reason = hook(repo, "Write", file_path=str(tree / rel), content="x")
        assert reason is not None, rel
        assert rel in reason, reason
        assert why in reason, reason
        assert str(tree) not in reason  # said relative to the worktree


def test_a_worktrees_ordinary_files_go_through(wave: tuple[Repo, list[Path]]) -> None:
    repo, trees = wave
    tree = trees[0]
    assert hook(repo, "Write", file_path=str(tree / "mul.py"), content="x") is None
    edit: dict[str, Any] = {"file_path": str(tree / "calc.py"), "old_string": "a"}
    assert hook(repo, "Edit", new_string="b", **edit) is None
    assert hook(repo, "Write", file_path=str(tree / "tests/test_mul.py"), content="x") is None
    # Relative to the folder the call is made in, when it is the worktree (the
    # loop's tree found from it, not the worktree's own .deepflow/).
    assert hook(repo, "Write", cwd=tree, file_path="mul.py", content="x") is None
    reason = hook(repo, "Write", cwd=tree, file_path="PLAN.md", content="x")
    assert "PLAN.md" in (reason or ""), reason


def test_a_link_in_a_worktree_is_judged_where_it_leads(wave: tuple[Repo, list[Path]]) -> None:
    """The implementer makes links in its worktree to git's folder, to the
    person's PLAN.md and to the person's test: each write through one is
    judged at its real path, and refused."""
    repo, trees = wave
    tree = trees[0]
    os.symlink(repo.path / ".git", tree / "dotgit")
    os.symlink(repo.path / "PLAN.md", tree / "plan-link.md")
    os.symlink(repo.path / "tests", tree / "their-tests")
    os.symlink(tree / "PLAN.md", tree / "own-plan.md")
    for rel in ("dotgit/HEAD", "dotgit/refs/heads/evil"):
        reason = hook(repo, "Write", file_path=str(tree / rel), content="x")
        assert "the helper's and git's own files" in (reason or ""), (rel, reason)
    for rel in ("plan-link.md", "own-plan.md"):
        reason = hook(repo, "Write", file_path=str(tree / rel), content="x")
        assert "PLAN.md is protected" in (reason or ""), (rel, reason)
    reason = hook(repo, "Write", file_path=str(tree / "their-tests/test_calc.py"), content="x")
    assert "tests/test_calc.py" in (reason or ""), reason
    # A file the link leads to in the person's tree that nothing protects is
    # still the person's: outside the worktree, it is judged as a path of theirs.
    assert hook(repo, "Write", file_path=str(tree / "their-tests/test_new.py"), content="x") is None


def test_bash_writes_in_a_worktree_are_judged_there(wave: tuple[Repo, list[Path]]) -> None:
    """Where Claude Code's sandbox is off, a plain write by Bash is read the
    same way."""
    repo, trees = wave
    tree = trees[1]
    reason = hook(repo, "Bash", command=f"echo x > {tree}/PLAN.md")
    assert "PLAN.md" in (reason or ""), reason
    reason = hook(repo, "Bash", command=f"rm {tree}/tests/test_calc.py")
    assert "tests/test_calc.py" in (reason or ""), reason
    assert hook(repo, "Bash", command=f"echo x > {tree}/sub.py") is None


def test_a_lookalike_folder_outside_the_waves_home_is_no_worktree(
    wave: tuple[Repo, list[Path]], tmp_path: Path
) -> None:
    """Only the helper's waves folder makes a worktree: a folder named like one
    elsewhere is judged as any path outside the repository."""
    repo, _ = wave
    elsewhere = tmp_path / "gtd-wave-T1"
    elsewhere.mkdir()
    assert hook(repo, "Write", file_path=str(elsewhere / "PLAN.md"), content="x") is None


def test_a_wave_worktree_leads_back_to_the_tree_whose_loop_made_it(
    repo: Repo, tmp_path: Path
) -> None:
    """The hook run from inside a wave worktree judges for the loop's tree: the
    main work tree, or the linked worktree whose loop made it (from git's
    files alone, no git call)."""
    from gtd.auto import guard
    from gtd.auto.cycle import worktrees
    from gtd.git import Git

    repo.write("app.py", "x = 1\n")
    repo.commit_all("first")
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", "-b", "feature", str(linked))
    ours = worktrees.create(Git(repo.path), "T1", "HEAD")
    theirs = worktrees.create(Git(linked), "T1", "HEAD")
    assert ours.path != theirs.path
    for place, owner in ((ours, repo.path), (theirs, linked)):
        tree = guard.wave_worktree(os.path.realpath(place.path / "app.py"))
        assert tree == os.path.realpath(place.path)
        assert guard.wave_owner(tree) is not None
        assert os.path.realpath(str(guard.wave_owner(tree))) == os.path.realpath(owner)
    # A folder named like a worktree outside the waves folder is none.
    assert guard.wave_worktree(str(tmp_path / "gtd-wave-T1" / "app.py")) is None
