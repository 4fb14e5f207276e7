"""The git edge: every git invocation of the helper goes through :class:`Git`, which
runs through the one subprocess seam and turns failures into GitError."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from gtd import proc
from gtd.errors import GitError, RepoError

# Stable, parseable output whatever the user's environment says.
GIT_ENV = {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


class StatusEntry(NamedTuple):
    """One `git status --porcelain -z` record. ``xy`` is the two-letter code."""

    xy: str
    path: str
    orig: str | None = None

    @property
    def untracked(self) -> bool:
        return self.xy == "??"


class WorkTree(NamedTuple):
    head: str | None  # None in a repository without commits
    branch: str | None  # None when HEAD is detached
    entries: tuple[StatusEntry, ...]


class Git:
    def __init__(self, root: Path) -> None:
        self.root = root

    def call(
        self, *args: str, input_text: str | None = None, env: dict[str, str] | None = None
    ) -> proc.Result:
        """Run git and hand back the whole result (exit code, stdout, stderr), for
        callers whose non-zero exits are answers rather than failures. ``env`` adds
        to GIT_ENV."""
        result = proc.run(
            ["git", *args],
            self.root,
            env={**GIT_ENV, **env} if env else GIT_ENV,
            input_text=input_text,
            check_exists=False,
        )
        if result.not_found:
            raise GitError("git is not installed or not on PATH", "install git and retry")
        return result

    def run(
        self,
        *args: str,
        input_text: str | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
    ) -> str:
        """git's stdout; a non-zero exit is a GitError (unless ``check`` is off)."""
        result = self.call(*args, input_text=input_text, env=env)
        if check and result.returncode != 0:
            detail = (result.stderr or result.stdout).strip().splitlines()
            raise GitError(
                f"git {' '.join(args[:3])} failed: {detail[-1] if detail else result.returncode}"
            )
        return result.stdout

    def ok(self, *args: str) -> bool:
        return self.call(*args).returncode == 0

    # -- reads ---------------------------------------------------------------------

    def head(self) -> str | None:
        return self.call("rev-parse", "--verify", "-q", "HEAD").stdout.strip() or None

    def branch(self) -> str | None:
        return self.call("symbolic-ref", "-q", "--short", "HEAD").stdout.strip() or None

    def status(self) -> list[StatusEntry]:
        """Tracked changes and untracked (not ignored) files, one call."""
        raw = self.run("status", "--porcelain=v1", "-z", "--untracked-files=all")
        return parse_status(raw)

    def state(self) -> WorkTree:
        """HEAD, branch and every change in ONE git call (porcelain v2 with headers):
        `cycle begin` runs every tick and needs all three."""
        raw = self.run("status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all")
        return parse_status_v2(raw)

    def untracked(self) -> set[str]:
        """Untracked, not ignored files (one path each, as `status -uall` lists
        them): cheaper than a whole status, which also compares tracked files."""
        raw = self.run("ls-files", "--others", "--exclude-standard", "-z")
        return {p for p in raw.split("\0") if p}

    def short(self, rev: str) -> str:
        return self.run("rev-parse", "--short", rev).strip()

    # -- writes --------------------------------------------------------------------

    def commit_all(self, message: str, paths: list[str] | None = None) -> str:
        """Stage ``paths`` (everything when None) and commit; return the new HEAD."""
        if paths is None:
            self.run("add", "-A")
        else:
            self.run("add", "-A", "--", *paths)
        self.run("commit", "-q", "--no-verify", "-F", "-", input_text=message)
        head = self.head()
        if head is None:  # pragma: no cover - git just made a commit
            raise GitError("commit succeeded but HEAD is unreadable")
        return head


def parse_status(raw: str) -> list[StatusEntry]:
    entries: list[StatusEntry] = []
    fields = raw.split("\0")
    i = 0
    while i < len(fields):
        rec = fields[i]
        i += 1
        if len(rec) < 4:
            continue
        xy, path = rec[:2], rec[3:]
        orig = None
        if "R" in xy or "C" in xy:
            orig = fields[i]
            i += 1
        entries.append(StatusEntry(xy, path, orig))
    return entries


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
    res = proc.run(["git", "rev-parse", "--show-toplevel"], cwd, env=GIT_ENV, check_exists=False)
    if res.not_found:
        raise GitError("git is not installed or not on PATH", "install git and retry")
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
            entries.append(StatusEntry(_xy(parts[1]), parts[8]))
        elif rec.startswith("2 "):
            parts = rec.split(" ", 9)
            entries.append(StatusEntry(_xy(parts[1]), parts[9], fields[i]))
            i += 1
        elif rec.startswith("u "):
            parts = rec.split(" ", 10)
            entries.append(StatusEntry(_xy(parts[1]), parts[10]))
        elif rec.startswith("? "):
            entries.append(StatusEntry("??", rec[2:]))
    return WorkTree(head, branch, tuple(entries))


def _xy(code: str) -> str:
    # v2 writes "." for "unchanged"; v1 (and StatusEntry) use a space.
    return code.replace(".", " ")


def sweep_created(git: Git, root: Path, before: set[str]) -> list[str]:
    """Remove the untracked files that appeared since ``before`` (from
    :meth:`Git.untracked`) was read: what a test command left in the tree (build
    output, caches a repository does not ignore) is neither the agent's work nor
    the human's, and must not be committed with the cycle or make the next tick
    answer `dirty`."""
    created = sorted(git.untracked() - before)
    for rel in created:
        remove_created(root, rel)
    return created


def remove_created(root: Path, rel: str) -> None:
    """Delete a file the cycle created, then any directories it left empty."""
    target = root / rel
    if target.is_symlink() or target.is_file():
        target.unlink()
    parent = target.parent
    while parent != root and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent
