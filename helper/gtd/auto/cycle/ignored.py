"""A person's ignored files (a `.env`, build output, a virtualenv) across a cycle
(docs/your-work-is-safe.md).

When a cycle begins each path git ignores is noted with its inode (and, inside an
ignored folder, each file's, up to a bound), and the content of the small files is
copied into the helper's side repository (gtd.auto.cycle.pins). When it ends:

- a person's ignored file or folder the agent moved to a name git does not ignore
  (`mv build out`, `mv .env notes.txt`) is known by its inode and moved back
  before anything is kept, so it never lands in a kept ref or a commit;
- a file holding exactly a small ignored file's content (`cp .env notes.txt`) is
  set aside under `<git dir>/gtd/set-aside/`, out of every ref;
- a small ignored file the cycle deleted is written back from its copy, and every
  other one it deleted is named in the report.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from stat import S_ISDIR, S_ISREG

from gtd import paths
from gtd.auto.cycle import manifest as mf
from gtd.auto.cycle.manifest import Ignored
from gtd.errors import GitError
from gtd.fsio import atomic_write_bytes
from gtd.git import Git
from gtd.tuples import NamedTuple

# Bounds of the survey at `begin`: the files inside ignored folders noted (a
# virtualenv's tens of thousands are not: the folder itself is), and the small
# files whose content is copied.
WALK_MAX = 2000
COPY_FILE_MAX = 64 << 10
COPY_COUNT_MAX = 256
COPY_TOTAL_MAX = 1 << 20
_REGENERATED = ("__pycache__",)


def _entry(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


class _Seen(NamedTuple):
    ino: int
    dev: int
    folder: bool
    size: int | None  # regular files only (None: unknown, never copied)
    mode: int
    mtime: int


def survey(
    root: Path, side: Git, listed: Sequence[str]
) -> tuple[dict[str, Ignored], tuple[str, ...]]:
    """The ignored paths (``listed``: git's listing, folders with a trailing
    slash) with their inodes, small files' content copied into ``side``; and the
    ignored folders too large to walk."""
    noted: dict[str, _Seen] = {}
    unlisted: list[str] = []
    budget = WALK_MAX
    for entry in listed:
        rel = entry.rstrip("/")
        if not rel or paths.is_private(rel) or rel == paths.STATE_DIR:
            continue
        info = _entry(root / rel)
        if info is None:
            continue
        folder = S_ISDIR(info.st_mode)
        size = info.st_size if S_ISREG(info.st_mode) else None
        noted[rel] = _Seen(
            info.st_ino, info.st_dev, folder, size, info.st_mode & 0o777, info.st_mtime_ns
        )
        if not folder or os.path.basename(rel) in _REGENERATED:
            continue
        inner = _walk(root, rel, info.st_dev, budget)
        if inner is None:
            unlisted.append(rel)
            continue
        budget -= len(inner)
        noted.update(inner)
    return _with_copies(root, side, noted), tuple(unlisted)


def _walk(root: Path, rel: str, dev: int, budget: int) -> dict[str, _Seen] | None:
    """The entries under the ignored folder ``rel``, None past ``budget`` of
    them, each with its inode and modification time; the size of the first few
    files, which may be copied."""
    out: dict[str, _Seen] = {}
    stack = [rel]
    sized = 0
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(root / folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        if len(out) + len(entries) > budget:  # (known before a stat of them)
            return None
        for item in entries:
            sub = f"{folder}/{item.name}"
            try:
                is_dir = item.is_dir(follow_symlinks=False)
                is_file = not is_dir and item.is_file(follow_symlinks=False)
            except OSError:
                continue
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            size: int | None = None
            if is_file and sized < COPY_COUNT_MAX and not item.name.endswith(".pyc"):
                size = info.st_size
                sized += size <= COPY_FILE_MAX
            mode, mtime = info.st_mode & 0o777, info.st_mtime_ns
            out[sub] = _Seen(info.st_ino, dev, is_dir, size, mode, mtime)
            if is_dir and item.name not in _REGENERATED:
                stack.append(sub)
    return out


def _with_copies(root: Path, side: Git, noted: dict[str, _Seen]) -> dict[str, Ignored]:
    small: list[str] = []
    total = 0
    for rel, seen in noted.items():
        if seen.size is None or seen.size > COPY_FILE_MAX:
            continue
        if "\n" in rel or rel.endswith(".pyc") or len(small) >= COPY_COUNT_MAX:
            continue
        if total + seen.size > COPY_TOTAL_MAX:
            continue
        small.append(rel)
        total += seen.size
    blobs: dict[str, str] = {}
    if small:
        try:
            oids = side.write_blob_files([str(root / rel) for rel in small])
            blobs = dict(zip(small, oids, strict=True))
        except (OSError, GitError):  # a file gone or unreadable since: no copies (named if lost)
            blobs = {}
    return {
        rel: Ignored(seen.ino, seen.dev, seen.folder, blobs.get(rel), seen.mode, seen.mtime)
        for rel, seen in noted.items()
    }


# -- end ---------------------------------------------------------------------------------


def _inodes(root: Path, added: Iterable[str]) -> dict[str, tuple[int, int, int]]:
    """(dev, ino, mtime) of each added path and of each folder above it."""
    out: dict[str, tuple[int, int, int]] = {}
    for rel in added:
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            if sub in out:
                continue
            info = _entry(root / sub)
            if info is not None:
                out[sub] = (info.st_dev, info.st_ino, info.st_mtime_ns)
    return out


def smuggled(root: Path, before: mf.Manifest, added: dict[str, str]) -> list[str]:
    """Added paths (``added``: path -> blob) that are a person's ignored file under
    another name, or a copy of one: each with what it is, for the judge's reason."""
    moved = mf.moved_back(before.ignored, _inodes(root, added))
    out = [f"{new} (was {old})" for new, old in moved.items()]
    known = {*moved, *before.ignored}
    rest = {p: b for p, b in added.items() if not _handled(p, known)}
    out += [f"{new} (a copy of {old})" for new, old in mf.copies(before.ignored, rest).items()]
    return out


