"""The state machine's turn-taking rules, in order (1-9), over one fixture per rest."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from gtd.step.actions import SQUASH_TEMPLATE, HealthCheck, MakeCommit, RunTests
from gtd.step.events import Commit, WorkingTree
from gtd.step.settings import StepConfig
from gtd.step.states import State
from gtd.step.subjects import Actor
from tests.unit.step.build import STEER, CommitSpec, changes, history, run, tree

START: list[CommitSpec] = ["chore: init", ("gtd(human): grilling", "A idea.md")]
CYCLE: list[CommitSpec] = [
    *START,
    ("gtd(agent): grilling", "A TODO"),
    ("gtd(agent): building", "A src/a.py"),
]
PKG = "01-a"
NO_SQUASH = StepConfig(squash=False)


class Rest(NamedTuple):
    state: State
    awaited: Actor
    commits: list[Commit]
    clean: WorkingTree | None  # None: this rest only exists on a dirty tree
    capture: str | None  # the subject the awaited actor's turn is captured as


def _dirty(t: WorkingTree, extra: str = "M src/z.py") -> WorkingTree:
    return t._replace(dirty=(*t.dirty, *changes(extra)))


RESTS = {
    "grilling (agent)": Rest("grilling", "agent", history(*START), tree(),
                             "gtd(agent): grilling"),
    "grilling (human answer gate)": Rest(
        "grilling", "human", history(*START, ("gtd(agent): grilling", "A TODO")), tree("TODO"),
        "gtd(human): grilling"),
    "grilled": Rest("grilled", "agent", history(*START, "gtd: grilled"), tree("TODO"),
                    "gtd(agent): grilled"),
    "planning": Rest("planning", "agent",
                     history(*CYCLE, "gtd: tests green", "gtd: package done"), None,
                     "gtd(agent): building"),
    "building": Rest("building", "agent", history(*START, "gtd: planning"),
                     tree(packages=PKG), "gtd(agent): building"),
    "fixing": Rest("fixing", "agent", history(*CYCLE, "gtd: errors"),
                   tree("FEEDBACK", packages=PKG, feedback="boom"), "gtd(agent): fixing"),
    "escalate": Rest("escalate", "human", history(*CYCLE, "gtd: errors"),
                     tree("ERRORS", packages=PKG), "gtd(human): escalate"),
    "agentic-review": Rest("agentic-review", "agent", history(*CYCLE, "gtd: tests green"),
                           tree(packages=PKG), "gtd(agent): agentic-review"),
    "review": Rest("review", "agent",
                   history(*CYCLE, "gtd: tests green", "gtd: package done"), tree(),
                   "gtd(agent): review"),
    "await-review": Rest("await-review", "human", history(*CYCLE, "gtd: awaiting review"),
                         tree("REVIEW"), "gtd(human): review"),
    "squashing": Rest("squashing", "agent",
                      history(*CYCLE, "gtd(human): review", "gtd: done", "gtd: squash template"),
                      tree("SQUASH_MSG", squash_msg=SQUASH_TEMPLATE), "gtd(agent): squashing"),
    "idle": Rest("idle", "human", history("chore: init", "gtd: tests green"), tree(), None),
    "health-fixing": Rest("health-fixing", "agent", history("chore: init", "gtd: health-check"),
                          tree("HEALTH"), "gtd(agent): health-fixing"),
}  # fmt: skip
PLANNING_TREE = tree(packages="02-b", dirty="M .gtd/02-b/01-task.md")


def trees(rest: Rest) -> list[WorkingTree]:
    if rest.clean is None:
        return [PLANNING_TREE]
    return [rest.clean, _dirty(rest.clean)]


def other(actor: Actor) -> Actor:
    return "human" if actor == "agent" else "agent"


# -- 1. dirty-boundary entry -------------------------------------------------------

ENTRY = MakeCommit("gtd(human): grilling")


@pytest.mark.parametrize(
    ("items", "t"),
    [
        pytest.param(["chore: init"], tree(dirty="A idea.md"), id="boundary HEAD"),
        pytest.param([], tree(dirty="A idea.md"), id="no commits in range"),
        pytest.param(["chore: init", "gtd: new task"], tree(dirty="M x.py"), id="1.x HEAD"),
        pytest.param(
            [*CYCLE, "gtd(human): review", "gtd: done"], tree(dirty="M x.py"),
            id="gtd: done HEAD (before its squash template)",
        ),
        pytest.param(
            ["chore: init"], tree("TODO", dirty="A TODO"), id="an uncommitted TODO.md rides along",
        ),
        pytest.param(
            ["chore: init"], tree("SQUASH_MSG", dirty="A SQUASH_MSG"),
            id="SQUASH_MSG.md does not block the entry",
        ),
    ],
)  # fmt: skip
def test_dirty_boundary_entry(items: list[str], t: WorkingTree) -> None:
    r = run(history(*items), t, None, "human")
    assert (r.decision, r.state, r.actor, r.action) == ("entry", "grilling", "human", ENTRY)


@pytest.mark.parametrize(
    ("items", "t", "invoker", "decision"),
    [
        pytest.param(["chore: init"], tree(dirty="A x.py"), "agent", "refusal", id="agent"),
        pytest.param(["chore: init"], tree(dirty="A x.py"), None, "report", id="next/status"),
        pytest.param(["chore: init"], tree(), "human", "idle-health-check", id="clean tree"),
        pytest.param(
            ["chore: init"], tree("TODO", dirty="M x.py"), "human", "refusal",
            id="committed TODO.md: grilling awaits the agent",
        ),
        pytest.param(
            ["chore: init", "gtd: health-check"], tree("HEALTH", dirty="M x.py"), "human",
            "refusal", id="HEALTH.md",
        ),
        pytest.param(
            ["chore: init", "gtd: health-check"], tree("ERRORS", dirty="M x.py"), "human",
            "capture", id="ERRORS.md",
        ),
        pytest.param(
            [*CYCLE, "gtd: awaiting review"], tree("REVIEW", dirty="M x.py"), "human",
            "capture", id="REVIEW.md",
        ),
        pytest.param(
            [*CYCLE, "fix: config"], tree(packages=PKG, dirty="M x.py"), "human", "mid-chain",
            id="packages",
        ),
        pytest.param(
            ["chore: init", "gtd: tests green"], tree(dirty="M x.py"), "human",
            "idle-health-check", id="HEAD a workflow commit",
        ),
    ],
)  # fmt: skip
def test_no_dirty_boundary_entry(
    items: list[str], t: WorkingTree, invoker: Actor | None, decision: str
) -> None:
    assert run(history(*items), t, NO_SQUASH, invoker).decision == decision


# -- 2. mid-chain ------------------------------------------------------------------


@pytest.mark.parametrize("dirty", [False, True])
def test_mid_chain_is_pending_for_queries_and_performed_by_either_mutator(dirty: bool) -> None:
    commits = history(*CYCLE)
    t = tree(packages=PKG, dirty="M notes.txt" if dirty else "")
    query = run(commits, t)
    assert (query.pending, query.action, query.refusal, query.decision) == (
        True,
        None,
        None,
        "pending",
    )
    assert (query.state, query.actor) == ("testing", "agent")
    for invoker in ("human", "agent"):
        r = run(commits, t, None, invoker)
        assert (r.decision, r.pending, r.action) == ("mid-chain", False, RunTests(False, 0))


@pytest.mark.parametrize(
    ("items", "t", "config", "actor"),
    [
        pytest.param([*CYCLE, "gtd: awaiting review", "gtd(human): review"], tree("REVIEW"),
                     None, "human", id="a human turn's chain"),
        pytest.param([*CYCLE, "gtd(human): review", "gtd: done"], tree(), None, "human",
                     id="routing HEAD: the newest turn's actor"),
        pytest.param(CYCLE, tree(packages=PKG), None, "agent", id="an agent turn's chain"),
        pytest.param(["chore: init", "gtd: tests green"], tree(packages=PKG),
                     StepConfig(agentic_review=False), "agent", id="no turn at all"),
    ],
)  # fmt: skip
def test_mid_chain_names_the_chain_owner(
    items: list[str], t: WorkingTree, config: StepConfig | None, actor: Actor
) -> None:
    r = run(history(*items), t, config)
    assert (r.pending, r.actor) == (True, actor)


# -- 3. report ---------------------------------------------------------------------


@pytest.mark.parametrize("name", RESTS)
def test_report_at_a_rest(name: str) -> None:
    rest = RESTS[name]
    for t in trees(rest):
        r = run(rest.commits, t)
        assert (r.state, r.actor, r.decision, r.pending, r.action, r.refusal) == (
            rest.state,
            rest.awaited,
            "report",
            False,
            None,
            None,
        )


# -- 4. health check for any invoker -----------------------------------------------


@pytest.mark.parametrize("invoker", ["human", "agent"])
@pytest.mark.parametrize(
    ("items", "present", "config", "expected"),
    [
        pytest.param(
            ["chore: init", "gtd: health-check", "gtd(agent): health-fixing", "gtd: health-fix"],
            "", NO_SQUASH, HealthCheck(False, 1, commit_green=False),
            id="health-fix at idle, squash off",
        ),
        pytest.param(
            ["chore: init", "gtd: health-check", "gtd(agent): health-fixing", "gtd: health-fix"],
            "", None, HealthCheck(False, 1, commit_green=True),
            id="health-fix at idle, squash on: green commits tests green",
        ),
        pytest.param(
            ["chore: init", "gtd: health-check", "gtd: health-check", "gtd: health-check"],
            "HEALTH", NO_SQUASH, HealthCheck(True, 3, commit_green=True),
            id="health-check with the budget spent",
        ),
        pytest.param(
            ["chore: init", "gtd: health-check"], "HEALTH", StepConfig(fix_attempt_cap=1),
            HealthCheck(True, 1, commit_green=True),
            id="health-check with a budget of one spent",
        ),
    ],
)  # fmt: skip
def test_health_check_for_any_invoker(
    items: list[str], present: str, config: StepConfig | None, expected: HealthCheck, invoker: Actor
) -> None:
    r = run(history(*items), tree(present), config, invoker)
    assert (r.decision, r.action) == ("health-check", expected)


def test_health_check_budget_not_spent_is_the_agents_turn() -> None:
    commits = history("chore: init", "gtd: health-check")
    assert run(commits, tree("HEALTH"), None, "human").decision == "refusal"
    assert run(commits, tree("HEALTH"), None, "agent").action == MakeCommit(
        "gtd(agent): health-fixing"
    )
    assert run(commits, tree("HEALTH")).decision == "report"


# -- 5. refusal --------------------------------------------------------------------


@pytest.mark.parametrize("name", RESTS)
def test_out_of_turn_refusal(name: str) -> None:
    rest = RESTS[name]
    invoker = other(rest.awaited)
    run_cmd = "gtd step" if rest.awaited == "human" else "gtd step-agent"
    expected = f"{rest.state} awaits {'a human' if rest.awaited == 'human' else 'an agent'} turn"
    for t in trees(rest):
        r = run(rest.commits, t, None, invoker)
        assert r.decision == "refusal"
        assert r.action is None
        assert r.refusal == f"{expected} — run `{run_cmd}`"
        assert (r.state, r.actor) == (rest.state, rest.awaited)


def test_refusal_texts_verbatim() -> None:
    r = run(history(*CYCLE, "gtd: awaiting review"), tree("REVIEW"), None, "agent")
    assert r.refusal == "await-review awaits a human turn — run `gtd step`"
    r = run(history(*START, "gtd: planning"), tree(packages=PKG), None, "human")
    assert r.refusal == "building awaits an agent turn — run `gtd step-agent`"


# -- 6. idle + human ---------------------------------------------------------------


@pytest.mark.parametrize("dirty", ["", "M x.py"])
def test_idle_human_runs_the_health_check(dirty: str) -> None:
    r = run(history("chore: init", "gtd: tests green"), tree(dirty=dirty), NO_SQUASH, "human")
    assert (r.decision, r.state, r.action) == (
        "idle-health-check",
        "idle",
        HealthCheck(False, 0, commit_green=False),
    )


def test_idle_health_check_at_plain_boundary_never_commits_when_green() -> None:
    r = run(history("chore: init", "feat: shipped"), tree(), None, "human")
    assert r.action == HealthCheck(False, 0, commit_green=False)


# -- 7. no-op ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "t", "invoker", "state"),
    [
        pytest.param([*START, "gtd: grilled", "gtd(agent): grilled"], tree("TODO"), "agent",
                     "grilled", id="agent grilled without packages"),
        pytest.param([*CYCLE, "gtd: errors", "gtd(human): escalate"],
                     tree("ERRORS", packages=PKG), "human", "escalate",
                     id="human escalate without deleting ERRORS.md"),
        pytest.param([*CYCLE, "gtd: errors"], tree("ERRORS", packages=PKG), "human", "escalate",
                     id="escalate, ERRORS.md kept, nothing changed"),
        pytest.param([*CYCLE, "gtd: package done", "gtd(agent): review"], tree(), "agent",
                     "review", id="agent review without REVIEW.md"),
        pytest.param([*CYCLE, "gtd: errors", "gtd(agent): fixing"],
                     tree("FEEDBACK", packages=PKG, feedback="x"), "agent", "fixing",
                     id="empty fixing turn"),
        pytest.param(["chore: init", "gtd: done", "gtd: squash template",
                      ("gtd(agent): squashing", "M SQUASH_MSG")],
                     tree("SQUASH_MSG", squash_msg="feat: x"), "agent", "squashing",
                     id="squashing with no base"),
    ],
)  # fmt: skip
def test_no_op_when_head_is_this_turn_and_clean(
    items: list[str], t: WorkingTree, invoker: Actor, state: State
) -> None:
    r = run(history(*items), t, None, invoker)
    assert (r.decision, r.state, r.action) == ("no-op", state, None)


def test_same_turn_on_a_dirty_tree_is_captured_again() -> None:
    commits = history(*CYCLE, "gtd: errors", "gtd(agent): fixing")
    t = tree("FEEDBACK", packages=PKG, feedback="x", dirty="M src/a.py")
    assert run(commits, t, None, "agent").action == MakeCommit("gtd(agent): fixing")


# -- 8. inert agent ----------------------------------------------------------------

INERT = ["grilling (agent)", "grilled", "building", "fixing", "agentic-review", "review",
         "squashing"]  # fmt: skip


@pytest.mark.parametrize("name", INERT)
def test_inert_agent_on_a_clean_tree(name: str) -> None:
    rest = RESTS[name]
    assert rest.clean is not None
    r = run(rest.commits, rest.clean, None, "agent")
    assert (r.decision, r.action, r.refusal) == ("inert", None, None)


def test_squashing_with_a_real_message_on_a_clean_tree_is_captured() -> None:
    rest = RESTS["squashing"]
    t = tree("SQUASH_MSG", squash_msg="feat: real message")
    assert run(rest.commits, t, None, "agent").action == MakeCommit("gtd(agent): squashing")


@pytest.mark.parametrize(
    ("name", "invoker"),
    [("health-fixing", "agent"), ("grilling (human answer gate)", "human"),
     ("await-review", "human")],
)  # fmt: skip
def test_empty_turns_that_are_signals_are_captured(name: str, invoker: Actor) -> None:
    rest = RESTS[name]
    assert rest.clean is not None
    r = run(rest.commits, rest.clean, None, invoker)
    assert (r.decision, r.action) == ("capture", MakeCommit(str(rest.capture)))


# -- 9. capture --------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in RESTS if n != "idle"])
def test_capture_on_a_dirty_tree(name: str) -> None:
    rest = RESTS[name]
    t = trees(rest)[-1]
    if name == "review":  # the agent's review turn is its REVIEW.md (below)
        t = _dirty(t._replace(present=frozenset({STEER["REVIEW"]})), "A REVIEW")
    r = run(rest.commits, t, None, rest.awaited)
    assert (r.decision, r.state, r.actor, r.action) == (
        "capture",
        rest.state,
        rest.awaited,
        MakeCommit(str(rest.capture)),
    )


def test_an_agent_review_turn_without_review_md_is_refused() -> None:
    # A review written anywhere else (a root REVIEW.md after a failed write to
    # `.gtd/`) is not the turn; captured, it would ship in the feature.
    rest = RESTS["review"]
    r = run(rest.commits, _dirty(rest.clean or tree(), "A REVIEW.md"), None, "agent")
    assert (r.state, r.actor, r.action) == ("review", "agent", None)
    assert r.refusal == (
        "review: the working tree has changes (REVIEW.md) but no `.gtd/REVIEW.md`, so the "
        "agent's turn is not captured — write the review to `.gtd/REVIEW.md` (make the "
        "`.gtd/` folder if it is missing), then run `gtd step-agent` again"
    )
