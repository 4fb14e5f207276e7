"""The human's sketch at the squash: the note files (``IDEA.md``, see
:func:`gtd.step.prompts.sketch_notes`) that a cycle's opening ``gtd(human):
grilling`` turn added, and that nothing changed since, are left out of the
squashed commit (docs/step-mode.md, "The sketch and the squash").

The grilling prompt asks the agent to carry such a note into the plan and delete
it; this is the guarantee when the agent did not. A note someone changed (or
moved under ``docs/``) is the project's and ships. Edge: reads git."""

from __future__ import annotations

from gtd.git import Git
from gtd.paths import GTD_REFS
from gtd.step.prompts import sketch_notes
from gtd.tuples import NamedTuple

__all__ = ["OPENING", "REF_PREFIX", "Sketch", "added_by", "unchanged_notes"]

OPENING = "gtd(human): grilling"
# The opening turn stays reachable under this prefix once the squash has dropped
# it from the branch: the left-out note is moved out of the tree, never lost.
REF_PREFIX = f"{GTD_REFS}sketch/"


class Sketch(NamedTuple):
    """The opening turn (full hash) and the notes to leave out, in its order."""

    opening: str
    paths: tuple[str, ...]

    @property
    def ref(self) -> str:
        return REF_PREFIX + self.opening[:12]


def added_by(git: Git, sha: str) -> list[str]:
    """The paths commit ``sha`` added (no rename detection: a note is new)."""
    raw = git.run("diff-tree", "-r", "-z", "--root", "--no-commit-id", "--name-status", sha)
    fields = raw.split("\0")
    return [fields[i + 1] for i in range(0, len(fields) - 1, 2) if fields[i] == "A"]


def _blob(git: Git, rev: str, path: str) -> str | None:
    found = git.call("rev-parse", "--verify", "-q", f"{rev}:{path}").stdout.strip()
    return found or None


def unchanged_notes(git: Git, base: str, head: str) -> Sketch | None:
    """The sketch notes of the cycle ``base..head`` that ``head`` holds exactly as
    the opening human turn added them; None when the cycle opened otherwise (a
    review anchor, a health run) or there are none."""
    revs = git.run("rev-list", "--first-parent", "--reverse", f"{base}..{head}").split()
    if not revs:
        return None
    opening = revs[0]
    if git.run("log", "-1", "--format=%s", opening).strip() != OPENING:
        return None
    kept: list[str] = []
    for path in sketch_notes(added_by(git, opening)):
        then = _blob(git, opening, path)
        if then is not None and then == _blob(git, head, path):
            kept.append(path)
    return Sketch(opening, tuple(kept)) if kept else None
