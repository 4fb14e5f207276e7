"""The git edge: every git invocation of the helper goes through :class:`Git`, which
runs through the one subprocess seam and turns failures into GitError. All parsing
of git's output lives here too: status (porcelain v2, the one status parser), logs,
trees, diffs, ref listings and batched object reads."""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from gtd import paths, proc, processes, reading
from gtd.errors import GitBlocked, GitError, IndexUnreadable, RepoError, UnaddableFiles
from gtd.tuples import NamedTuple

TYPE_CHECKING = False  # typing's own to the type checker (see gtd.hints)
if TYPE_CHECKING:
    from typing import TypeVar

    _Commit = TypeVar("_Commit")
    _Change = TypeVar("_Change")

# Stable, parseable output whatever the user's environment says.
GIT_ENV = {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}

# Auto mode's own plumbing runs with the repository's fsmonitor and hooks switched
# off: both are programs named in .git/config or .git/hooks, which an agent working
# in the repository can write, and a lying fsmonitor would hide changes from
# `status` and `add`. (Cycle commits are made with commit-tree, which never ran
# hooks; `commit.hooks: run` runs the pre-commit hook deliberately, see gtd.auto.)
HARDENED_ENV = {
    **GIT_ENV,
    "GIT_CONFIG_COUNT": "3",
    "GIT_CONFIG_KEY_0": "core.fsmonitor",
    "GIT_CONFIG_VALUE_0": "false",
    "GIT_CONFIG_KEY_1": "core.hooksPath",
    "GIT_CONFIG_VALUE_1": os.devnull,
    "GIT_CONFIG_KEY_2": "core.bare",
    "GIT_CONFIG_VALUE_2": "false",
    # `git replace` would make git read an object of the agent's in place of the
    # base commit (or any other): the helper reads the objects as they are.
    "GIT_NO_REPLACE_OBJECTS": "1",
}

EMPTY_TREE_SHA1 = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

# git commands that take a lock in the git directory (index, HEAD, a ref).
_LOCKING = frozenset(
    {
        "add",
        "read-tree",
        "write-tree",
        "update-index",
        "reset",
        "checkout-index",
        "checkout",
        "commit",
        "update-ref",
        "symbolic-ref",
    }
)
CHILDREN_DIR = "gtd-children"
_PENDING = "pending-"  # a note made before its git child started: pending-<helper pid>-<n>
_SEQUENCE = itertools.count()
_CLOCK_SLACK_NS = 50_000_000
# How far a note's change time may lie after the start it records: the note is
# renamed for its child once that runs, which a loaded machine may delay.
_NOTE_SLACK_NS = 2_000_000_000
# The helper's own folder in the git directory: private indexes (see gtd.auto.cycle.keep).
PRIVATE_DIR = paths.PRIVATE_DIR

# `git log` records: ``<RS><sha> <parents><US><subject>``, then (with
# ``--name-status -z``) ``\0\n<status>\0<path>\0`` per change.
LOG_RECORD = "\x1e"
LOG_FIELD = "\x1f"
LOG_FORMAT = f"--format={LOG_RECORD}%H %P{LOG_FIELD}%s"
# GIT_FLUSH=0: into a pipe, `git log` otherwise flushes after every commit, and the
# helper pays a poll and a read for each (~10 ms over 1,000 commits).
NO_FLUSH = {"GIT_FLUSH": "0"}


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


