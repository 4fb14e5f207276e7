"""The git edge: every git invocation of the helper goes through :class:`Git`, which
runs through the one subprocess seam and turns failures into GitError. Every git
command line of the helper is built here. What git prints is read by the pure
:mod:`gtd.git_parse` (status, logs, trees, diffs, ref listings, batched object
reads); the lock files a killed git child left are :mod:`gtd.git_locks`'s, the
files that stop or block git :mod:`gtd.git_blockers`'s."""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from gtd import paths, proc, processes, reading
from gtd.errors import GitBlocked, GitError, RepoError, UnaddableFiles
from gtd.git_blockers import blocking_pipes, repository_pins
from gtd.git_locks import CHILDREN_DIR, PENDING
from gtd.git_parse import (
    Change,
    GitObject,
    StatusEntry,
    TreeEntry,
    WorkTree,
    failure,
    parse_batch,
    parse_config_list,
    parse_line_diff,
    parse_ls_files_tagged,
    parse_ls_tree,
    parse_name_only_log,
    parse_raw_diff,
    parse_status_v2,
    parse_worktree_list,
)

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
# `git worktree add` and `remove` too: they lock the worktree's own index and HEAD,
# and a killed helper's `add` goes on making its checkout (gtd.auto.cycle.worktrees
# waits for it before it cleans).
_WORKTREE_WRITES = frozenset({"add", "remove"})
_SEQUENCE = itertools.count()
# The helper's own folder in the git directory: private indexes (see gtd.auto.cycle.keep).
PRIVATE_DIR = paths.PRIVATE_DIR

# GIT_FLUSH=0: into a pipe, `git log` otherwise flushes after every commit, and the
# helper pays a poll and a read for each (~10 ms over 1,000 commits).
NO_FLUSH = {"GIT_FLUSH": "0"}


class Git:
    def __init__(
        self, root: Path, *, hardened: bool = False, env: Mapping[str, str] | None = None
    ) -> None:
        self.root = root
        self.hardened = hardened
        pins = repository_pins(root) if hardened else {}
        self.env = {**(HARDENED_ENV if hardened else GIT_ENV), **pins, **(env or {})}
        self._worktree: tuple[str | None] | None = None  # worktree_id, once asked
        # What git said of objects named by their full ids (see _of_objects).
        self._read: dict[tuple[str, ...], str] = {}
        self._short: dict[str, str] = {}  # full object id → its abbreviation (short)

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
        children = self._children if _locks(args) else None
        marker: list[Path] = []
        if children is not None:
            # Noted before the child exists, with the time before it starts: a kill
            # between spawning it and naming it, or a lock it takes at once, must
            # still find the lock provably its own (see gtd.git_locks.stale_locks).
            pending = children / f"{PENDING}{os.getpid()}-{next(_SEQUENCE)}"
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
        the repository's git directory (see :func:`gtd.git_locks.stale_locks`)."""
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

    def worktrees(self) -> list[tuple[str, str | None, str | None]]:
        """(path, HEAD, branch) of every worktree of the repository, this one
        included (`git worktree list`)."""
        return parse_worktree_list(self.run("worktree", "list", "--porcelain", "-z"))

    def short(self, rev: str) -> str:
        """``rev`` abbreviated. A full object id's is asked once per instance: a
        passing cycle names its commit in the plan's tick and again in its
        answer, and the two should read alike (a git process less, too)."""
        if not _is_oid(rev):
            return self.run("rev-parse", "--short", rev).strip()
        if rev not in self._short:
            self._short[rev] = self.run("rev-parse", "--short", rev).strip()
        return self._short[rev]

    def objects(self, names: Sequence[str]) -> list[GitObject | None]:
        """Each named object (``<rev>:<path>``, an oid, a ref) with its id, kind and
        content, in one `cat-file --batch`; None for a name that does not resolve."""
        if not names:
            return []
        data = b"".join(name.encode("utf-8", "surrogateescape") + b"\n" for name in names)
        return parse_batch(self._bytes(("cat-file", "--batch"), data), len(names))

    def ls_tree(self, tree: str, paths: Sequence[str] = ()) -> dict[str, TreeEntry]:
        """Every file, link and submodule of ``tree`` (recursive), by path."""
        raw = self._of_objects((tree,), "ls-tree", "-r", "-z", "--full-tree", tree, "--", *paths)
        return parse_ls_tree(raw)

    def diff_trees(self, old: str, new: str) -> list[Change]:
        """What changed from tree ``old`` to tree ``new`` (no rename detection: a
        rename is a deletion plus an addition, which is what the ratchet judges)."""
        args = ("diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev", old, new)
        return parse_raw_diff(self._of_objects((old, new), *args))

    def _of_objects(self, names: Sequence[str], *args: str) -> str:
        """git's answer to ``args``, which read only the objects ``names``: asked
        once per instance where each is a full object id. An object never changes
        (its id is its content's hash), so the answer cannot either; a judged
        cycle lists and compares the same two trees in several steps. Only a
        hardened instance keeps answers: it reads no `git replace` object, which
        could stand in for an id between two calls."""
        if not self.hardened or not all(_is_oid(name) for name in names):
            return self.run(*args)
        if args not in self._read:
            self._read[args] = self.run(*args)
        return self._read[args]

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

    def write_objects(self, objects: Sequence[tuple[str, bytes]], algo: str) -> list[str]:
        """(kind, content) objects written loose by one `git unpack-objects`
        (gtd.git_objects; ``algo``: the repository's hash), their ids returned."""
        from gtd import git_objects

        self._bytes(("unpack-objects", "-q"), git_objects.pack(objects, algo))
        return [git_objects.object_id(kind, data, algo) for kind, data in objects]

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


GIT_TIMEOUT_VAR = "GTD_GIT_TIMEOUT_S"
_GIT_TIMEOUT_S = 1800.0  # no git call of the helper's comes near; a wait /proc cannot see does


def _is_oid(name: str) -> bool:
    """Whether ``name`` is a full object id (SHA-1 or SHA-256), not a name git
    resolves (a ref, ``HEAD``, an abbreviation)."""
    return len(name) in (40, 64) and all(c in "0123456789abcdef" for c in name)


def _locks(args: Sequence[str]) -> bool:
    """Whether git ``args`` may take a lock in the git directory (see _LOCKING)."""
    if not args:
        return False
    if args[0] == "worktree":
        return len(args) > 1 and args[1] in _WORKTREE_WRITES
    return args[0] in _LOCKING


def git_timeout() -> float:
    """How long one git call may run: ``GTD_GIT_TIMEOUT_S``, else half an hour."""
    try:
        value = float(os.environ.get(GIT_TIMEOUT_VAR) or _GIT_TIMEOUT_S)
    except ValueError:
        return _GIT_TIMEOUT_S
    return value if value > 0 else _GIT_TIMEOUT_S


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
