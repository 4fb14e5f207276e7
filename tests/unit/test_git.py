from __future__ import annotations

import os
from pathlib import Path

import pytest

from gtd.errors import GitBlocked, GitError
from gtd.git import Git, repo_root
from gtd.git_parse import StatusEntry, parse_status_v2
from tests.conftest import Repo


def test_status_v2_headers_and_entries() -> None:
    raw = "\0".join(
        [
            "# branch.oid 1234567890abcdef1234567890abcdef12345678",
            "# branch.head main",
            "1 .M N... 100644 100644 100644 aaa bbb calc.py",
            "2 R. N... 100644 100644 100644 aaa bbb R100 new name.py",
            "old.py",
            "? notes/todo.txt",
            "",
        ]
    )
    tree = parse_status_v2(raw)
    assert tree.head == "1234567890abcdef1234567890abcdef12345678"
    assert tree.branch == "main"
    assert tree.entries == (
        StatusEntry(" M", "calc.py"),
        StatusEntry("R ", "new name.py", "old.py"),
        StatusEntry("??", "notes/todo.txt"),
    )


def test_status_v2_initial_and_detached() -> None:
    tree = parse_status_v2("# branch.oid (initial)\0# branch.head (detached)\0")
    assert tree.head is None
    assert tree.branch is None
    assert tree.entries == ()


def test_state_agrees_with_status_on_a_real_repository(repo: Repo) -> None:
    repo.write("a.py", "a\n")
    repo.write("b.py", "b\n")
    repo.commit_all("init")
    repo.write("a.py", "changed\n")
    repo.git("mv", "b.py", "c.py")
    repo.write("dir with space/new.txt", "x\n")
    git = Git(Path(repo.path))
    tree = git.state()
    assert tree.head == repo.git("rev-parse", "HEAD").strip()
    assert tree.branch == "main"
    assert sorted((e.path, e.orig) for e in tree.entries) == sorted(
        (e.path, e.orig) for e in git.status()
    )
    assert {e.path for e in tree.entries} == {"a.py", "c.py", "dir with space/new.txt"}


def test_repo_root_at_the_top_level_asks_no_git(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # any git call would fail
    assert repo_root(repo.path) == repo.path


@pytest.mark.parametrize("variable", ["GIT_DIR", "GIT_WORK_TREE"])
def test_repo_root_asks_git_when_the_environment_names_the_repository(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, str(repo.path / ".git"))
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(GitError, match="git is not installed"):
        repo_root(repo.path)


def test_head_tree_reads_head_and_its_tree_in_one_call(repo: Repo) -> None:
    git = Git(repo.path)
    assert git.head_tree() is None  # no commit yet
    repo.write("HEAD", "a file named like the ref\n")
    head = repo.commit_all("one")
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    assert git.head_tree() == (head, tree)


def test_config_list_entries_keep_origin_key_and_value() -> None:
    from gtd.git_parse import parse_config_list

    raw = "file:/h/.gitconfig\0user.name\nA B\0file:.git/config\0core.bare\nfalse\0file:x\0flag\0"
    assert parse_config_list(raw) == [
        ("file:/h/.gitconfig", "user.name", "A B"),
        ("file:.git/config", "core.bare", "false"),
        ("file:x", "flag", None),
    ]


def test_touched_names_every_path_exactly(repo: Repo) -> None:
    """Names with a space, a newline, a leading newline or a byte that is not
    UTF-8 come back as the same names; a commit that touches nothing, as none.
    (Without -z git quoted the newline and the byte, and the line reader split
    and trimmed.)"""
    odd = [b"a b.txt", b"new\nline", b"\nlead", b"caf\xe9.txt"]
    for name in odd:
        (repo.path / os.fsdecode(name)).write_bytes(b"x")
    first = repo.commit_all("odd names")
    repo.git("commit", "-q", "--allow-empty", "-m", "nothing")
    empty = repo.git("rev-parse", "HEAD").strip()
    touched = Git(repo.path).touched([first, empty])
    assert sorted(os.fsencode(p) for p in touched[first]) == sorted(odd)
    assert touched[empty] == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="no /proc: only the timeout stops it")
def test_git_waiting_on_a_named_pipe_is_stopped_and_the_pipe_named(repo: Repo) -> None:
    """`git status` opens every folder's `.gitignore`: a pipe there, with no
    writer, would keep it waiting forever."""
    (repo.path / "sub").mkdir()
    os.mkfifo(repo.path / "sub/.gitignore")
    with pytest.raises(GitBlocked) as caught:
        Git(repo.path).state()
    assert caught.value.paths == [str(repo.path / "sub/.gitignore")]
    assert "sub/.gitignore" in caught.value.render()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="no /proc: only the timeout stops it")
def test_a_named_pipe_deep_in_the_git_directory_is_named_too(repo: Repo) -> None:
    """Every object read opens `objects/info/alternates` when it exists: git waits
    in open(), where no descriptor names the pipe yet; the search finds it."""
    repo.write("a.py", "a\n")
    repo.commit_all("init")
    alternates = repo.path / ".git/objects/info/alternates"
    alternates.parent.mkdir(exist_ok=True)
    os.mkfifo(alternates)
    with pytest.raises(GitBlocked) as caught:
        Git(repo.path).run("cat-file", "-p", "HEAD")
    assert caught.value.paths == [str(alternates)]


