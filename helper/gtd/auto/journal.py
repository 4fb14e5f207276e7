"""The cycle journal: the one record of an in-flight cycle (DESIGN §4.2).

A cycle moves through phases agent → checking → committing | reverting; every
transition is an atomic write, so after a crash the next `begin` or `end` knows
exactly how far the cycle got and finishes or reverts it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, NamedTuple

from gtd import paths
from gtd.errors import StateError
from gtd.fsio import atomic_write, read_text

Phase = Literal["agent", "checking", "committing", "reverting"]
Kind = Literal["task", "bootstrap"]


class Journal(NamedTuple):
    cycle: int
    task: str
    title: str
    kind: Kind
    spike: bool
    base: str  # HEAD when the cycle began; a revert restores exactly this
    branch: str | None
    started_at: str  # ISO-8601 UTC
    started_epoch: float
    phase: Phase = "agent"
    pid: int | None = None  # the `gtd cycle end` process while checking
    passed: bool | None = None
    reason: str | None = None
    learning: str | None = None
    tests_passed: int | None = None
    tests_total: int | None = None
    build_ok: bool | None = None
    work_commit: str | None = None
    sidecar: str | None = None  # digest of the snapshot sidecar at begin: the agent may not edit it

    def evolve(self, **changes: Any) -> Journal:
        return self._replace(**changes)


def load(root: Path) -> Journal | None:
    text = read_text(root / paths.JOURNAL)
    if text is None:
        return None
    try:
        data = json.loads(text)
        return Journal(**data)
    except (ValueError, TypeError) as exc:
        raise StateError(
            f"{paths.JOURNAL}: unreadable cycle journal ({exc})",
            "a cycle may be in flight: inspect `git status`, then delete the file "
            "and run `gtd cycle begin` again",
        ) from exc


def save(root: Path, journal: Journal) -> None:
    atomic_write(root / paths.JOURNAL, json.dumps(journal._asdict(), indent=2) + "\n")


def clear(root: Path) -> None:
    (root / paths.JOURNAL).unlink(missing_ok=True)
