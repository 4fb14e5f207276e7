"""Step mode's pure core: the commit-subject grammar, the input values, the counter
folds and the machine. No IO here — the edge gathers and acts (docs/step-mode.md,
"How it is built")."""

from __future__ import annotations

from gtd.step.actions import (
    Action,
    ClosePackage,
    HealthCheck,
    MakeCommit,
    RunTests,
    Squash,
    WriteSquashTemplate,
)
from gtd.step.counters import Counters, fold_counters
from gtd.step.errors import StepError
from gtd.step.events import Change, Commit, Invoker, LineDiff, WorkingTree
from gtd.step.machine import Decision, Resolution, resolve
from gtd.step.settings import Models, StepConfig
from gtd.step.states import State
from gtd.step.steering import Package, packages_from_paths
from gtd.step.subjects import Actor, Boundary, Routing, Turn, parse_subject

__all__ = [
    "Action",
    "Actor",
    "Boundary",
    "Change",
    "ClosePackage",
    "Commit",
    "Counters",
    "Decision",
    "HealthCheck",
    "Invoker",
    "LineDiff",
    "MakeCommit",
    "Models",
    "Package",
    "Resolution",
    "Routing",
    "RunTests",
    "Squash",
    "State",
    "StepConfig",
    "StepError",
    "Turn",
    "WorkingTree",
    "WriteSquashTemplate",
    "fold_counters",
    "packages_from_paths",
    "parse_subject",
    "resolve",
]
