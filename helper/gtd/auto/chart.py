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
The tasks of a wave (docs/parallel.md) ran together: each is drawn on a branch of
its own from the same commit, side by side, and the ones that landed are merged
back in plan order. A night with no wave is one line of commits, as ever.

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
_BRANCH = re.compile(r"[^A-Za-z0-9_]+")  # what a branch's name may hold, besides "-"


class _Point(NamedTuple):
    label: str
    kind: str  # "NORMAL", "REVERSE" or "HIGHLIGHT"
    tag: str | None
    wave: int | None = None  # the wave the cycle ran in
    task: str = ""  # its task, in the label's alphabet
    cycle: int = 0


def _safe(text: str, limit: int = 40) -> str:
    flat = " ".join(_UNSAFE.sub(" ", text).split())
    return flat[:limit].rstrip()


def _cycle_point(rec: CycleRecord, tag: str | None) -> _Point:
    task = _safe(rec.task, 20)
    if rec.status == "passed":
        label = f"{rec.cycle} {task} {_safe(rec.commit or '', 12)}"
        return _Point(label.rstrip(), "NORMAL", tag, rec.wave, task, rec.cycle)
    if rec.status == "paused":  # the harness stopped the agent: no verdict
        return _Point(f"{rec.cycle} {task} paused", "HIGHLIGHT", tag, rec.wave, task, rec.cycle)
    return _Point(f"{rec.cycle} {task} reverted", "REVERSE", tag, rec.wave, task, rec.cycle)


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
    branches: set[str] = set()
    for group in _groups(points):
        if group[0].wave is None:
            body += [_commit(point, tags) for point in group]
        else:
            body += _wave(group, tags, branches)
    body.append("```")
    caption = (
        "Cycles in order: a plain commit was committed, a crossed-out one reverted "
        "(its work is kept under the ref the Reverted section names, not on the branch), "
        "a highlighted one is a person's commit the snapshot was refreshed from, or a "
        "cycle the harness stopped (labelled paused: its work is kept, not judged)."
    )
    if any(point.wave is not None for point in points):
        caption += (
            " The tasks of a wave ran together: each on a branch of its own from the "
            "same commit, merged in plan order when it landed."
        )
    if dropped:
        caption += f" The latest {len(shown)} of {len(ran)} cycles."
    return [caption, "", *body]


def _refresh_point(number: int, refresh: Refresh, tag: str | None) -> _Point:
    # Numbered: the same commit may be refreshed from twice (after a broken baseline).
    label = f"person {_safe(refresh.commit, 12)} r{number}"
    return _Point(label, "HIGHLIGHT", tag)


def _commit(point: _Point, tags: dict[str, int]) -> str:
    line = f'  commit id: "{point.label}"'
    if point.kind != "NORMAL":
        line += f" type: {point.kind}"
    if point.tag is not None:
        # Tags name refs in a git graph: keep each one unique.
        tags[point.tag] = tags.get(point.tag, 0) + 1
        suffix = f" ({tags[point.tag]})" if tags[point.tag] > 1 else ""
        line += f' tag: "{point.tag}{suffix}"'
    return line


def _groups(points: list[_Point]) -> list[list[_Point]]:
    """Runs of points: each wave's cycles recorded one after another together,
    every other point alone."""
    out: list[list[_Point]] = []
    for point in points:
        if out and point.wave is not None and out[-1][0].wave == point.wave:
            out[-1].append(point)
        else:
            out.append([point])
    return out


def _wave(group: list[_Point], tags: dict[str, int], branches: set[str]) -> list[str]:
    """A wave drawn as it ran: every task on a branch of its own from the same
    commit (side by side), then the ones that landed merged in plan order. A
    task reverted or paused stays on its branch, as its work stayed off the
    line. The branches are named only for the chart (Mermaid needs a name)."""
    wave = group[0].wave
    lines: list[str] = []
    names: list[str] = []
    for point in group:
        # A lane is labelled with its branch's name: the wave's and the task's
        # (one task once in a wave), the cycle's number where the task's name
        # has nothing a branch's may hold, or should two ever meet.
        name = f"wave{wave}-" + (_BRANCH.sub("-", point.task).strip("-") or f"cycle{point.cycle}")
        if name in branches:
            name += f"-{point.cycle}"
        branches.add(name)
        names.append(name)
        lines += [f"  branch {name}", _commit(point, tags), "  checkout main"]
    for name, point in zip(names, group, strict=True):
        if point.kind == "NORMAL":
            # An id of its own: Mermaid shows a merge's id (a random one if none is
            # given); "wave …" begins no commit's label, and the cycle keeps it unique.
            said = f"wave {wave} landed {point.cycle} {point.task}".rstrip()
            lines.append(f'  merge {name} id: "{said}"')
    return lines
