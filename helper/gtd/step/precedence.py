"""Where the machine rests before turn-taking: the precedence rules 1-5 of gtd 2.x.

Pure. :func:`baseline` reads the facts (:class:`Facts`: the commits, the working
tree, the config, folded once by :func:`gather`) and answers a :class:`Rest` (a
state and the actor it awaits) or a :class:`Mid` (a mid-chain state and the
bookkeeping action it performs). :mod:`gtd.step.machine` turns that baseline into
one decision for the invoker (turn-taking); its docstring maps every rule of the
state machine to its code, and says the decisions where the tables are silent.

====================================  ===============================================
rule                                  code
====================================  ===============================================
Precedence 1 — illegal combinations   :func:`check_legal`
Precedence 2 — steering files         :func:`_steering`
Precedence 3 — HEAD classification    :func:`_classify_turn`, :func:`_classify_routing`,
                                      :func:`_classify_check`
Precedence 4 — ladder                 :func:`_ladder`
Precedence 5 — no rule matched        :func:`_ladder` (raises ``corruption``)
A check's output (scripted checks)    :func:`check_output`
====================================  ===============================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from gtd.step.actions import (
    Action,
    ClosePackage,
    HealthCheck,
    MakeCommit,
    RunTests,
    Squash,
    WriteSquashTemplate,
    is_squash_template,
)
from gtd.step.bases import (
    GREEN,
    cycle_squash_base,
    has_review_material,
    health_run_base,
    squash_base,
)
from gtd.step.counters import TEST_RUNS, Counters, fold_counters
from gtd.step.errors import StepError
from gtd.step.events import Commit, WorkingTree
from gtd.step.review_diff import is_substantive
from gtd.step.settings import StepConfig
from gtd.step.states import State
from gtd.step.steering import (
    ERRORS,
    FEEDBACK,
    HEALTH,
    REVIEW,
    SQUASH_MSG,
    TODO,
    Package,
)
from gtd.step.subjects import Boundary, Check, Party, Route, Routing, Subject, Turn
from gtd.tuples import NamedTuple


class Rest(NamedTuple):
    state: State
    actor: Party


class Mid(NamedTuple):
    state: State
    action: Action


Baseline: TypeAlias = Rest | Mid

# Agent rests whose move is a file artifact: a clean tree there means the agent did


def corruption_message(head: str, clean: bool) -> str:
    return (
        f'no precedence rule matched (HEAD="{head}", clean={str(clean).lower()}); '
        "repo is in an unrecognized state — refusing to guess"
    )


class Facts(NamedTuple):
    """Everything the rules read, computed once."""

    commits: Sequence[Commit]
    tree: WorkingTree
    config: StepConfig
    head: Commit | None
    subject: Subject
    packages: tuple[Package, ...]
    counters: Counters
    # The check's output (a FEEDBACK.md it added) waits to be captured; ``tree`` is
    # then the tree without it (see check_output).
    check_output: bool = False

    @property
    def head_text(self) -> str:
        return self.head.subject.strip() if self.head is not None else ""

    def head_is(self, subject: Subject) -> bool:
        return self.subject == subject

    def run_tests(self) -> RunTests:
        return RunTests(self.counters.test_cap_reached(self.config), self.counters.test_fix)

    def retest(self) -> Baseline:
        """The test run after a build, fix or escalate turn: inline, the run itself;
        scripted, ``gtd: testing`` (clearing the old FEEDBACK.md), then the check."""
        if self.config.scripted:
            return Mid("testing", MakeCommit("gtd: testing", (FEEDBACK,)))
        return Mid("testing", self.run_tests())

    def health_retest(self) -> Baseline:
        """The health check the health loop's escalate turn asks for."""
        if self.config.scripted:
            return Rest("health-check", "check")
        return Mid("health-check", self.health_check(force_green_commit=True))

    def health_check(self, *, force_green_commit: bool = False) -> HealthCheck:
        # Green commits `gtd: tests green` when a health fix happened and squash is on
        # (so the fix is squashed), or when HEAD must move on: an escalate turn, or a
        # HEALTH.md that the green result makes obsolete.
        fixed = self.config.squash and health_run_base(self.commits, len(self.commits)) is not None
        green_commit = force_green_commit or fixed or self.tree.has(HEALTH)
        return HealthCheck(
            self.counters.health_cap_reached(self.config), self.counters.health_fix, green_commit
        )

    def close_package(self) -> ClosePackage:
        if not self.packages:
            raise StepError("corruption", corruption_message(self.head_text, self.tree.clean))
        return ClosePackage(self.packages[0].name)


