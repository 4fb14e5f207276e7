"""What a person had when a cycle began, and what `end` does about each change the
cycle made to it (docs/your-work-is-safe.md). Pure: values in, decisions out; the
reading and writing is gtd.auto.cycle.pins' and gtd.auto.cycle.ignored's.

The manifest lists the refs (branches, tags, notes, every other ref but the
helper's own and remote-tracking ones), the stash entries in order, the other
worktrees with their uncommitted paths, and the files git ignored with their
inode and, for small ones, the blob of their content (kept in the helper's side
repository, never in the repository's own refs).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from gtd.tuples import NamedTuple

# Refs the pins leave alone: the helper's own, and copies of another repository's
# refs that a fetch moves (nothing of a person's is only there).
_UNPINNED = ("refs/gtd/", "refs/remotes/")
STASH = "refs/stash"


class Worktree(NamedTuple):
    path: str
    head: str | None
    branch: str | None  # full ref name; None when detached
    dirty: tuple[str, ...]  # its uncommitted paths when the cycle began


class Ignored(NamedTuple):
    """One path git ignored when the cycle began (a file, or a file inside an
    ignored folder, or the folder itself)."""

    ino: int
    dev: int
    folder: bool
    blob: str | None  # its content's blob in the side repository (small files only)
    mode: int
    # Its modification time (ns): a rename keeps it, and a file made since in an
    # inode the cycle freed (`rm .env`, then a new file) has a new one.
    mtime: int = 0


class Manifest(NamedTuple):
    refs: dict[str, str]  # full ref name -> object id
    stash: tuple[tuple[str, str], ...]  # (commit, message), newest first
    worktrees: tuple[Worktree, ...]  # the other worktrees of the repository
    ignored: dict[str, Ignored]  # path ('/'-separated, folders without a slash)
    unlisted: tuple[str, ...] = ()  # ignored folders too large to walk


def pinned(name: str) -> bool:
    return not name.startswith(_UNPINNED) and name != STASH


def dumps(m: Manifest) -> bytes:
    data = {
        "refs": m.refs,
        "stash": [list(e) for e in m.stash],
        "worktrees": [list(w) for w in m.worktrees],
        "ignored": {p: list(i) for p, i in m.ignored.items()},
        "unlisted": list(m.unlisted),
    }
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def loads(raw: bytes) -> Manifest:
    data = json.loads(raw)
    return Manifest(
        refs=dict(data["refs"]),
        stash=tuple((str(c), str(m)) for c, m in data["stash"]),
        worktrees=tuple(Worktree(p, h, b, tuple(d)) for p, h, b, d in data.get("worktrees") or ()),
        ignored={p: Ignored(*i) for p, i in (data.get("ignored") or {}).items()},
        unlisted=tuple(data.get("unlisted") or ()),
    )


def tips(m: Manifest) -> list[str]:
    """Every object the pins keep (with all they reach), each once."""
    seen = dict.fromkeys(m.refs.values())
    seen.update(dict.fromkeys(c for c, _ in m.stash))
    seen.update(dict.fromkeys(w.head for w in m.worktrees if w.head and w.branch is None))
    return list(seen)


# -- refs --------------------------------------------------------------------------------


class RefRepair(NamedTuple):
    ref: str
    to: str  # the object the ref held when the cycle began
    was: str | None  # what the cycle left there (None: deleted)


def ref_repairs(
    before: Mapping[str, str], now: Mapping[str, str], keep: Sequence[str], checked_out: set[str]
) -> tuple[list[RefRepair], list[str]]:
    """The refs to put back as they were at `begin`, and the moved ones left as
    they are: a branch checked out in another worktree (``checked_out``) moved
    there by a commit, a person's as likely as the agent's. ``keep``: refs the
    cycle's own machinery owns (the loop's branch)."""
    out: list[RefRepair] = []
    left: list[str] = []
    for ref, oid in sorted(before.items()):
        if ref in keep or not pinned(ref):
            continue
        current = now.get(ref)
        if current == oid:
            continue
        if current is not None and ref in checked_out:
            left.append(ref)
            continue
        out.append(RefRepair(ref, oid, current))
    return out, left


def stash_order(
    before: Sequence[tuple[str, str]], now: Sequence[tuple[str, str]]
) -> list[tuple[str, str]] | None:
    """The stash list to write back (newest first), or None when every entry the
    person had is still there in its order, under any the cycle added. The
    cycle's own entries stay on top of the person's, in their order."""
    if not before:
        return None
    if len(now) >= len(before) and list(now[len(now) - len(before) :]) == list(before):
        return None
    theirs = {c for c, _ in before}
    added = [e for e in now if e[0] not in theirs]
    return [*added, *before]


def lost_worktrees(before: Sequence[Worktree], now_paths: set[str]) -> list[Worktree]:
    return [w for w in before if w.path not in now_paths]


# -- ignored files ----------------------------------------------------------------------


def moved_back(
    ignored: Mapping[str, Ignored], found: Mapping[str, tuple[int, int, int]]
) -> dict[str, str]:
    """Paths the cycle left (``found``: path -> (dev, ino, mtime) of an added path
    and of each folder above it) that are a person's ignored file or folder under
    a new name: new path -> the path it had. The outermost match wins (`mv build
    out` moves every file in it; one rename puts it back).

    A file is known by its inode and modification time (a rename keeps both; a
    file made in an inode the cycle freed has a new time). A folder's time moves
    whenever a file in it is added or removed, so a folder is known by its inode
    and by one of the files noted in it found inside it under the same name (or,
    a folder too large to note file by file, by its inode alone)."""
    files = {(i.dev, i.ino, i.mtime): p for p, i in ignored.items() if not i.folder}
    folders = {(i.dev, i.ino): p for p, i in ignored.items() if i.folder}
    holds = {p for p in ignored if "/" in p}
    out: dict[str, str] = {}
    for path in sorted(found, key=lambda p: (p.count("/"), p)):
        if any(path.startswith(k + "/") for k in out):
            continue
        dev, ino, mtime = found[path]
        old = files.get((dev, ino, mtime))
        if old is None:
            folder = folders.get((dev, ino))
            if folder is not None and _holds_one(folder, path, ignored, found, holds):
                old = folder
        if old is not None and old != path:
            out[path] = old
    return out


def _holds_one(
    old: str,
    new: str,
    ignored: Mapping[str, Ignored],
    found: Mapping[str, tuple[int, int, int]],
    holds: set[str],
) -> bool:
    inner = [p for p in holds if p.startswith(old + "/")]
    if not inner:
        return True  # noted as one entry (too large to walk, or empty)
    for rel in inner:
        moved = new + rel[len(old) :]
        i = ignored[rel]
        if not i.folder and found.get(moved) == (i.dev, i.ino, i.mtime):
            return True
    return False


def copies(ignored: Mapping[str, Ignored], blobs: Mapping[str, str]) -> dict[str, str]:
    """Added files (``blobs``: path -> blob) holding exactly the content of a
    person's small ignored file: path -> the ignored path it copies."""
    by_blob = {i.blob: p for p, i in ignored.items() if i.blob}
    return {p: by_blob[b] for p, b in sorted(blobs.items()) if b in by_blob}


def covered(path: str, folders: set[str]) -> bool:
    parts = path.split("/")
    return any("/".join(parts[:i]) in folders for i in range(1, len(parts)))


def missing(ignored: Mapping[str, Ignored], exists: Mapping[str, bool]) -> list[str]:
    """The ignored paths gone, outermost only (a folder gone names it, not its files)."""
    gone = {p for p in ignored if not exists.get(p, True)}
    return sorted(p for p in gone if not covered(p, gone))