def test_a_git_call_that_overruns_its_time_is_stopped(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where /proc cannot tell what git waits on (macOS), the time limit ends it."""
    os.mkfifo(repo.path / ".gitignore")
    monkeypatch.setenv("GTD_GIT_TIMEOUT_S", "0.2")  # before the watch looks twice
    with pytest.raises(GitError, match=r"`git status` ran for 0\.2 s") as caught:
        Git(repo.path).state()
    assert "GTD_GIT_TIMEOUT_S" in caught.value.render()


def test_update_refs_replaces_a_symbolic_ref_never_the_ref_it_leads_to(repo: Repo) -> None:
    """An agent may make any ref a link to another branch: the helper's updates and
    deletions act on the link itself, and the other branch stays where it was."""
    repo.write("a.txt", "a\n")
    repo.commit_all("one")
    first = repo.git("rev-parse", "HEAD").strip()
    repo.write("a.txt", "b\n")
    repo.commit_all("two")
    second = repo.git("rev-parse", "HEAD").strip()
    repo.git("branch", "feature", first)
    repo.git("symbolic-ref", "refs/gtd/moved", "refs/heads/feature")
    repo.git("symbolic-ref", "refs/gtd/gone", "refs/heads/feature")
    git = Git(Path(repo.path))
    assert git.symbolic("refs/gtd/moved")
    assert not git.symbolic("refs/heads/feature")
    git.update_refs([("refs/gtd/moved", second, first), ("refs/gtd/gone", None, first)])
    assert repo.git("rev-parse", "refs/heads/feature").strip() == first
    assert not git.symbolic("refs/gtd/moved")
    assert git.rev("refs/gtd/moved") == second
    assert git.rev("refs/gtd/gone") is None


def test_worktree_list_is_parsed_per_worktree() -> None:
    from gtd.git_parse import parse_worktree_list

    raw = (
        "worktree /r\0HEAD abc\0branch refs/heads/main\0\0"
        "worktree /r/.git/gtd/waves/main/gtd-wave-T1\0HEAD def\0detached\0locked gtd-wave main\0\0"
        "worktree /gone\0HEAD 123\0detached\0prunable gitdir file points nowhere\0\0"
    )
    assert parse_worktree_list(raw) == [
        ("/r", "abc", "refs/heads/main"),
        ("/r/.git/gtd/waves/main/gtd-wave-T1", "def", None),
        ("/gone", "123", None),
    ]
    assert parse_worktree_list("") == []


def test_reads_of_objects_by_id_are_asked_once_per_hardened_instance(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree listed or two trees compared by their full ids cannot change: a
    hardened instance asks git once. A name git resolves (HEAD, a branch) is
    asked every time, and so is everything a plain instance reads (a `git
    replace` object could stand in for an id between two calls)."""
    repo.write("a.py", "a\n")
    repo.commit_all("one")
    old = repo.git("rev-parse", "HEAD^{tree}").strip()
    repo.write("b.py", "b\n")
    repo.commit_all("two")
    new = repo.git("rev-parse", "HEAD^{tree}").strip()
    asked: list[tuple[str, ...]] = []
    real_run = Git.run

    def counted(self: Git, *args: str, **kw: object) -> str:
        asked.append(args)
        return real_run(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Git, "run", counted)
    hardened = Git(Path(repo.path), hardened=True)
    first = hardened.diff_trees(old, new)
    assert [c.path for c in first] == ["b.py"]
    first.clear()  # a caller's list is its own: the next answer is whole
    assert [c.path for c in hardened.diff_trees(old, new)] == ["b.py"]
    assert sorted(hardened.ls_tree(new)) == sorted(hardened.ls_tree(new)) == ["a.py", "b.py"]
    assert len(asked) == 2  # one diff-tree, one ls-tree
    assert sorted(hardened.ls_tree("HEAD")) == sorted(hardened.ls_tree("HEAD"))
    assert hardened.diff_trees("HEAD~1^{tree}", "HEAD^{tree}") == hardened.diff_trees(old, new)
    assert len(asked) == 5  # names: asked each time
    plain = Git(Path(repo.path))
    plain.diff_trees(old, new)
    plain.diff_trees(old, new)
    assert len(asked) == 7


def test_a_failed_read_is_asked_again(repo: Repo) -> None:
    """Only answers are kept: an id git cannot read (yet) is an error each time."""
    repo.write("a.py", "a\n")
    repo.commit_all("one")
    hardened = Git(Path(repo.path), hardened=True)
    missing = "0" * 40
    for _ in range(2):
        with pytest.raises(GitError):
            hardened.ls_tree(missing)
    assert not hardened._read


def test_listing_splits_tracked_and_untracked_in_one_call(repo: Repo) -> None:
    repo.write(".gitignore", "build/\n")
    repo.write("tests/test_a.py", "")
    repo.commit_all("base")
    repo.write("tests/test new é.py", "")
    repo.write("build/out.txt", "")
    tracked, untracked = Git(repo.path).listing()
    assert tracked == [".gitignore", "tests/test_a.py"]
    assert untracked == ["tests/test new é.py"]
