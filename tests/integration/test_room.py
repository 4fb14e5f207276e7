"""The clean room: a checkout outside the repository brought exactly to a tree,
with planted files and stale bytecode gone, links to ignored paths the suite
needs, and slots for concurrent runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

from gtd.auto.ratchet import room
from gtd.fsio import remove_tree
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


def test_altered_reads_content_never_a_link_or_stat_data(repo: Repo) -> None:
    """A protected file whose bytes are the blob's is unaltered without asking git;
    a link to a file holding those bytes, a folder in its place, a missing file
    or other bytes are altered; bytes that differ only as the repository's line
    ending settings convert them are the blob's (git hashes them as it stores)."""
    repo.write("tests/test_a.py", "def test(): pass\n")
    repo.write("tests/test_b.py", "B = 1\n")
    repo.write("tests/test_c.py", "C = 1\n")
    repo.write("tests/test_d.py", "D = 1\n")
    repo.commit_all("initial")
    git = Git(repo.path, hardened=True)
    names = [f"tests/test_{k}.py" for k in "abcd"]
    expected = {p: git.rev(f"HEAD:{p}") or "" for p in names}
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        assert room.altered(git, rm, expected) == []
        copy = rm.slot / "same-bytes"
        copy.write_bytes((rm.tree / "tests/test_a.py").read_bytes())
        (rm.tree / "tests/test_a.py").unlink()
        (rm.tree / "tests/test_a.py").symlink_to(copy)
        (rm.tree / "tests/test_b.py").unlink()
        (rm.tree / "tests/test_b.py").mkdir()
        (rm.tree / "tests/test_c.py").unlink()
        (rm.tree / "tests/test_d.py").write_text("D = 2\n")
        assert room.altered(git, rm, expected) == sorted(expected)
        room.sync(git, rm, tree_of(git))
        (rm.tree / "tests/test_d.py").write_bytes(b"D = 1\r\n")
        assert room.altered(git, rm, expected) == ["tests/test_d.py"]
        repo.git("config", "core.autocrlf", "true")
        assert room.altered(git, rm, expected) == []


def test_altered_hashes_a_large_file_in_pieces(repo: Repo) -> None:
    data = bytes(range(256)) * (3 * 4096 + 7)  # ~3 MB: more than one piece
    (repo.path / "tests").mkdir()
    (repo.path / "tests/fixture.bin").write_bytes(data)
    repo.commit_all("initial")
    git = Git(repo.path, hardened=True)
    expected = {"tests/fixture.bin": git.rev("HEAD:tests/fixture.bin") or ""}
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        assert room.altered(git, rm, expected) == []
        (rm.tree / "tests/fixture.bin").write_bytes(data[:-1] + b"x")
        assert room.altered(git, rm, expected) == ["tests/fixture.bin"]
        (rm.tree / "tests/fixture.bin").write_bytes(data + b"\0")
        assert room.altered(git, rm, expected) == ["tests/fixture.bin"]


def test_altered_in_a_sha256_repository(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.path.mkdir()
    repo.git("init", "-q", "-b", "main", "--object-format=sha256")
    repo.write("tests/test_a.py", "A = 1\n")
    repo.commit_all("initial")
    git = Git(repo.path, hardened=True)
    expected = {"tests/test_a.py": git.rev("HEAD:tests/test_a.py") or ""}
    assert len(expected["tests/test_a.py"]) == 64
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        assert room.altered(git, rm, expected) == []
        (rm.tree / "tests/test_a.py").write_text("A = 2\n")
        assert room.altered(git, rm, expected) == ["tests/test_a.py"]


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


def _ran_once_with_bytecode(repo: Repo) -> Git:
    """`m.py` committed, synced into the room, and compiled there by the run."""
    repo.write("m.py", "X = 1\n")
    repo.commit_all("one")
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        (rm.tree / "__pycache__").mkdir()
        (rm.tree / "__pycache__/m.cpython-311.pyc").write_bytes(b"compiled by the run")
    time.sleep(0.05)
    return git


def test_the_same_tree_again_keeps_the_runs_bytecode(repo: Repo) -> None:
    git = _ran_once_with_bytecode(repo)
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        assert (rm.tree / "__pycache__/m.cpython-311.pyc").exists()
        (rm.tree / "m.py").write_text("X = 2\n")  # rewritten during the run
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        assert (rm.tree / "m.py").read_text() == "X = 1\n"


def test_a_repository_made_anew_at_the_same_path_syncs_from_nothing_known(
    repo: Repo,
) -> None:
    # The slot's last tree is not an object of the new repository (a clone made
    # again where the old one was): its bytecode cannot be told the run's own.
    _ran_once_with_bytecode(repo)
    remove_tree(repo.path / ".git")
    repo.git("init", "-q", "-b", "main")
    repo.write("m.py", "X = 2\n")
    repo.commit_all("anew")
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        assert (rm.tree / "m.py").read_text() == "X = 2\n"
        assert not (rm.tree / "__pycache__").exists()


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