class Git:
    def __init__(
        self, root: Path, *, hardened: bool = False, env: Mapping[str, str] | None = None
    ) -> None:
        self.root = root
        self.hardened = hardened
        pins = repository_pins(root) if hardened else {}
        self.env = {**(HARDENED_ENV if hardened else GIT_ENV), **pins, **(env or {})}
        self._worktree: tuple[str | None] | None = None  # worktree_id, once asked

    def without_outside_config(self) -> Git:
        """This repository's git reading its own configuration only: the global and
        system files are left out (the identity they gave is kept for commits)."""
        identity: dict[str, str] = {}
        for role in ("AUTHOR", "COMMITTER"):
            ident = self.call("var", f"GIT_{role}_IDENT").stdout.strip()
            name, sep, rest = ident.partition(" <")
            if sep and ">" in rest:
                identity[f"GIT_{role}_NAME"] = name
                identity[f"GIT_{role}_EMAIL"] = rest.split(">", 1)[0]
        neutral = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", **identity}
        return Git(self.root, hardened=self.hardened, env={**self.env, **neutral})

    def call(
        self,
        *args: str,
        input_text: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float | None = None,
    ) -> proc.Result:
        """Run git and hand back the whole result (exit code, stdout, stderr), for
        callers whose non-zero exits are answers rather than failures. ``env`` adds
        to this instance's environment. ``timeout``: the caller's own bound (a hook
        that git runs, a quick probe), whose overrun is an answer too
        (``result.timed_out``), not the GitError of git's own bound."""
        children = self._children if args and args[0] in _LOCKING else None
        marker: list[Path] = []
        if children is not None:
            # Noted before the child exists, with the time before it starts: a kill
            # between spawning it and naming it, or a lock it takes at once, must
            # still find the lock provably its own (see stale_locks).
            pending = children / f"{_PENDING}{os.getpid()}-{next(_SEQUENCE)}"
            with contextlib.suppress(OSError):
                children.mkdir(exist_ok=True)
                pending.write_text(f"{time.time_ns()}\n")
                marker.append(pending)

        def started(pid: int) -> None:
            if marker:
                named = children / str(pid) if children is not None else marker[0]
                with contextlib.suppress(OSError):
                    os.replace(marker[0], named)
                    marker[0] = named

        try:
            result = proc.run(
                ["git", *args],
                cwd or self.root,
                env={**self.env, **env} if env else self.env,
                input_text=input_text,
                check_exists=False,
                names=True,  # paths in, paths out: byte for byte, UTF-8 or not
                started=started if children is not None else None,
                timeout=git_timeout() if timeout is None else timeout,
                stuck=processes.pipe_wait,
            )
        finally:
            for path in marker:
                with contextlib.suppress(OSError):
                    path.unlink()
        if timeout is not None and result.timed_out:
            return result
        return _checked(self.root, args, result)

    @property
    def _children(self) -> Path | None:
        """Where a hardened instance notes each git child that may take a lock in
        the repository's git directory (see :func:`stale_locks`)."""
        if not self.hardened:
            return None
        dot = self.root / ".git"
        return dot / CHILDREN_DIR if dot.is_dir() else None

    def run(
        self,
        *args: str,
        input_text: str | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        cwd: Path | None = None,
    ) -> str:
        """git's stdout; a non-zero exit is a GitError (unless ``check`` is off)."""
        result = self.call(*args, input_text=input_text, env=env, cwd=cwd)
        if check and result.returncode != 0:
            raise failure(args, result)
        return result.stdout

    def ok(self, *args: str) -> bool:
        return self.call(*args).returncode == 0

    # -- reads ---------------------------------------------------------------------

    def head(self) -> str | None:
        return self.call("rev-parse", "--verify", "-q", "HEAD").stdout.strip() or None

    def head_tree(self) -> tuple[str, str] | None:
        """HEAD and its tree, in one call; None while HEAD has no commit."""
        result = self.call("rev-parse", "HEAD", "HEAD^{tree}", "--")
        names = result.stdout.split()[:2]  # then the "--" it echoes
        if result.returncode != 0 or len(names) != 2:
            return None
        return names[0], names[1]

    def branch(self) -> str | None:
        return self.call("symbolic-ref", "-q", "--short", "HEAD").stdout.strip() or None

    def rev(self, name: str) -> str | None:
        """The object ``name`` names, or None when there is none."""
        return self.call("rev-parse", "--verify", "-q", name).stdout.strip() or None

    def status(self) -> list[StatusEntry]:
        """Tracked changes and untracked (not ignored) files, one call."""
        return list(self.state().entries)

    def state(self) -> WorkTree:
        """HEAD, branch and every change in ONE git call (porcelain v2 with headers):
        `cycle begin` runs every tick and needs all three."""
        raw = self.run("status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all")
        return parse_status_v2(raw)

    def empty_dirs(self) -> set[str]:
        """Untracked directories that hold no file at any depth (not ignored), as
        git lists them (the outermost such directory). Git never records them, so
        only a listing made earlier says whether a cycle made one."""
        raw = self.run("ls-files", "-z", "--others", "--directory", "--exclude-standard")
        return {
            rel.rstrip("/")
            for rel in raw.split("\0")
            if rel.endswith("/") and not _holds_files(self.root / rel)
        }

    def ignored(self) -> list[str]:
        """The untracked files git ignores now, sorted; a folder it ignores whole as
        ``folder/`` (not its files: a virtualenv is one entry)."""
        raw = self.run(
            "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"
        )
        return sorted(p for p in raw.split("\0") if p)

    def listing(self) -> tuple[list[str], list[str]]:
        """Tracked files and the untracked ones git does not ignore (each sorted),
        in ONE call (``-t`` tags each: ``?`` untracked, a letter otherwise)."""
        out = self.run("ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard")
        return parse_ls_files_tagged(out)

    def changes(self) -> list[StatusEntry]:
        """Every change against HEAD, tracked and untracked (not ignored), with no
        rename detection (a rename is a deletion and an addition): one call."""
        raw = self.run("status", "--porcelain=v2", "-z", "--untracked-files=all", "--no-renames")
        return list(parse_status_v2(raw).entries)

    def refs(self, *patterns: str, check: bool = True) -> list[str]:
        """The full names of the refs matching ``patterns``. Without ``check``, a
        failing `for-each-ref` answers no refs."""
        out = self.run("for-each-ref", "--format=%(refname)", *patterns, check=check)
        return out.split()

    def touched(self, commits: Sequence[str]) -> dict[str, list[str]]:
        """The paths each of ``commits`` (full ids) changed against its first
        parent, in one `git log --no-walk`."""
        if not commits:
            return {}
        raw = self.run(
            "log", "--no-walk=unsorted", "-z", "--name-only", "--format=%x1e%H", *commits
        )
        return parse_name_only_log(raw)

    def line_diff(self, old: str, new: str, path: str) -> tuple[list[str], list[str]]:
        """The lines of ``path`` removed and added from ``old`` to ``new``."""
        return parse_line_diff(self.run("diff", "-U0", "--no-color", old, new, "--", path))

    def short(self, rev: str) -> str:
        return self.run("rev-parse", "--short", rev).strip()

    def objects(self, names: Sequence[str]) -> list[GitObject | None]:
        """Each named object (``<rev>:<path>``, an oid, a ref) with its id, kind and
        content, in one `cat-file --batch`; None for a name that does not resolve."""
        if not names:
            return []
        data = b"".join(name.encode("utf-8", "surrogateescape") + b"\n" for name in names)
        return parse_batch(self._bytes(("cat-file", "--batch"), data), len(names))

    def ls_tree(self, tree: str, paths: Sequence[str] = ()) -> dict[str, TreeEntry]:
        """Every file, link and submodule of ``tree`` (recursive), by path."""
        raw = self.run("ls-tree", "-r", "-z", "--full-tree", tree, "--", *paths)
        return parse_ls_tree(raw)

    def diff_trees(self, old: str, new: str) -> list[Change]:
        """What changed from tree ``old`` to tree ``new`` (no rename detection: a
        rename is a deletion plus an addition, which is what the ratchet judges)."""
        raw = self.run("diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev", old, new)
        return parse_raw_diff(raw)

    def config_value(self, key: str) -> str | None:
        result = self.call("config", "--get", key)
        return result.stdout.strip() if result.returncode == 0 else None

    def config_entries(self) -> list[tuple[str, str, str | None]]:
        """Every configuration entry git reads here, includes followed: (origin,
        key, value or None for a bare key), in git's order."""
        result = self.call("config", "--list", "--show-origin", "-z")
        return parse_config_list(result.stdout) if result.returncode == 0 else []

    def git_dir(self) -> Path:
        """The repository's git directory (``.git``, or where a worktree's file
        points)."""
        dot = self.root / ".git"
        if dot.is_dir() and "GIT_DIR" not in os.environ:
            return dot
        out = self.run("rev-parse", "--absolute-git-dir").strip()
        return Path(out)

    def worktree_id(self) -> str | None:
        """The id git gave this linked worktree (its git directory is
        ``<common>/worktrees/<id>``); None in the main work tree, and in a
        repository whose ``.git`` file points anywhere else (a submodule, a
        separate git directory), which has refs of its own."""
        if self._worktree is None:
            found = None
            if not (self.root / ".git").is_dir() or "GIT_DIR" in os.environ:
                git_dir = self.git_dir()  # (the main work tree needs no git process)
                if git_dir.parent.name == "worktrees" and (git_dir / "commondir").is_file():
                    found = git_dir.name
            self._worktree = (found,)
        return self._worktree[0]

    def common_dir(self) -> Path:
        """Where git keeps the config, hooks, ``info/``, refs and objects: the git
        directory itself, or, in a linked worktree (whose git directory is
        ``<common>/worktrees/<id>``), the main repository's."""
        dot = self.root / ".git"
        if dot.is_dir() and "GIT_DIR" not in os.environ:
            return dot
        out = self.run("rev-parse", "--git-common-dir").strip()
        return Path(os.path.normpath(self.root / out))

    # -- writes (plumbing) ---------------------------------------------------------

    def write_blob(self, data: bytes) -> str:
        return self._bytes(("hash-object", "-w", "--stdin"), data).decode("ascii").strip()

    def write_blob_files(self, paths: Sequence[str]) -> list[str]:
        """The blobs of these files' bytes as they are (no attribute filter), in
        one git process; git reads each file itself, streaming a large one.
        Absolute paths, none with a line break (the list is one path a line);
        regular files only: git would wait on a named pipe, and then this raises
        GitBlocked."""
        if not paths:
            return []
        data = b"".join(os.fsencode(path) + b"\n" for path in paths)
        args = ("hash-object", "-w", "--no-filters", "--stdin-paths")
        return self._oids(args, data, len(paths))

    def pack_blobs(self, contents: Sequence[bytes], marks: Path) -> list[str]:
        """Blobs of ``contents``, written by one `git fast-import` into one pack:
        a loose object each costs a file of its own (~3 ms apiece on a slow disk,
        where a pack of thousands takes well under a second). ``marks``: a scratch
        file fast-import lists the ids in."""
        if not contents:
            return []
        stream = [b"feature done\n"]
        for mark, content in enumerate(contents, 1):
            stream.append(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(content), content))
        stream.append(b"done\n")
        args = ("fast-import", "--quiet", f"--export-marks={marks}")
        try:
            self._bytes(args, b"".join(stream))
            listed = dict(line.split(" ", 1) for line in marks.read_text("ascii").splitlines())
        finally:
            marks.unlink(missing_ok=True)
        oids = [listed.get(f":{mark}", "").strip() for mark in range(1, len(contents) + 1)]
        if not all(oids):
            raise GitError(f"`git fast-import` listed {len(listed)} ids for {len(contents)} blobs")
        return oids

    def _oids(self, args: Sequence[str], data: bytes, count: int) -> list[str]:
        oids = self._bytes(args, data).decode("ascii").split()
        if len(oids) != count:
            raise GitError(f"`git {args[0]}` gave {len(oids)} ids for {count} files")
        return oids

    def _bytes(self, args: Sequence[str], data: bytes) -> bytes:
        """git with ``data`` on stdin and its stdout as bytes (object contents)."""
        result = proc.run(
            ["git", *args],
            self.root,
            env=self.env,
            input_bytes=data,
            check_exists=False,
            binary=True,
            timeout=git_timeout(),
            stuck=processes.pipe_wait,
        )
        if _checked(self.root, args, result).returncode != 0:
            raise failure(args, result)
        return result.stdout_bytes

    def make_tree(self, entries: Iterable[tuple[str, str, str, str]]) -> str:
        """A tree object of (mode, kind, oid, name) entries (names without '/')."""
        text = "".join(f"{m} {k} {o}\t{n}\0" for m, k, o, n in entries)
        return self.run("mktree", "-z", input_text=text).strip()

    def commit_tree(
        self, tree: str, parents: Sequence[str], message: str, *, sign: bool = False
    ) -> str:
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        if sign:
            args.append("-S")
        return self.run(*args, input_text=message).strip()

    def symbolic(self, ref: str) -> bool:
        """Whether ``ref`` is a symbolic ref (a link to another ref)."""
        return self.call("symbolic-ref", "-q", ref).returncode == 0

    def update_refs(self, updates: Sequence[tuple[str, str | None, str | None]]) -> None:
        """Move refs in one transaction, all or none: (ref, new or None to delete,
        expected old value: an oid, "" for "must not exist", None for "any").

        Each ref named is written or deleted itself, never through a symbolic ref:
        an agent can make any ref (the cycle's branch, a kept ref, refs/gtd/*) a
        link to another branch, and git would otherwise move or delete that branch
        instead. The expected old value is still compared with what the link leads
        to; the link is replaced by a plain ref."""
        lines: list[str] = ["start"]
        for ref, new, old in updates:
            if new is None:
                lines.append(f"delete {ref}" + (f" {old}" if old else ""))
            elif old is None:
                lines.append(f"update {ref} {new}")
            else:
                lines.append(f"update {ref} {new} {old or '0' * len(new)}")
        lines += ["prepare", "commit"]
        self.run("update-ref", "--no-deref", "--stdin", input_text="\n".join(lines) + "\n")

    def worktree_tree(self, index: Path, head: str | None) -> str:
        """The tree git would commit from the working tree now on top of ``head``
        (the caller has read it; None: no commit yet): tracked files as they are
        plus untracked ones it does not ignore. Built in the private index
        ``index`` (kept between calls, so only changed files are hashed again); the
        real index and HEAD are never touched."""
        env = {"GIT_INDEX_FILE": str(index)}
        if head is not None:
            self.run("read-tree", "--reset", head, env=env)
        else:
            self.run("read-tree", "--empty", env=env)
        unadded = self.add_all(env)
        if unadded:
            raise UnaddableFiles(unadded)
        if head is not None:
            self._leave_out_private(env, head)
        return self.run("write-tree", env=env).strip()

    def add_all(self, env: Mapping[str, str]) -> list[str]:
        """`git add -A --ignore-errors` in the index ``env`` names: all it can add
        is added. Returns the paths it could not (a named pipe where a file was, a
        file it may not read), which keep their old entries in that index; git
        exits 1 for them, and a revert that stopped there would stop every later
        one too."""
        result = self.call("add", "-A", "--ignore-errors", env=env)
        if result.returncode == 0:
            return []
        # Everything else was just added: what still differs (once the stat data of
        # files left as they were is refreshed) is what git could not.
        self.call("update-index", "-q", "--refresh", env=env)
        left = [p for p in self.run("diff-files", "--name-only", "-z", env=env).split("\0") if p]
        if not left:
            raise failure(("add", "-A", "--ignore-errors"), result)
        return left

    def _leave_out_private(self, env: Mapping[str, str], head: str) -> None:
        """The helper's own files that ``head`` does not track are never part of the
        tree: un-ignored by a `.gitignore` negation, they would be committed, and
        every later cycle would rewrite them (a tree that is never clean again)."""
        out = self.run(
            "diff-index", "--cached", "--name-only", "--diff-filter=A", "-z", head,
            "--", paths.STATE_DIR + "/", env=env,
        )  # fmt: skip
        added = [p for p in out.split("\0") if p and paths.is_private(p)]
        if added:
            self.run(
                "update-index", "-z", "--force-remove", "--stdin",
                input_text="\0".join(added) + "\0", env=env,
            )  # fmt: skip


