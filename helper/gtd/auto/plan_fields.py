"""The fields under a PLAN.md task: the two the loop reads (Files, Blocked by),
the notes a planner writes that are task text, and the known name a misspelt or
synonymous word most likely stands for. Pure: words in, names out."""

from __future__ import annotations

# The fields the loop reads, and what their misspellings and synonyms suggest.
READ = ("Files", "Blocked by")
SYNONYMS = {
    **dict.fromkeys(("file", "path", "paths"), "Files"),
    **dict.fromkeys(
        (
            "blocked", "blocker", "blockers", "blocks", "depends", "depends on",
            "dependency", "dependencies", "deps", "requires", "after", "waits on",
            "prerequisites",
        ),
        "Blocked by",
    ),
}  # fmt: skip
# Notes a planner writes under a task (deepflow's spike, optimize and integration
# fields among them): part of the task's text for the implementer, never read.
NOTES = (
    "Type", "Hypothesis", "Method", "Success criteria", "Time-box", "Impact", "Model",
    "Effort", "Optimize", "Integration ACs", "Steps", "Acceptance", "Acceptance criteria",
    "Done when", "Notes", "Note", "Tests", "Context", "Details", "Risk", "Goal", "Spec",
    "See", "Why",
)  # fmt: skip
NOTE_KEYS = frozenset(n.lower() for n in NOTES)


def key_name(raw: str) -> str:
    """ "blocked_by" / "Blocked  by" / "FILES" → the canonical name when it is one."""
    norm = " ".join(raw.replace("_", " ").split()).lower()
    if norm == "files":
        return "Files"
    if norm.replace("-", " ") == "blocked by":
        return "Blocked by"
    return " ".join(raw.split())


def suggest(key: str, *, read_only: bool) -> str | None:
    """The known field name ``key`` most likely stands for: a synonym of a read field,
    or the nearest name at most a couple of edits away."""
    low = key.lower()
    if low in SYNONYMS:
        return SYNONYMS[low]
    names = READ if read_only else (*READ, *NOTES)
    best: tuple[int, str] | None = None
    for name in names:
        dist = _edits(low, name.lower())
        if dist <= (1 if len(name) < 8 else 2) and (best is None or dist < best[0]):
            best = (dist, name)
    return best[1] if best else None


def _edits(a: str, b: str) -> int:
    """Edit distance with adjacent transpositions (optimal string alignment); the
    words are short field names, so the plain table is cheap."""
    if abs(len(a) - len(b)) > 2:
        return 3  # more than any suggestion allows
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            val = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                val = min(val, prev2[j - 2] + 1)
            row.append(val)
        prev2, prev = prev, row
    return prev[-1]
