"""The step-mode machine: ``resolve(commits, tree, config, invoker) -> Resolution``.

Pure — no IO, no subprocess, no clock. The edge gathers the inputs
(:mod:`gtd.step.events`), calls :func:`resolve`, performs the one action it returns
(:mod:`gtd.step.actions`), gathers again, and stops at a rest, a refusal after the
first hop, or a fixpoint (an action that changed nothing). Past the first hop it
acts only while :attr:`Resolution.continues_chain` holds, so one invocation captures
at most one turn. Everything the machine cannot explain raises
:class:`gtd.step.errors.StepError`; it never guesses.

Where each rule of gtd 2.x's state machine is coded (2.0.0's behaviour wins where
its description and its behaviour disagree):

=====================================  ===============================================
rule                                   code
=====================================  ===============================================
Inputs                                 :mod:`gtd.step.events` (Commit, WorkingTree),
                                       :mod:`gtd.step.steering` (paths, packages)
Subject grammar                        :mod:`gtd.step.subjects`
States and awaited actor               :mod:`gtd.step.states`
Precedence 1-5 (the baseline rest)     :mod:`gtd.step.precedence` (its table)
  "substantive" review turn            :mod:`gtd.step.review_diff`
Turn-taking 1 — dirty-boundary entry   :func:`_is_dirty_boundary_entry`
Turn-taking 2-9                        :func:`_turn_taking`
Validation loop (a malformed draft)    :func:`_turn_taking` (``malformed``),
                                       :data:`gtd.step.states.DRAFTED`
State ↔ file association               :attr:`Resolution.steering_file`,
                                       :func:`gtd.step.states.steering_file`
Counters                               :mod:`gtd.step.counters`
Scripted checks: the capture rules     :mod:`gtd.step.checks`, :func:`_check_turn`,
                                       :func:`gtd.step.precedence.check_output`
Edge actions (the values)              :mod:`gtd.step.actions`
Squash base, review base               :mod:`gtd.step.bases`
=====================================  ===============================================

Decisions where the tables are silent (each repeated where it is coded):

- A mid-chain HEAD reports the edge-only state of the bookkeeping it is about to do
  (``testing`` for a test run, ``close-package``, ``health-check``, ``done`` for the
  squash template and the ``gtd: done`` commit) and otherwise the gate at HEAD; its
  ``actor`` is the actor of the newest turn commit — the one whose chain it is.
- ``gtd(human): escalate`` with no packages re-tests as a *health check*: the
  escalation came from the health loop (ERRORS.md without packages is legal only
  there), and a plain test run would write FEEDBACK.md without packages, an illegal
  combination. Its green result commits ``gtd: tests green`` so HEAD moves on.
- A ``gtd(human): escalate`` HEAD whose ERRORS.md deletion is still pending rests at
  escalate (like ``gtd: errors`` does), so the deletion is captured as a turn and
  resets the budget before the re-test, instead of re-testing at the spent cap.
- Turn-taking 7 also covers escalate on a clean tree with ERRORS.md still present:
  no empty ``gtd(human): escalate`` turn (it could only park at escalate again).
- A rest at ``planning`` is answered by the agent's ``building`` turn.
- ERRORS.md without packages is also legal at a ``gtd(human): escalate`` HEAD (the
  human's turn at the health loop's escalation); see
  :func:`gtd.step.precedence.check_legal`.
- SQUASH_MSG.md does not count as a steering file for the ladder's "no steering
  files" rung (it is HEAD-classification driven, like in gtd 2.x).
- The validation loop: an agent turn at a rest that drafts a steering file
  (``grilling`` → TODO.md, ``review`` → REVIEW.md) is not captured while the edge
  reports format findings for that file; the refusal (exit 1, zero commits) names
  every finding, and :attr:`Resolution.findings` carries them to the next prompt.
  Human turns are never refused for format — a human's edit is feedback the agent
  reads. The findings are values the edge computed (:class:`FormatFinding`); the
  machine only decides what they block.
- A ``gtd(agent): review`` HEAD with a REVIEW.md that has findings rests at review
  (awaiting the agent's turn) instead of committing ``gtd: awaiting review``: the
  mid-chain commit would otherwise carry a malformed draft past the validation.
- An agent turn at ``review`` whose changes hold no ``.gtd/REVIEW.md`` (a review
  written elsewhere after a failed write) is refused the same way, where gtd 2.x
  commits it as ``gtd(agent): review`` and rests at review again.

Scripted checks (``"checks": "scripted"``; docs/step-mode.md, "Scripted checks"):

- Wherever gtd 2.x runs the tests inline (after a build turn, a fix turn, the
  human's escalate turn, a recovery), the machine instead commits ``gtd: testing``
  (removing FEEDBACK.md, so the check starts from a tree without one) and rests at
  ``testing`` awaiting the ``check``. Wherever it runs a health check (after
  ``gtd: health-fix``, after the health loop's escalate turn) it rests at
  ``health-check`` awaiting the check. The check's turn is captured by the rules
  of :mod:`gtd.step.checks` and routed like its 2.x routing twin.
- A FEEDBACK.md *added* (untracked) while a check is awaited, or at idle, is the
  check's output, not a steering file: it is left out of the precedence rules
  (:func:`check_output`) and only decides the check's label.
- Idle still awaits the human, and the check is admitted there too (the idle
  carve-out): the human's ``gtd step`` at idle runs gtd's own health-check script
  (:class:`RunCheck`) and captures it as the check's turn — green is zero commits
  as in 2.x — and ``gtd step check`` at idle captures a script a driver ran.
- Turn-taking 4's forced re-check at a spent health budget is an inline-mode rule;
  with scripted checks the next red capture escalates instead.
- A pending chain reports the actor of the newest human or agent turn: a check turn
  never owns a chain, so drivers resume it as in 2.x.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from gtd.step.actions import (
    Action,
    MakeCommit,
    RunCheck,
    is_squash_template,
)
from gtd.step.bases import (
    GREEN,
    cycle_squash_base,
    health_run_base,
    review_base,
    review_material_from,
    squash_base,
)
from gtd.step.checks import CheckRest, capture
from gtd.step.counters import Counters, changes_read_from
from gtd.step.errors import StepError
from gtd.step.events import Commit, FormatFinding, Invoker, WorkingTree
from gtd.step.precedence import (
    Baseline,
    Facts,
    Mid,
    baseline,
    check_inputs,
    check_legal,
    check_output,
    gather,
)
from gtd.step.settings import StepConfig
from gtd.step.states import DRAFTED, State, SteeringFile, capture_gate, steering_file
from gtd.step.steering import (
    ERRORS,
    FEEDBACK,
    GTD_DIR,
    HEALTH,
    REVIEW,
    TODO,
    Package,
)
from gtd.step.subjects import Actor, Boundary, Party, Routing, Turn
from gtd.tuples import NamedTuple

__all__ = [
    "Decision",
    "Resolution",
    "changes_wanted",
    "malformed_message",
    "refusal_message",
    "resolve",
]

# Which rule produced the resolution; lets the edge and the tests tell apart the
# several ways of ending with no action.
Decision = Literal[
    "entry",  # turn-taking 1
    "mid-chain",  # turn-taking 2, performed by a mutator
    "pending",  # turn-taking 2, reported by next/status
    "report",  # turn-taking 3
    "health-check",  # turn-taking 4
    "refusal",  # turn-taking 5
    "malformed",  # the validation loop: the agent's draft breaks its format
    "idle-health-check",  # turn-taking 6
    "no-op",  # turn-taking 7
    "inert",  # turn-taking 8
    "capture",  # turn-taking 9
]


class Resolution(NamedTuple):
    """One decision. ``actor`` is the awaited actor at a rest (``check`` at a
    scripted check's rest), or whose chain a mid-chain HEAD belongs to. ``pending``
    is true only for ``invoker=None`` at a mid-chain HEAD. ``refusal`` is the exact
    out-of-turn message (exit 1, zero commits). ``action`` is None at every rest
    that needs nothing from the edge.

    The rest is context for prompts: the folded counters, the review base, the squash
    base of the cycle at hand, the active (lowest-numbered) package, the format
    findings the awaited agent must fix before its draft is captured, and whether
    the check's output (a FEEDBACK.md it wrote) waits to be captured."""

    state: State
    actor: Party
    decision: Decision
    pending: bool = False
    action: Action | None = None
    refusal: str | None = None
    counters: Counters = Counters()
    review_base: str | None = None
    squash_base: str | None = None
    package: Package | None = None
    findings: tuple[FormatFinding, ...] = ()
    check_output: bool = False

    @property
    def steering_file(self) -> SteeringFile | None:
        """The steering file the resting state is about (``file``/``mode`` of
        ``gtd next --json`` and ``gtd status --json``); None mid-chain, where the
        machine is not resting."""
        if self.pending or self.decision == "mid-chain":
            return None
        return steering_file(self.state)

    @property
    def continues_chain(self) -> bool:
        """Whether a mutator past its first hop still performs :attr:`action`.

        Only mid-chain bookkeeping and the any-invoker health check (turn-taking 4:
        the health-fixer's chain re-tests) do. Every other outcome after the first
        hop is the rest the invocation stops at — it captures at most one turn, and
        only as its first hop."""
        return self.action is not None and self.decision in ("mid-chain", "health-check")


# nothing, and capturing an empty turn would consume workflow state (turn-taking 8).
_INERT_WHEN_CLEAN: frozenset[State] = frozenset(
    {"grilling", "grilled", "building", "fixing", "agentic-review", "review"}
)


def refusal_message(state: State, awaited: Party) -> str:
    if awaited == "human":
        return f"{state} awaits a human turn — run `gtd step`"
    if awaited == "check":
        return (
            f"{state} awaits a check turn — run `gtd run`, or run the script "
            "`gtd next` prints and then `gtd step check`"
        )
    return f"{state} awaits an agent turn — run `gtd step-agent`"


def malformed_message(state: State, path: str, findings: Sequence[FormatFinding]) -> str:
    count = len(findings)
    noun = "finding" if count == 1 else "findings"
    lines = "\n".join(f.render() for f in findings)
    return (
        f"{state}: {path} breaks its format ({count} {noun}), so the agent's turn is not "
        f"captured — fix every finding, then run `gtd step-agent` again:\n{lines}"
    )


def missing_review_message(tree: WorkingTree) -> str:
    paths = ", ".join(change.path for change in tree.dirty[:5])
    more = f" and {len(tree.dirty) - 5} more" if len(tree.dirty) > 5 else ""
    return (
        f"review: the working tree has changes ({paths}{more}) but no `{REVIEW}`, so the "
        f"agent's turn is not captured — write the review to `{REVIEW}` (make the "
        f"`{GTD_DIR}/` folder if it is missing), then run `gtd step-agent` again"
    )


# -- turn-taking -------------------------------------------------------------------


def _is_dirty_boundary_entry(f: Facts, invoker: Invoker) -> bool:
    tree = f.tree
    return (
        invoker == "human"
        and not tree.clean
        and not (tree.has(TODO) and tree.committed(TODO))
        and not f.packages
        and not any(tree.has(path) for path in (REVIEW, FEEDBACK, ERRORS, HEALTH))
        and (isinstance(f.subject, Boundary) or f.head_is(Routing("done")))
    )


def _chain_owner(commits: Sequence[Commit]) -> Actor:
    # Check turns are skipped: a chain after one is bookkeeping a 2.x driver resumes.
    for commit in reversed(commits):
        parsed = commit.parsed
        if isinstance(parsed, Turn):
            return parsed.actor
    return "agent"


class _Outcome(NamedTuple):
    state: State
    actor: Party
    decision: Decision
    pending: bool = False
    action: Action | None = None
    refusal: str | None = None


def _turn_taking(f: Facts, base: Baseline, invoker: Invoker) -> _Outcome:
    if isinstance(base, Mid):  # 2
        owner = _chain_owner(f.commits)
        if invoker is None:
            return _Outcome(base.state, owner, "pending", pending=True)
        return _Outcome(base.state, owner, "mid-chain", action=base.action)
    state, awaited = base.state, base.actor
    if invoker is None:  # 3
        return _Outcome(state, awaited, "report")
    health_budget_spent = f.head_is(Routing("health-check")) and f.counters.health_cap_reached(
        f.config
    )
    if not f.config.scripted and (
        (f.head_is(Routing("health-fix")) and state == "idle")
        or (health_budget_spent and state == "health-fixing")
    ):  # 4
        return _Outcome(state, awaited, "health-check", action=f.health_check())
    if invoker == "check" and (awaited == "check" or (state == "idle" and f.config.scripted)):
        return _check_turn(f, state, awaited)  # the check's turn, and the idle carve-out
    if invoker != awaited:  # 5
        return _Outcome(state, awaited, "refusal", refusal=refusal_message(state, awaited))
    if state == "idle" and f.config.scripted:  # 6 with scripted checks
        if f.check_output:  # the script has run already: capture its output
            return _check_turn(f, state, awaited)
        return _Outcome(state, awaited, "idle-health-check", action=RunCheck(state))
    if state == "idle":  # 6 (the invoker is the human here)
        return _Outcome(state, awaited, "idle-health-check", action=f.health_check())
    gate = capture_gate(state)
    if gate is None:  # only idle and the edge-only states lack a gate; neither rests here
        raise StepError("input", f"no turn can be captured at {state}")
    assert invoker != "check"  # the check's turns were taken above
    turn = Turn(invoker, gate)
    if f.tree.clean and (f.head_is(turn) or (state == "escalate" and f.tree.has(ERRORS))):  # 7
        # Also at escalate while ERRORS.md is still there: the human's move is to delete
        # it (or fix code), so an empty turn would only park at escalate again — and
        # gtd 2.x promises a settled re-run authors nothing.
        return _Outcome(state, awaited, "no-op")
    if (
        invoker == "agent"
        and f.tree.clean
        and (
            state in _INERT_WHEN_CLEAN
            or (state == "squashing" and is_squash_template(f.tree.squash_msg_text))
        )
    ):  # 8
        return _Outcome(state, awaited, "inert")
    drafted = DRAFTED.get(state)
    if invoker == "agent" and drafted is not None and f.tree.findings_for(drafted):
        # The validation loop (module docstring): the draft is not a finished turn.
        findings = f.tree.findings_for(drafted)
        return _Outcome(
            state, awaited, "malformed", refusal=malformed_message(state, drafted, findings)
        )
    if invoker == "agent" and state == "review" and not f.tree.has(REVIEW):
        # The agent's one move here is `.gtd/REVIEW.md`: changes without it are a
        # review that went elsewhere (a root REVIEW.md, a failed write), which a
        # capture would commit into the feature as if the turn were done.
        return _Outcome(state, awaited, "malformed", refusal=missing_review_message(f.tree))
    return _Outcome(state, awaited, "capture", action=MakeCommit(turn.render()))  # 9


_CHECK_RESTS: dict[State, CheckRest] = {
    "testing": "testing",
    "health-check": "health-check",
    "idle": "idle",
}


def _check_turn(f: Facts, state: State, awaited: Party) -> _Outcome:
    """The check's turn at a rest awaiting it, or at idle: the capture rules."""
    turn = capture(
        _CHECK_RESTS[state],
        red=f.check_output,
        counters=f.counters,
        config=f.config,
        packages=bool(f.packages),
    )
    if turn is None:  # green at idle: nothing to record
        return _Outcome(state, awaited, "no-op")
    return _Outcome(state, awaited, "capture", action=turn)


def _context_squash_base(f: Facts) -> str | None:
    last = len(f.commits) - 1
    if f.head_is(Routing("done")):
        return cycle_squash_base(f.commits, last)
    if f.subject in GREEN:
        return health_run_base(f.commits, last)
    return squash_base(f.commits)


def resolve(
    commits: Sequence[Commit], tree: WorkingTree, config: StepConfig, invoker: Invoker
) -> Resolution:
    """Fold ``commits`` (first-parent, oldest first) and ``tree`` into one decision
    for ``invoker`` (``"human"``, ``"agent"``, or None for a pure query).

    Raises StepError for an illegal steering-file combination, for a state no rule
    explains, and for inputs the edge filled inconsistently.
    """
    check_inputs(tree)
    f = gather(commits, tree, config)
    if _is_dirty_boundary_entry(f, invoker):  # turn-taking 1
        check_legal(f)
        outcome = _Outcome(
            "grilling", "human", "entry", action=MakeCommit(Turn("human", "grilling").render())
        )
    else:
        f = check_output(f) or f
        check_legal(f)
        outcome = _turn_taking(f, baseline(f), invoker)
    drafted = DRAFTED.get(outcome.state)
    findings: tuple[FormatFinding, ...] = ()
    resting = outcome.decision not in ("pending", "mid-chain")
    if drafted is not None and outcome.actor == "agent" and resting:
        findings = tree.findings_for(drafted)
    return Resolution(
        state=outcome.state,
        actor=outcome.actor,
        decision=outcome.decision,
        pending=outcome.pending,
        action=outcome.action,
        refusal=outcome.refusal,
        counters=f.counters,
        review_base=review_base(commits),
        squash_base=_context_squash_base(f),
        package=f.packages[0] if f.packages else None,
        findings=findings,
        check_output=f.check_output,
    )


def changes_wanted(commits: Sequence[Commit]) -> int:
    """How many of the newest commits' change lists :func:`resolve` may read: HEAD's
    (its classification), the counters' (:func:`gtd.step.counters.changes_read_from`)
    and the review material's (:func:`gtd.step.bases.review_material_from`). The
    edge reads ``--name-status`` for those alone; the older commits' ``changes`` may
    be None (not read)."""
    if not commits:
        return 0
    oldest = min(len(commits) - 1, changes_read_from(commits), review_material_from(commits))
    return len(commits) - oldest
