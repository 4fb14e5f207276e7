"""The journal: the one record of work in flight (docs/commands.md, "The cycle").
Pure: the value and its JSON form; gtd.auto.state keeps it sealed in git.

A cycle moves through phases agent → checking → committing | reverting; a baseline
run (`gtd auto setup`, or a snapshot refresh after a person's commit) is one
``checking`` phase. Every transition is sealed before the work it announces, so
after a crash the next `begin` or `end` knows exactly how far it got and finishes
or reverts it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Any, Literal

    Phase = Literal["agent", "checking", "committing", "reverting"]
    Kind = Literal["task", "bootstrap", "baseline"]
else:
    Phase = str
    Kind = str


class Journal(NamedTuple):
    cycle: int  # 0 for a baseline run
    task: str
    title: str
    kind: Kind
    spike: bool
    base: str  # HEAD when the work began; a revert restores exactly this
    branch: str | None
    started_at: str  # ISO-8601 UTC
    started_epoch: float
    phase: Phase = "agent"
    pid: int | None = None  # the process running the check, while checking
    passed: bool | None = None
    reason: str | None = None
    details: tuple[str, ...] = ()  # every failure found, the reason first
    learning: str | None = None
    tests_passed: int | None = None
    tests_failed: int | None = None
    tests_skipped: int | None = None
    tests_total: int | None = None
    build_ok: bool | None = None
    duration_s: float | None = None
    flaky: tuple[str, ...] = ()
    env_skipped: tuple[str, ...] = ()  # excused skips: the base commit's code skips them too
    candidate: str | None = None  # the tree that was judged
    head_at_check: str | None = None  # HEAD when the check began (the branch may have moved)
    checked_epoch: float | None = None  # when the candidate was taken (files after: not ours)
    work_commit: str | None = None
    tick_commit: str | None = None
    kept_commit: str | None = None  # the revert's kept commit, sealed once made
    halt: bool = False  # stop the loop after this cycle whatever the counters say
    seals: dict[str, Any] | None = None  # what the cycle must leave as it found it
    agent_exit: int | None = None
    agent_tail: str | None = None
    blocked: str | None = None  # why git refused the commit of a passed cycle (with the fix)
    # Object files written since are hashed again at `end`: when the last check
    # of them began (sealed in the summary), so that what a process left running
    # writes between two cycles is checked too. None: since the cycle began.
    objects_since: float | None = None
    objects_checked: float | None = None  # when this cycle's check of them began
    # The Claude Code session that began the cycle (gtd.session: pid, start time,
    # boot id, pid namespace); None outside one. Its next `begin`, or any once it is
    # gone, judges a cycle still in its agent phase at once.
    session: dict[str, Any] | None = None
    # The diff reader's findings the config flags (gtd.auto.diffread): the cycle
    # commits, and the report lists them for a person to look at.
    look_at: tuple[str, ...] = ()
    # The reviewer (review.agent, gtd.auto.cycle.review): when its brief was
    # written, its verdict (approve / object: why / none: …) and the seconds it took.
    review_asked_epoch: float | None = None
    review: str | None = None
    review_s: float | None = None
    # Claude Code's own id of that session (its transcripts' name), when known.
    claude_session: str | None = None
    # The harness stopped the agent (gtd.auto.harness.Stop's fields): the cycle is
    # kept and recorded as paused, never judged.
    pause: dict[str, Any] | None = None
    new_tests: str | None = None  # how the tests the change adds did ("3 ran, 3 passed")
    # What the cycle's model calls spent (gtd.auto.usage's JSON form, gtd.auto.cycle.
    # spent): in all, the main conversation's share, the reviewer's share.
    usage: dict[str, Any] | None = None
    usage_tick: dict[str, Any] | None = None
    usage_review: dict[str, Any] | None = None
    usage_until: float | None = None  # when they were read (a wave's next task goes on from it)
    # The wave the cycle's task ran in (gtd.auto.wave_journal): its work is a
    # worktree's, not the person's tree (gtd.auto.cycle.waves). None: a cycle alone.
    wave: int | None = None

    def evolve(self, **changes: Any) -> Journal:
        return self._replace(**changes)


def dumps(journal: Journal) -> str:
    return json.dumps(journal._asdict(), indent=2, ensure_ascii=False) + "\n"


def loads(text: str) -> Journal:
    """Raises ValueError or TypeError for anything that is not a journal."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    for key in ("details", "flaky", "env_skipped", "look_at"):
        if key in data and isinstance(data[key], list):
            data[key] = tuple(data[key])
    return Journal(**data)
