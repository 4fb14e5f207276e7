"""Where a review and a squash start (the squash base and the review
base), and the cycle bookkeeping both need.

A *cycle* is the run of commits after the previous ``gtd: done``. All answers are
commit hashes taken from the folded range, so nothing here can point below the
merge base: the oldest hash the range can yield is its first commit's parent, which
is the merge base itself.

Two readings the tables leave open, decided here:

- The review base's three sources all come from the current cycle (after the last
  ``gtd: done``); a settled cycle followed by plain commits has nothing to review.
  "The first grilling turn" means its parent, so the sketch that turn captured is
  reviewed too.
- A health-fix cycle (``gtd: tests green`` reached through the health loop, squash
  on) has no grilling turn and no ``gtd: done``; its squash base is the parent of the
  first red health check (``gtd: health-check``, or the check's ``health-failed`` /
  ``health-escalated`` turn) of the uninterrupted health run that ended in that
  green commit (``gtd: tests green`` or ``gtd(check): tests-green``). A boundary
  commit ends the walk, so a squash never swallows a plain commit made before the
  run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gtd.step.counters import HEALTH_RUNS
from gtd.step.events import Commit
from gtd.step.steering import GTD_DIR
from gtd.step.subjects import Boundary, Check, Routing, Subject, Turn

__all__ = [
    "GREEN",
    "cycle_squash_base",
    "has_review_material",
    "health_run_base",
    "last_done_index",
    "review_base",
    "review_material_from",
    "squash_base",
]

_HEALTH_RUN = (
    Turn("agent", "health-fixing"),
    Turn("human", "escalate"),
    Routing("health-fix"),
)
# A green run without packages to review: the 2.x routing commit and the check's turn.
GREEN: frozenset[Subject] = frozenset({Routing("tests green"), Check("tests-green")})


def _is_route(commit: Commit, route: str) -> bool:
    parsed = commit.parsed
    return isinstance(parsed, Routing) and parsed.route == route


def _is_grilling_turn(commit: Commit) -> bool:
    parsed = commit.parsed
    return isinstance(parsed, Turn) and parsed.gate == "grilling"


def _newest(commits: Sequence[Commit], lo: int, hi: int, pred: Callable[[Commit], bool]) -> int:
    for i in range(hi - 1, lo - 1, -1):
        if pred(commits[i]):
            return i
    return -1


def _oldest(commits: Sequence[Commit], lo: int, hi: int, pred: Callable[[Commit], bool]) -> int:
    for i in range(lo, hi):
        if pred(commits[i]):
            return i
    return -1


def last_done_index(commits: Sequence[Commit], before: int | None = None) -> int:
    """Index of the newest ``gtd: done`` below ``before`` (default: anywhere), or -1."""
    hi = len(commits) if before is None else before
    return _newest(commits, 0, hi, lambda c: _is_route(c, "done"))


def _review_source(commits: Sequence[Commit]) -> tuple[str | None, int, bool]:
    """(base, index of the first commit the review covers, anchored?)."""
    lo, hi = last_done_index(commits) + 1, len(commits)
    anchor = _newest(commits, lo, hi, lambda c: _is_route(c, "reviewing"))
    if anchor >= 0:
        parsed = commits[anchor].parsed
        assert isinstance(parsed, Routing)  # guaranteed by the predicate
        return parsed.sha, anchor + 1, True
    awaiting = _newest(commits, lo, hi, lambda c: _is_route(c, "awaiting review"))
    if awaiting >= 0:
        return commits[awaiting].sha, awaiting + 1, False
    grilling = _oldest(commits, lo, hi, _is_grilling_turn)
    if grilling >= 0:
        return commits[grilling].parent, grilling, False
    return None, hi, False


def review_base(commits: Sequence[Commit]) -> str | None:
    """Newest ``gtd: reviewing <h>`` of the cycle (its ``h``), else the cycle's last
    ``gtd: awaiting review``, else the parent of its first grilling turn."""
    return _review_source(commits)[0]


def has_review_material(commits: Sequence[Commit]) -> bool:
    """ "Something to review": a review base exists and the commits since it change a
    path outside ``.gtd/`` (review diffs leave ``.gtd/`` out). An anchor always has
    material — ``gtd review`` refuses to write one over an empty diff."""
    base, first, anchored = _review_source(commits)
    if base is None:
        return False
    if anchored:
        return True
    prefix = f"{GTD_DIR}/"
    return any(
        not change.path.startswith(prefix) for c in commits[first:] for change in c.change_list
    )


def review_material_from(commits: Sequence[Commit]) -> int:
    """The index of the oldest commit whose change list :func:`has_review_material`
    may read (``len(commits)`` when none)."""
    base, first, anchored = _review_source(commits)
    return len(commits) if base is None or anchored else first


def cycle_squash_base(commits: Sequence[Commit], done: int) -> str | None:
    """Squash base of the cycle that ended at the ``gtd: done`` at index ``done``:
    the parent of its newest ``gtd: reviewing`` anchor, else of its first grilling
    turn."""
    lo = last_done_index(commits, before=done) + 1
    anchor = _newest(commits, lo, done, lambda c: _is_route(c, "reviewing"))
    if anchor >= 0:
        return commits[anchor].parent
    grilling = _oldest(commits, lo, done, _is_grilling_turn)
    return commits[grilling].parent if grilling >= 0 else None


def health_run_base(commits: Sequence[Commit], end: int) -> str | None:
    """Parent of the first ``gtd: health-check`` of the health run ending just below
    index ``end``; None when no such run (with at least one check) is there."""
    first_check = -1
    for i in range(end - 1, -1, -1):
        parsed = commits[i].parsed
        if parsed in HEALTH_RUNS:
            first_check = i
        elif parsed not in _HEALTH_RUN:
            break
    return commits[first_check].parent if first_check >= 0 else None


def squash_base(commits: Sequence[Commit]) -> str | None:
    """The base the squash at a ``gtd(agent): squashing`` HEAD resets to: found from
    the newest ``gtd: squash template`` and the workflow commit just before it — a
    ``gtd: done`` (a normal cycle) or a green run (a health-fix cycle)."""
    template = _newest(commits, 0, len(commits), lambda c: _is_route(c, "squash template"))
    if template < 0:
        return None
    before = _newest(commits, 0, template, lambda c: not isinstance(c.parsed, Boundary))
    if before < 0:
        return None
    if _is_route(commits[before], "done"):
        return cycle_squash_base(commits, before)
    if commits[before].parsed in GREEN:
        return health_run_base(commits, before)
    return None
