"""The edge's reads: the folded commit range and the working-tree snapshot
(docs/step-mode.md, "How it is built": git reads are few and batched).

One gather costs a fixed handful of git calls whatever the history's length: HEAD
is read from the git directory (``symbolic-ref`` only when that layout is not the
plain one), one ``for-each-ref`` for the default-branch candidates, ONE ``git log
--first-parent`` of subjects over ``<default>..HEAD``, one ``git log -n <count>
--name-status`` for the change lists of the newest commits the folds read
(:func:`gtd.step.machine.changes_wanted`; the older ones stay None, and are read on
demand should a fold reach them) and ONE ``git status --porcelain=v2 -z`` (again
only when a file lands mid-read: :func:`read_tree`); the steering files are read
from disk — and, only while the tree has pending changes (a turn to capture),
TODO.md and REVIEW.md are checked against their formats with
:func:`gtd.steering.check`, imported then and only then. Its cost grows with the
commits since the merge base, never with the whole history (except when there is
no default branch to measure from — the documented whole-history fallback).

git's output is parsed by :mod:`gtd.git` (log records, status entries, line
diffs); this module turns them into the pure core's values.
"""

from __future__ import annotations

import os
from pathlib import Path

from gtd import proc
from gtd.errors import GitError, RepoError
from gtd.git import NO_FLUSH, Git
from gtd.git_parse import LOG_FORMAT, StatusEntry, log_head_is_merge
from gtd.git_parse import parse_log as parse_git_log
from gtd.step.errors import StepError
from gtd.step.events import (
    Change,
    ChangeStatus,
    Commit,
    FormatFinding,
    LineDiff,
    Snapshot,
    WorkingTree,
)
from gtd.step.machine import changes_wanted
from gtd.step.review_diff import needs_review_diff
from gtd.step.steering import (
    FEEDBACK,
    GTD_DIR,
    REVIEW,
    SQUASH_MSG,
    STEERING_FILES,
    TODO,
    is_private,
    packages_from_paths,
)

__all__ = [
    "CHECKED_FILES",
    "DEFAULT_BRANCH_CANDIDATES",
    "Snapshot",
    "changes_from_status",
    "format_findings",
    "gather",
    "parse_log",
    "read_changes",
    "read_commits",
    "read_file",
    "read_tree",
]

# In order of preference (docs/step-mode.md, "How it is built").
DEFAULT_BRANCH_CANDIDATES: tuple[str, ...] = (
    "refs/remotes/origin/HEAD",
    "refs/heads/main",
    "refs/heads/master",
)
# The steering files with a checked format (gtd.steering.KIND_BY_NAME).
CHECKED_FILES: tuple[str, ...] = (TODO, REVIEW)


