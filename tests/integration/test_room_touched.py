"""What a run wrote in the clean room, read in the process from the room's index
(gtd.gitindex, room._touched_here), must say what `git diff-files` says — or
leave the question to git. Each test sets real files against a real index
written by git, and compares both answers."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from gtd import gitindex
from gtd.auto.ratchet import room
from gtd.fsio import remove_tree
from gtd.git import Git
from tests.conftest import Repo

NOTHING: frozenset[str] = frozenset()


def tree_of(git: Git) -> str:
    return git.run("rev-parse", "HEAD^{tree}").strip()


def next_second() -> None:
    time.sleep(1.02 - time.time() % 1.0)


def settled(git: Git, rm: room.Room) -> None:
    """The room synced, then its index written again a second later: no entry is
    "racily clean" (recorded in the second its index was written), and a write
    from now on lands in another second than the one recorded, which git (which
    compares seconds) sees too."""
    room.sync(git, rm, tree_of(git))
    next_second()
    room.sync(git, rm, tree_of(git))
    next_second()


def both(git: Git, rm: room.Room, ignore: frozenset[str] = NOTHING) -> tuple[object, list[str]]:
    return room._touched_here(rm, ignore), room._touched_by_git(git, rm, ignore)


def test_every_kind_of_write_is_seen_as_git_sees_it(repo: Repo) -> None:
    names = ["a.py", "b.py", "c.py", "d.py", "e.py", "f.py", "g.py", "h.py", "k.py"]
    for name in names:
        repo.write(name, f"{name} = 1\n")
    repo.write("pkg/i.py", "I = 1\n")
    repo.write("sub/deep/l.py", "L = 1\n")
    repo.write("odd\nname.py", "O = 1\n")
    repo.write("run.sh", "exit 0\n").chmod(0o755)
    (repo.path / "link").symlink_to("a.py")
    repo.commit_all("initial")
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as rm:
        settled(git, rm)
        assert both(git, rm) == ([], [])
        t = rm.tree
        (t / "a.py").write_text("a.py = 1000\n")  # another size
        (t / "b.py").write_text("b.py = 2\n")  # the same size
        (t / "c.py").write_bytes((t / "c.py").read_bytes())  # the very same bytes
        (t / "d.py").unlink()
        shutil.copy(t / "e.py", rm.slot / "e-copy")
        (t / "e.py").unlink()
        (t / "e.py").symlink_to(rm.slot / "e-copy")
        (t / "f.py").unlink()
        (t / "f.py").mkdir()
        st = os.stat(t / "g.py")
        os.utime(t / "g.py", ns=(st.st_atime_ns, st.st_mtime_ns))  # times "put back"
        (t / "h.py").chmod(0o755)
        (t / "run.sh").chmod(0o644)
        os.link(t / "k.py", rm.slot / "k-link")  # a new name moves its change time
        (t / "pkg").rename(rm.slot / "pkg-real")  # the same files, behind a link
        (t / "pkg").symlink_to(rm.slot / "pkg-real")
        (t / "link").unlink()
        (t / "link").symlink_to("b.py")
        (t / "odd\nname.py").write_text("O = 2\n")
        (t / "new.py").write_text("N = 1\n")  # untracked: neither says it
        written = sorted([*names, "run.sh", "pkg/i.py", "link", "odd\nname.py"])
        here, by_git = both(git, rm)
        assert by_git == written
        assert here == written
        assert room.touched(git, rm) == written
        # Submodule paths are the caller's to leave out: so are these.
        assert room._touched_here(rm, frozenset({"a.py", "pkg/i.py"})) == [
            p for p in written if p not in ("a.py", "pkg/i.py")
        ]


def test_a_write_in_the_syncs_own_second(repo: Repo) -> None:
    """Files the sync itself wrote are "racily clean" until a second passes: a
    write in that second may leave their stat data as recorded. Such entries are
    compared by content, as git does; where the times differ to the nanosecond
    the write is seen even when it put the same bytes back (git, which compares
    seconds, may miss that one)."""
    repo.write("b.py", "B = 1\n")
    repo.write("c.py", "C = 1\n")
    repo.write("d.py", "D = 1\n")
    repo.commit_all("initial")
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        assert room._touched_here(rm, NOTHING) == []  # racy, and the blobs' very bytes
        (rm.tree / "b.py").write_text("B = 2\n")
        (rm.tree / "c.py").write_bytes((rm.tree / "c.py").read_bytes())
        answer = room.touched(git, rm)
        assert "b.py" in answer
        assert set(room._touched_by_git(git, rm, NOTHING)) <= set(answer)
        assert "d.py" not in answer


def test_line_ending_filters_leave_racy_entries_to_git(repo: Repo) -> None:
    repo.write("a.py", "A = 1\n")
    repo.commit_all("initial")
    repo.git("config", "core.autocrlf", "true")
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        assert (rm.tree / "a.py").read_bytes() == b"A = 1\r\n"
        # Racy, and not the blob's bytes: only git knows what its filters make of it.
        assert room._touched_here(rm, NOTHING) is None
        assert room.touched(git, rm) == []
        next_second()
        room.sync(git, rm, tree_of(git))
        next_second()
        assert both(git, rm) == ([], [])
        (rm.tree / "a.py").write_bytes(b"A = 2\r\n")
        assert both(git, rm) == (["a.py"], ["a.py"])


def test_index_format_4_and_sha256(repo: Repo, tmp_path: Path) -> None:
    repo.write("src/mod.py", "M = 1\n")
    repo.write("src/mod_two.py", "M = 2\n")  # format 4 shares the path's start
    repo.commit_all("initial")
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as rm:
        settled(git, rm)
        index_git_env(rm, repo.path, "update-index", "--index-version", "4")
        assert rm.index_file.read_bytes()[4:8] == b"\0\0\0\4"
        (rm.tree / "src/mod_two.py").write_text("M = 3\n")
        assert both(git, rm) == (["src/mod_two.py"], ["src/mod_two.py"])
    other = tmp_path / "sha256"
    other.mkdir()
    sha = Repo(other)
    sha.git("init", "-q", "--object-format=sha256", "-b", "main")
    sha.write("a.py", "A = 1\n")
    sha.commit_all("initial")
    git = Git(sha.path, hardened=True)
    with room.acquire(git) as rm:
        settled(git, rm)
        index = gitindex.read(str(rm.index_file), 10)
        assert index is not None
        assert len(index.entries[0].oid) == 64
        (rm.tree / "a.py").write_text("A = 2\n")
        assert both(git, rm) == (["a.py"], ["a.py"])


def index_git_env(rm: room.Room, repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_DIR": str(repo / ".git"),
        "GIT_INDEX_FILE": str(rm.index_file),
        "GIT_WORK_TREE": str(rm.tree),
    }
    subprocess.run(["git", *args], cwd=rm.tree, env=env, check=True, capture_output=True)


def test_what_only_git_reads_is_left_to_git(repo: Repo) -> None:
    """A split index, an entry git is told to skip, a damaged index, one too large
    to be worth reading here: None, and the answer is git's."""
    repo.write("a.py", "A = 1\n")
    repo.write("b.py", "B = 1\n")
    repo.commit_all("initial")
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as rm:
        settled(git, rm)
        assert gitindex.read(str(rm.index_file), 1) is None  # two entries, at most one
        assert gitindex.read(str(rm.index_file), 2) is not None
        index_git_env(rm, repo.path, "update-index", "--skip-worktree", "a.py")
        assert room._touched_here(rm, NOTHING) is None
        index_git_env(rm, repo.path, "update-index", "--no-skip-worktree", "a.py")
        assert room._touched_here(rm, NOTHING) == []
        index_git_env(rm, repo.path, "update-index", "--split-index")
        assert room._touched_here(rm, NOTHING) is None
        index_git_env(rm, repo.path, "update-index", "--no-split-index")
        assert room._touched_here(rm, NOTHING) == []
        # An index made huge (an optional extension of 8 MB, its checksum right):
        # git's to read, not read into memory here.
        body = rm.index_file.read_bytes()[:-20] + b"ZZZZ" + (8 << 20).to_bytes(4, "big")
        body += bytes(8 << 20)
        big = rm.slot / "big.index"
        big.write_bytes(body + hashlib.sha1(body).digest())
        assert gitindex.read(str(big), 400) is None
        assert gitindex.read(str(big), 4000) is not None  # within what 4,000 entries hold
        data = bytearray(rm.index_file.read_bytes())
        data[20] ^= 1  # a byte of the first entry's stat data: the checksum fails
        rm.index_file.write_bytes(bytes(data))
        assert room._touched_here(rm, NOTHING) is None
        assert room.touched(git, rm) == room._touched_by_git(git, rm, NOTHING)


