"""The clean room: a checkout outside the repository brought exactly to a tree,
with planted files and stale bytecode gone, links to ignored paths the suite
needs, and slots for concurrent runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

from gtd.auto.ratchet import room
from gtd.git import Git
from tests.conftest import Repo


def tree_of(git: Git) -> str:
    return git.run("rev-parse", "HEAD^{tree}").strip()


def test_sync_makes_the_checkout_exactly_the_tree(repo: Repo) -> None:
    repo.write("src/a.py", "A = 1\n")
    repo.write("tests/test_a.py", "def test(): pass\n")
    repo.commit_all("initial")
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as rm:
        assert not str(rm.tree).startswith(str(repo.path))  # outside the repository
        room.sync(git, rm, tree_of(git))
        assert (rm.tree / "src/a.py").read_text() == "A = 1\n"
        assert not (rm.tree / ".git").exists()
        # Planted and changed behind git's back: the next sync puts it right.
        (rm.tree / "src/a.py").write_text("A = 2\n")
        (rm.tree / "conftest.py").write_text("raise SystemExit\n")
        (rm.tree / "junk").mkdir()
        room.sync(git, rm, tree_of(git))
        assert (rm.tree / "src/a.py").read_text() == "A = 1\n"
        assert not (rm.tree / "conftest.py").exists()
        assert not (rm.tree / "junk").exists()
        assert room.altered(git, rm, {"src/a.py": git.rev("HEAD:src/a.py") or ""}) == []
        (rm.tree / "src/a.py").write_text("A = 3\n")
        assert room.altered(git, rm, {"src/a.py": git.rev("HEAD:src/a.py") or ""}) == ["src/a.py"]


def test_links_bring_ignored_paths_the_suite_needs(repo: Repo) -> None:
    repo.write(".gitignore", ".venv/\n")
    repo.write("a.py", "")
    repo.commit_all("initial")
    (repo.path / ".venv/bin").mkdir(parents=True)
    (repo.path / ".venv/bin/tool").write_text("x")
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git), links=[".venv"])
        assert (rm.tree / ".venv").is_symlink()
        assert (rm.tree / ".venv/bin/tool").read_text() == "x"
        room.sync(git, rm, tree_of(git), links=[".venv"])  # and it survives the clean
        assert (rm.tree / ".venv").is_symlink()


def test_bytecode_stays_only_where_it_is_the_last_runs_own(repo: Repo) -> None:
    repo.write("m.py", "X = 1\n")
    repo.commit_all("one")
    git = Git(repo.path, hardened=True)
    first = tree_of(git)
    repo.write("m.py", "X = 22\n")
    repo.commit_all("two")
    second = tree_of(git)
    with room.acquire(git) as rm:
        room.sync(git, rm, first)
        cache = rm.tree / "__pycache__"
        cache.mkdir()
        (cache / "m.cpython-311.pyc").write_bytes(b"compiled by the run")
        (cache / "other.cpython-311.pyc").write_bytes(b"compiled by the run")
    time.sleep(0.05)
    with room.acquire(git) as rm:
        room.sync(git, rm, second)  # m.py rewritten: its bytecode is dropped
        assert not (rm.tree / "__pycache__/m.cpython-311.pyc").exists()
        assert (rm.tree / "__pycache__/other.cpython-311.pyc").exists()
    time.sleep(0.05)
    (rm.tree / "__pycache__/other.cpython-311.pyc").write_bytes(b"planted between runs")
    with room.acquire(git) as rm:
        room.sync(git, rm, second)  # written after the last run ended: wiped
        assert not (rm.tree / "__pycache__").exists()


def test_the_same_tree_again_keeps_the_runs_bytecode(repo: Repo) -> None:
    repo.write("m.py", "X = 1\n")
    repo.commit_all("one")
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        (rm.tree / "__pycache__").mkdir()
        (rm.tree / "__pycache__/m.cpython-311.pyc").write_bytes(b"compiled by the run")
    time.sleep(0.05)
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        assert (rm.tree / "__pycache__/m.cpython-311.pyc").exists()
        (rm.tree / "m.py").write_text("X = 2\n")  # rewritten during the run
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        assert (rm.tree / "m.py").read_text() == "X = 1\n"


def test_concurrent_runs_get_slots_of_their_own(repo: Repo) -> None:
    repo.write("a.py", "")
    repo.commit_all("initial")
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as one, room.acquire(git) as two:
        assert one.slot != two.slot
    with room.acquire(git) as again:
        assert again.slot == one.slot


def test_the_rooms_live_under_the_cache_home(repo: Repo, tmp_path: Path) -> None:
    repo.write("a.py", "")
    repo.commit_all("initial")
    with room.acquire(Git(repo.path, hardened=True)) as rm:
        assert str(rm.slot).startswith(os.environ["XDG_CACHE_HOME"])
