"""Shared shortcuts for the machine tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from gtd.step.actions import Action
from gtd.step.events import Commit, WorkingTree
from gtd.step.settings import StepConfig
from gtd.step.states import State
from gtd.step.subjects import Party
from tests.unit.step.build import run, tree

Shape = tuple[Literal["R", "M"], State, Party, Action | None]


def classify(
    commits: Sequence[Commit], t: WorkingTree | None = None, config: StepConfig | None = None
) -> Shape:
    """("R", state, actor, None) for a rest; ("M", state, actor, action) for a
    mid-chain HEAD — checking that every invoker sees the same mid-chain action."""
    t = t if t is not None else tree()
    report = run(commits, t, config, None)
    if not report.pending:
        assert report.decision == "report"
        return ("R", report.state, report.actor, None)
    agent = run(commits, t, config, "agent")
    human = run(commits, t, config, "human")
    assert agent.decision == human.decision == "mid-chain"
    assert agent.action == human.action
    assert (agent.state, agent.actor) == (report.state, report.actor)
    return ("M", report.state, report.actor, agent.action)
