"""Scripted checks through the pure core (docs/step-mode.md, "Scripted checks"):
the check's subjects, its capture rules, the rests that await it, the idle
carve-out, refusals, counters and their trailer — and that gtd 2.x mode is
untouched by all of it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck as HypothesisHealthCheck
from hypothesis import given, settings
from hypothesis import strategies as st

from gtd.step.actions import (
    SQUASH_TEMPLATE,
    SQUASH_TEMPLATE_2_0,
    CaptureCheck,
    HealthCheck,
    MakeCommit,
    RunCheck,
    RunTests,
    is_squash_template,
)
from gtd.step.checks import capture
from gtd.step.counters import Counters, fold_counters
from gtd.step.events import Commit, Snapshot
from gtd.step.machine import resolve
from gtd.step.predict import predict
from gtd.step.settings import StepConfig
from gtd.step.steering import ERRORS, FEEDBACK, HEALTH, is_private
from gtd.step.subjects import (
    CHECK_LABELS,
    GATES,
    Boundary,
    Check,
    Routing,
    parse_subject,
)
from tests.unit.step.build import history, run, tree
from tests.unit.step.sim import Sim

SCRIPTED = StepConfig(checks="scripted")
INLINE = StepConfig()
CHECK_REFUSAL = (
    "testing awaits a check turn — run `gtd run`, or run the script `gtd next` prints "
    "and then `gtd step check`"
)

# -- the grammar ---------------------------------------------------------------------


@pytest.mark.parametrize("label", CHECK_LABELS)
def test_every_check_label_parses_and_renders(label: str) -> None:
    subject = f"gtd(check): {label}"
    assert parse_subject(subject) == Check(label)  # type: ignore[arg-type]
    assert Check(label).render() == subject  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "subject",
    [
        *(f"gtd(check): {gate}" for gate in GATES if gate not in CHECK_LABELS),
        "gtd(check): test-failed extra",
        "gtd(Check): test-failed",
        "gtd(check):test-failed",
    ],
)
def test_a_check_subject_outside_the_labels_is_a_boundary(subject: str) -> None:
    assert parse_subject(subject) == Boundary(subject)


def test_a_check_is_never_equal_to_a_boundary_with_its_label() -> None:
    # NamedTuples compare as tuples: without its tag Check("x") would equal Boundary("x").
    assert parse_subject("escalated") != Check("escalated")
    assert parse_subject("gtd: testing") == Routing("testing")


# -- the capture rules ---------------------------------------------------------------


def _capture(rest: str, red: bool, counters: Counters, **config: object) -> object:
    turn = capture(
        rest,  # type: ignore[arg-type]
        red=red,
        counters=counters,
        config=StepConfig(checks="scripted", **config),  # type: ignore[arg-type]
        packages=True,
    )
    return None if turn is None else (turn.label, turn.moves_to, turn.removes)


@pytest.mark.parametrize(
    ("rest", "red", "counters", "config", "expected"),
    [
        ("testing", True, Counters(0), {}, ("test-failed", None, ())),
        ("testing", True, Counters(2), {}, ("test-failed", None, ())),
        ("testing", True, Counters(3), {}, ("escalated", ERRORS, ())),
        ("testing", True, Counters(0), {"fix_attempt_cap": 0}, ("escalated", ERRORS, ())),
        ("testing", False, Counters(1), {}, ("agentic-review", None, ())),
        ("testing", False, Counters(0, 3), {}, ("close-package-approved", None, ())),
        (
            "testing",
            False,
            Counters(),
            {"agentic_review": False},
            ("close-package-approved", None, ()),
        ),
        ("health-check", True, Counters(0, 0, 1), {}, ("health-failed", HEALTH, ())),
        ("health-check", True, Counters(0, 0, 3), {}, ("health-escalated", ERRORS, (HEALTH,))),
        ("health-check", False, Counters(0, 0, 2), {}, ("tests-green", None, (HEALTH,))),
        ("idle", True, Counters(), {}, ("health-failed", HEALTH, ())),
        ("idle", False, Counters(), {}, None),
    ],
)
def test_capture_rules(
    rest: str, red: bool, counters: Counters, config: dict[str, object], expected: object
) -> None:
    assert _capture(rest, red, counters, **config) == expected


def test_green_without_packages_is_tests_green() -> None:
    turn = capture("testing", red=False, counters=Counters(), config=SCRIPTED, packages=False)
    assert turn is not None
    assert turn.label == "tests-green"


def test_the_trailer_is_the_fold_after_the_turn() -> None:
    commits = history("chore: init", "gtd: planning", ("gtd(check): test-failed", "A FEEDBACK"))
    counters = fold_counters(commits)
    turn = capture("testing", red=True, counters=counters, config=SCRIPTED, packages=True)
    assert isinstance(turn, CaptureCheck)
    assert turn.message == "gtd(check): test-failed\n\nGtd-Counters: t=2 r=0 h=0\n"
    after = [*commits, Commit("f" * 40, turn.subject, commits[-1].sha, ())]
    assert turn.counters == fold_counters(after)


def test_check_turns_count_like_their_2x_twins() -> None:
    inline = history("gtd: planning", "gtd: errors", "gtd: errors", "gtd: health-check")
    scripted = history(
        "gtd: planning",
        "gtd(check): test-failed",
        "gtd(check): escalated",
        "gtd(check): health-failed",
    )
    assert fold_counters(inline) == fold_counters(scripted) == Counters(2, 0, 1)


# -- the rests that await the check --------------------------------------------------

BUILT = ("chore: init", "gtd: planning", ("gtd(agent): building", "A src/a.py"))


@pytest.mark.parametrize(
    ("head", "invoker"),
    [
        (("gtd(agent): building", "A src/a.py"), "agent"),
        (("gtd(agent): fixing", "M src/a.py"), "agent"),
        (("gtd(human): escalate", "D ERRORS"), "human"),
    ],
)
def test_a_retest_commits_gtd_testing_then_awaits_the_check(
    head: tuple[str, ...], invoker: str
) -> None:
    commits = history("chore: init", "gtd: planning", head)
    t = tree(packages="01-a")
    r = run(commits, t, SCRIPTED, invoker)  # type: ignore[arg-type]
    assert (r.state, r.decision, r.action) == (
        "testing",
        "mid-chain",
        MakeCommit("gtd: testing", (FEEDBACK,)),
    )
    inline = run(commits, t, INLINE, invoker)  # type: ignore[arg-type]
    assert isinstance(inline.action, RunTests)


def test_gtd_testing_rests_awaiting_the_check_and_refuses_everyone_else() -> None:
    commits = history(*BUILT, "gtd: testing")
    t = tree(packages="01-a")
    report = run(commits, t, SCRIPTED)
    assert (report.state, report.actor, report.pending) == ("testing", "check", False)
    for invoker in ("human", "agent"):
        refused = run(commits, t, SCRIPTED, invoker)
        assert refused.refusal == CHECK_REFUSAL
    green = run(commits, t, SCRIPTED, "check")
    assert isinstance(green.action, CaptureCheck)
    assert green.action.label == "agentic-review"
    red = run(commits, tree("FEEDBACK", dirty="A FEEDBACK", packages="01-a"), SCRIPTED, "check")
    assert isinstance(red.action, CaptureCheck)
    assert (red.action.label, red.check_output) == ("test-failed", True)


def test_a_mode_switch_mid_check_runs_the_tests_inline() -> None:
    r = run(history(*BUILT, "gtd: testing"), tree(packages="01-a"), INLINE, "agent")
    assert (r.state, r.action) == ("testing", RunTests(False, 0))


def test_the_check_is_refused_where_others_are_awaited() -> None:
    fixing = history(*BUILT, "gtd: testing", ("gtd(check): test-failed", "A FEEDBACK"))
    t = tree("FEEDBACK", packages="01-a", feedback="FAILED\n")
    r = run(fixing, t, SCRIPTED, "check")
    assert r.refusal == "fixing awaits an agent turn — run `gtd step-agent`"
    escalated = history(*BUILT, "gtd: testing", ("gtd(check): escalated", "A ERRORS"))
    r = run(escalated, tree("ERRORS", packages="01-a"), SCRIPTED, "check")
    assert r.refusal == "escalate awaits a human turn — run `gtd step`"
    assert run(history("chore: init"), tree(), INLINE, "check").refusal == (
        "idle awaits a human turn — run `gtd step`"
    )


def test_check_turns_route_like_their_twins() -> None:
    base = history(*BUILT, "gtd: testing")
    pkg = tree(packages="01-a")
    cases = {
        "test-failed": (tree("FEEDBACK", packages="01-a", feedback="x\n"), "fixing", "agent"),
        "escalated": (tree("ERRORS", packages="01-a"), "escalate", "human"),
        "agentic-review": (pkg, "agentic-review", "agent"),
        "close-package-approved": (pkg, "close-package", "agent"),
    }
    for label, (t, state, actor) in cases.items():
        commits = [*base, *history(f"gtd(check): {label}", start=len(base) + 1)]
        r = run(commits, t, SCRIPTED)
        assert (r.state, r.actor) == (state, actor), label
    # The pending close after a check turn belongs to the agent's chain, as in 2.x.
    closing = [*base, *history("gtd(check): close-package-approved", start=len(base) + 1)]
    assert run(closing, pkg, SCRIPTED).pending


def test_the_reviewers_verdict_after_a_green_check_is_its_turn() -> None:
    commits = [*history(*BUILT, "gtd: testing"), *history("gtd(check): agentic-review", start=5)]
    r = run(commits, tree("FEEDBACK", dirty="A FEEDBACK", packages="01-a"), SCRIPTED, "agent")
    assert r.action == MakeCommit("gtd(agent): agentic-review")


# -- the health check and the idle carve-out ----------------------------------------


def test_a_health_fix_rests_awaiting_the_check() -> None:
    commits = history(
        "chore: init",
        ("gtd(check): health-failed", "A HEALTH"),
        ("gtd(agent): health-fixing", "M src/a.py"),
        ("gtd: health-fix", "D HEALTH"),
    )
    r = run(commits, tree(), SCRIPTED)
    assert (r.state, r.actor) == ("health-check", "check")
    green = run(commits, tree(), SCRIPTED, "check")
    assert isinstance(green.action, CaptureCheck)
    assert (green.action.label, green.action.removes) == ("tests-green", (HEALTH,))
    # FEEDBACK.md without packages is the check's output here, not an illegal combination.
    red = run(commits, tree("FEEDBACK", dirty="A FEEDBACK", feedback="x\n"), SCRIPTED, "check")
    assert isinstance(red.action, CaptureCheck)
    assert (red.action.label, red.action.moves_to) == ("health-failed", HEALTH)
    inline = run(commits, tree(), INLINE, "human")
    assert (inline.state, inline.decision) == ("idle", "health-check")


def test_idle_awaits_the_human_and_admits_the_check() -> None:
    idle = history("chore: init")
    r = run(idle, tree(), SCRIPTED)
    assert (r.state, r.actor) == ("idle", "human")
    human = run(idle, tree(), SCRIPTED, "human")
    assert (human.decision, human.action) == ("idle-health-check", RunCheck("idle"))
    assert run(idle, tree(), INLINE, "human").action == HealthCheck(False, 0, False)
    green = run(idle, tree(), SCRIPTED, "check")
    assert (green.decision, green.action, green.refusal) == ("no-op", None, None)
    output = tree("FEEDBACK", dirty="A FEEDBACK", feedback="FAILED\n")
    for invoker in ("check", "human"):  # the human's step captures a script already run
        red = run(idle, output, SCRIPTED, invoker)
        assert isinstance(red.action, CaptureCheck)
        assert red.action.label == "health-failed"
    assert run(idle, tree(), SCRIPTED, "agent").refusal == (
        "idle awaits a human turn — run `gtd step`"
    )


def test_a_sketch_at_idle_is_still_the_humans_grilling_turn() -> None:
    r = run(history("chore: init"), tree(dirty="A idea.md"), SCRIPTED, "human")
    assert (r.decision, r.action) == ("entry", MakeCommit("gtd(human): grilling"))


# -- status --------------------------------------------------------------------------


def _status(commits: list[Commit], t: object, config: StepConfig) -> tuple[object, ...]:
    snapshot = Snapshot(tuple(commits), t, commits[-1].sha)  # type: ignore[arg-type]
    r = resolve(snapshot.commits, snapshot.tree, config, None)
    return tuple(predict(snapshot, r, config))


def test_status_at_a_check_rest_predicts_nothing_until_the_script_ran() -> None:
    commits = history(*BUILT, "gtd: testing")
    assert _status(commits, tree(packages="01-a"), SCRIPTED) == ("testing", "check", None)
    red = tree("FEEDBACK", dirty="A FEEDBACK", packages="01-a", feedback="x\n")
    assert _status(commits, red, SCRIPTED) == ("testing", "check", "gtd(check): test-failed")


def test_status_copies_state_and_reports_grilling_at_a_dirty_boundary() -> None:
    assert _status(history("chore: init"), tree(dirty="A idea.md"), INLINE) == (
        "grilling",
        "human",
        "gtd(human): grilling",
    )
    mid = history("chore: init", ("gtd(human): grilling", "A idea.md"), "gtd(agent): grilling")
    mid = [*mid, *history("gtd(human): grilling", start=4)]
    assert _status(mid, tree(), INLINE) == ("grilling", "human", "gtd: grilled")


# -- squash templates, private files -------------------------------------------------


def test_both_squash_templates_are_unfinished() -> None:
    for text in (SQUASH_TEMPLATE, SQUASH_TEMPLATE_2_0, SQUASH_TEMPLATE_2_0.replace("\n", "\r\n")):
        assert is_squash_template(text)
    assert not is_squash_template("feat: a real message\n")
    squashing = history(
        "chore: init",
        ("gtd(human): grilling", "A a"),
        "gtd: done",
        ("gtd: squash template", "A SQUASH_MSG"),
    )
    t = tree("SQUASH_MSG", squash_msg=SQUASH_TEMPLATE_2_0)
    assert run(squashing, t, INLINE, "agent").decision == "inert"
    # A squashing turn whose message is still 2.0.0's placeholder never squashes.
    turned = [*squashing, *history("gtd(agent): squashing", start=5)]
    r = run(turned, t, INLINE, "agent")
    assert (r.state, r.action) == ("squashing", None)


@pytest.mark.parametrize(
    ("path", "private"),
    [
        (".deepflow/auto-memory.yaml", True),
        (".deepflow/agent-output.log", True),
        (".deepflow/.gtd.lock", True),
        (".deepflow/agent-logs/cycle-1.log", True),
        (".deepflow/config.yaml", False),
        (".deepflowx/a", False),
        ("src/.deepflow/a", False),
    ],
)
def test_private_files(path: str, private: bool) -> None:
    assert is_private(path) is private


# -- whole scripted workflows, randomly ---------------------------------------------

RECORD = "# Review: x\n<!-- base: abc -->\n## Chunk\n- [ ] ./src/a.py#1 — look\n"


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HypothesisHealthCheck.too_slow, HypothesisHealthCheck.data_too_large],
)
@given(
    st.builds(
        StepConfig,
        checks=st.just("scripted"),
        fix_attempt_cap=st.integers(0, 3),
        review_threshold=st.integers(1, 3),
        agentic_review=st.booleans(),
        squash=st.booleans(),
    ),
    st.data(),
)
def test_scripted_workflows_never_stall_or_bypass_the_check(
    config: StepConfig, data: st.DataObject
) -> None:
    """Every check outcome is a check turn, the check is the only party a check rest
    accepts, and a workflow always reaches review or idle again."""
    sim = Sim(config=config)
    sim.files["idea.md"] = "x\n"
    sim.step("human")
    sim.files[".gtd/TODO.md"] = "# Plan\n"
    sim.step("agent")
    sim.step("human")
    sim.files[".gtd/01-a/01-t.md"] = "- [ ] a\n"
    sim.step("agent")
    for n in range(40):
        r = sim.resolve(None)
        if r.state in ("await-review", "idle") and not r.pending:
            break
        if r.actor == "check" and not r.pending:
            for other in ("human", "agent"):
                refused = sim.step(other)
                assert refused.refusal is not None
                assert refused.commits == []
            # Red for a while at most: the suite is fixed sooner or later.
            green = n > 24 or data.draw(st.booleans(), label="green")
            if not green:
                sim.files[FEEDBACK] = "FAILED\n"
            made = sim.step("check").commits
            assert made
            assert made[0].startswith("gtd(check): ")
            assert made[0].endswith(("test-failed", "escalated")) == (not green)
            continue
        if (r.state, r.actor) == ("escalate", "human"):
            sim.files.pop(ERRORS, None)
        elif r.state in ("building", "fixing"):
            sim.files["src/a.py"] = f"{n}\n"
        elif r.state == "agentic-review":
            sim.files[FEEDBACK] = data.draw(st.sampled_from(["", "nit\n"]), label="review")
        elif r.state == "review":
            sim.files[".gtd/REVIEW.md"] = RECORD
        sim.step(r.actor)
    else:
        raise AssertionError(f"no review after 40 moves: {sim.subjects}")
    assert "gtd: errors" not in sim.subjects
    assert "gtd: tests green" not in sim.subjects
