"""The values the edge gathers and the core folds (docs/step-mode.md, "How it is built").

One invocation reads:

- the first-parent commits of ``merge-base(default, HEAD)..HEAD`` (or the whole
  history), oldest first, as :class:`Commit` values — one
  ``git log --first-parent -z --format=...`` carrying ``%H``, the first token of
  ``%P`` and ``%s``, and the change lists (``--no-renames --name-status``) of the
  newest :func:`gtd.step.machine.changes_wanted` commits only;
- one :class:`WorkingTree` snapshot — one ``git status --porcelain=v2 -z
  --untracked-files=all`` for :attr:`WorkingTree.dirty`, a stat of the six steering
  files for :attr:`WorkingTree.present`, a listing of ``.gtd/`` for the packages
  (see :func:`gtd.step.steering.packages_from_paths`), and the text of FEEDBACK.md
  and SQUASH_MSG.md when they exist (the only two files whose content steers),
  and — only while the tree has pending changes — the format findings of
  ``.gtd/TODO.md`` and ``.gtd/REVIEW.md`` (:attr:`WorkingTree.format_findings`,
  computed by the edge with :func:`gtd.steering.check`; the machine decides what
  they block);
- the invoker: ``"human"`` for ``gtd step``, ``"agent"`` for ``gtd step-agent``,
  ``"check"`` for ``gtd step check`` (scripted checks), ``None`` for ``gtd next``
  and ``gtd status``.

A :class:`Snapshot` bundles one gather's commits and tree; it is a plain value, so
the pure core (:mod:`gtd.step.predict`) can take it without importing the edge.

The one extra read: when HEAD is a ``gtd(human): review`` turn that modified
``.gtd/REVIEW.md``, the checkbox rule needs that file's changed lines; the edge
fills :attr:`Commit.review_diff` for HEAD then (``git diff -U0 HEAD~1 HEAD --
.gtd/REVIEW.md``) — :func:`gtd.step.review_diff.needs_review_diff` says when.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from gtd.step.errors import ChangesNotGathered
from gtd.step.steering import GTD_DIR, Package, is_package_path
from gtd.step.subjects import Party, Subject, parse_subject
from gtd.tuples import NamedTuple

__all__ = [
    "Change",
    "ChangeStatus",
    "Commit",
    "FormatFinding",
    "Invoker",
    "LineDiff",
    "Snapshot",
    "WorkingTree",
]

# A = not in the old tree (new or untracked), D = gone from the new tree, M = both.
# Type changes count as M; renames are split into D + A by --no-renames.
ChangeStatus = Literal["A", "M", "D"]
Invoker: TypeAlias = Party | None


class Change(NamedTuple):
    status: ChangeStatus
    path: str


class LineDiff(NamedTuple):
    """The changed lines of one file, in diff order, without the leading ``-``/``+``."""

    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()


class Commit(NamedTuple):
    """One first-parent commit. ``changes`` are against its first parent (empty for an
    empty commit); ``parent`` is None only for a root commit. ``changes`` is None when
    the edge did not read them (older than :func:`gtd.step.machine.changes_wanted`
    reaches): reading them through :attr:`change_list` and the helpers below then
    raises :class:`gtd.step.errors.ChangesNotGathered`."""

    sha: str
    subject: str
    parent: str | None = None
    changes: tuple[Change, ...] | None = ()
    review_diff: LineDiff | None = None

    @property
    def parsed(self) -> Subject:
        return parse_subject(self.subject)

    @property
    def change_list(self) -> tuple[Change, ...]:
        changes = self.changes
        if changes is None:
            raise ChangesNotGathered(self.sha)
        return changes

    @property
    def is_empty(self) -> bool:
        return not self.change_list

    def status_of(self, path: str) -> ChangeStatus | None:
        for change in self.change_list:
            if change.path == path:
                return change.status
        return None

    def touched(self, *paths: str) -> bool:
        return any(change.path in paths for change in self.change_list)

    def deleted(self, *paths: str) -> bool:
        return any(change.status == "D" and change.path in paths for change in self.change_list)


class FormatFinding(NamedTuple):
    """One rule a steering file on disk breaks (a :class:`gtd.steering.Finding`
    flattened to a value the pure core can hold without importing the parsers)."""

    path: str
    line: int
    message: str
    warning: bool = False

    def render(self) -> str:
        """``path:line: message``, exactly as ``gtd validate`` prints it."""
        suffix = " (warning)" if self.warning else ""
        return f"{self.path}:{self.line}: {self.message}{suffix}"


class WorkingTree(NamedTuple):
    """The working tree against HEAD.

    ``present`` holds the steering files (:data:`gtd.step.steering.STEERING_FILES`)
    that exist on disk, committed or not. ``dirty`` is every pending change against
    HEAD, tracked and untracked (``.gitignore`` respected); a pending deletion is a
    ``D`` entry for a path no longer in ``present``. ``packages`` are the package
    folders on disk. ``feedback_text``/``squash_msg_text`` are the contents of
    FEEDBACK.md/SQUASH_MSG.md and must be given whenever those files are present.
    ``format_findings`` are the findings of TODO.md and REVIEW.md when present, for a
    tree with pending changes (a clean tree has no turn to capture, so the edge
    skips the check); empty means valid or not checked.
    """

    present: frozenset[str] = frozenset()
    dirty: tuple[Change, ...] = ()
    packages: tuple[Package, ...] = ()
    feedback_text: str | None = None
    squash_msg_text: str | None = None
    format_findings: tuple[FormatFinding, ...] = ()

    @property
    def clean(self) -> bool:
        return not self.dirty

    def has(self, path: str) -> bool:
        return path in self.present

    def dirty_status(self, path: str) -> ChangeStatus | None:
        for change in self.dirty:
            if change.path == path:
                return change.status
        return None

    def committed(self, path: str) -> bool:
        """Tracked at HEAD: on disk and not new, or deleted but not yet committed."""
        status = self.dirty_status(path)
        return status == "D" or (self.has(path) and status != "A")

    def deletion_pending(self, path: str) -> bool:
        return self.dirty_status(path) == "D" and not self.has(path)

    @property
    def dirty_package_paths(self) -> tuple[str, ...]:
        return tuple(c.path for c in self.dirty if is_package_path(c.path))

    @property
    def dirty_outside_gtd(self) -> tuple[str, ...]:
        """Pending paths outside ``.gtd/`` — what makes ``gtd next`` refuse."""
        prefix = f"{GTD_DIR}/"
        return tuple(c.path for c in self.dirty if not c.path.startswith(prefix))

    def findings_for(self, path: str) -> tuple[FormatFinding, ...]:
        return tuple(f for f in self.format_findings if f.path == path)


class Snapshot(NamedTuple):
    """One gather: the first-parent commits (oldest first) and the working tree."""

    commits: tuple[Commit, ...]
    tree: WorkingTree
    head: str | None
    head_is_merge: bool = False
