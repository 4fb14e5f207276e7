"""The step-mode settings the machine reads (step-mode.md, "Config").

Only the value type: finding, merging and validating ``.gtdrc*`` files is IO and
belongs to the edge, which builds one :class:`Config` per invocation. Defaults are
the documented ones, so ``Config()`` is what a repository with a bare auto-init
``.gtdrc.json`` gets.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

__all__ = [
    "DEFAULT_EXECUTION_MODEL",
    "DEFAULT_PLANNING_MODEL",
    "MODEL_STATE_KEYS",
    "Config",
    "Models",
]

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


class Models(NamedTuple):
    planning: str = DEFAULT_PLANNING_MODEL
    execution: str = DEFAULT_EXECUTION_MODEL
    states: Mapping[str, str] = MappingProxyType({})


class Config(NamedTuple):
    """``fix_attempt_cap`` is ≥ 0 (0 escalates on the first red run) and doubles as
    the health-fix budget; ``review_threshold`` is ≥ 1. The loader enforces the
    ranges with its own ``Invalid gtd config`` messages."""

    test_command: str = "npm run test"
    fix_attempt_cap: int = 3
    review_threshold: int = 3
    agentic_review: bool = True
    squash: bool = True
    models: Models = Models()
