"""What a cycle spent: its tokens and cost, sealed with the cycle (docs/cost.md).

Where the numbers come from:

- ``gtd loop``: the agent's own report of its run (gtd.auto.agent_usage: Claude
  Code's ``--output-format json`` result, or a ``{"gtd_usage": …}`` line), given
  to `end` by the loop, the reviewer's added;
- a Claude Code session (the journal names it: ``claude_session``): its
  transcripts (gtd.auto.transcripts). The cycle's turns are the assistant
  messages written from the cycle's `begin` to its `end`: the loop's own tick
  turns in the session's transcript (the share the report calls tick overhead)
  and every subagent's in the window (the implementer, and the reviewer,
  whose share is kept apart too).

The numbers are read once per `end` call and sealed in the journal with the
cycle's next seal; the record takes them from there, so a report rebuilt from the
sealed records shows the same numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gtd.auto import harness, prices, transcripts, usage
from gtd.auto.config import AutoConfig
from gtd.auto.journal import Journal
from gtd.auto.usage import Usage
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from gtd.auto.wave_journal import Wave

REVIEWER = "gtd:reviewer"


class Said(NamedTuple):
    """What a headless run printed (`gtd loop`): the agent's standard output and,
    after a review, the reviewer's. Priced at `end`, from the sealed config."""

    agent: str
    reviewer: str | None = None


class Spent(NamedTuple):
    total: Usage
    tick: Usage | None = None  # the main conversation's share (in a session)
    review: Usage | None = None  # the reviewer's share, when one ran


def table(config: AutoConfig) -> dict[str, prices.Price]:
    return prices.table((row[0], prices.Price(*row[1:])) for row in config.prices)


def from_session(
    session: str, since: float, until: float, config: AutoConfig, base: Path | None = None
) -> Spent | None:
    """The tokens of session ``session``'s messages from ``since`` to ``until``;
    None when its transcripts are not found (a session that keeps none)."""
    files = transcripts.session_files(session, since, base)
    if files.main is None and not files.agents:
        return None
    found = transcripts.messages(transcripts.lines_since(files.main, since)) if files.main else {}
    tick = transcripts.tokens_by_model(found, since, until)
    review: dict[str, prices.Tokens] = {}
    work: dict[str, prices.Tokens] = {}
    reviewed = False
    for kind, path in files.agents:
        said = transcripts.tokens_by_model(
            transcripts.messages(transcripts.lines_since(path, since)), since, until
        )
        if kind == REVIEWER:
            reviewed = reviewed or bool(said)
            review = transcripts.merged(review, said)
        else:
            work = transcripts.merged(work, said)
    priced = table(config)
    total = prices.priced(transcripts.merged(tick, work, review), priced)
    return Spent(
        total,
        prices.priced(tick, priced),
        prices.priced(review, priced) if reviewed else None,
    )


def from_wave(
    wave: Wave, cycle: int, until: float, config: AutoConfig, base: Path | None = None
) -> Spent | None:
    """What task ``cycle`` of ``wave`` spent, read from the wave's session: the
    windows of a wave's cycles overlap, so each message is charged once, to one
    task or split evenly among all:

    - its implementer's: the subagent transcripts whose prompt names its brief;
    - the tick's turns from the wave's start to its first `end`
      (``split_epoch``: the tick launched every implementer then), split
      evenly (:func:`gtd.auto.transcripts.share`); the tick's turns after the
      last recorded task's charge (``charged``: `end` calls come in plan order)
      up to ``until``, its own;
    - the reviewer's written in that same window (the wave's reviews run one
      after another, each inside its task's `end` calls).

    None when the session keeps no transcripts."""
    entry = wave.of(cycle)
    if wave.claude_session is None or entry is None:
        return None
    since = wave.started_epoch
    files = transcripts.session_files(wave.claude_session, since, base)
    if files.main is None and not files.agents:
        return None
    split = wave.split_epoch if wave.split_epoch is not None else until
    own_since = max(split, wave.charged or split)
    found = transcripts.messages(transcripts.lines_since(files.main, since)) if files.main else {}
    index = wave.tasks.index(entry)
    shared = transcripts.share(
        transcripts.tokens_by_model(found, since, split), len(wave.tasks), index
    )
    tick = transcripts.merged(shared, _after(found, own_since, until))
    review: dict[str, prices.Tokens] = {}
    work: dict[str, prices.Tokens] = {}
    reviewed = False
    for kind, path in files.agents:
        said = transcripts.messages(transcripts.lines_since(path, since))
        if kind == REVIEWER:
            mine = _after(said, own_since, until)
            reviewed = reviewed or bool(mine)
            review = transcripts.merged(review, mine)
        elif entry.brief and entry.brief in harness.prompt(path):
            work = transcripts.merged(work, transcripts.tokens_by_model(said, since, until))
    priced = table(config)
    total = prices.priced(transcripts.merged(tick, work, review), priced)
    return Spent(
        total, prices.priced(tick, priced), prices.priced(review, priced) if reviewed else None
    )


