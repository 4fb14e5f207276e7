"""Git's output read as values: the records (status entries, tree entries, objects,
changes) and one ``parse_*`` function per command output the helper reads
(porcelain v2 status, logs, trees, raw diffs, config and ref listings, batched
object reads), and what a failed git call's message means (:func:`failure`). Pure:
text or bytes in, values out. :mod:`gtd.git` runs git (every command line is
built there) and hands its output here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gtd.errors import GitError, IndexUnreadable
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import TypeVar

    from gtd.proc import Result

    _Commit = TypeVar("_Commit")
    _Change = TypeVar("_Change")

# `git log` records: ``<RS><sha> <parents><US><subject>``, then (with
# ``--name-status -z``) ``\0\n<status>\0<path>\0`` per change.
LOG_RECORD = "\x1e"
LOG_FIELD = "\x1f"
LOG_FORMAT = f"--format={LOG_RECORD}%H %P{LOG_FIELD}%s"


class StatusEntry(NamedTuple):
    """One changed path of `git status`. ``xy`` is the two-letter code (v1 style:
    a space for "unchanged", ``??`` for untracked)."""

    xy: str
    path: str
    orig: str | None = None
    submodule: bool = False  # a submodule (its pointer or its working tree changed)

    @property
    def untracked(self) -> bool:
        return self.xy == "??"


class WorkTree(NamedTuple):
    head: str | None  # None in a repository without commits
    branch: str | None  # None when HEAD is detached
    entries: tuple[StatusEntry, ...]


class TreeEntry(NamedTuple):
    """One blob, link or submodule of a recursive `ls-tree`."""

    mode: str  # "100644", "100755", "120000" (symlink), "160000" (submodule)
    kind: str  # "blob" or "commit" (a submodule)
    oid: str


class GitObject(NamedTuple):
    """One object of a `cat-file --batch` answer."""

    oid: str
    kind: str  # "blob", "tree", "commit", "tag"
    data: bytes


class Change(NamedTuple):
    """One path that differs between two trees (`diff-tree --raw`, no renames)."""

    status: str  # "A" added, "D" deleted, "M" modified, "T" type changed
    path: str
    old_mode: str
    new_mode: str
    old_oid: str
    new_oid: str


def parse_batch(raw: bytes, count: int) -> list[GitObject | None]:
    """`cat-file --batch` output: ``<oid> <type> <size>\\n<content>\\n`` per object,
    ``<name> missing`` (or ``ambiguous``) for one that is not there."""
    out: list[GitObject | None] = []
    pos = 0
    for _ in range(count):
        end = raw.index(b"\n", pos)
        header = raw[pos:end].split(b" ")
        pos = end + 1
        if len(header) != 3 or header[-1] in (b"missing", b"ambiguous"):
            out.append(None)
            continue
        size = int(header[2])
        out.append(GitObject(header[0].decode(), header[1].decode(), raw[pos : pos + size]))
        pos += size + 1
    return out


def parse_tree(data: bytes, oid_bytes: int = 20) -> dict[str, tuple[str, str]]:
    """A raw tree object (``<mode> <name>\\0<binary id>`` entries): name → (mode, id)."""
    out: dict[str, tuple[str, str]] = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        mode = data[pos:space].decode()
        name = data[space + 1 : nul].decode("utf-8", errors="surrogateescape")
        oid = data[nul + 1 : nul + 1 + oid_bytes].hex()
        out[name] = (mode.zfill(6), oid)
        pos = nul + 1 + oid_bytes
    return out


def parse_config_list(raw: str) -> list[tuple[str, str, str | None]]:
    """`config --list --show-origin -z`: ``origin NUL key [LF value] NUL`` each."""
    fields = raw.split("\0")
    out: list[tuple[str, str, str | None]] = []
    for origin, entry in zip(fields[0::2], fields[1::2], strict=False):
        key, sep, value = entry.partition("\n")
        out.append((origin, key, value if sep else None))
    return out


def parse_worktree_list(raw: str) -> list[tuple[str, str | None, str | None]]:
    """`git worktree list --porcelain -z`: (path, HEAD, full branch name or None
    when detached) per worktree."""
    out: list[tuple[str, str | None, str | None]] = []
    path: str | None = None
    head: str | None = None
    branch: str | None = None
    for field in [*raw.split("\0"), ""]:
        if not field:
            if path is not None:
                out.append((path, head, branch))
            path = head = branch = None
            continue
        key, _, value = field.partition(" ")
        if key == "worktree":
            path = value
        elif key == "HEAD":
            head = value
        elif key == "branch":
            branch = value
    return out


def parse_ls_files_tagged(raw: str) -> tuple[list[str], list[str]]:
    """`ls-files -z -t --cached --others`: (tracked, untracked), each sorted."""
    tracked: set[str] = set()
    untracked: set[str] = set()
    for record in raw.split("\0"):
        if len(record) > 2:
            (untracked if record[0] == "?" else tracked).add(record[2:])
    return sorted(tracked), sorted(untracked)


def parse_ls_tree(raw: str) -> dict[str, TreeEntry]:
    out: dict[str, TreeEntry] = {}
    for record in raw.split("\0"):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        mode, kind, oid = meta.split(" ")
        out[path] = TreeEntry(mode, kind, oid)
    return out


def parse_raw_diff(raw: str) -> list[Change]:
    """`diff-tree -r -z --raw`: ``:<old mode> <new mode> <old> <new> <status>\\0<path>\\0``."""
    out: list[Change] = []
    fields = raw.split("\0")
    i = 0
    while i + 1 < len(fields):
        meta, path = fields[i], fields[i + 1]
        i += 2
        if not meta.startswith(":"):
            continue
        old_mode, new_mode, old_oid, new_oid, status = meta[1:].split(" ")
        out.append(Change(status[0], path, old_mode, new_mode, old_oid, new_oid))
    return out


def parse_status_v2(raw: str) -> WorkTree:
    """Parse `git status --porcelain=v2 --branch -z`."""
    head: str | None = None
    branch: str | None = None
    entries: list[StatusEntry] = []
    fields = raw.split("\0")
    i = 0
    while i < len(fields):
        rec = fields[i]
        i += 1
        if rec.startswith("# branch.oid "):
            oid = rec[len("# branch.oid ") :]
            head = None if oid == "(initial)" else oid
        elif rec.startswith("# branch.head "):
            name = rec[len("# branch.head ") :]
            branch = None if name == "(detached)" else name
        elif rec.startswith("1 "):
            parts = rec.split(" ", 8)
            entries.append(StatusEntry(_xy(parts[1]), parts[8], None, parts[2].startswith("S")))
        elif rec.startswith("2 "):
            parts = rec.split(" ", 9)
            entries.append(
                StatusEntry(_xy(parts[1]), parts[9], fields[i], parts[2].startswith("S"))
            )
            i += 1
        elif rec.startswith("u "):
            parts = rec.split(" ", 10)
            entries.append(StatusEntry(_xy(parts[1]), parts[10]))
        elif rec.startswith("? "):
            entries.append(StatusEntry("??", rec[2:]))
    return WorkTree(head, branch, tuple(entries))


def parse_log(
    raw: str,
    *,
    commit: Callable[[str, str, str | None, tuple[_Change, ...] | None], _Commit],
    change: Callable[[str, str], _Change],
    with_changes: bool = True,
) -> list[_Commit]:
    """`git log -z` with :data:`LOG_FORMAT` (and ``--name-status`` when
    ``with_changes``; without, each commit's changes are None: not read), newest
    first in, oldest first out. ``commit(sha, subject, first parent, changes)`` and
    ``change(status letter, path)`` make the caller's values directly: a long log
    is parsed once, into what the caller keeps."""
    commits: list[_Commit] = []
    for record in raw.split(LOG_RECORD):
        if not record:
            continue
        header, _, rest = record.partition(LOG_FIELD)
        subject, _, names = rest.partition("\0")
        ids = header.split()
        sha, parent = ids[0], (ids[1] if len(ids) > 1 else None)
        if not with_changes:
            commits.append(commit(sha, subject, parent, None))
            continue
        fields = names.lstrip("\n").split("\0")
        changes: list[_Change] = []
        i = 0
        while i + 1 < len(fields):
            code, path = fields[i].strip(), fields[i + 1]
            i += 2
            if code:
                changes.append(change(code[0], path))
        commits.append(commit(sha, subject, parent, tuple(changes)))
    commits.reverse()
    return commits


def log_head_is_merge(raw: str) -> bool:
    """Whether the newest commit of a :data:`LOG_FORMAT` log has several parents."""
    first = raw[1 : raw.find(LOG_FIELD)] if raw.startswith(LOG_RECORD) else ""
    return len(first.split()) > 2


def parse_line_diff(raw: str) -> tuple[list[str], list[str]]:
    """`git diff -U0` of one file: its removed and added lines, in diff order."""
    removed: list[str] = []
    added: list[str] = []
    for line in raw.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
    return removed, added


def parse_name_only_log(raw: str) -> dict[str, list[str]]:
    """`git log -z --name-only --format=%x1e%H`: each commit's sha → the paths it
    touched, exactly as named (with -z git quotes none: a space, a newline or a
    byte that is not UTF-8 stays part of the name)."""
    out: dict[str, list[str]] = {}
    for record in raw.split("\x1e"):
        sha, _, names = record.partition("\0")
        if sha.strip():
            names = names[1:] if names.startswith("\n") else names
            out[sha.strip()] = [name for name in names.split("\0") if name]
    return out


def _xy(code: str) -> str:
    # v2 writes "." for "unchanged"; StatusEntry uses a space, as v1 does.
    return code.replace(".", " ")


def failure(args: Sequence[str], result: Result) -> GitError:
    """A GitError that says what git said, and names the lock file when another
    git process (or a killed one) holds it."""
    detail = (result.stderr or result.stdout).strip().splitlines()
    lock = next((line for line in detail if ".lock'" in line and "File exists" in line), None)
    if lock is not None:
        # The quoted name ending in `.lock`, never the first one quoted: "cannot
        # lock ref 'HEAD': Unable to create '.../refs/heads/main.lock': File exists"
        # told a person to delete HEAD.
        path = next(
            (part for part in lock.split("'") if part.endswith(".lock")), lock.split("'")[1]
        )
        return GitError(
            f"git is locked: {path} exists",
            f"if no git process is running in this repository, delete {path} and retry",
        )
    last = detail[-1] if detail else f"exit {result.returncode}"
    unreadable_index = ("index file smaller than expected", "bad signature", "index file corrupt")
    damaged = next((line for line in detail if any(m in line for m in unreadable_index)), None)
    if damaged is not None:
        # "fatal: .git/index: index file smaller than expected", "error: bad signature
        # 0x00000000" then "fatal: index file corrupt": git names the file, or not.
        named = damaged.removeprefix("fatal: ").removeprefix("error: ").split(": ")[0]
        index = named if named.endswith("index") else ".git/index"
        return IndexUnreadable(index, last)
    unwritable = ("insufficient permission", "Read-only file system", "Permission denied")
    if any(marker in line for line in detail for marker in unwritable):
        return GitError(
            f"git cannot write to the repository: {last}",
            "make the repository (its .git directory) writable for this user, then run "
            "the command again; nothing was changed",
        )
    return GitError(f"git {' '.join(args[:3])} failed: {last}")
