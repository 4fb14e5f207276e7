"""PLAN.md as values: parse the deepflow task list and validate it. Pure: text in,
values out — no IO. Choosing the next task is :mod:`gtd.auto.next_task`, ticking a
finished one :mod:`gtd.auto.plan_tick`, the fields' names :mod:`gtd.auto.plan_fields`,
the dependency graph's checks :mod:`gtd.auto.plan_graph`.

The format (skills/plan-format/SKILL.md): tasks are checkbox list items whose text starts with a
bold id, ``- [ ] **T3**: title``, with indented sub-bullets ``- Files: a.py, b.py`` and
``- Blocked by: T1, T2`` (or ``none``). ``[x]`` is done (``✓ (abc1234)`` names the
commit), ``[~]`` skipped; ``[SPIKE]`` or ``(spike)`` in the title marks a spike.
Only ``**T<n>**`` items are tasks: other checkboxes, the ``## Spec Gaps`` section and
fenced code blocks are never read as tasks.

Nothing that looks meant for the loop is dropped without a word: a checkbox that
names a task id but is not a task (``**T2*``, ``T2:``), a bold task under Spec Gaps,
``**T0**``, a control character in a title, a ``- Word:`` line under a task that is
neither a field the loop reads (Files, Blocked by) nor a known note (``NOTES``), and
a Files / Blocked by line left outside its task each become a problem on its line,
with the nearest known field name when the word looks misspelt.

This runs on every tick of the unattended loop (``gtd plan next``), so it is one
line-by-line pass with precompiled regexes and imports only the standard library.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gtd.auto.plan_fields import NOTE_KEYS, NOTES, READ, key_name, suggest
from gtd.auto.plan_graph import graph_problems
from gtd.fences import FenceTracker
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Literal

    Status = Literal["todo", "done", "skipped"]
else:
    Status = str


class Task(NamedTuple):
    id: str
    title: str
    status: Status
    line: int
    files: tuple[str, ...]
    blocked_by: tuple[str, ...]
    spike: bool
    spec: str | None
    commit: str | None
    # The task's markdown block as written; line endings normalised to "\n" so a
    # CRLF plan does not leak "\r" into briefs rendered from it.
    text: str


class Problem(NamedTuple):
    line: int
    message: str


class Plan(NamedTuple):
    tasks: tuple[Task, ...]
    title: str | None
    problems: tuple[Problem, ...]

    def get(self, task_id: str) -> Task | None:
        """The task with ``task_id`` (the first one if the id is duplicated)."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        return None

    @property
    def pending(self) -> tuple[Task, ...]:
        return tuple(t for t in self.tasks if t.status == "todo")


# -- regexes -------------------------------------------------------------------------

