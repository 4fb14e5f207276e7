"""The side repository of the pins (gtd.auto.cycle.pins) on a real repository:
incremental, bounded in packs, and what it pins survives the repository's own
`git gc --prune=now`. The cycles that use it are tests/redteam/test_your_work.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.auto.cycle import pins
from gtd.git import Git
from tests.conftest import Repo


def _packs(repo: Repo) -> int:
    return len(list((repo.path / ".git/gtd/pins.git/objects/pack").glob("*.pack")))


def _side_has(repo: Repo, oid: str) -> bool:
    side = str(repo.path / ".git/gtd/pins.git")
    return repo.git("--git-dir", side, "cat-file", "-t", oid, check=False).strip() == "commit"


def test_a_begin_with_nothing_new_packs_nothing(repo: Repo) -> None:
    repo.write("a.txt", "a\n")
    repo.commit_all("a")
    git = Git(repo.path, hardened=True)
    pins.take(git, [])
    assert _packs(repo) == 1
    pins.take(git, [])
    assert _packs(repo) == 1, "a begin with no new object packed again"
    repo.write("a.txt", "b\n")
    head = repo.commit_all("b")
    pins.take(git, [])
    assert _packs(repo) == 2
    assert _side_has(repo, head)


def test_packs_are_made_one_again_and_pins_outlive_the_repositorys_gc(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pins, "_PACKS_MAX", 3)
    git = Git(repo.path, hardened=True)
    heads = []
    for i in range(6):
        repo.write("a.txt", f"{i}\n")
        heads.append(repo.commit_all(f"c{i}"))
        repo.git("branch", "-f", f"b{i}")
        pins.take(git, [])
        assert _packs(repo) <= 4
    for i in range(6):
        repo.git("branch", "-D", f"b{i}")
    repo.git("reset", "-q", "--hard", heads[0])
    repo.git("reflog", "expire", "--expire-unreachable=now", "--all")
    repo.git("gc", "-q", "--prune=now")
    assert repo.git("cat-file", "-t", heads[-1], check=False).strip() == ""
    assert all(_side_has(repo, h) for h in heads), "a pinned commit is gone from the side"


def test_the_side_repository_is_nobodys_remote_and_outside_the_tree(repo: Repo) -> None:
    repo.write("a.txt", "a\n")
    repo.commit_all("a")
    pins.take(Git(repo.path, hardened=True), [])
    assert repo.git("remote").strip() == ""
    assert repo.status() == ""
    assert Path(pins.side_path(Git(repo.path))).is_relative_to(repo.path / ".git")


def test_the_helpers_wave_worktrees_are_not_pinned_as_the_persons(
    repo: Repo, tmp_path: Path
) -> None:
    """A wave's worktrees come and go with the wave: pinned as the person's,
    their removal would be reported at `end` as the cycle's doing."""
    from gtd.auto.cycle import worktrees

    repo.write("a.txt", "a\n")
    repo.commit_all("a")
    theirs = tmp_path / "theirs"
    repo.git("worktree", "add", "-q", "-b", "feature", str(theirs))
    git = Git(repo.path, hardened=True)
    worktrees.create(git, "T1", "HEAD")
    seal = pins.take(git, [])
    manifest = pins.load(git, seal)
    assert manifest is not None
    assert [Path(w.path).name for w in manifest.worktrees] == ["theirs"]
    worktrees.remove_all(git)
    assert pins.settle(git, seal, 1, "main") == []
    repo.git("worktree", "remove", "--force", str(theirs))  # theirs going is still told
    assert any("theirs removed by the cycle" in note for note in pins.settle(git, seal, 1, "main"))
