"""The change lists the folds read (docs/step-mode.md, "How it is built"): the edge reads
``--name-status`` only for the newest :func:`changes_wanted` commits, so resolving
with every older change list left unread must give the same answer — and a fold that
reaches an unread list raises :class:`ChangesNotGathered` rather than guess."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck as HypothesisHealthCheck
from hypothesis import given, settings
from hypothesis import strategies as st

from gtd.step.counters import changes_read_from, fold_counters
from gtd.step.errors import ChangesNotGathered
from gtd.step.events import Commit, WorkingTree
from gtd.step.gather import Snapshot
from gtd.step.machine import changes_wanted
from gtd.step.predict import predict
from gtd.step.settings import StepConfig
from tests.unit.step.build import history, run, tree
from tests.unit.step.sim import Sim
from tests.unit.step.test_properties import (
    _attempt,
    _move,
    commits_st,
    configs_st,
    invokers_st,
    trees_st,
)


def unread(commits: Sequence[Commit], keep: int) -> list[Commit]:
    """``commits`` with the change lists of all but the newest ``keep`` not read."""
    cut = len(commits) - keep
    return [c._replace(changes=None) if i < cut else c for i, c in enumerate(commits)]


def test_an_unread_change_list_raises() -> None:
    commit = Commit("a" * 40, "feat: x", None, None)
    with pytest.raises(ChangesNotGathered, match="aaaaaaaaaaaa"):
        _ = commit.is_empty
    with pytest.raises(ChangesNotGathered):
        commit.touched("x")


def test_plain_history_wants_head_only() -> None:
    commits = history(*(f"feat: {i}" for i in range(500)))
    assert changes_wanted(commits) == 1
    assert changes_wanted([]) == 0
    assert run(unread(commits, 1)) == run(commits)


@pytest.mark.parametrize(
    ("items", "wanted"),
    [
        pytest.param(["gtd: planning", "feat: a", "feat: b"], 1, id="after a package start"),
        pytest.param(
            ["feat: a", "gtd: errors", ("feat: b", "D ERRORS"), "feat: c"],
            2,
            id="after gtd: errors a deletion of ERRORS.md resets",
        ),
        pytest.param(
            ["gtd: planning", ("gtd(agent): agentic-review", "A FEEDBACK"), "feat: a", "feat: b"],
            3,
            id="an agentic-review turn",
        ),
        pytest.param(
            [("gtd(human): grilling", "A idea.md"), "feat: a", "feat: b"],
            3,
            id="the review material from the first grilling turn",
        ),
    ],
)
def test_changes_wanted_reaches_what_the_folds_read(items: list[str], wanted: int) -> None:
    commits = history("chore: init", *items)
    assert changes_wanted(commits) == wanted
    t = tree(packages="01-a") if "gtd: planning" in items else tree()
    assert _attempt(unread(commits, wanted), t, StepConfig(), None) == _attempt(
        commits, t, StepConfig(), None
    )
    if wanted > 1:  # one less is one too few for some fold
        with pytest.raises(ChangesNotGathered):
            run(unread(commits, wanted - 1), t)


@given(commits_st(max_size=10))
def test_counters_read_nothing_older_than_changes_read_from(commits: list[Commit]) -> None:
    keep = len(commits) - changes_read_from(commits)
    assert fold_counters(unread(commits, keep)) == fold_counters(commits)


@given(commits_st(max_size=10), trees_st, configs_st, invokers_st)
def test_resolve_reads_nothing_older_than_changes_wanted(
    commits: list[Commit], t: WorkingTree, config: StepConfig, invoker: str | None
) -> None:
    keep = changes_wanted(commits)
    assert _attempt(unread(commits, keep), t, config, invoker) == _attempt(
        commits, t, config, invoker
    )


# 60 random whole workflows, ~4 s quiet: a fuzzing harness, in the slow set; the
# quick loop keeps the property on random histories in
# test_resolve_reads_nothing_older_than_changes_wanted and
# test_counters_read_nothing_older_than_changes_read_from.
@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HypothesisHealthCheck.too_slow, HypothesisHealthCheck.data_too_large],
)
@given(configs_st, st.data())
def test_whole_workflows_need_only_the_wanted_change_lists(
    config: StepConfig, data: st.DataObject
) -> None:
    """Along random workflows, every resolve (each invoker) gives the same answer from
    the wanted change lists alone, and ``gtd status``'s prediction either does too
    or asks for the rest (the edge then reads them)."""
    sim = Sim(config=config, oracle=lambda: data.draw(st.booleans(), label="green"))
    for n in range(30):
        commits, t = sim.commits, sim.tree()
        partial = unread(commits, changes_wanted(commits))
        for invoker in (None, "human", "agent"):
            assert _attempt(partial, t, config, invoker) == _attempt(commits, t, config, invoker)
        report = sim.resolve(None)
        full = Snapshot(tuple(commits), t, commits[-1].sha)
        try:
            predicted = predict(full._replace(commits=tuple(partial)), report, config)
        except ChangesNotGathered:
            pass
        else:
            assert predicted == predict(full, report, config)
        if not report.pending:
            _move(sim, report.state, report.actor, data.draw(st.integers(0, 4), label="move"), n)
        sim.step(report.actor)