def repository_pins(root: Path) -> dict[str, str]:
    """Files of the git directory that would stop auto mode's git, pinned away: a
    ``shallow`` file git cannot parse stops every git command that reads a commit
    (``fatal: bad shallow line``), so the helper could not even read its sealed
    state to put the file back (gtd.auto.cycle.seals does, at `end`). git is then
    told there is none (auto mode walks no history)."""
    if "GIT_DIR" in os.environ or "GIT_SHALLOW_FILE" in os.environ:
        return {}
    shallow = root / ".git" / "shallow"
    if not os.path.lexists(shallow):
        return {}
    try:
        lines = reading.read_bytes(shallow).split(b"\n")
    except OSError:  # a pipe, a folder: git could not read it either
        lines = [b"?"]
    if all(_is_oid(line) for line in lines if line):
        return {}
    return {"GIT_SHALLOW_FILE": os.devnull}


def _is_oid(line: bytes) -> bool:
    return len(line) in (40, 64) and all(c in b"0123456789abcdef" for c in line)


def stale_locks(git_dir: Path) -> list[Path]:
    """Remove the lock files that a git child of this helper left when it was killed,
    and only those: a child is known by the note made when it started (its pid, its
    start time); once that process is gone, a lock file in the git directory made
    after it started is its. Returns what was removed."""
    children = git_dir / CHILDREN_DIR
    try:
        notes = list(os.scandir(children))
    except OSError:
        return []
    dead_since: list[int] = []
    for note in notes:
        owner = _note_owner(note.name)
        if owner is None:
            continue
        if processes.alive(owner):
            continue  # still running: its locks are live
        try:
            # The note's own change time bounds the start it claims: the helper
            # writes a note just before its child starts, and a note written
            # later (by an agent, claiming time 0) cannot set that time back.
            made = note.stat(follow_symlinks=False).st_ctime_ns
            # gtd.reading's read: a note made a named pipe is no wait
            claimed = int(reading.read_bytes(Path(note.path)).strip() or 0)
        except (OSError, ValueError):
            claimed = made = time.time_ns()
        dead_since.append(max(claimed, made - _NOTE_SLACK_NS))
        with contextlib.suppress(OSError):
            os.unlink(note.path)
    if not dead_since:
        return []
    # File times come from the kernel's coarse clock, which may read a few
    # milliseconds behind the time the note took just before the child started.
    oldest = min(dead_since) - _CLOCK_SLACK_NS
    removed: list[Path] = []
    candidates = [git_dir / "index.lock", git_dir / "HEAD.lock", git_dir / "packed-refs.lock"]
    # refs/, and the helper's private indexes (the revert's keep.index in gtd/).
    for folder in ("refs", PRIVATE_DIR):
        for parent, _dirs, names in reading.walk(git_dir / folder):
            candidates.extend(Path(parent) / n for n in names if n.endswith(".lock"))
    stale = []
    for lock in candidates:
        try:
            if lock.stat().st_mtime_ns >= oldest:
                stale.append(lock)
        except OSError:
            continue
    held = processes.held_open(str(lock) for lock in stale) if stale else set()
    for lock in stale:
        if os.path.realpath(lock) in held:
            continue  # a running git's (a person's): never ours to remove
        with contextlib.suppress(OSError):
            lock.unlink()
            removed.append(lock)
    return removed