def gather(commits: Sequence[Commit], tree: WorkingTree, config: StepConfig) -> Facts:
    head = commits[-1] if commits else None
    subject: Subject = head.parsed if head is not None else Boundary("")
    packages = tuple(sorted(tree.packages, key=lambda p: p.order))
    return Facts(commits, tree, config, head, subject, packages, fold_counters(commits))


def check_inputs(tree: WorkingTree) -> None:
    for path, text in ((FEEDBACK, tree.feedback_text), (SQUASH_MSG, tree.squash_msg_text)):
        if tree.has(path) and text is None:
            raise StepError("input", f"{path} is present but its text was not gathered")


# -- precedence 1 ------------------------------------------------------------------


def check_legal(f: Facts) -> None:
    tree = f.tree
    health, review = tree.has(HEALTH), tree.has(REVIEW)
    feedback, errors, todo = tree.has(FEEDBACK), tree.has(ERRORS), tree.has(TODO)
    packages = bool(f.packages)
    review_uncommitted = review and not tree.committed(REVIEW)
    # ERRORS.md outlives the packages when the health loop escalates. Besides the two
    # HEADs the table names, the human's own escalate turn at that gate is part of
    # the escalation: without it, a clean `gtd step` there (which captures an empty
    # escalate turn, as it does with packages) would end in this error.
    health_escalation = (
        f.head_is(Routing("health-check"))
        or f.head_is(Routing("health-fix"))
        or f.head_is(Check("health-escalated"))
        or (f.head_is(Turn("human", "escalate")))
    )
    rules: tuple[tuple[bool, str], ...] = (
        (health and packages, f"{HEALTH} + packages"),
        (health and review, f"{HEALTH} + {REVIEW}"),
        (health and feedback, f"{HEALTH} + {FEEDBACK}"),
        (health and errors, f"{HEALTH} + {ERRORS}"),
        (review and packages, f"{REVIEW} + packages"),
        (review and todo and tree.committed(TODO), f"{REVIEW} + committed {TODO}"),
        (review_uncommitted and todo, f"uncommitted {REVIEW} + {TODO}"),
        (feedback and review, f"{FEEDBACK} + {REVIEW}"),
        (feedback and not packages, f"{FEEDBACK} without packages"),
        (errors and feedback, f"{ERRORS} + {FEEDBACK}"),
        (errors and not packages and not health_escalation, f"{ERRORS} without packages"),
    )
    for violated, what in rules:
        if violated:
            raise StepError("illegal-combination", f"illegal combination: {what}")


# -- precedence 2 ------------------------------------------------------------------


def _steering(f: Facts) -> Baseline | None:
    tree = f.tree
    if tree.has(ERRORS):
        return Rest("escalate", "human")
    if tree.has(HEALTH) and not f.head_is(Turn("agent", "health-fixing")):
        return Rest("health-fixing", "agent")
    deleted = tree.deletion_pending(FEEDBACK)
    at_green = f.subject in GREEN
    force = f.counters.force_approve(f.config)
    if (
        (tree.has(FEEDBACK) or deleted)
        and not f.head_is(Turn("agent", "fixing"))
        and not (force and at_green)
    ):
        if at_green or f.head_is(Check("agentic-review")):
            # The reviewer's fresh verdict: capture it as its turn first. (The check's
            # agentic-review label was decided at capture: no force-approve here.)
            return Rest("agentic-review", "agent")
        blank = deleted or not (tree.feedback_text or "").strip()
        if blank and f.subject not in TEST_RUNS:
            return Mid("close-package", f.close_package())
        return Rest("fixing", "agent")
    return None