def _handled(rel: str, known: set[str]) -> bool:
    """Moved back already, or where it was when the cycle began (a file a
    `.gitignore` edit made visible: never kept, gtd.auto.cycle.keep)."""
    return rel in known or mf.covered(rel, known)


def put_back(root: Path, git: Git, before: mf.Manifest, added: Sequence[str]) -> list[str]:
    """Before the cycle's work is kept: a person's ignored files under a new name
    moved back (set aside when their place is taken), copies of their small ones
    set aside. What was done, a sentence each."""
    from gtd.own_files import set_aside

    notes: list[str] = []
    moved = mf.moved_back(before.ignored, _inodes(root, added))
    for new, old in moved.items():
        if _entry(root / old) is None:
            (root / old).parent.mkdir(parents=True, exist_ok=True)
            os.rename(root / new, root / old)
            notes.append(f"ignored {old} moved back from {new}, where the cycle had moved it")
        else:
            where = set_aside(root, root / new)
            notes.append(f"ignored {old}, moved by the cycle to {new}, set aside at {where}")
    if not any(i.blob for i in before.ignored.values()):
        return notes
    candidates = []
    known = {*moved, *before.ignored}
    for rel in added:
        if _handled(rel, known) or "\n" in rel:
            continue
        info = _entry(root / rel)
        if info is not None and S_ISREG(info.st_mode) and info.st_size <= COPY_FILE_MAX:
            candidates.append(rel)
    if not candidates:
        return notes
    oids = git.run(
        "hash-object", "--no-filters", "--stdin-paths",
        input_text="".join(f"{root / rel}\n" for rel in candidates),
    ).split()  # fmt: skip
    for new, old in mf.copies(before.ignored, dict(zip(candidates, oids, strict=True))).items():
        where = set_aside(root, root / new)
        notes.append(f"a copy of ignored {old} the cycle made at {new} set aside at {where}")
    return notes


def restore_deleted(root: Path, side: Git, before: mf.Manifest) -> list[str]:
    """After the revert or the commit: small ignored files the cycle deleted
    written back from their copies; the others it deleted named, and those it
    overwrote (see :func:`_overwritten`)."""
    infos = {p: _entry(root / p) for p in before.ignored}
    exists = {p: info is not None for p, info in infos.items()}
    gone = [p for p, there in exists.items() if not there]
    changed = _overwritten(root, side, before, infos)
    if not gone:
        return changed
    copied = [p for p in gone if before.ignored[p].blob]
    found = side.objects([before.ignored[p].blob or "" for p in copied]) if copied else []
    restored: list[str] = []
    for rel, obj in zip(copied, found, strict=True):
        if obj is None:
            continue
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, obj.data)
        os.chmod(target, before.ignored[rel].mode)
        restored.append(rel)
        exists[rel] = True
    for rel in gone:  # folders made again for the files put back
        if not exists[rel] and before.ignored[rel].folder and (root / rel).is_dir():
            exists[rel] = True
    notes = []
    if restored:
        notes.append(
            "ignored files the cycle deleted, put back from their copies: " + _list(restored)
        )
    lost = mf.missing(before.ignored, exists)
    if lost:
        unlisted = set(before.unlisted)
        shown = [f"{p}/" if before.ignored[p].folder or p in unlisted else p for p in lost]
        notes.append("ignored files the cycle deleted (no copy kept: too large): " + _list(shown))
    return notes + changed


def _overwritten(
    root: Path, side: Git, before: mf.Manifest, infos: dict[str, os.stat_result | None]
) -> list[str]:
    """Ignored files of their own (a `.env`, not a file inside an ignored build
    folder, which builds rewrite every run) whose content changed during the
    cycle: named, with where the version from before is, never written over (a
    person may have saved it meanwhile)."""
    folders = {p for p, i in before.ignored.items() if i.folder}
    suspects = []
    for rel, info in infos.items():
        was = before.ignored[rel]
        if info is None or not was.blob or not S_ISREG(info.st_mode) or "\n" in rel:
            continue
        if info.st_mtime_ns != was.mtime and not mf.covered(rel, folders):
            suspects.append(rel)
    if not suspects:
        return []
    try:
        oids = side.run(
            "hash-object", "--no-filters", "--stdin-paths",
            input_text="".join(f"{root / rel}\n" for rel in suspects),
        ).split()  # fmt: skip
    except GitError:
        return []
    side_dir = os.path.relpath(side.env.get("GIT_DIR", ""), root)
    out = [
        f"ignored {rel} changed during the cycle; the version from before: "
        f"`git --git-dir={side_dir} cat-file blob {before.ignored[rel].blob}`"
        for rel, oid in zip(suspects, oids, strict=False)
        if oid != before.ignored[rel].blob
    ]
    return out


def _list(items: Sequence[str], most: int = 10) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")
