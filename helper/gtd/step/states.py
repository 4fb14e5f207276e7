"""The sixteen states of step mode and who each awaits (step-mode.md, "States and
awaited actor"; README "States & subjects").

Four states are edge-only — ``testing``, ``close-package``, ``done`` and
``health-check`` — they name the bookkeeping a mid-chain HEAD is about to perform and
are never a rest. ``grilling`` awaits the agent except at the answer gate, which the
machine decides from HEAD, so :func:`awaited_actor` gives the default only.
"""

from __future__ import annotations

from typing import Literal, get_args

from gtd.step.subjects import Actor, Gate

__all__ = ["EDGE_ONLY", "STATES", "State", "awaited_actor", "capture_gate"]

State = Literal[
    "grilling",
    "grilled",
    "planning",
    "building",
    "testing",
    "fixing",
    "escalate",
    "agentic-review",
    "close-package",
    "review",
    "await-review",
    "done",
    "squashing",
    "idle",
    "health-check",
    "health-fixing",
]
STATES: tuple[State, ...] = get_args(State)
EDGE_ONLY: frozenset[State] = frozenset({"testing", "close-package", "done", "health-check"})

_HUMAN_STATES: frozenset[State] = frozenset({"escalate", "await-review", "idle"})

# The gate a turn captured at a rest is committed under (turn-taking 9). await-review
# is answered by the human's `review` turn; planning (package files amended while
# the agent is awaited) is answered by the agent building, whose turn re-tests —
# planning is no gate of its own, and a `gtd(agent): planning` subject would be a
# boundary the machine could not route.
_CAPTURE_GATE: dict[State, Gate] = {
    "grilling": "grilling",
    "grilled": "grilled",
    "planning": "building",
    "building": "building",
    "fixing": "fixing",
    "escalate": "escalate",
    "agentic-review": "agentic-review",
    "review": "review",
    "await-review": "review",
    "squashing": "squashing",
    "health-fixing": "health-fixing",
}


def awaited_actor(state: State) -> Actor:
    return "human" if state in _HUMAN_STATES else "agent"


def capture_gate(state: State) -> Gate | None:
    """The gate of the turn captured at a rest in ``state``; None where no turn is
    ever captured (idle, and the edge-only states)."""
    return _CAPTURE_GATE.get(state)
