"""Dependency folders a cycle would commit: ``node_modules`` (npm, yarn, pnpm) and
virtualenvs (any folder holding a ``pyvenv.cfg``), new in the work tree and not
ignored by git.

An implementer that runs ``npm install`` or ``python -m venv venv`` in a
project whose ``.gitignore`` does not name the folder leaves thousands of files
that `git add -A` would put into the branch's history for good. The cycle is
refused before anything hashes them, with a reason the next brief shows (add
the folder to ``.gitignore``); the revert moves each folder, whole, to
``.git/gtd/litter/cycle-N/<path>`` (a rename: nothing copied, nothing lost), so
the kept commit of the reverted work does not carry it either. A folder the
project tracks already (vendored dependencies) is the project's own, and a
change inside it is judged like any other.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from gtd.fsio import unsafe_path
from gtd.git import PRIVATE_DIR, Git
from gtd.git_parse import StatusEntry
from gtd.names import readable

LITTER_DIR = "litter"
DEPENDENCY_DIRS = frozenset({"node_modules"})
VENV_MARK = "pyvenv.cfg"


def found(entries: Iterable[StatusEntry]) -> list[tuple[str, int]]:
    """The dependency folders among the untracked ``entries`` (outermost), each
    with the number of its files, sorted."""
    untracked = [e.path for e in entries if e.untracked]
    venvs = {p.rpartition("/")[0] for p in untracked if p.endswith("/" + VENV_MARK)}
    roots: dict[str, int] = {}
    for path in untracked:
        root = _root(path, venvs)
        if root is not None:
            roots[root] = roots.get(root, 0) + 1
    return sorted(roots.items())


def _root(path: str, venvs: set[str]) -> str | None:
    parts = path.split("/")
    for i in range(1, len(parts)):  # the file's folders, outermost first
        folder = "/".join(parts[:i])
        if parts[i - 1] in DEPENDENCY_DIRS or folder in venvs:
            return folder
    return None


def untracked_only(git: Git, folders: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """``folders`` without those the project tracks files in (vendored)."""
    if not folders:
        return []
    # (literal: a folder named `a*b` names itself, not every folder it would match)
    paths = [f"{folder}/" for folder, _ in folders]
    raw = git.run("ls-files", "-z", "--", *paths, env={"GIT_LITERAL_PATHSPECS": "1"})
    tracked = {p for p in raw.split("\0") if p}
    return [(f, n) for f, n in folders if not any(p.startswith(f + "/") for p in tracked)]


def where(git: Git, cycle: int) -> Path:
    """Where the revert of ``cycle`` moves the dependency folders."""
    return git.git_dir() / PRIVATE_DIR / LITTER_DIR / f"cycle-{cycle}"


def reason(folders: list[tuple[str, int]], aside: Path, root: Path) -> str:
    folder, files = folders[0]
    more = f" and {len(folders) - 1} more" if len(folders) > 1 else ""
    noun = "file" if files == 1 else "files"
    return (
        f"dependency folder git does not ignore: {readable(folder)}/ ({files} {noun}){more}; "
        f"add it to .gitignore rather than commit it: moved to "
        f"{readable(os.path.relpath(aside, root))}/"
    )


def set_aside(git: Git, cycle: int, changes: Iterable[StatusEntry]) -> list[str]:
    """Move the cycle's dependency folders (among ``changes``) out of the working
    tree, before its work is kept; their names."""
    folders = untracked_only(git, found(changes))
    target = where(git, cycle)
    moved = []
    for folder, _files in folders:
        if unsafe_path(git.root, folder) is not None:
            continue  # a name a forged tree put in the listing: left to the revert
        (target / folder).parent.mkdir(parents=True, exist_ok=True)
        os.replace(git.root / folder, target / folder)
        moved.append(folder)
    return moved
