"""A cycle the harness stopped (docs/harness-failures.md): found, sealed as a
revert that keeps the work, recorded as ``paused``.

The engine calls these at the three places a cycle in its agent phase ends:
`gtd cycle end` (the headless loop passes what the agent's exit said; in a
session the transcripts are read), the next `begin` of a session whose tick died
(its turn ended in the API error), and the recovery of an abandoned cycle.
"""

from __future__ import annotations

from gtd.auto import breaker, harness, pause
from gtd.auto.config import AutoConfig
from gtd.auto.harness import Stop
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord, Halt, Memory


def detect(
    journal: Journal, now: float, told: Stop | None = None, brief: str | None = None
) -> Stop | None:
    """What stopped the cycle's agent, if the harness did: ``told`` (the headless
    loop read the agent's end), else the transcripts of the Claude Code session
    that began the cycle (``brief``: a wave's task's, whose implementer is the
    one its prompt names; None for a wave's task reads no transcript of another)."""
    if journal.phase != "agent" or journal.kind == "baseline":
        return None
    if told is not None:
        return told
    if journal.wave is not None and brief is None:
        return None
    if journal.claude_session:
        return harness.from_transcripts(
            journal.claude_session, journal.started_epoch, now, brief=brief
        )
    return None


def sealed(journal: Journal, stop: Stop) -> Journal:
    """The journal to seal: a revert (the work goes to the kept ref, the tree back
    to the base) that records a pause, not a verdict."""
    return journal.evolve(
        phase="reverting",
        passed=False,
        reason=f"{stop.kind}: {stop.message}",
        pause=stop._asdict(),
    )


def stop_of(journal: Journal) -> Stop | None:
    data = journal.pause
    if not isinstance(data, dict):
        return None
    reset = data.get("reset_epoch")
    return Stop(
        str(data.get("kind") or harness.KILLED),
        str(data.get("message") or ""),
        float(reset) if isinstance(reset, (int, float)) else None,
    )


def record(
    rec: CycleRecord, stop: Stop, mem: Memory, config: AutoConfig, now: float
) -> CycleRecord:
    """The cycle's record as a pause: when to try again, and what stopped it."""
    until = pause.wait_until(stop, mem.pause, now, config.pause_first_s, config.pause_cap_s)
    return rec._replace(status="paused", until=pause.iso(until), harness=stop.kind)


def halt_if_too_long(mem: Memory, config: AutoConfig, cycle: int, at: str) -> Halt | None:
    """A forced halt when the pause in force lasts longer than
    ``pause.longest_pause_minutes``: a limit that does not end needs a person."""
    held = mem.pause
    if held is None or not pause.too_long(held, config.pause_longest_s):
        return None
    minutes = round(config.pause_longest_s / 60)
    reason = (
        f"paused longer than pause.longest_pause_minutes ({minutes} min) in a row: "
        f"{held.reason} (since {held.since}, {held.attempts} attempts)"
    )
    return breaker.forced_halt(held.task, cycle, reason, at)