def _note_owner(name: str) -> int | None:
    """The process a child note stands for: the git child itself, or for a note
    made before the child had a name, the helper that made it (its death means
    the child, if it ever ran, is its orphan)."""
    if name.isdigit():
        return int(name)
    if name.startswith(_PENDING):
        try:
            return int(name[len(_PENDING) :].split("-", maxsplit=1)[0])
        except ValueError:
            return None
    return None


def children_running(git_dir: Path) -> bool:
    """Whether a git child some helper noted (see :func:`stale_locks`) may still
    be running: a lock file it could hold is then not provably dead."""
    try:
        notes = list(os.scandir(git_dir / CHILDREN_DIR))
    except OSError:
        return False
    owners = (_note_owner(note.name) for note in notes)
    return any(owner is not None and processes.alive(owner) for owner in owners)


GIT_TIMEOUT_VAR = "GTD_GIT_TIMEOUT_S"
_GIT_TIMEOUT_S = 1800.0  # no git call of the helper's comes near; a wait /proc cannot see does


def git_timeout() -> float:
    """How long one git call may run: ``GTD_GIT_TIMEOUT_S``, else half an hour."""
    try:
        value = float(os.environ.get(GIT_TIMEOUT_VAR) or _GIT_TIMEOUT_S)
    except ValueError:
        return _GIT_TIMEOUT_S
    return value if value > 0 else _GIT_TIMEOUT_S


