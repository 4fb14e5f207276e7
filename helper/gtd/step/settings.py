"""The step-mode settings the machine reads (docs/step-mode.md, "Config").

Only the value type: finding, merging and validating ``.gtdrc*`` files is IO and
belongs to the edge, which builds one :class:`StepConfig` per invocation. Defaults are
the documented ones, so ``StepConfig()`` is what a repository with a bare auto-init
``.gtdrc.json`` gets.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from gtd.tuples import NamedTuple

__all__ = [
    "CHECK_MODES",
    "DEFAULT_EXECUTION_MODEL",
    "DEFAULT_PLANNING_MODEL",
    "DEFAULT_TEST_COMMAND",
    "MODEL_STATE_KEYS",
    "CheckMode",
    "Models",
    "StepConfig",
    "TestCommandSource",
]

DEFAULT_TEST_COMMAND = "npm run test"
DEFAULT_PLANNING_MODEL = "claude-opus-4-8"
DEFAULT_EXECUTION_MODEL = "claude-sonnet-4-8"
# The only keys ``models.states`` accepts; the loader rejects any other.
MODEL_STATE_KEYS: tuple[str, ...] = (
    "decompose",
    "grilling",
    "building",
    "fixing",
    "agentic-review",
    "clean",
)


# How checks run: "inline" — gtd 2.x, the mutator runs testCommand itself — or
# "scripted": the test and health-check states rest awaiting the check actor, whose
# prompt is a wrapper script a driver runs (docs/step-mode.md, "Scripted checks").
CheckMode = Literal["inline", "scripted"]
CHECK_MODES: tuple[CheckMode, ...] = ("inline", "scripted")
# Where test_command came from: the config, detected from the project's files, or
# gtd 2.x's default when neither says anything.
TestCommandSource = Literal["config", "detected", "default"]


class Models(NamedTuple):
    planning: str = DEFAULT_PLANNING_MODEL
    execution: str = DEFAULT_EXECUTION_MODEL
    states: Mapping[str, str] = MappingProxyType({})


class StepConfig(NamedTuple):
    """``fix_attempt_cap`` is ≥ 0 (0 escalates on the first red run) and doubles as
    the health-fix budget; ``review_threshold`` is ≥ 1. The loader enforces the
    ranges with its own ``Invalid gtd config`` messages. ``test_command_source``
    says whether ``test_command`` was configured, detected or defaulted."""

    test_command: str = DEFAULT_TEST_COMMAND
    fix_attempt_cap: int = 3
    review_threshold: int = 3
    agentic_review: bool = True
    squash: bool = True
    models: Models = Models()
    checks: CheckMode = "inline"
    test_command_source: TestCommandSource = "default"

    @property
    def scripted(self) -> bool:
        return self.checks == "scripted"
