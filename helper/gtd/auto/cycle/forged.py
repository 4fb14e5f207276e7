"""Git objects written since they were last checked (during the cycle, or between
it and the last cycle's check) that are not what their names say.

git names an object by the hash of its content and, reading one back, trusts the
name. An object file the agent writes under the id a folder of its change will
hash to (loose, in a pack, or in an alternate store) is what every later reader
sees instead of the work tree's content: the clean room, the diff the revert
follows, the commit. So each object file written since the agent's turn began is
hashed again here, before anything reads one; a change time cannot be set back.

A loose object that fails is moved to ``.git/gtd/forged/cycle-N/`` (git then
reads a packed copy, if there is one, or writes the true object again when the
revert keeps the work); a pack that fails is named and left for a person, as it
may hold true objects too. Either halts the loop. The commit-graph and
multi-pack-index files, caches git rebuilds, are removed when written since: a
forged one would change what a commit's tree or parents read as.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from pathlib import Path

from gtd import fsio
from gtd.git import PRIVATE_DIR, Git

_CHUNK = 1 << 20
_CACHES = ("info/commit-graph", "info/commit-graphs", "pack/multi-pack-index")


def check(git: Git, since: float, cycle: int) -> str | None:
    """The reason to halt, or None: every object file written since ``since``
    (epoch seconds) holds what its name says, and no alternate store was added."""
    git_dir = git.git_dir()
    objects = git.common_dir() / "objects"  # a linked worktree's are its main one's
    since_ns = int(since * 1e9)
    aside = git_dir / PRIVATE_DIR / "forged" / f"cycle-{cycle}"
    alternates = objects / "info" / "alternates"
    if _changed(alternates, since_ns) and _names_a_store(alternates):
        _move(alternates, aside)
        return (
            f"git's object stores changed during the cycle: {alternates} (an alternate "
            f"store's objects are read as this repository's), moved to {aside}; "
            "then `gtd cycle begin`"
        )
    _drop_caches(objects, since_ns)
    bad: list[Path] = []
    for store in (objects, *_alternate_stores(alternates)):
        bad.extend(path for path in _loose_since(store, since_ns) if not _loose_ok(path))
        for pack in _packs_since(store, since_ns):
            if not _pack_ok(git, pack):
                for part in pack.parent.glob(pack.stem + ".*"):
                    _move(part, aside)
                return (
                    f"a git pack written since the last check holds objects that are not "
                    f"what their names say (forged): {pack}, moved to {aside} (with its "
                    "index); if git now reports objects missing, check it with `git "
                    "verify-pack -v` and move back what is true, then `gtd cycle begin`"
                )
    if not bad:
        return None
    for path in bad:
        _move(path, aside, path.parent.name + path.name)
    more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
    return (
        f"a git object written since the last check is not what its name says (forged): "
        f"{bad[0]}{more}, moved to {aside}; if git now reports an object missing, "
        "restore it from a clone, then `gtd cycle begin`"
    )


def _names_a_store(alternates: Path) -> bool:
    """Whether the alternates file lists any store. An empty one adds none: Claude
    Code's sandbox creates it empty, as the mount point of its write protection of
    that path, the first time a sandboxed command runs (docs/sandbox.md)."""
    try:
        return bool(fsio.read_bytes(alternates).strip())
    except OSError:
        return True  # unreadable: judged as written


def _move(path: Path, folder: Path, name: str | None = None) -> None:
    """Out of git's sight, kept: what the agent wrote is not ours to delete."""
    folder.mkdir(parents=True, exist_ok=True)
    os.replace(path, folder / (name or path.name))


def _changed(path: Path, since_ns: int) -> bool:
    try:
        return os.lstat(path).st_ctime_ns >= since_ns
    except FileNotFoundError:
        return False


def _drop_caches(objects: Path, since_ns: int) -> None:
    for rel in _CACHES:
        path = objects / rel
        if _changed(path, since_ns):
            if path.is_dir() and not path.is_symlink():
                fsio.remove_tree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def _alternate_stores(alternates: Path) -> list[Path]:
    try:
        text = fsio.read_bytes(alternates).decode("utf-8", "surrogateescape")
    except OSError:
        return []
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append(Path(line) if os.path.isabs(line) else alternates.parent.parent / line)
    return out


def _loose_since(store: Path, since_ns: int) -> list[Path]:
    out = []
    try:
        fans = [e for e in os.scandir(store) if len(e.name) == 2 and e.is_dir()]
    except OSError:
        return []
    for fan in fans:
        try:
            with os.scandir(fan.path) as listing:
                for entry in listing:
                    st = entry.stat(follow_symlinks=False)
                    if st.st_ctime_ns >= since_ns and not entry.name.startswith("tmp"):
                        out.append(Path(entry.path))
        except OSError:
            continue
    return out


def _loose_ok(path: Path) -> bool:
    """Whether the file's inflated bytes hash to its name (read in chunks: a
    large object is never held whole)."""
    name = path.parent.name + path.name
    digest = hashlib.new("sha256" if len(name) == 64 else "sha1")
    inflate = zlib.decompressobj()
    opened = fsio.open_regular(path, follow=False)  # a pipe would never end a read
    if opened is None:
        return False
    fd = opened[0]
    try:
        while chunk := os.read(fd, _CHUNK):
            digest.update(inflate.decompress(chunk))
        digest.update(inflate.flush())
    except (OSError, zlib.error):
        return False
    finally:
        os.close(fd)
    if inflate.unused_data or not inflate.eof:
        return False
    return digest.hexdigest() == name


def _packs_since(store: Path, since_ns: int) -> list[Path]:
    out = []
    try:
        entries = list(os.scandir(store / "pack"))
    except OSError:
        return []
    names = {e.name for e in entries}
    for entry in entries:
        stem, ext = os.path.splitext(entry.name)
        if ext not in (".pack", ".idx"):
            continue
        pack = Path(store / "pack" / f"{stem}.pack")
        if pack in out or f"{stem}.pack" not in names or f"{stem}.idx" not in names:
            continue
        if entry.stat(follow_symlinks=False).st_ctime_ns >= since_ns:
            out.append(pack)
    return out


def _pack_ok(git: Git, pack: Path) -> bool:
    """`git verify-pack` inflates every object of the pack and checks its name."""
    return git.call("verify-pack", str(pack.with_suffix(".idx"))).returncode == 0
