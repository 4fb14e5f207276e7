"""Invariants of the machine, by hypothesis.

- resolve is deterministic and raises nothing but StepError, whatever it is fed;
- a boundary commit (one that touches neither FEEDBACK.md nor ERRORS.md) inserted
  anywhere below HEAD leaves the counters alone;
- for a query, a mid-chain HEAD is pending with no action, and a rest never is;
- whole random workflows (random moves by whichever actor is awaited, random test
  results) never reach an error or a runaway edge loop; the wrong mutator is
  refused with zero commits; and re-running the same mutator once settled authors
  nothing (gtd 2.x's idempotence).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck as HypothesisHealthCheck
from hypothesis import given, settings
from hypothesis import strategies as st

from gtd.step.counters import fold_counters
from gtd.step.errors import StepError
from gtd.step.events import Change, Commit, LineDiff, WorkingTree
from gtd.step.machine import Resolution, resolve
from gtd.step.settings import StepConfig
from gtd.step.steering import ERRORS, FEEDBACK, REVIEW, SQUASH_MSG, STEERING_FILES, TODO, Package
from gtd.step.subjects import ACTORS, GATES, ROUTES
from tests.unit.step.build import sha
from tests.unit.step.sim import Sim

TURNS = [f"gtd({a}): {g}" for a in ACTORS for g in GATES]
ROUTINGS = [f"gtd: {r}" for r in ROUTES if r != "reviewing"] + [f"gtd: reviewing {'a' * 40}"]
BOUNDARIES = ["chore: init", "feat: x", "gtd: new task", "gtd: transport", "gtd: reviewing"]
PATHS = [
    *STEERING_FILES,
    "FEEDBACK.md",
    "ERRORS.md",
    "src/a.py",
    ".gtd/01-a/01-t.md",
    ".gtdrc.json",
]

changes_st = st.lists(
    st.builds(Change, st.sampled_from(["A", "M", "D"]), st.sampled_from(PATHS)), max_size=3
).map(tuple)
line_diff_st = st.builds(
    LineDiff,
    st.lists(st.sampled_from(["- [ ] ./a.py", "- [x] ./a.py", "prose"]), max_size=2).map(tuple),
    st.lists(st.sampled_from(["- [ ] ./a.py", "- [x] ./a.py", "prose"]), max_size=2).map(tuple),
)


@st.composite
def commits_st(draw: st.DrawFn, max_size: int = 8) -> list[Commit]:
    subjects = draw(st.lists(st.sampled_from(TURNS + ROUTINGS + BOUNDARIES), max_size=max_size))
    out: list[Commit] = []
    parent = "b" * 40
    for i, subject in enumerate(subjects, 1):
        out.append(Commit(sha(i), subject, parent, draw(changes_st), draw(line_diff_st)))
        parent = sha(i)
    return out


trees_st = st.builds(
    WorkingTree,
    present=st.frozensets(st.sampled_from(STEERING_FILES)),
    dirty=changes_st,
    packages=st.lists(st.sampled_from(["01-a", "02-b"]), unique=True).map(
        lambda names: tuple(Package(n, ("01-t.md",)) for n in names)
    ),
    feedback_text=st.sampled_from(["", "nit"]),
    squash_msg_text=st.sampled_from(["feat: x", ""]),
)
configs_st = st.builds(
    StepConfig,
    fix_attempt_cap=st.integers(0, 3),
    review_threshold=st.integers(1, 3),
    agentic_review=st.booleans(),
    squash=st.booleans(),
)
invokers_st = st.sampled_from(["human", "agent", None])


def _attempt(*args: object) -> Resolution | str:
    try:
        return resolve(*args)  # type: ignore[arg-type]
    except StepError as err:
        return f"{err.kind}: {err.message}"


@given(commits_st(), trees_st, configs_st, invokers_st)
def test_resolve_is_deterministic_and_raises_only_step_errors(
    commits: list[Commit], tree: WorkingTree, config: StepConfig, invoker: str | None
) -> None:
    first = _attempt(commits, tree, config, invoker)
    assert first == _attempt(list(commits), tree, config, invoker)


@given(commits_st(), trees_st, configs_st, invokers_st)
def test_resolution_shape(
    commits: list[Commit], tree: WorkingTree, config: StepConfig, invoker: str | None
) -> None:
    r = _attempt(commits, tree, config, invoker)
    if isinstance(r, str):
        return
    if invoker is None:
        assert r.action is None
        assert r.refusal is None
        assert r.decision in ("pending", "report")
    assert r.pending == (r.decision == "pending")
    if r.refusal is not None:
        assert r.action is None
        # a refused command, or the validation loop's unfinished turn (a malformed
        # draft, a review turn without .gtd/REVIEW.md): both say why and act on nothing
        assert r.decision in ("refusal", "malformed")
    if r.decision in ("no-op", "inert", "report", "pending", "refusal"):
        assert r.action is None


@given(
    commits_st(),
    st.sampled_from(BOUNDARIES),
    st.lists(st.sampled_from(["src/a.py", "README.md", ".gtd/01-a/01-t.md"]), max_size=2),
    st.data(),
)
def test_boundary_below_head_leaves_counters_alone(
    commits: list[Commit], subject: str, paths: list[str], data: st.DataObject
) -> None:
    at = data.draw(st.integers(0, max(0, len(commits) - 1)))
    inserted = Commit("f" * 40, subject, None, tuple(Change("M", p) for p in paths))
    assert fold_counters([*commits[:at], inserted, *commits[at:]]) == fold_counters(commits)


# -- random workflows ----------------------------------------------------------------

RECORD = "# Review: x\n<!-- base: abc -->\n## Chunk\n- [ ] ./src/a.py#1 — look\n"


def _move(sim: Sim, state: str, actor: str, choice: int, n: int) -> None:
    """One plausible (or lazy) move by ``actor`` at ``state``; choice 0 always does
    nothing."""
    files = sim.files
    code = f"src/f{n % 3}.py"
    moves: dict[tuple[str, str], list[dict[str, str | None]]] = {
        ("grilling", "agent"): [{TODO: f"# Plan {n}\n"}],
        ("grilling", "human"): [{TODO: (files.get(TODO) or "") + f"Answer: {n}\n"}, {code: str(n)}],
        ("grilled", "agent"): [
            {".gtd/01-a/01-t.md": "- [ ] a\n"},
            {".gtd/01-a/01-t.md": "- [ ] a\n", ".gtd/02-b/01-t.md": "- [ ] b\n"},
        ],
        ("planning", "agent"): [{code: str(n)}],
        ("building", "agent"): [{code: str(n)}],
        ("fixing", "agent"): [{code: str(n)}, {FEEDBACK: ""}, {FEEDBACK: None}],
        ("escalate", "human"): [{ERRORS: None}, {ERRORS: None, code: str(n)}, {code: str(n)}],
        ("agentic-review", "agent"): [{FEEDBACK: ""}, {FEEDBACK: "nit\n"}, {code: str(n)}],
        ("review", "agent"): [{REVIEW: RECORD}],
        ("await-review", "human"): [
            {REVIEW: (files.get(REVIEW) or RECORD).replace("- [ ]", "- [x]")},
            {REVIEW: (files.get(REVIEW) or RECORD) + "Please rename.\n"},
            {code: str(n)},
            {REVIEW: None},
        ],
        ("squashing", "agent"): [{SQUASH_MSG: f"feat: cycle {n}\n"}],
        ("idle", "human"): [{code: f"idea {n}"}],
        ("health-fixing", "agent"): [{code: str(n)}],
        # Scripted checks: the check's move is the script's effect (red: FEEDBACK.md).
        ("testing", "check"): [{FEEDBACK: "FAILED test_x\n"}],
        ("health-check", "check"): [{FEEDBACK: "FAILED test_y\n"}],
    }
    options = moves.get((state, actor), [])
    if choice == 0 or not options:
        return
    for path, text in options[(choice - 1) % len(options)].items():
        if text is None:
            files.pop(path, None)
        else:
            files[path] = text


def _settles(sim: Sim, actor: str) -> None:
    """Re-running the same mutator once settled authors nothing (green tests)."""
    saved_files, saved_commits, oracle = dict(sim.files), list(sim.commits), sim.oracle
    sim.oracle = lambda: True
    again = sim.step(actor)  # type: ignore[arg-type]
    assert again.commits == [], (actor, again)
    assert sim.files == saved_files
    assert sim.commits == saved_commits
    sim.oracle = oracle


# 150 random whole workflows, ~12 s: a fuzzing harness, in the slow set.
@pytest.mark.slow
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HypothesisHealthCheck.too_slow, HypothesisHealthCheck.data_too_large],
)
@given(configs_st, st.data())
def test_random_workflows_never_error(config: StepConfig, data: st.DataObject) -> None:
    sim = Sim(config=config, oracle=lambda: data.draw(st.booleans(), label="green"))
    for n in range(30):
        report = sim.resolve(None)
        actor = report.actor
        if not report.pending:
            wrong = "human" if actor == "agent" else "agent"
            probe = sim.resolve(wrong)  # type: ignore[arg-type]
            if probe.decision not in ("health-check", "entry"):
                before = list(sim.commits)
                out = sim.step(wrong)  # type: ignore[arg-type]
                assert out.refusal is not None, (report, probe)
                assert out.commits == []
                assert sim.commits == before
            choice = data.draw(st.integers(0, 4), label="move")
            _move(sim, report.state, actor, choice, n)
        out = sim.step(actor)
        assert out.refusal is None, out
        settled = sim.resolve(None)
        # health-fixing is the README's one deliberate exception: an empty agent turn
        # there is meaningful (the failure may have been environmental).
        if not sim.tree().dirty and (settled.state, actor) != ("health-fixing", "agent"):
            _settles(sim, actor)
