"""The commit-subject grammar of step mode (gtd 2.x's subjects).

A trimmed subject is exactly one of:

- a :class:`Turn` — ``gtd(human|agent): <gate>`` with a gate from the closed set;
- a :class:`Check` — ``gtd(check): <label>``, the scripted check's turn (only with
  ``"checks": "scripted"``), with a label from its own closed set;
- a :class:`Routing` commit — one of the exact ``gtd: <phase>`` subjects, or
  ``gtd: reviewing <40 hex>`` (the anchor written by ``gtd review``);
- a :class:`Boundary` — everything else, including unknown gates and the 1.x
  subjects (``gtd: new task``, ``gtd: transport``, a bare ``gtd: reviewing``), so an
  old history upgrades cleanly instead of erroring.

The grammar is closed and exact on purpose: these subjects are machine-authored, so
anything that does not match byte for byte (after trimming) was not written by us
and must not steer the machine. The renderers are the only way the core spells a
subject, which keeps parse(render(x)) == x by construction.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal, TypeAlias, get_args

from gtd.tuples import NamedTuple

__all__ = [
    "ACTORS",
    "CHECK_LABELS",
    "GATES",
    "KINDS",
    "PARTIES",
    "ROUTES",
    "Actor",
    "Boundary",
    "Check",
    "CheckLabel",
    "Gate",
    "Kind",
    "Party",
    "Route",
    "Routing",
    "Subject",
    "Turn",
    "check_subject",
    "parse_subject",
    "reviewing_subject",
    "routing_subject",
    "turn_subject",
]

# The two actors of gtd 2.x, whose turns carry a gate.
Actor = Literal["human", "agent"]
# Everyone a rest can await: the two actors and, with scripted checks, the check —
# whose "prompt" is a shell script gtd writes and whose turn is its effect on the tree.
Party = Literal["human", "agent", "check"]
# How a driver serves each party (the 3.0 notes' actor kinds).
Kind = Literal["interactive", "autonomous", "scripted"]
Gate = Literal[
    "grilling",
    "grilled",
    "building",
    "fixing",
    "agentic-review",
    "review",
    "squashing",
    "health-fixing",
    "escalate",
]
# The phase words of the routing subjects, as they appear after "gtd: ".
Route = Literal[
    "grilled",
    "planning",
    "tests green",
    "errors",
    "package done",
    "awaiting review",
    "review feedback",
    "done",
    "squash template",
    "health-check",
    "health-fix",
    "reviewing",
    "testing",
]
# The outcomes a check turn is captured under (gtd 3.0 notes, "checks as a scripted
# actor"): red below the cap, red at the cap, and the green outcomes — each the
# scripted twin of a 2.x routing commit (``gtd: errors``, ``gtd: tests green``,
# ``gtd: health-check``) — decided at capture time, never by the script.
CheckLabel = Literal[
    "test-failed",
    "escalated",
    "agentic-review",
    "close-package-approved",
    "tests-green",
    "health-failed",
    "health-escalated",
]

ACTORS: tuple[Actor, ...] = get_args(Actor)
PARTIES: tuple[Party, ...] = get_args(Party)
GATES: tuple[Gate, ...] = get_args(Gate)
ROUTES: tuple[Route, ...] = get_args(Route)
CHECK_LABELS: tuple[CheckLabel, ...] = get_args(CheckLabel)
KINDS: dict[Party, Kind] = {"human": "interactive", "agent": "autonomous", "check": "scripted"}

_TURN = re.compile(r"gtd\((human|agent)\): (.+)")
_CHECK = re.compile(r"gtd\(check\): (.+)")
_LABEL_BY_NAME: dict[str, CheckLabel] = {label: label for label in CHECK_LABELS}
_REVIEWING = re.compile(r"gtd: reviewing ([0-9a-fA-F]{40})")
_GATE_BY_NAME: dict[str, Gate] = {g: g for g in GATES}
# "reviewing" alone is the 1.x bare subject: a boundary, so it is not an exact route.
_EXACT_ROUTES: dict[str, Route] = {f"gtd: {r}": r for r in ROUTES if r != "reviewing"}


class Turn(NamedTuple):
    """A turn commit: the actor whose move it captured and the gate it was made at."""

    actor: Actor
    gate: Gate

    def render(self) -> str:
        return turn_subject(self.actor, self.gate)


class Check(NamedTuple):
    """A check turn: the scripted check's effect on the tree, captured under the
    label the capture rules chose."""

    label: CheckLabel
    # NamedTuples compare as tuples: the tag keeps Check("x") != Boundary("x").
    kind: Literal["check"] = "check"

    def render(self) -> str:
        return check_subject(self.label)


class _RoutingFields(NamedTuple):
    route: Route
    sha: str | None = None


class Routing(_RoutingFields):
    """Bookkeeping the machine commits between turns. ``sha`` is set only for
    ``reviewing`` (the review base hash, lower-cased)."""

    __slots__ = ()

    def __new__(cls, route: Route, sha: str | None = None) -> Routing:
        if (route == "reviewing") != (sha is not None):
            raise ValueError("a sha goes with the reviewing route and only with it")
        if sha is not None and not _REVIEWING.fullmatch(f"gtd: reviewing {sha}"):
            raise ValueError(f"not a 40-hex commit hash: {sha!r}")
        return super().__new__(cls, route, sha)

    def render(self) -> str:
        if self.sha is not None:
            return reviewing_subject(self.sha)
        return routing_subject(self.route)


class Boundary(NamedTuple):
    """Any subject outside the grammar: inert for the machine."""

    subject: str


Subject: TypeAlias = Turn | Check | Routing | Boundary


@lru_cache(maxsize=4096)
def parse_subject(subject: str) -> Subject:
    """Classify one commit subject (its first line; surrounding blanks are trimmed)."""
    text = subject.strip()
    turn = _TURN.fullmatch(text)
    if turn:
        gate = _GATE_BY_NAME.get(turn.group(2))
        actor: Actor = "human" if turn.group(1) == "human" else "agent"
        return Turn(actor, gate) if gate is not None else Boundary(text)
    check = _CHECK.fullmatch(text)
    if check:
        label = _LABEL_BY_NAME.get(check.group(1))
        return Check(label) if label is not None else Boundary(text)
    route = _EXACT_ROUTES.get(text)
    if route is not None:
        return Routing(route)
    reviewing = _REVIEWING.fullmatch(text)
    if reviewing:
        return Routing("reviewing", reviewing.group(1).lower())
    return Boundary(text)


def turn_subject(actor: Actor, gate: Gate) -> str:
    return f"gtd({actor}): {gate}"


def check_subject(label: CheckLabel) -> str:
    return f"gtd(check): {label}"


def routing_subject(route: Route) -> str:
    if route == "reviewing":
        raise ValueError("the reviewing subject needs a hash: use reviewing_subject()")
    return f"gtd: {route}"


def reviewing_subject(sha: str) -> str:
    subject = f"gtd: reviewing {sha.lower()}"
    if not _REVIEWING.fullmatch(subject):
        raise ValueError(f"not a 40-hex commit hash: {sha!r}")
    return subject