def _after(
    found: dict[str, transcripts.Message], since: float, until: float
) -> dict[str, prices.Tokens]:
    """The messages written after ``since`` (a boundary another share ends at,
    inclusive there) up to ``until``."""
    later = {k: m for k, m in found.items() if m.at > since}
    return transcripts.tokens_by_model(later, since, until)


def from_agent(stdout: str, config: AutoConfig) -> Spent | None:
    """What a headless agent's output says it spent (gtd.auto.agent_usage)."""
    from gtd.auto import agent_usage

    found = agent_usage.from_output(stdout, table(config))
    return None if found is None else Spent(found)


def reviewed(agent: Spent | None, reviewer: Spent | None) -> Spent | None:
    """The agent's and the reviewer's spending as one cycle's, the reviewer's
    share kept apart. An agent whose output said nothing leaves the cycle's
    tokens unknown: the reviewer's alone would pass for the whole."""
    if agent is None or reviewer is None:
        return agent
    return Spent(agent.total.plus(reviewer.total), review=reviewer.total)


def sealed(current: Journal, spent: Spent | None) -> Journal:
    """The journal with ``spent`` in it (unchanged for None)."""
    if spent is None:
        return current
    return current.evolve(
        usage=usage.to_json(spent.total),
        usage_tick=None if spent.tick is None else usage.to_json(spent.tick),
        usage_review=None if spent.review is None else usage.to_json(spent.review),
    )


def collect(
    current: Journal,
    now: float,
    config: AutoConfig,
    given: Said | None = None,
    wave: Wave | None = None,
) -> Journal:
    """The journal of the cycle whose agent's turn is over, with what it spent:
    what the loop's agent (and reviewer) printed, ``given``, else its session's
    transcripts; left as it is when neither says anything. ``config``: the
    sealed one (its prices), never the live file an agent could edit. ``wave``:
    the wave in flight, for a cycle of one (:func:`from_wave`); a wave's cycle
    read without it is left as it is (its window holds the other tasks' work)."""
    if given is not None:
        reviewer = None if given.reviewer is None else from_agent(given.reviewer, config)
        return sealed(current, reviewed(from_agent(given.agent, config), reviewer))
    if current.wave is not None:
        if wave is None or wave.wave != current.wave:
            return current
        found = from_wave(wave, current.cycle, now, config)
        return current if found is None else sealed(current, found).evolve(usage_until=now)
    if current.claude_session:
        return sealed(
            current, from_session(current.claude_session, current.started_epoch, now, config)
        )
    return current


def recorded(
    current: Journal, now: float, config: AutoConfig
) -> tuple[Usage | None, Usage | None, Usage | None]:
    """What the cycle's record says it spent: what `end` sealed; for a cycle no
    `end` saw (its tick died, the next `begin` recovered it), its session's
    transcripts up to now."""
    if current.usage is None and current.claude_session:
        current = collect(current, now, config)
    return of_journal(current)


def of_journal(current: Journal) -> tuple[Usage | None, Usage | None, Usage | None]:
    """What :func:`sealed` put in the journal: total, tick share, reviewer's."""

    def read(data: object) -> Usage | None:
        if data is None:
            return None
        try:
            return usage.from_json(data)
        except ValueError:
            return None  # a journal is sealed; this is a bug's, never the agent's

    return read(current.usage), read(current.usage_tick), read(current.usage_review)