# A list marker: "-", "*", "+" or an ordered "1." / "1)".
MARKER = r"(?:[-*+]|\d{1,9}[.)])"
# A task: checkbox item whose text starts with a bold id; the colon may sit inside or
# outside the bold, or be missing. The box char is captured loosely so that "[-]" or
# "[]" become a reported problem instead of a silently ignored task.
_TASK = re.compile(
    rf"^(?P<indent>[ \t]*){MARKER}[ \t]+\[(?P<box>[^\]]?)\][ \t]*"
    r"\*\*[ \t]*(?P<id>[Tt][0-9]+)[ \t]*:?[ \t]*\*\*(?P<rest>.*)$"
)
# A checkbox item that names a task id but is not a task — no bold, half a bold
# (``**T2*``), ``__T2__``, ``Task 2``, a space inside the id: the author's slip,
# which would otherwise drop the task without a word.
_NEAR_TASK = re.compile(
    rf"^[ \t]*{MARKER}[ \t]*\[[^\]]{{0,3}}\][ \t]*(?:[*_]+[ \t]*)?"
    r"(?P<id>(?:[Tt]|[Tt]ask[ \t]*)[ \t]?\d+)[ \t]*[*_]*[ \t]*(?:[:\-—–\[]|$)"
)
# C0 and C1 control characters and DEL, tab excepted: in a title they end up in a
# commit message, where git refuses or mangles them.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
# "| Blocked by: T8" or "(blocked by: T2)" on the task line itself: never read.
_INLINE_BLOCKED = re.compile(r"blocked[ \t_-]*by[ \t]*:", re.IGNORECASE)
# "- Blocked by T1": the field without its colon.
_BLOCKED_NO_COLON = re.compile(
    rf"^[ \t]*(?:{MARKER}[ \t]+)?(?:\*\*|__)?[ \t]*blocked[ \t_-]*by\b"
    r"(?![ \t]*(?:\*\*|__)?[ \t]*:)",
    re.IGNORECASE,
)
_BOX_STATUS: dict[str, Status] = {" ": "todo", "x": "done", "X": "done", "~": "skipped"}
DONE_MARK = re.compile(r"[ \t]*[✓✔](?:[ \t]*\([ \t]*(?P<hash>[0-9a-fA-F]{4,40})[ \t]*\))?[ \t]*$")
_SPIKE_TAG = re.compile(r"\[spike\]|\(spike\)", re.IGNORECASE)
_HEADING = re.compile(r"^ {0,3}(?P<hashes>#{1,6})(?:[ \t]+(?P<text>.*?))?(?:[ \t]+#+)?[ \t]*$")
# A line that starts a new markdown block, which ends a task's lazy continuation.
_BLOCK_START = re.compile(
    rf"^[ \t]*(?:#{{1,6}}(?:[ \t]|$)|{MARKER}(?:[ \t]|$)|`{{3}}|~{{3}}|>|(?:[-*_][ \t]*){{3,}}$)"
)
# "- Files: a.py" / "- **Blocked by:** T1" / "Blocked by: none" (bullet optional).
_FIELD = re.compile(
    rf"^[ \t]*(?:{MARKER}[ \t]+)?(?:\*\*|__)?[ \t]*(?P<key>files|blocked[ \t_-]*by)[ \t]*"
    r"(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?(?P<value>.*)$",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(rf"^[ \t]*{MARKER}[ \t]+(?P<item>.*)$")
# Any "- Word:" / "- Two words:" line (bullet and bold optional): the shape of a
# field, whether or not the loop reads it.
_KEYED = re.compile(
    rf"^[ \t]*(?P<bullet>{MARKER}[ \t]+)?(?:\*\*|__)?[ \t]*"
    r"(?P<key>[A-Za-z][A-Za-z'/-]*(?:[ \t]+[A-Za-z][A-Za-z'/-]*)?)"
    r"[ \t]*(?:\*\*|__)?[ \t]*:(?:\*\*|__)?(?:[ \t]|$)"
)
_TASK_ID = re.compile(r"[Tt]\d+")
_REMARK = re.compile(r"\([^)]*\)")
_TRAILING_REMARK = re.compile(r"[ \t]+\([^)]*\)$")
_ID_SPLIT = re.compile(r"[,;]|[ \t]+and[ \t]+|[ \t]+")
_NONE_VALUES = frozenset({"none", "nothing", "n/a", "na", "-", "—", "–", "no", "nil"})
_GAPS = re.compile(r"spec[ \t]+gaps\b", re.IGNORECASE)


def _width(line: str) -> int:
    """Indentation width with tabs at 4 columns (what editors and CommonMark use)."""
    if line[:1] not in (" ", "\t"):
        return 0
    stripped = line.lstrip(" \t")
    return len(line[: len(line) - len(stripped)].expandtabs(4))


def _logical_lines(text: str) -> list[str]:
    """Lines without their terminators, numbered like an editor does (split on "\\n"
    only: str.splitlines would also split on form feeds and U+2028 and shift every
    line number after them)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = [ln[:-1] if ln.endswith("\r") else ln for ln in lines] if "\r" in text else lines
    if out and out[0].startswith("\ufeff"):
        out[0] = out[0][1:]
    return out


# -- parsing -------------------------------------------------------------------------


class _Builder:
    """A task while its block is being read; frozen into a Task when it ends."""

    __slots__ = (
        "blank_pending",
        "blocked_by",
        "blocked_line",
        "commit",
        "end",
        "field_indent",
        "files",
        "files_list_indent",
        "id",
        "indent",
        "line",
        "spec",
        "spike",
        "start",
        "status",
        "title",
    )

    def __init__(
        self,
        *,
        id: str,
        title: str,
        status: Status,
        line: int,
        indent: int,
        spike: bool,
        spec: str | None,
        commit: str | None,
        start: int,
        end: int,
    ) -> None:
        self.id = id
        self.title = title
        self.status = status
        self.line = line
        self.indent = indent
        self.spike = spike
        self.spec = spec
        self.commit = commit
        self.start = start  # 0-based index of the checkbox line
        self.end = end  # 0-based index of the last non-blank line of the block
        self.blank_pending = False
        self.files: list[str] = []
        self.blocked_by: list[str] = []
        self.blocked_line: int | None = None
        # "- Files:" with the paths as sub-bullets
        self.files_list_indent: int | None = None
        # the indentation of the task's first sub-bullet: its fields sit there
        self.field_indent: int | None = None

    def freeze(self, lines: list[str]) -> Task:
        return Task(
            id=self.id,
            title=self.title,
            status=self.status,
            line=self.line,
            files=tuple(dict.fromkeys(self.files)),
            blocked_by=tuple(dict.fromkeys(self.blocked_by)),
            spike=self.spike,
            spec=self.spec,
            commit=self.commit,
            text="\n".join(lines[self.start : self.end + 1]),
        )


def _split_title(rest: str) -> tuple[str, bool, str | None]:
    """Title, spike flag and commit hash from the text after the bold id."""
    commit: str | None = None
    done = DONE_MARK.search(rest) if "✓" in rest or "✔" in rest else None
    if done:
        commit = done.group("hash")
        rest = rest[: done.start()]
    spike = bool(_SPIKE_TAG.search(rest))
    if spike:
        rest = _SPIKE_TAG.sub(" ", rest)
    title = rest.strip().lstrip(":—–-").strip()
    return re.sub(r"[ \t]{2,}", " ", title), spike, commit


def _clean_item(item: str) -> str:
    item = item.strip().strip("`*_\"'").strip()
    # "src/a.py (new)": the remark is for the reader, not part of the path.
    return _TRAILING_REMARK.sub("", item).strip("`") if item.endswith(")") else item


def _parse_files(value: str) -> list[str]:
    if value.strip().strip("`*_").strip().lower() in _NONE_VALUES:
        return []
    return [c for c in (_clean_item(p) for p in value.split(",")) if c]


def _parse_blockers(value: str, task_id: str, lineno: int) -> tuple[list[str], list[Problem]]:
    cleaned = _REMARK.sub(" ", value.replace("`", "").replace("*", "")).strip().rstrip(".")
    if cleaned.lower() in _NONE_VALUES:
        return [], []
    if not cleaned:
        return [], [Problem(lineno, f"{task_id}: empty Blocked by line (write task ids or none)")]
    ids: list[str] = []
    bad: list[str] = []
    for token in _ID_SPLIT.split(cleaned):
        if not token:
            continue
        if _TASK_ID.fullmatch(token):
            ids.append(token.upper())
        else:
            bad.append(token)
    if bad:
        listed = ", ".join(repr(b) for b in bad)
        return ids, [
            Problem(
                lineno,
                f"{task_id}: malformed Blocked by line: {listed} is not a task id "
                "(write ids like T1, T2 or none)",
            )
        ]
    return ids, []


def parse(text: str) -> Plan:
    """Read every task, the title and every problem ``gtd plan check`` reports.
    Never raises: whatever the text, problems describe what is wrong with it."""
    lines = _logical_lines(text)
    problems: list[Problem] = []
    tasks: list[Task] = []
    title: str | None = None
    spec: str | None = None
    gaps_level: int | None = None  # inside "## Spec Gaps" until a heading this high
    gaps_line = 0
    fences = FenceTracker()
    blocked_lines: dict[int, int] = {}  # index in tasks -> line of its Blocked by
    current: _Builder | None = None
    after_task = False  # only blank lines since the last task's block ended

    def finish() -> None:
        nonlocal current, after_task
        if current is not None:
            if current.blocked_line is not None:
                blocked_lines[len(tasks)] = current.blocked_line
            tasks.append(current.freeze(lines))
            current = None
            after_task = True

    # The cheap substring tests in front of each regex keep this at a few ms for a
    # 200-task plan: most lines are prose or sub-bullets that no regex would match.
    for idx, line in enumerate(lines):
        lineno = idx + 1

        # Inside a fenced block nothing is a task, heading or field; the lines still
        # belong to the task block the fence sits in.
        if fences.inside:
            if current is not None and line.strip():
                current.end = idx
            fences.step(line)
            continue

        stripped = line.strip()
        m_task = _TASK.match(line) if "**" in line else None
        if m_task and gaps_level is not None:
            problems.append(
                Problem(
                    lineno,
                    f"{m_task.group('id').upper()} is under Spec Gaps (line {gaps_line}), "
                    "where checkboxes are notes: it is not read as a task; put tasks under "
                    "their own heading (## Tasks) outside Spec Gaps",
                )
            )
            m_task = None
        if m_task:
            finish()
            current = _start_task(m_task, line, idx, spec, problems)
            continue

        if current is not None:
            if not stripped:
                current.blank_pending = True
                continue
            indent = _width(line)
            # Deeper than the bullet: part of the task. At or left of it: only a lazy
            # paragraph continuation (no blank line before, not a new block) is.
            if indent > current.indent or (
                not current.blank_pending and not _BLOCK_START.match(line)
            ):
                current.end = idx
                current.blank_pending = False
                if not fences.step(line):
                    _read_field(current, line, indent, lineno, problems)
                    if "[" in line:
                        _near_task(line, lineno, problems)
                continue
            finish()

        if not stripped:
            continue
        was_after_task, after_task = after_task, False
        if fences.step(line):
            continue
        heading = _HEADING.match(line) if stripped[:1] == "#" else None
        if heading:
            level = len(heading.group("hashes"))
            htext = (heading.group("text") or "").strip()
            if gaps_level is not None and level <= gaps_level:
                gaps_level = None
            if level == 1 and title is None and htext:
                title = htext
            if level <= 2:
                spec = None
            elif level == 3:
                spec = htext or None
            if level <= 3 and _GAPS.match(htext):
                gaps_level = level
                gaps_line = lineno
                spec = None
            continue
        if gaps_level is not None:
            continue
        if "[" in line:
            _near_task(line, lineno, problems)
        if was_after_task and ":" in line:
            _stray_field(line, lineno, problems)
    finish()

    problems.extend(Problem(*found) for found in graph_problems(tasks, blocked_lines))
    if not tasks:
        problems.append(Problem(1, "no tasks found (a task looks like - [ ] **T1**: title)"))
    problems.sort(key=lambda p: p.line)  # stable: same-line problems keep their order
    return Plan(tasks=tuple(tasks), title=title, problems=tuple(problems))


def _start_task(
    m_task: re.Match[str], line: str, idx: int, spec: str | None, problems: list[Problem]
) -> _Builder:
    lineno = idx + 1
    task_id = m_task.group("id").upper()
    box = m_task.group("box")
    status = _BOX_STATUS.get(box)
    if status is None:
        problems.append(
            Problem(lineno, f"{task_id}: unknown checkbox [{box}] (use [ ], [x] or [~])")
        )
        status = "todo"
    if int(task_id[1:]) == 0:
        problems.append(Problem(lineno, f"{task_id}: task ids are positive: start at T1"))
    rest = m_task.group("rest")
    control = _CONTROL.search(rest)
    if control:
        problems.append(
            Problem(
                lineno,
                f"{task_id}: control character U+{ord(control.group()):04X} in the title "
                "(it would break the commit message): delete it",
            )
        )
    if ":" in rest and _INLINE_BLOCKED.search(rest):
        problems.append(
            Problem(
                lineno,
                f"{task_id}: Blocked by on the task line is not read: put it on its own "
                "line under the task, `  - Blocked by: T1`",
            )
        )
    task_title, spike, commit = _split_title(rest)
    if not task_title:
        problems.append(Problem(lineno, f"{task_id}: task has no title"))
    return _Builder(
        id=task_id,
        title=task_title,
        status=status,
        line=lineno,
        indent=_width(line),
        spike=spike,
        spec=spec,
        commit=commit,
        start=idx,
        end=idx,
    )


def _near_task(line: str, lineno: int, problems: list[Problem]) -> None:
    """A checkbox that names a task id but did not parse as a task."""
    near = _NEAR_TASK.match(line)
    if near:
        tid = "T" + "".join(ch for ch in near.group("id") if ch.isdigit())
        if not tid.isascii():
            problems.append(
                Problem(lineno, f"checkbox names {tid} but is not a task: ids use the digits 0-9")
            )
            return
        problems.append(
            Problem(
                lineno,
                f"checkbox names {tid} but is not a task: write the id in bold, "
                f"- [ ] **{tid}**: title",
            )
        )


def _stray_field(line: str, lineno: int, problems: list[Problem]) -> None:
    """A Files / Blocked by line (or a misspelling of one) right after a task but not
    indented under it: the task would run without it."""
    m = _FIELD.match(line) or _KEYED.match(line)
    if m is None:
        return
    key = key_name(m.group("key"))
    name = key if key in READ else suggest(key, read_only=True)
    if name is None:
        return
    problems.append(
        Problem(lineno, f"{name} is not under a task (not read): indent it under its task")
    )


def _read_field(
    current: _Builder, line: str, indent: int, lineno: int, problems: list[Problem]
) -> None:
    """Take Files / Blocked by from one line of a task's block; report a line shaped
    like a field that is neither read nor a known note."""
    bullet = _LIST_ITEM.match(line) if indent > current.indent else None
    if bullet and current.field_indent is None:
        current.field_indent = indent
    if current.files_list_indent is not None:
        if bullet and indent > current.files_list_indent:
            current.files.extend(_parse_files(bullet.group("item")))
            return
        current.files_list_indent = None
    if "locked" in line and _BLOCKED_NO_COLON.match(line):
        problems.append(
            Problem(
                lineno,
                f"{current.id}: Blocked by without a colon is not read: write `Blocked by: T1`",
            )
        )
        return
    if ":" not in line:
        return
    m = _FIELD.match(line)
    if not m:
        at_field_level = bullet is not None and indent == current.field_indent
        _unknown_field(current, line, at_field_level, lineno, problems)
        return
    value = m.group("value").strip()
    if m.group("key").lower() == "files":
        if value:
            current.files.extend(_parse_files(value))
        else:
            current.files_list_indent = indent
        return
    ids, found = _parse_blockers(value, current.id, lineno)
    current.blocked_by.extend(ids)
    problems.extend(found)
    if current.blocked_line is None:
        current.blocked_line = lineno


def _unknown_field(
    current: _Builder, line: str, at_field_level: bool, lineno: int, problems: list[Problem]
) -> None:
    """``- Word:`` under a task that the loop does not read. A known note is task
    text. A misspelt Files / Blocked by is reported wherever it sits; any other
    unknown word only as a sub-bullet at the task's field level (deeper bullets are
    the content of a note, a bare line is prose)."""
    m = _KEYED.match(line)
    if m is None:
        return
    key = " ".join(m.group("key").split())
    if key.lower() in NOTE_KEYS:
        return
    read = suggest(key, read_only=True)
    if read is None and not at_field_level:
        return
    hint = read or suggest(key, read_only=False)
    if hint:
        problems.append(
            Problem(lineno, f"{current.id}: unknown field '{key}': did you mean '{hint}'?")
        )
        return
    problems.append(
        Problem(
            lineno,
            f"{current.id}: unknown field '{key}' (the loop reads Files and Blocked by; "
            f"notes: {', '.join(NOTES)}): use one of these or write the line without "
            "the colon",
        )
    )
