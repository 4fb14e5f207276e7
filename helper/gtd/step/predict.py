"""``gtd status``'s dry run: the next commit the awaited actor's mutator would author
(docs/step-mode.md, "Commands"). Pure: values in, values out; nothing is run or written.

As in gtd 2.0.0, ``predictedState`` is the state ``status`` reports (2.0.0 copies
``state`` into it), and on a dirty tree at a boundary — where the human's
``gtd step`` would capture the sketch — the reported state is ``grilling``,
awaiting the human, with ``gtd(human): grilling`` as the predicted commit.

A test run's outcome cannot be known without running it, so at a HEAD whose next
action is a test run or a health check (inline), and at a check's rest before its
script has left any output (scripted), the prediction is no commit; at idle the
health check is predicted green (zero commits) — gtd 2.x's example of a
fixpoint.
"""

from __future__ import annotations

from gtd.step.actions import CaptureCheck, ClosePackage, MakeCommit, Squash, WriteSquashTemplate
from gtd.step.events import Snapshot
from gtd.step.machine import Resolution, resolve
from gtd.step.settings import StepConfig
from gtd.step.states import State
from gtd.step.subjects import Party
from gtd.tuples import NamedTuple

__all__ = ["Prediction", "predict"]


class Prediction(NamedTuple):
    """What ``gtd status`` prints: the state and actor it reports, the predicted
    commit (None: nothing) and the predicted state (the reported state)."""

    state: State
    actor: Party
    commit: str | None

    @property
    def predicted_state(self) -> State:
        return self.state


def predict(snapshot: Snapshot, r: Resolution, config: StepConfig) -> Prediction:
    """The prediction for ``r`` (``snapshot`` resolved with no invoker)."""
    commits, tree = snapshot.commits, snapshot.tree
    if r.pending:
        action = resolve(commits, tree, config, r.actor).action
    else:
        mover = resolve(commits, tree, config, r.actor)
        if mover.decision == "entry":
            return Prediction("grilling", "human", _subject(mover.action, snapshot))
        if mover.refusal is not None:
            return Prediction(r.state, r.actor, None)
        action = mover.action
        if isinstance(action, CaptureCheck) and not r.check_output:
            return Prediction(r.state, r.actor, None)  # the script has not run yet
    return Prediction(r.state, r.actor, _subject(action, snapshot))


def _subject(action: object, snapshot: Snapshot) -> str | None:
    if isinstance(action, MakeCommit):
        return action.subject
    if isinstance(action, CaptureCheck):
        return action.subject
    if isinstance(action, ClosePackage):
        return "gtd: package done"
    if isinstance(action, WriteSquashTemplate):
        return "gtd: squash template"
    if isinstance(action, Squash):
        message = (snapshot.tree.squash_msg_text or "").strip()
        return message.splitlines()[0] if message else ""
    return None  # a test run, a health check or a check script: not knowable
