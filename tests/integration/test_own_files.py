"""The helper's own files in `.deepflow/` made something else by an agent: a
folder, a named pipe or a socket there is set aside whole under
`.git/gtd/set-aside/` (kept, named on stderr); a regular file or a link is left
(the helper's writes replace the name, never write through it)."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
from pathlib import Path

import pytest

from gtd.own_files import reclaim


@pytest.fixture
def root(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".deepflow").mkdir()
    return repo


def test_a_folder_pipe_or_socket_is_set_aside_and_named(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    brief = root / ".deepflow/cycle-brief.md"
    brief.mkdir()
    (brief / "inside").write_text("x\n")
    os.mkfifo(root / ".deepflow/rendered")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(root / ".deepflow/auto-report.md"))
        (root / ".deepflow/cycle.json").write_text("{}\n")
        (root / ".deepflow/auto-memory.yaml").symlink_to(root / "elsewhere.yaml")
        moved = reclaim(root)
    finally:
        sock.close()
    assert sorted(p.name for p in moved) == ["auto-report.md", "cycle-brief.md", "rendered"]
    aside = root / ".git/gtd/set-aside"
    assert all(p.parent.parent == aside for p in moved)
    assert len({p.parent for p in moved}) == 3  # a folder of its own each
    kept = next(p for p in moved if p.name == "cycle-brief.md")
    assert (kept / "inside").read_text() == "x\n"
    assert not os.path.lexists(brief)
    assert not os.path.lexists(root / ".deepflow/rendered")
    assert (root / ".deepflow/cycle.json").read_text() == "{}\n"
    assert (root / ".deepflow/auto-memory.yaml").is_symlink()
    said = capsys.readouterr().err
    assert f"{brief} was a folder" in said, said
    assert str(kept) in said, said
    assert reclaim(root) == []


def test_nothing_is_set_aside_through_a_link(root: Path, tmp_path: Path) -> None:
    """`.git/gtd` and `.git/gtd/set-aside` are the helper's folders: a link in
    either place (an agent's) is removed, and nothing lands where it led."""
    person = tmp_path / "persons"
    person.mkdir()
    (root / ".git/gtd").symlink_to(person)
    (root / ".deepflow/rendered").mkdir()
    (moved,) = reclaim(root)
    assert list(person.iterdir()) == []
    assert not (root / ".git/gtd").is_symlink()
    (root / ".git/gtd/set-aside").rename(tmp_path / "old")
    (root / ".git/gtd/set-aside").symlink_to(person)
    (root / ".deepflow/rendered").mkdir()
    (again,) = reclaim(root)
    assert list(person.iterdir()) == []
    assert again.is_dir()
    assert moved != again


def test_a_git_directory_on_another_file_system_sets_aside_in_the_state_folder(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rename cannot cross file systems (a linked worktree, GIT_DIR elsewhere):
    the folder is kept in `.deepflow/set-aside/`, which no sweep touches."""
    real = os.rename

    def rename(src: str, dst: str, **kw: int) -> None:
        if ".git" in str(src) or ".git" in os.readlink(f"/proc/self/fd/{kw['dst_dir_fd']}"):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real(src, dst, **kw)

    monkeypatch.setattr(os, "rename", rename)
    (root / ".deepflow/rendered").mkdir()
    (moved,) = reclaim(root)
    assert moved.parent.parent == root / ".deepflow/set-aside"
    assert moved.is_dir()
    assert list((root / ".git/gtd/set-aside").iterdir()) == []
    assert reclaim(root) == []