def test_the_reader_reads_every_entry_as_git_lists_it(repo: Repo, tmp_path: Path) -> None:
    """Names git pads (formats 2, 3) or shares the start of (4), one longer than
    the 12 bits its flags hold, and bytes that are not UTF-8: the entries read are
    those `git ls-files --stage` lists."""
    repo.write("a.py", "A = 1\n")
    repo.commit_all("initial")
    oid = repo.git("rev-parse", "HEAD:a.py").strip()
    long_name = "/".join(["d" * 200] * 25) + "/x.py"  # 5,029 bytes
    names = ["a", "ab", "abc", "abcdefg", "abcdefgh", "dir/a.py", "dir/ab.py", long_name]
    names += ["é.py", "new\nline.py"]
    index = tmp_path / "scratch.index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    for version in ("2", "3", "4"):
        index.unlink(missing_ok=True)
        for name in names:
            subprocess.run(
                ["git", "update-index", "--add", "--cacheinfo", f"100644,{oid},{name}"],
                cwd=repo.path, env=env, check=True,
            )  # fmt: skip
        raw = b"odd-\xff.py"
        subprocess.run(
            ["git", "update-index", "--add", "-z", "--index-info"],
            input=b"100755 " + oid.encode() + b"\t" + raw + b"\0",
            cwd=repo.path, env=env, check=True,
        )  # fmt: skip
        subprocess.run(
            ["git", "update-index", "--index-version", version], cwd=repo.path, env=env, check=True
        )
        listed = subprocess.run(
            ["git", "ls-files", "--stage", "-z"], cwd=repo.path, env=env, capture_output=True,
            check=True,
        ).stdout.split(b"\0")  # fmt: skip
        expected = []
        for line in filter(None, listed):
            head, _, path = line.partition(b"\t")
            mode, blob, _stage = head.split()
            expected.append((path.decode("utf-8", "surrogateescape"), int(mode, 8), blob.decode()))
        read = gitindex.read(str(index), 100)
        assert read is not None, version
        assert [(e.path, e.mode, e.oid) for e in read.entries] == expected, version


