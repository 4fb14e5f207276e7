"""fsio's walk and remove_tree (os.walk and shutil.rmtree without recursion), and
fresh_file (a log of the helper's own, in a folder an agent can write)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gtd.errors import GtdError
from gtd.fsio import atomic_write, fresh_file, open_regular, remove_tree, unsafe_path, walk

DEEP = 1100  # past Python's recursion limit (1,000): os.walk and rmtree raise there


def _chain(root: Path, levels: int) -> str:
    path = str(root)
    for _ in range(levels):
        path = os.path.join(path, "d")
        os.mkdir(path)
    return path


def test_walk_agrees_with_os_walk(tmp_path: Path) -> None:
    for rel in ("a/b/c.txt", "a/d.txt", "e/f/g/h.txt", "top.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / "empty").mkdir()
    (tmp_path / "a/link").symlink_to(tmp_path / "e")  # listed, never walked into
    (tmp_path / "a/dangling").symlink_to(tmp_path / "nowhere")
    ours = sorted((f, sorted(d), sorted(n)) for f, d, n in walk(tmp_path))
    theirs = sorted((f, sorted(d), sorted(n)) for f, d, n in os.walk(tmp_path))
    assert ours == theirs


def test_walk_prunes_as_os_walk_does(tmp_path: Path) -> None:
    (tmp_path / "skip/inner").mkdir(parents=True)
    (tmp_path / "keep/inner").mkdir(parents=True)
    seen = []
    for folder, dirs, _files in walk(tmp_path):
        dirs[:] = [d for d in dirs if d != "skip"]
        seen.append(os.path.relpath(folder, tmp_path))
    assert sorted(seen) == [".", "keep", os.path.join("keep", "inner")]


def test_walk_and_remove_tree_go_deeper_than_the_recursion_limit(tmp_path: Path) -> None:
    (tmp_path / "top").mkdir()
    leaf = Path(_chain(tmp_path / "top", DEEP)) / "leaf.txt"
    leaf.write_text("x")
    with pytest.raises(RecursionError):
        list(os.walk(tmp_path))
    found = [os.path.join(f, n) for f, _d, names in walk(tmp_path) for n in names]
    assert found == [str(leaf)]
    remove_tree(tmp_path / "top")
    assert list(tmp_path.iterdir()) == []


def test_remove_tree_removes_links_and_never_follows_them(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub/file.txt").write_text("x")
    (tree / "sub/to-outside").symlink_to(outside)
    (tree / "to-file").symlink_to(outside / "keep.txt")
    os.mkfifo(tree / "pipe")
    remove_tree(tree)
    assert not tree.exists()
    assert (outside / "keep.txt").read_text() == "mine"
    link = tmp_path / "link-to-outside"
    link.symlink_to(outside)
    with pytest.raises(OSError, match=r"symbolic links|Not a directory"):
        remove_tree(link)  # as rmtree: a link is not a tree to remove
    assert (outside / "keep.txt").read_text() == "mine"


def test_remove_tree_with_ignore_errors_takes_what_it_can(tmp_path: Path) -> None:
    remove_tree(tmp_path / "missing", ignore_errors=True)
    with pytest.raises(FileNotFoundError):
        remove_tree(tmp_path / "missing")
    tree = tmp_path / "tree"
    (tree / "a").mkdir(parents=True)
    (tree / "a/b.txt").write_text("x")
    remove_tree(tree, ignore_errors=True)
    assert not tree.exists()


def _write(fd: int, data: bytes) -> None:
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def test_fresh_file_never_writes_through_a_link_nor_a_hard_link(tmp_path: Path) -> None:
    """The worker's log made a link, or a hard link, to a person's file: opened with
    O_TRUNC it emptied that file. The name is replaced; the person's file stays."""
    person = tmp_path / "notes.txt"
    person.write_text("mine\n")
    soft, hard = tmp_path / "soft.log", tmp_path / "hard.log"
    soft.symlink_to(person)
    os.link(person, hard)
    for log in (soft, hard):
        _write(fresh_file(log), b"log\n")
        assert not log.is_symlink()
        assert log.read_text() == "log\n"
    assert person.read_text() == "mine\n"
    assert os.stat(person).st_nlink == 1


def test_fresh_file_never_blocks_on_a_named_pipe(tmp_path: Path) -> None:
    """A named pipe with no reader: an open to write it waits for one, forever."""
    log = tmp_path / "check.log"
    os.mkfifo(log)
    _write(fresh_file(log), b"log\n")
    assert log.read_text() == "log\n"


def test_fresh_file_leaves_a_folder_as_it_is(tmp_path: Path) -> None:
    log = tmp_path / "check.log"
    log.mkdir()
    (log / "inside").write_text("x")
    with pytest.raises(IsADirectoryError):
        fresh_file(log)
    assert (log / "inside").read_text() == "x"


def test_atomic_write_over_a_folder_names_it(tmp_path: Path) -> None:
    """A rename cannot replace a folder: an error naming it and the fix, not an
    unexpected IsADirectoryError; the folder and its files stay, no temp file."""
    target = tmp_path / "report.md"
    target.mkdir()
    (target / "inside").write_text("x")
    with pytest.raises(GtdError, match=r"report\.md: a folder, where gtd writes a file") as caught:
        atomic_write(target, "text\n")
    assert "move the folder out of the way" in caught.value.render()
    assert (target / "inside").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_a_path_through_a_link_to_elsewhere_is_unsafe(tmp_path: Path) -> None:
    """A name git lists is acted on only where it really is inside the tree: a
    folder made a link to outside leads out, a link within the tree does not."""
    root = tmp_path / "repo"
    (root / "real").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "out").symlink_to(tmp_path / "outside")
    (root / "in").symlink_to(root / "real")
    assert unsafe_path(root, "out/file.txt") is not None
    assert unsafe_path(root, "out") is None  # the link itself is the tree's
    assert unsafe_path(root, "in/file.txt") is None
    assert unsafe_path(root, "real/missing/deeper.txt") is None
    assert unsafe_path(root, "real/../../x") is not None


def test_open_regular_opens_only_a_regular_file_and_never_waits(tmp_path: Path) -> None:
    """A named pipe (opened plainly, it waits for a writer for ever), a folder, a
    missing file, and with ``follow=False`` a link: None, at once."""
    regular = tmp_path / "file"
    regular.write_bytes(b"data")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "link").symlink_to(regular)
    opened = open_regular(regular)
    assert opened is not None
    os.close(opened[0])
    assert opened[1].st_size == 4
    assert open_regular(tmp_path / "pipe") is None
    assert open_regular(tmp_path) is None
    assert open_regular(tmp_path / "missing") is None
    assert open_regular(tmp_path / "link", follow=False) is None
    linked = open_regular(tmp_path / "link")
    assert linked is not None
    os.close(linked[0])
