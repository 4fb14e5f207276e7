"""The decisions over a person's refs, stash, worktrees and ignored files
(gtd.auto.cycle.manifest): values in, values out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gtd.auto.cycle import manifest as mf
from gtd.auto.cycle.manifest import Ignored, Manifest, RefRepair, Worktree

A, B, C = "a" * 40, "b" * 40, "c" * 40


def test_deleted_and_moved_refs_are_put_back_the_loops_branch_and_the_helpers_are_not() -> None:
    before = {
        "refs/heads/main": A,
        "refs/heads/feature": B,
        "refs/tags/v1": C,
        "refs/gtd/state": A,
        "refs/remotes/origin/main": A,
        "refs/notes/commits": B,
    }
    now = {"refs/heads/main": B, "refs/tags/v1": A, "refs/notes/commits": B}
    repairs, left = mf.ref_repairs(before, now, ["refs/heads/main"], set())
    assert repairs == [
        RefRepair("refs/heads/feature", B, None),
        RefRepair("refs/tags/v1", C, A),
    ]
    assert left == []


def test_a_branch_moved_where_another_worktree_has_it_checked_out_is_left_and_named() -> None:
    before = {"refs/heads/other": A, "refs/heads/gone": B}
    now = {"refs/heads/other": B}
    repairs, left = mf.ref_repairs(before, now, [], {"refs/heads/other", "refs/heads/gone"})
    assert repairs == [RefRepair("refs/heads/gone", B, None)]  # deleted: always back
    assert left == ["refs/heads/other"]


def test_stash_unchanged_or_added_to_needs_nothing() -> None:
    mine = [(A, "first"), (B, "second")]
    assert mf.stash_order(mine, mine) is None
    assert mf.stash_order(mine, [(C, "agent's"), *mine]) is None
    assert mf.stash_order([], [(C, "agent's")]) is None


def test_stash_cleared_or_dropped_comes_back_under_the_agents_entries() -> None:
    mine = [(A, "first"), (B, "second")]
    assert mf.stash_order(mine, []) == mine
    assert mf.stash_order(mine, [(C, "agent's"), (B, "second")]) == [(C, "agent's"), *mine]


entries = st.lists(st.sampled_from([(A, "a"), (B, "b"), (C, "c"), ("d" * 40, "d")]), unique=True)


@given(entries, entries)
def test_stash_order_always_ends_with_the_persons_entries_in_their_order(
    before: list[tuple[str, str]], now: list[tuple[str, str]]
) -> None:
    order = mf.stash_order(before, now)
    result = now if order is None else order
    assert result[len(result) - len(before) :] == before
    assert set(now) <= set(result)  # nothing of the agent's is dropped either


def _ignored(ino: int, blob: str | None = None, folder: bool = False) -> Ignored:
    return Ignored(ino, 1, folder, blob, 0o644, ino * 1000)


def test_moved_back_matches_inodes_outermost_first() -> None:
    ignored = {"build": _ignored(10, folder=True), "build/.env": _ignored(11), ".env": _ignored(12)}
    found = {
        "out": (1, 10, 10000),
        "out/.env": (1, 11, 11000),
        "notes.txt": (1, 12, 12000),
        "new.py": (1, 99, 99000),
    }
    assert mf.moved_back(ignored, found) == {"notes.txt": ".env", "out": "build"}
    assert mf.moved_back(ignored, {"build/.env": (1, 11, 11000)}) == {}  # where it was


def test_a_moved_folder_is_known_by_a_file_inside_it_even_when_its_time_moved() -> None:
    ignored = {"build": _ignored(10, folder=True), "build/.env": _ignored(11)}
    moved = {"out": (1, 10, 77777), "out/.env": (1, 11, 11000), "out/new.txt": (1, 50, 1)}
    assert mf.moved_back(ignored, moved) == {"out": "build"}
    # `rm -rf build; mkdir out`: the folder's freed inode, none of its files
    made = {"out": (1, 10, 77777), "out/new.txt": (1, 50, 1)}
    assert mf.moved_back(ignored, made) == {}


def test_a_new_file_in_an_inode_the_cycle_freed_is_not_taken_for_a_moved_one() -> None:
    """`rm .env`, then a new file: the file system may give it .env's inode."""
    ignored = {".env": _ignored(12)}
    assert mf.moved_back(ignored, {"notes.txt": (1, 12, 55555)}) == {}


def test_copies_match_small_files_by_content() -> None:
    ignored = {".env": _ignored(12, blob=A), "big.bin": _ignored(13)}
    assert mf.copies(ignored, {"notes.txt": A, "other.txt": B}) == {"notes.txt": ".env"}


def test_missing_names_the_outermost_path_gone() -> None:
    ignored = {"build": _ignored(1, folder=True), "build/a": _ignored(2), ".env": _ignored(3)}
    exists = {"build": False, "build/a": False, ".env": True}
    assert mf.missing(ignored, exists) == ["build"]


def test_manifest_round_trips() -> None:
    made = Manifest(
        refs={"refs/heads/x": A},
        stash=((B, "On main: wip"),),
        worktrees=(Worktree("/w", C, None, ("f.txt",)),),
        ignored={".env": _ignored(4, blob=A)},
        unlisted=(".venv",),
    )
    assert mf.loads(mf.dumps(made)) == made
    assert mf.tips(made) == [A, B, C]