# -- precedence 3 ------------------------------------------------------------------


def _classify_turn(f: Facts, turn: Turn) -> Baseline | None:
    head = f.head
    assert head is not None  # a Turn subject comes from a commit
    key = (turn.actor, turn.gate)
    if key == ("agent", "grilling"):
        # An empty agent turn changed nothing: the agent is still up. Otherwise the
        # plan is written and the human answers (the answer gate).
        return Rest("grilling", "agent" if head.is_empty else "human")
    if key == ("human", "grilling"):
        if head.is_empty:  # a clean step at the answer gate accepts the defaults
            return Mid("grilling", MakeCommit("gtd: grilled"))
        return Rest("grilling", "agent")
    if key == ("agent", "grilled"):
        if f.packages:
            return Mid("grilled", MakeCommit("gtd: planning", (TODO,)))
        return Rest("grilled", "agent")
    if key == ("agent", "building"):
        return f.retest()
    if key == ("human", "escalate"):
        if f.tree.deletion_pending(ERRORS):
            # ERRORS.md deleted after an earlier escalate turn: capture the deletion
            # as the human's turn first, so the budget resets before the re-test.
            return Rest("escalate", "human")
        if f.packages:
            return f.retest()
        # The health loop escalated: re-test as a health check (gtd.step.machine's docstring).
        return f.health_retest()
    if key == ("agent", "fixing"):
        return Rest("fixing", "agent") if head.is_empty else f.retest()
    if key == ("agent", "agentic-review"):
        return Rest("agentic-review", "agent")
    if key == ("agent", "review"):
        if f.tree.has(REVIEW) and not f.tree.findings_for(REVIEW):
            return Mid("review", MakeCommit("gtd: awaiting review"))
        return Rest("review", "agent")
    if key == ("human", "review"):
        if is_substantive(head):
            return Mid("review", MakeCommit("gtd: review feedback", (REVIEW,)))
        return Mid("done", MakeCommit("gtd: done", (REVIEW,)))
    if key == ("agent", "squashing"):
        base = squash_base(f.commits)
        if base is not None and not is_squash_template(f.tree.squash_msg_text):
            return Mid("squashing", Squash(base))
        return Rest("squashing", "agent")
    if key == ("agent", "health-fixing"):
        return Mid("health-fixing", MakeCommit("gtd: health-fix", (HEALTH,)))
    return None  # a turn outside the table falls through to the ladder


# A check turn routes like its 2.x routing twin (gtd.step.checks).
_TWIN: dict[str, Route] = {
    "test-failed": "errors",
    "escalated": "errors",
    "tests-green": "tests green",
    "health-failed": "health-check",
    "health-escalated": "health-check",
}


def _classify_check(f: Facts, check: Check) -> Baseline | None:
    if check.label == "agentic-review":
        return Rest("agentic-review", "agent")
    if check.label == "close-package-approved":
        return Mid("close-package", f.close_package())
    return _classify_route(f, _TWIN[check.label])


def _classify_routing(f: Facts, routing: Routing) -> Baseline | None:
    return _classify_route(f, routing.route)