# The files git opens in every folder it walks (a named pipe in one's place blocks it).
_READ_IN_TREE = frozenset({".gitignore", ".gitattributes", ".gitmodules", ".mailmap"})


def _checked(root: Path, args: Sequence[str], result: proc.Result) -> proc.Result:
    """``result``, unless git could not run, waited on a named pipe or overran."""
    if result.not_found:
        raise GitError("git is not installed or not on PATH", "install git and retry")
    if result.stuck is not None:
        raise GitBlocked(args[0], blocking_pipes(root, result.stuck))
    if result.timed_out:
        raise GitError(
            f"`git {args[0]}` ran for {git_timeout():g} s and was stopped",
            f"set {GIT_TIMEOUT_VAR} to allow it longer (seconds)",
        )
    return result


def blocking_pipes(root: Path, seen: Iterable[str] = ()) -> list[str]:
    """The named pipes git may have waited on (absolute paths): those it had open
    (``seen``), those in the work tree where git reads a file, and any in the git
    directory (its refs, `info/`, `objects/info/alternates`; not the objects
    themselves, which git writes). Only looked for once git has waited: a walk of
    the whole tree."""
    found = dict.fromkeys(seen)
    for folder, dirs, files in reading.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]  # the repository's, a nested one's
        for name in files:
            path = os.path.join(folder, name)
            if name in _READ_IN_TREE and reading.is_pipe(path):
                found[path] = None
    for folder, dirs, files in reading.walk(root / ".git"):
        if os.path.basename(folder) == "objects":
            dirs[:] = [d for d in dirs if d == "info"]
        for name in files:
            path = os.path.join(folder, name)
            if reading.is_pipe(path):
                found[path] = None
    return list(found)


