"""A task's change replayed onto a tip that moved since its worktree was made
(docs/parallel.md, "Replaying a task onto a moved tip"), used by a
wave's landing (gtd.auto.cycle.wave_landing).

A wave's tasks all start from one tip; the first to land moves it. Each later
task's change (its base tree to its candidate tree) is then laid onto the new
tip, path by path: a path the tip changed too, to anything else, is a conflict,
and so is a path one side changed inside a folder the other side turned into a
file (or back). A conflict is no failure: the task goes back to the queue. The
replay writes only objects (a tree, through a private index in the helper's
folder of the git directory): no ref, no working tree, no index of anyone's.

The merge is by whole files, never line by line: two tasks that change
different lines of one file conflict. That is the conservative choice (what is
committed is exactly one side's bytes for every path), and a wave's tasks name
disjoint files anyway.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from gtd import paths
from gtd.git import Git
from gtd.git_parse import Change
from gtd.tuples import NamedTuple

_INDEX = "replay-"


class Replay(NamedTuple):
    """``tree``: the tip with the change laid on it (None on a conflict);
    ``conflicts``: the paths that stopped it, sorted; ``unseen``: whether
    ``tree`` differs from the candidate that was judged, so it must be judged
    again before it is committed."""

    tree: str | None
    conflicts: tuple[str, ...]
    unseen: bool


def replay(git: Git, base: str, candidate: str, tip: str) -> Replay:
    """Lay the change ``base`` → ``candidate`` (trees) onto the tree ``tip``."""
    if tip == base:
        return Replay(candidate, (), False)
    theirs = git.diff_trees(base, candidate)
    clashes = conflicts(git.diff_trees(base, tip), theirs)
    if clashes:
        return Replay(None, tuple(clashes), False)
    if not theirs:
        return Replay(tip, (), tip != candidate)
    tree = _apply(git, tip, theirs)
    return Replay(tree, (), tree != candidate)


def conflicts(ours: Sequence[Change], theirs: Sequence[Change]) -> list[str]:
    """The paths that stop ``theirs`` from being laid over ``ours`` (both changes
    from one base). A path both sides changed to the same result is agreed and
    left out; of the rest, a path both changed conflicts, and so does a pair where
    one side changed a path inside a folder whose path the other changed (a file
    that became a folder, or back): both paths are named."""
    agreed = {c.path for c in ours} & {c.path for c in theirs}
    agreed -= {c.path for c in ours if (c.new_mode, c.new_oid) not in _results(theirs, c.path)}
    mine = {c.path for c in ours} - agreed
    yours = {c.path for c in theirs} - agreed
    my_folders = {folder for path in mine for folder in _folders(path)}
    out: set[str] = set()
    for path in yours:
        if path in mine:
            out.add(path)
        if path in my_folders:
            out.add(path)
            out.update(q for q in mine if q.startswith(path + "/"))
        above = [folder for folder in _folders(path) if folder in mine]
        if above:
            out.add(path)
            out.update(above)
    return sorted(out)


def _results(changes: Sequence[Change], path: str) -> set[tuple[str, str]]:
    return {(c.new_mode, c.new_oid) for c in changes if c.path == path}


def _folders(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _apply(git: Git, tip: str, changes: Sequence[Change]) -> str:
    """The tree ``tip`` with ``changes`` applied, built in a private index."""
    scratch = git.git_dir() / paths.PRIVATE_DIR
    from gtd.own_files import own_folder

    own_folder(scratch)
    _sweep(scratch)
    index = scratch / f"{_INDEX}{os.getpid()}.index"
    env = {"GIT_INDEX_FILE": str(index)}
    # Removals first: a file that gives way to a folder of the same name.
    gone = [f"0 {'0' * len(c.old_oid)}\t{c.path}\0" for c in changes if c.status == "D"]
    kept = [f"{c.new_mode} {c.new_oid}\t{c.path}\0" for c in changes if c.status != "D"]
    try:
        git.run("read-tree", tip, env=env)
        git.run("update-index", "-z", "--index-info", input_text="".join(gone + kept), env=env)
        return git.run("write-tree", env=env).strip()
    finally:
        with contextlib.suppress(OSError):
            index.unlink()


def _sweep(scratch: Path) -> None:
    """The private indexes of killed replays (named by their process): nobody's."""
    from gtd.processes import alive

    for name in os.listdir(scratch):
        pid = name.removeprefix(_INDEX).removesuffix(".index")
        ours = name.startswith(_INDEX) and name.endswith(".index") and pid.isdigit()
        if ours and not alive(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(scratch / name)
