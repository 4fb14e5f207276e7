"""The report's picture of the run: a Mermaid ``gitGraph`` of cycles over time.

Pure: memory in, markdown lines out. GitHub, GitLab and VS Code's markdown preview
(with Mermaid support) draw the fenced block as a chart; as plain text it stays a
short list of ``commit`` lines that reads in order.

One line of commits, oldest first: a committed cycle is a plain commit (its short
hash in the label), a reverted cycle a crossed-out commit (``REVERSE``: its work was
kept under ``refs/gtd/reverted/cycle-N``, not on the branch), a person's commit that
made the snapshot refresh a highlighted one (so is a cycle the harness paused,
labelled so), and a breaker trip or a forced halt a
tag on the cycle it followed. Skipped cycles changed nothing and are left out.

Everything the chart shows is in the tables too; the chart only makes the shape
of the night visible at a glance (a run of crosses is a task the agent could not do).
Labels are cut to a safe alphabet: Mermaid has no escape for a quote in a label.
"""

from __future__ import annotations

import re

from gtd.auto.memory import CycleRecord, Halt, Memory, Refresh
from gtd.tuples import NamedTuple

# The latest cycles drawn: a longer night would draw too small to read.
LIMIT = 30

_UNSAFE = re.compile(r"[^A-Za-z0-9 _.:/+-]+")


class _Point(NamedTuple):
    label: str
    kind: str  # "NORMAL", "REVERSE" or "HIGHLIGHT"
    tag: str | None


def _safe(text: str, limit: int = 40) -> str:
    flat = " ".join(_UNSAFE.sub(" ", text).split())
    return flat[:limit].rstrip()


def _cycle_point(rec: CycleRecord, tag: str | None) -> _Point:
    if rec.status == "passed":
        label = f"{rec.cycle} {_safe(rec.task, 20)} {_safe(rec.commit or '', 12)}"
        return _Point(label.rstrip(), "NORMAL", tag)
    if rec.status == "paused":  # the harness stopped the agent: no verdict
        return _Point(f"{rec.cycle} {_safe(rec.task, 20)} paused", "HIGHLIGHT", tag)
    return _Point(f"{rec.cycle} {_safe(rec.task, 20)} reverted", "REVERSE", tag)


def _halt_tag(halt: Halt) -> str:
    what = "halted" if halt.forced else "breaker tripped"
    return f"{what} at {_safe(halt.task, 20)}"


def mermaid(mem: Memory, limit: int = LIMIT) -> list[str]:
    """The chart section's body (caption, then the fenced block); empty before the
    first cycle or refresh."""
    ran = sorted((r for r in mem.cycles if r.status != "skipped"), key=lambda r: r.cycle)
    dropped = max(0, len(ran) - limit)
    shown = ran[dropped:]
    # A trip follows the cycle it was found after; a broken baseline's forced halt
    # (cycle 0) is sealed with the refresh that found it, at the same instant.
    after_cycle: dict[int, str] = {}
    after_refresh: dict[str, str] = {}
    for halt in mem.halts:
        if halt.cycle > 0:
            after_cycle.setdefault(halt.cycle, _halt_tag(halt))
        else:
            after_refresh.setdefault(halt.at, _halt_tag(halt))
    # Cycles in their own order; each refresh goes before the first cycle recorded
    # after it (a refresh older than the cycles shown is left out with them).
    refreshes = [
        (refresh.at, _refresh_point(number, refresh, after_refresh.get(refresh.at)))
        for number, refresh in enumerate(mem.refreshes, 1)
        if not dropped or refresh.at >= shown[0].at
    ]
    refreshes.sort(key=lambda item: item[0])
    points: list[_Point] = []
    for rec in shown:
        while refreshes and refreshes[0][0] < rec.at:
            points.append(refreshes.pop(0)[1])
        points.append(_cycle_point(rec, after_cycle.get(rec.cycle)))
    points += [point for _, point in refreshes]
    if not points:
        return []
    first = f"{dropped} earlier cycles" if dropped else "start"
    body = ["```mermaid", "gitGraph", f'  commit id: "{first}"']
    tags: dict[str, int] = {}
    for point in points:
        line = f'  commit id: "{point.label}"'
        if point.kind != "NORMAL":
            line += f" type: {point.kind}"
        if point.tag is not None:
            # Tags name refs in a git graph: keep each one unique.
            tags[point.tag] = tags.get(point.tag, 0) + 1
            suffix = f" ({tags[point.tag]})" if tags[point.tag] > 1 else ""
            line += f' tag: "{point.tag}{suffix}"'
        body.append(line)
    body.append("```")
    caption = (
        "Cycles in order: a plain commit was committed, a crossed-out one reverted "
        "(its work is kept under the ref the Reverted section names, not on the branch), "
        "a highlighted one is a person's commit the snapshot was refreshed from, or a "
        "cycle the harness stopped (labelled paused: its work is kept, not judged)."
    )
    if dropped:
        caption += f" The latest {len(shown)} of {len(ran)} cycles."
    return [caption, "", *body]


def _refresh_point(number: int, refresh: Refresh, tag: str | None) -> _Point:
    # Numbered: the same commit may be refreshed from twice (after a broken baseline).
    label = f"person {_safe(refresh.commit, 12)} r{number}"
    return _Point(label, "HIGHLIGHT", tag)
