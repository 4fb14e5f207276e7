"""Keeping a cycle's work before a revert: one commit of the whole working tree.

`git add -A` in a private index records what git would commit — tracked files as
they are, untracked ones it does not ignore — and a nested repository (or a
submodule) only as a pointer to a commit that may exist nowhere else. So every
such folder that holds more than its recorded commit is also stored whole, as a
tar archive under ``.gtd-kept/`` in the kept tree. Nothing the cycle touched is
lost: `git show <ref>:.gtd-kept/<path>.tar > x.tar` gives a nested repository back.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from stat import S_ISLNK, S_ISREG, S_IXUSR

from gtd import proc
from gtd.errors import GitError
from gtd.fsio import read_bytes, unsafe_path, walk
from gtd.git import Git, git_timeout

KEPT_DIR = ".gtd-kept"
_GITLINK = "160000"
# What one pack of kept files may hold in this process's memory.
_PACK_BYTES = 32 << 20


def kept_tree(
    git: Git,
    scratch: Path,
    leave_out: Callable[[list[str]], list[str]] | None = None,
    head: str | None = None,
) -> str:
    """The tree of the working tree now, nested repositories included, on top of
    ``head`` (the caller read HEAD: None while it has no commit).
    ``leave_out``: of the files added since HEAD, those never to be kept (a
    person's, which git ignored when the cycle began and a `.gitignore` edit of
    the cycle's made visible: docs/your-work-is-safe.md)."""
    index = scratch / "keep.index"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        if head is not None:
            git.run("read-tree", head, env=env)
        else:
            git.run("read-tree", "--empty", env=env)
        git.add_all(env)  # what git cannot add it cannot keep (the revert restores it)
        if leave_out is not None:
            _leave_out(git, env, leave_out, head)
        staged = git.run("ls-files", "-s", "-z", env=env)
        head_links = _head_gitlinks(git, head)
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
                entries.extend(_files(git, folder, path, scratch))
            blob = _tar(git, folder, scratch)
            entries.append(f"100644 {blob}\t{KEPT_DIR}/{path}.tar\0")
        if entries:
            git.run(
                "update-index", "-z", "--add", "--index-info", input_text="".join(entries), env=env
            )
        return git.run("write-tree", env=env).strip()
    finally:
        index.unlink(missing_ok=True)


def _leave_out(
    git: Git, env: dict[str, str], leave_out: Callable[[list[str]], list[str]], head: str | None
) -> None:
    if head is None:
        raw = git.run("ls-files", "-z", env=env)
    else:
        raw = git.run(
            "diff-index", "--cached", "--name-only", "--diff-filter=A", "-z", head, env=env
        )
    out = leave_out([p for p in raw.split("\0") if p])
    if out:
        listed = "".join(f"{p}\0" for p in out)
        git.run("update-index", "-z", "--force-remove", "--stdin", input_text=listed, env=env)


def _head_gitlinks(git: Git, head: str | None) -> dict[str, str]:
    if head is None:
        return {}
    listing = git.ls_tree(head)
    return {p: e.oid for p, e in listing.items() if e.mode == _GITLINK}


def _dirty(git: Git, path: str) -> bool:
    result = git.call("status", "--porcelain", "--untracked-files=all", cwd=git.root / path)
    return result.returncode != 0 or bool(result.stdout.strip())


def _files(git: Git, folder: Path, prefix: str, scratch: Path) -> list[str]:
    """Index lines for every file under ``folder`` (its ``.git`` left out: that is
    in the archive), under ``prefix``. An agent may have cloned a whole project
    into the tree: its files go into packs of a few tens of megabytes, one git
    process each (a loose object a file took ~3 ms apiece on a slow disk, minutes
    for tens of thousands), and only a file larger than that is handed to git by
    name, so this process never holds more than one pack's worth."""
    out: list[str] = []
    regular: list[tuple[str, str, str, int]] = []  # (mode, rel, path, size)
    for parent, dirs, names in walk(folder):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in (*dirs, *names):
            path = os.path.join(parent, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            rel = os.path.relpath(path, folder).replace(os.sep, "/")
            if S_ISLNK(st.st_mode):  # to a folder too: walk lists it, never enters it
                out.append(
                    _line("120000", git.write_blob(os.fsencode(os.readlink(path))), prefix, rel)
                )
            elif S_ISREG(st.st_mode):
                kind = "100755" if st.st_mode & S_IXUSR else "100644"
                regular.append((kind, rel, path, st.st_size))
            # a named pipe, a socket, a device: nothing git keeps (nor reads)
    batch: list[tuple[str, str]] = []
    contents: list[bytes] = []
    held = 0
    for kind, rel, path, size in regular:
        if size > _PACK_BYTES:
            oid = _large_blob(git, path)
            if oid is not None:
                out.append(_line(kind, oid, prefix, rel))
            continue
        try:
            data = read_bytes(Path(path))
        except OSError:  # gone, or no longer a regular file
            continue
        batch.append((kind, rel))
        contents.append(data)
        held += len(data)
        if held >= _PACK_BYTES:
            out.extend(_packed(git, batch, contents, prefix, scratch))
            batch, contents, held = [], [], 0
    out.extend(_packed(git, batch, contents, prefix, scratch))
    return out


def _packed(
    git: Git, batch: list[tuple[str, str]], contents: list[bytes], prefix: str, scratch: Path
) -> list[str]:
    oids = git.pack_blobs(contents, scratch / "keep.marks")
    return [_line(kind, oid, prefix, rel) for (kind, rel), oid in zip(batch, oids, strict=True)]


def _large_blob(git: Git, path: str) -> str | None:
    """A file too large to hold here: git reads it by name, unless that name has
    a line break (one a line) or a pipe took its place (git would wait on it)."""
    try:
        if "\n" in path:
            return git.write_blob(read_bytes(Path(path)))
        return git.write_blob_files([path])[0]
    except (OSError, GitError):
        return None


def _line(mode: str, oid: str, prefix: str, rel: str) -> str:
    return f"{mode} {oid}\t{prefix}/{rel}\0"


def _tar(git: Git, folder: Path, scratch: Path) -> str:
    """The blob of a tar archive of ``folder``, written to a file first (git
    streams it from there; a nested repository never sits whole in this process's
    memory) by the system's ``tar`` where there is one: ~20 times faster than
    Python's tarfile on a repository's thousands of small objects. Links, pipes
    and devices are archived as such, never followed or read."""
    archive_path = scratch / "keep.tar"
    name = folder.name if not folder.name.startswith("-") else f"./{folder.name}"
    try:
        made = proc.run(
            ["tar", "-cf", str(archive_path), "-C", str(folder.parent), name],
            scratch,
            timeout=git_timeout(),
        )
        if made.returncode != 0:  # no tar here, or a file changed as it read it
            _tarfile(folder, archive_path)
        return git.write_blob_files([str(archive_path)])[0]
    finally:
        archive_path.unlink(missing_ok=True)


def _tarfile(folder: Path, archive_path: Path) -> None:
    import tarfile

    with tarfile.open(archive_path, mode="w") as archive:
        archive.add(str(folder), arcname=folder.name)
