"""The sixteen states of step mode and who each awaits (docs/step-mode.md,
"State ↔ file association").

Four states are edge-only — ``testing``, ``close-package``, ``done`` and
``health-check`` — they name the bookkeeping a mid-chain HEAD is about to perform and
are never a rest. ``grilling`` awaits the agent except at the answer gate, which the
machine decides from HEAD.
"""

from __future__ import annotations

from typing import Literal, get_args

from gtd.step.steering import ERRORS, FEEDBACK, HEALTH, REVIEW, SQUASH_MSG, TODO
from gtd.step.subjects import Gate
from gtd.tuples import NamedTuple

__all__ = [
    "DRAFTED",
    "STATES",
    "Mode",
    "State",
    "SteeringFile",
    "capture_gate",
    "steering_file",
]

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


def capture_gate(state: State) -> Gate | None:
    """The gate of the turn captured at a rest in ``state``; None where no turn is
    ever captured (idle, and the edge-only states)."""
    return _CAPTURE_GATE.get(state)


# -- state <-> steering-file association (gtd 3.0 notes, "state-file-association") --

# The format of a steering file, named as gtd.steering.Kind names it.
Mode = Literal["qa", "review"]


class SteeringFile(NamedTuple):
    """THE steering file a rest is about — the one a human or an editor should look
    at while the machine rests there — and its format (None: plain text)."""

    path: str
    mode: Mode | None = None


_QA = SteeringFile(TODO, "qa")
_REVIEW = SteeringFile(REVIEW, "review")

# The 3.0 notes' table for its 12-state default, mapped onto the sixteen 2.x
# states: the question phase (their grilling, grilling-answer and the plan's
# consumer, building) is our grilling at both gates and grilled, which decomposes
# the plan; their reviewing/await-review are our review/await-review; their
# fixing/escalate read the check's output, here FEEDBACK.md/ERRORS.md — and the
# health loop's HEALTH.md and the squash message follow the same rule. idle,
# planning, building and agentic-review are about a package or nothing, and the
# edge-only states never rest.
_FILES: dict[State, SteeringFile] = {
    "grilling": _QA,
    "grilled": _QA,
    "review": _REVIEW,
    "await-review": _REVIEW,
    "fixing": SteeringFile(FEEDBACK),
    "escalate": SteeringFile(ERRORS),
    "health-fixing": SteeringFile(HEALTH),
    "squashing": SteeringFile(SQUASH_MSG),
}

# The agent rests whose turn drafts a steering file in a checked format: the turn
# is captured only when the draft is valid (docs/step-mode.md, "The validation loop").
DRAFTED: dict[State, str] = {"grilling": TODO, "review": REVIEW}


def steering_file(state: State) -> SteeringFile | None:
    """The steering file a rest in ``state`` is about, if any."""
    return _FILES.get(state)
