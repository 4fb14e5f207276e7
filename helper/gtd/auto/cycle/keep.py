"""Keeping a cycle's work before a revert: one commit of the whole working tree.

`git add -A` in a private index records what git would commit — tracked files as
they are, untracked ones it does not ignore — and a nested repository (or a
submodule) only as a pointer to a commit that may exist nowhere else. So every
such folder that holds more than its recorded commit is also stored whole, as a
tar archive under ``.gtd-kept/`` in the kept tree. Nothing the cycle touched is
lost: `git show <ref>:.gtd-kept/<path>.tar > x.tar` gives a nested repository back.
"""

from __future__ import annotations

import io
from pathlib import Path

from gtd.fsio import read_bytes, unsafe_path, walk
from gtd.git import Git

KEPT_DIR = ".gtd-kept"
_GITLINK = "160000"


def kept_tree(git: Git, scratch: Path) -> str:
    """The tree of the working tree now, nested repositories included."""
    index = scratch / "keep.index"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        if git.head() is not None:
            git.run("read-tree", "HEAD", env=env)
        else:
            git.run("read-tree", "--empty", env=env)
        git.add_all(env)  # what git cannot add it cannot keep (the revert restores it)
        staged = git.run("ls-files", "-s", "-z", env=env)
        head_links = _head_gitlinks(git)
        entries: list[str] = []
        for record in staged.split("\0"):
            meta, _, path = record.partition("\t")
            if not meta.startswith(_GITLINK) or unsafe_path(git.root, path) is not None:
                continue  # (a forged tree's name: nothing outside the tree is read)
            oid = meta.split(" ")[1]
            if head_links.get(path) == oid and not _dirty(git, path):
                continue  # a submodule exactly as recorded: its commit has it all
            folder = git.root / path
            if path not in head_links:
                # A nested repository the cycle made: its files as files, in place
                # of the pointer, so they read like any other kept work.
                entries.append(f"0 {'0' * len(oid)}\t{path}\0")
                entries.extend(_files(git, folder, path))
            blob = git.write_blob(_tar(folder))
            entries.append(f"100644 {blob}\t{KEPT_DIR}/{path}.tar\0")
        if entries:
            git.run(
                "update-index", "-z", "--add", "--index-info", input_text="".join(entries), env=env
            )
        return git.run("write-tree", env=env).strip()
    finally:
        index.unlink(missing_ok=True)


def _head_gitlinks(git: Git) -> dict[str, str]:
    if git.head() is None:
        return {}
    listing = git.ls_tree("HEAD")
    return {p: e.oid for p, e in listing.items() if e.mode == _GITLINK}


def _dirty(git: Git, path: str) -> bool:
    result = git.call("status", "--porcelain", "--untracked-files=all", cwd=git.root / path)
    return result.returncode != 0 or bool(result.stdout.strip())


def _files(git: Git, folder: Path, prefix: str) -> list[str]:
    """Index lines for every file under ``folder`` (its ``.git`` left out: that is
    in the archive), under ``prefix``."""
    import os

    out: list[str] = []
    for parent, dirs, names in walk(folder):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = os.path.join(parent, name)
            rel = os.path.relpath(path, folder).replace(os.sep, "/")
            if os.path.islink(path):
                blob = git.write_blob(os.readlink(path).encode("utf-8", "surrogateescape"))
                mode = "120000"
            else:
                try:
                    data = read_bytes(Path(path))
                except OSError:  # a named pipe, a socket: nothing git keeps (nor blocks)
                    continue
                blob = git.write_blob(data)
                mode = "100755" if os.access(path, os.X_OK) else "100644"
            out.append(f"{mode} {blob}\t{prefix}/{rel}\0")
    return out


def _tar(folder: Path) -> bytes:
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(str(folder), arcname=folder.name)
    return buffer.getvalue()