def test_a_checkout_nested_deeper_than_pythons_recursion(repo: Repo) -> None:
    """1,100 nested folders with a file at the bottom: the leading-path check
    walks them without recursion (Python's limit is ~1,000 frames)."""
    path = str(repo.path)
    for _ in range(1100):
        path = os.path.join(path, "d")
        os.mkdir(path)
    Path(path, "leaf.txt").write_text("a file at the bottom\n")
    repo.write("a.py", "A = 1\n")
    repo.commit_all("initial")
    deep = "d/" * 1100 + "leaf.txt"
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as rm:
        try:
            settled(git, rm)
            assert both(git, rm) == ([], [])
            (rm.tree / deep).write_text("changed\n")
            assert both(git, rm) == ([deep], [deep])
        finally:
            # pytest's clean-up of its temporary folders recurses once a level
            remove_tree(rm.tree / "d", ignore_errors=True)
            remove_tree(repo.path / "d", ignore_errors=True)


def test_an_index_made_a_named_pipe_is_left_to_git(repo: Repo) -> None:
    """Opened plainly, a named pipe in the index's place would wait for a writer
    for ever: the check would never end and the loop stall."""
    repo.write("a.py", "A = 1\n")
    repo.commit_all("initial")
    git = Git(repo.path, hardened=True)
    with room.acquire(git) as rm:
        room.sync(git, rm, tree_of(git))
        rm.index_file.unlink()
        os.mkfifo(rm.index_file)
        answers: list[object] = []
        reader = threading.Thread(target=lambda: answers.append(room._touched_here(rm, NOTHING)))
        reader.start()
        reader.join(10)
        alive = reader.is_alive()
        if alive:  # let it go: a writer that closes at once ends the wait
            with open(rm.index_file, "wb"):
                pass
            reader.join(10)
        assert not alive, "reading the index waited on the named pipe"
        assert answers == [None]


def test_a_named_pipe_is_no_blob_and_is_not_waited_on(tmp_path: Path) -> None:
    """The content check opens what an lstat a moment earlier called a regular
    file: a named pipe swapped in since must not make it wait for a writer."""
    fifo = tmp_path / "swapped.py"
    os.mkfifo(fifo)
    answers: list[bool] = []
    empty_blob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    reader = threading.Thread(target=lambda: answers.append(room._holds_blob(fifo, empty_blob)))
    reader.start()
    reader.join(10)
    alive = reader.is_alive()
    if alive:
        with open(fifo, "wb"):
            pass
        reader.join(10)
    assert not alive, "the content check waited on the named pipe"
    assert answers == [False]
