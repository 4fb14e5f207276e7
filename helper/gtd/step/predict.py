"""``gtd status``'s dry run: the next commit the awaited actor's mutator would author
and the state it would land in (README "gtd status"). Pure: the commit is simulated
on the folded values, nothing is run or written.

A test run's outcome cannot be known without running it, so at a HEAD whose next
action is a test run (or a health check) the prediction is no commit and the
edge-only state that performs it (``testing`` / ``health-check``); at idle the health
check is predicted green (zero commits, idle) — the README's example of a
fixpoint.
"""

from __future__ import annotations

from gtd.step.actions import (
    SQUASH_TEMPLATE,
    Action,
    ClosePackage,
    HealthCheck,
    MakeCommit,
    RunTests,
    Squash,
    WriteSquashTemplate,
)
from gtd.step.config import Config
from gtd.step.errors import StepError
from gtd.step.events import Change, Commit, WorkingTree
from gtd.step.gather import Snapshot
from gtd.step.machine import Resolution, resolve
from gtd.step.states import State
from gtd.step.steering import FEEDBACK, SQUASH_MSG

__all__ = ["predict"]

_FAKE = "0" * 40


def _committed(
    tree: WorkingTree, extra: tuple[Change, ...], removes: frozenset[str]
) -> tuple[tuple[Change, ...], WorkingTree]:
    changes = tuple(c for c in tree.dirty if c.path not in removes)
    changes += tuple(Change("D", p) for p in sorted(removes) if tree.has(p) or tree.committed(p))
    changes += extra
    after = WorkingTree(
        present=tree.present - removes,
        packages=tree.packages,
        feedback_text=None if FEEDBACK in removes else tree.feedback_text,
        squash_msg_text=None if SQUASH_MSG in removes else tree.squash_msg_text,
    )
    return changes, after


def _simulate(
    snapshot: Snapshot, action: Action
) -> tuple[str, tuple[Commit, ...], WorkingTree] | None:
    commits, tree = snapshot.commits, snapshot.tree
    parent = commits[-1].sha if commits else None
    if isinstance(action, MakeCommit):
        changes, after = _committed(tree, (), frozenset(action.removes))
        subject = action.subject
    elif isinstance(action, ClosePackage):
        package = next((p for p in tree.packages if p.name == action.package), None)
        gone = tuple(Change("D", f"{package.path}/{t}") for t in package.tasks) if package else ()
        changes, after = _committed(tree, gone, frozenset({FEEDBACK}))
        after = WorkingTree(
            present=after.present,
            packages=tuple(p for p in tree.packages if p.name != action.package),
            squash_msg_text=after.squash_msg_text,
        )
        subject = "gtd: package done"
    elif isinstance(action, WriteSquashTemplate):
        changes, after = _committed(tree, (Change("A", SQUASH_MSG),), frozenset())
        after = WorkingTree(
            present=after.present | {SQUASH_MSG},
            packages=after.packages,
            feedback_text=after.feedback_text,
            squash_msg_text=SQUASH_TEMPLATE,
        )
        subject = "gtd: squash template"
    elif isinstance(action, Squash):
        message = (tree.squash_msg_text or "").strip()
        subject = message.splitlines()[0] if message else ""
        keep = next((i for i, c in enumerate(commits) if c.sha == action.base), -1)
        squashed = (*commits[: keep + 1], Commit(_FAKE, subject, action.base, ()))
        return subject, squashed, WorkingTree()
    else:
        return None
    return subject, (*commits, Commit(_FAKE, subject, parent, changes)), after


def predict(snapshot: Snapshot, r: Resolution, config: Config) -> tuple[str | None, State]:
    """(predicted commit subject or None, predicted state)."""
    action = r.action
    if action is None and not r.pending:
        mover = resolve(snapshot.commits, snapshot.tree, config, r.actor)
        if mover.refusal is not None:
            return None, r.state
        action = mover.action
    elif r.pending:
        action = resolve(snapshot.commits, snapshot.tree, config, r.actor).action
    if action is None:
        return None, r.state
    if isinstance(action, RunTests):
        return None, "testing"
    if isinstance(action, HealthCheck):
        return None, r.state if r.state == "idle" else "health-check"
    simulated = _simulate(snapshot, action)
    if simulated is None:  # pragma: no cover - every other action is simulated
        return None, r.state
    subject, commits, tree = simulated
    try:
        return subject, resolve(commits, tree, config, None).state
    except StepError:
        return subject, r.state