def _classify_route(f: Facts, route: Route) -> Baseline | None:
    tree, last = f.tree, len(f.commits) - 1
    errors_pending = tree.has(ERRORS) or tree.deletion_pending(ERRORS)
    if route == "grilled":
        return Rest("grilled", "agent")
    if route == "planning":
        return Rest("building", "agent")
    if route == "tests green":
        if f.packages:
            if f.counters.force_approve(f.config):
                return Mid("close-package", f.close_package())
            return Rest("agentic-review", "agent")
        if f.config.squash and health_run_base(f.commits, last) is not None:
            return Mid("done", WriteSquashTemplate())
        return Rest("idle", "human")
    if route == "errors":
        return Rest("escalate", "human") if errors_pending else Rest("fixing", "agent")
    if route == "health-check":
        return Rest("escalate", "human") if errors_pending else Rest("health-fixing", "agent")
    if route == "awaiting review":
        return Rest("await-review", "human")
    if route == "review feedback":
        return Rest("grilling", "agent")
    if route == "done":
        if f.config.squash and cycle_squash_base(f.commits, last) is not None:
            return Mid("done", WriteSquashTemplate())
        return Rest("idle", "human")
    if route == "squash template":
        return Rest("squashing", "agent")
    if route == "reviewing":
        return Rest("review", "agent")
    if route == "health-fix":
        return Rest("health-check", "check") if f.config.scripted else Rest("idle", "human")
    if route == "testing" and f.packages:
        return Rest("testing", "check") if f.config.scripted else Mid("testing", f.run_tests())
    return None  # package done (and a testing HEAD without packages): the ladder decides


# -- precedence 4 and 5 ------------------------------------------------------------


def _nearest_workflow_commit(commits: Sequence[Commit]) -> Subject | None:
    for commit in reversed(commits):
        if not isinstance(commit.parsed, Boundary):
            return commit.parsed
    return None


def _ladder(f: Facts) -> Baseline:
    tree = f.tree

    def review_or_idle() -> Rest:
        return Rest("review", "agent") if has_review_material(f.commits) else Rest("idle", "human")

    if tree.dirty_package_paths:
        return Rest("planning", "agent")
    if f.head_is(Routing("package done")):
        return Rest("building", "agent") if f.packages else review_or_idle()
    if tree.has(TODO):
        return Rest("grilling", "agent")
    nearest = _nearest_workflow_commit(f.commits) if f.packages else None
    if nearest == Turn("agent", "building"):
        # Recovery: a boundary commit (say, a config fix) landed on the build
        # checkpoint after an operational failure; finish the interrupted test run.
        return f.retest()
    if nearest == Routing("testing"):
        # The same, landed while the check was awaited.
        return Rest("testing", "check") if f.config.scripted else Mid("testing", f.run_tests())
    steering = (TODO, REVIEW, FEEDBACK, ERRORS, HEALTH)
    if not f.packages and not any(tree.has(path) for path in steering):
        return review_or_idle()
    raise StepError("corruption", corruption_message(f.head_text, tree.clean))


def baseline(f: Facts) -> Baseline:
    found = _steering(f)
    if found is None and isinstance(f.subject, Turn):
        found = _classify_turn(f, f.subject)
    elif found is None and isinstance(f.subject, Check):
        found = _classify_check(f, f.subject)
    elif found is None and isinstance(f.subject, Routing):
        found = _classify_routing(f, f.subject)
    return found if found is not None else _ladder(f)


def check_output(f: Facts) -> Facts | None:
    """With scripted checks, a FEEDBACK.md added while the check is awaited (or at
    idle, where the check is admitted) is the check's output — the facts without
    it, flagged, or None when there is no such output."""
    tree = f.tree
    if not f.config.scripted or tree.dirty_status(FEEDBACK) != "A" or not tree.has(FEEDBACK):
        return None
    without = f._replace(
        tree=tree._replace(
            present=tree.present - {FEEDBACK},
            dirty=tuple(c for c in tree.dirty if c.path != FEEDBACK),
            feedback_text=None,
        ),
        check_output=True,
    )
    try:
        check_legal(without)
        base = baseline(without)
    except StepError:
        return None
    if isinstance(base, Rest) and (base.actor == "check" or base.state == "idle"):
        return without
    return None