def failure(args: Sequence[str], result: proc.Result) -> GitError:
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


def is_top_level(cwd: Path) -> bool:
    """Whether ``cwd`` is a repository's top level without asking git: it holds
    ``.git`` (a directory, or a file in a worktree or submodule) and GIT_DIR or
    GIT_WORK_TREE do not say the repository is elsewhere."""
    return (cwd / ".git").exists() and not {"GIT_DIR", "GIT_WORK_TREE"} & os.environ.keys()


def repo_root(cwd: Path) -> Path:
    """The repository root, refusing anything but an invocation from the root itself
    (relative paths in PLAN.md and config are root-relative). Git is asked only
    when :func:`is_top_level` cannot tell: one process fewer on every tick."""
    if is_top_level(cwd):
        return cwd
    res = _checked(
        cwd,
        ("rev-parse",),
        proc.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd,
            env=GIT_ENV,
            check_exists=False,
            names=True,
            timeout=git_timeout(),
            stuck=processes.pipe_wait,
        ),
    )
    if res.returncode != 0:
        raise RepoError(f"{cwd}: not a git repository", "run gtd from the root of a git repository")
    top = Path(res.stdout.strip())
    if os.path.realpath(top) != os.path.realpath(cwd):
        raise RepoError(
            f"{cwd}: not the repository root ({top})", f"cd {top} and run the command there"
        )
    return top


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


def _holds_files(path: Path) -> bool:
    """Whether a file, link or anything but a directory lies below ``path`` (a
    stack, not recursion: see reading.walk)."""
    stack = [str(path)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if not entry.is_dir(follow_symlinks=False):
                        return True
                    stack.append(entry.path)
        except OSError:
            return True  # unreadable: treat as holding something, never remove it
    return False


def remove_empty_tree(path: Path) -> bool:
    """Remove ``path`` and the directories below it when none of them holds a
    file; True when it is gone."""
    if _holds_files(path):
        return False
    for folder in reversed([f for f, _dirs, _files in reading.walk(path)]):
        os.rmdir(folder)
    return True