def _head_text(root: Path) -> str | None:
    """The content of HEAD read from the git directory (no subprocess), or None
    when the layout is not the plain one (the caller then asks git)."""
    dot_git = root / ".git"
    try:
        if dot_git.is_file():
            line = dot_git.read_text(encoding="utf-8").strip()
            if not line.startswith("gitdir:"):
                return None
            git_dir = Path(line.removeprefix("gitdir:").strip())
            dot_git = git_dir if git_dir.is_absolute() else root / git_dir
        return (dot_git / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None


def ensure_attached(git: Git) -> None:
    """Refuse a detached HEAD: commits made there are lost at the next checkout, and
    a squash would rewrite a history no branch points at."""
    text = _head_text(git.root)
    attached = text.startswith("ref:") if text else git.ok("symbolic-ref", "-q", "HEAD")
    if not attached:
        raise RepoError(
            "HEAD is detached — gtd folds a branch's history; check out a branch first "
            "(git switch <branch>, or git switch -c <new-branch> to keep these commits)"
        )


def default_branch(git: Git) -> str | None:
    """``origin/HEAD``, else ``main``, else ``master`` — whichever exists first."""
    found = set(git.refs(*DEFAULT_BRANCH_CANDIDATES, check=False))
    return next((ref for ref in DEFAULT_BRANCH_CANDIDATES if ref in found), None)


def _change(letter: str, path: str) -> Change:
    status: ChangeStatus = "A" if letter == "A" else "D" if letter == "D" else "M"
    return Change(status, path)


def parse_log(raw: str, *, with_changes: bool = True) -> list[Commit]:
    """A :data:`gtd.git_parse.LOG_FORMAT` log (``--name-status`` when ``with_changes``;
    without, each commit's ``changes`` is None: not read) as the core's commits,
    oldest first. A type change is a modification."""
    return parse_git_log(raw, commit=Commit, change=_change, with_changes=with_changes)


def _review_line_diff(git: Git, commit: Commit) -> LineDiff:
    if commit.parent is None:
        return LineDiff()
    removed, added = git.line_diff(commit.parent, commit.sha, REVIEW)
    return LineDiff(tuple(removed), tuple(added))


def _log(git: Git, rev: str, *options: str, changes: bool = True) -> proc.Result:
    args = ["log", "--first-parent", "--no-renames"]
    if changes:
        args.append("--name-status")
    return git.call(*args, "-z", LOG_FORMAT, *options, rev, env=NO_FLUSH)


def _log_failed(result: proc.Result) -> GitError:
    detail = (result.stderr.strip().splitlines() or ["git log failed"])[-1]
    return GitError(f"git log failed: {detail}")


def read_changes(git: Git, commits: tuple[Commit, ...], count: int) -> tuple[Commit, ...]:
    """``commits`` (a first-parent chain, oldest first) with the change lists of the
    newest ``count`` read: one ``git log --name-status -n <count>`` from the newest
    commit when any of them is missing, none otherwise."""
    start = max(0, len(commits) - count)
    if all(c.changes is not None for c in commits[start:]):
        return commits
    result = _log(git, commits[-1].sha, f"--max-count={len(commits) - start}")
    if result.returncode != 0:
        raise _log_failed(result)
    read = parse_log(result.stdout)
    if [c.sha for c in read] != [c.sha for c in commits[start:]]:  # pragma: no cover
        raise GitError("git log failed: the first-parent history changed while it was read")
    tail = tuple(c._replace(changes=r.changes) for c, r in zip(commits[start:], read, strict=True))
    return commits[:start] + tail


def read_commits(git: Git) -> tuple[tuple[Commit, ...], bool]:
    """The first-parent commits of ``merge-base(default, HEAD)..HEAD`` (or the whole
    history), oldest first, and whether HEAD is a merge.

    ``<default>..HEAD`` walked first-parent is exactly the commits after the merge
    base. When it is empty (HEAD is the merge base, or behind it) or there is no
    default branch, the whole history is read — and when that fails too the
    repository has no commits yet.

    That ``git log`` reads subjects only: the tree diffs of ``--name-status`` are
    most of a log's cost, and the folds look at the change lists of a few of the
    newest commits (:func:`gtd.step.machine.changes_wanted`), which a second
    ``git log -n <count>`` reads."""
    default = default_branch(git)
    raw = ""
    if default is not None:
        ranged = _log(git, f"{default}..HEAD", changes=False)
        if ranged.returncode == 0:
            raw = ranged.stdout
    if not raw:
        whole = _log(git, "HEAD", changes=False)
        if whole.returncode != 0:
            if git.head() is None:
                return (), False
            raise _log_failed(whole)
        raw = whole.stdout
    head_is_merge = log_head_is_merge(raw)
    commits = tuple(parse_log(raw, with_changes=False))
    commits = read_changes(git, commits, changes_wanted(commits))
    if commits and needs_review_diff(commits[-1]):
        head = commits[-1]
        commits = (*commits[:-1], head._replace(review_diff=_review_line_diff(git, head)))
    return commits, head_is_merge


def changes_from_status(entries: list[StatusEntry], root: Path) -> tuple[Change, ...]:
    """`git status` entries as changes against HEAD (a path added to the index and
    then deleted is no change)."""
    changes: list[Change] = []
    for entry in entries:
        xy, path = entry.xy, entry.path
        exists = os.path.lexists(root / path)
        if xy == "??" or "A" in xy[0]:
            if not exists:
                continue  # added to the index, then deleted: nothing against HEAD
            status: ChangeStatus = "A"
        elif "D" in xy and not exists:
            status = "D"
        else:
            status = "M"
        changes.append(Change(status, path))
    return tuple(changes)


def read_file(root: Path, rel: str) -> str | None:
    """A steering file's text; None when it is not a readable file."""
    try:
        return (root / rel).read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _package_listing(root: Path) -> list[str]:
    gtd_dir = root / GTD_DIR
    paths: list[str] = []
    try:
        entries = list(os.scandir(gtd_dir))
    except (FileNotFoundError, NotADirectoryError):
        return paths
    for entry in entries:
        if not entry.is_dir():
            continue
        try:
            for inner in os.scandir(entry.path):
                paths.append(f"{GTD_DIR}/{entry.name}/{inner.name}")
        except OSError:
            continue
    return paths


def format_findings(root: Path, paths: tuple[str, ...]) -> tuple[FormatFinding, ...]:
    """The findings of the checked steering files among ``paths``, as the pure core's
    values. The one place step mode runs the parsers (the validator's and the
    language server's :func:`gtd.steering.check`)."""
    wanted = [p for p in CHECKED_FILES if p in paths]
    if not wanted:
        return ()
    from gtd.steering import check, kind_of  # lazily: only when a file needs checking

    found: list[FormatFinding] = []
    for rel in wanted:
        kind, text = kind_of(rel), read_file(root, rel)
        if kind is None or text is None:
            continue
        found.extend(
            FormatFinding(rel, f.line, f.message, f.severity == "warning")
            for f in check(kind, text)
        )
    return tuple(found)


# Reads of the tree before one is consistent (:func:`read_tree`): a writer that
# lands between the looks at disk and git's status costs one more read.
_READS = 5


def _on_disk(root: Path) -> tuple[frozenset[str], list[str]]:
    """The steering files on disk and the package folders' listing (sorted: two
    listings of the same folders compare equal)."""
    present = frozenset(p for p in STEERING_FILES if (root / p).is_file())
    return present, sorted(_package_listing(root))


def read_tree(git: Git) -> WorkingTree:
    """One ``git status`` plus the steering files on disk, seen alike by both (read
    again while a writer lands between them); with pending changes, the format
    findings of TODO.md and REVIEW.md. Auto mode's private files are no pending
    change of step mode's (:func:`gtd.step.steering.is_private`)."""
    root = git.root
    for _ in range(_READS):
        # The files on disk are looked at before and after git's status, which
        # holds only if nothing appeared or went between: a detached check
        # script writes FEEDBACK.md when its suite ends, whoever reads the tree
        # then. Status before the write with the file seen after it reads as a
        # FEEDBACK.md committed earlier (at testing: the agent's `fixing`).
        before = _on_disk(root)
        entries = git.changes()
        present, listing = _on_disk(root)
        if (present, listing) == before:
            break
    else:
        raise StepError(
            "input",
            f"the working tree's gtd files kept changing while gtd read them ({_READS} "
            "reads): wait for whatever writes them to finish, then run gtd again",
        )
    dirty = tuple(c for c in changes_from_status(entries, root) if not is_private(c.path))
    return WorkingTree(
        present=present,
        dirty=dirty,
        packages=packages_from_paths(listing),
        feedback_text=read_file(root, FEEDBACK) if FEEDBACK in present else None,
        squash_msg_text=read_file(root, SQUASH_MSG) if SQUASH_MSG in present else None,
        format_findings=format_findings(root, tuple(present)) if dirty else (),
    )


def gather(git: Git) -> Snapshot:
    """One ``git log`` (two at most) and one ``git status``."""
    commits, head_is_merge = read_commits(git)
    head = commits[-1].sha if commits else None
    return Snapshot(commits, read_tree(git), head, head_is_merge)
