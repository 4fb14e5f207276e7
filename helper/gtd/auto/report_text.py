"""The morning report's text: table cells that never break a row, lengths and
counts in words, and the markdown tables and sections (gtd.auto.report).

Pure: strings and records in, markdown out."""

from __future__ import annotations

import math
import re

from gtd import paths
from gtd.auto.memory import CycleRecord

DASH = "—"
MAX_REASON = 200  # characters of a reason in a table cell
MAX_TEST_ID = 120  # characters of a test id in a table cell
_MAX_LISTED = 10  # task ids named in one line


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _lines(text: str) -> list[str]:
    """Visible lines of `text`: terminal colour codes (test output carries them) and
    other control characters dropped, tabs as spaces, split on every line break
    Python knows (\\f, \\u2028 ... too), so no cell can spill onto a new line."""
    text = _ANSI.sub("", text).replace("\t", " ")
    return [_CONTROL.sub("", line).strip() for line in text.splitlines()]


def code_lines(text: str) -> list[str]:
    """Lines of program output for a code block: like `_lines`, but indentation
    kept; blank lines at either end dropped."""
    text = _ANSI.sub("", text).replace("\t", "    ")
    found = [_CONTROL.sub("", line).rstrip() for line in text.splitlines()]
    while found and not found[0]:
        found.pop(0)
    while found and not found[-1]:
        found.pop()
    return found


def flat(text: str) -> str:
    return " ".join(" ".join(_lines(text)).split())


def cell(text: str | None) -> str:
    """One markdown table cell: never empty, never breaks the row.

    Newlines become `<br>` (GFM renders it; the row stays one line). A pipe is
    escaped as `\\|`, and a backslash right before a pipe is doubled first, or it
    would escape our escape and split the cell.
    """
    if text is None:
        return DASH
    flat = "<br>".join(line for line in _lines(text) if line)
    if not flat:
        return DASH
    flat = re.sub(r"\\(?=\|)", r"\\\\", flat)
    return flat.replace("|", "\\|")


def short(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (see gtd.auto.shorten: the one way a
    reason or a kilobyte test id is cut for a reader)."""
    from gtd.auto.shorten import shorten

    return shorten(text, limit)


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def duration(seconds: float | None) -> str:
    """``4.2 s``, ``2 min 05 s``, ``1 h 02 min``; a dash for no (or no sane) value."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return DASH
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def tests_line(rec: CycleRecord | None) -> str:
    """Passed, failed and skipped/xfail apart: "5063 / 5344 passed" alone reads as
    if the other 281 failed. Records older than the split show the old form."""
    if rec is None or rec.tests_passed is None or rec.tests_total is None:
        return DASH
    if rec.tests_failed is None or rec.tests_skipped is None:
        return f"{rec.tests_passed} / {rec.tests_total} passed"
    # xfailed and xpassed tests are counted in neither passed nor skipped.
    rest = max(0, rec.tests_total - rec.tests_passed - rec.tests_failed)
    return f"{rec.tests_passed} passed, {rec.tests_failed} failed, {rest} skipped/xfail"


def kept_ref(rec: CycleRecord) -> str:
    """The ref holding a reverted cycle's work; "" when there was none to keep (the
    cycle changed nothing); records from before `kept` was recorded: the default."""
    return f"{paths.REVERTED_REF}{rec.cycle}" if rec.kept is None else rec.kept


def show_command(ref: str) -> str:
    return cell(f"`git show {ref} --stat`")


def row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def table(header: tuple[str, ...], rows: list[str]) -> list[str]:
    return [row(*header), "|" + "|".join("-" * (len(h) + 2) for h in header) + "|", *rows]


def section(title: str, placeholder: str | None, body: list[str]) -> list[str]:
    head = [f"## {title}", ""]
    if placeholder is not None:
        head += [placeholder, ""]
    return [*head, *body, ""]


def named_task(task: str, title: str) -> str:
    """``T2: Add div`` (or the id alone when the title is unknown)."""
    title = flat(title)
    return f"{task}: {title}" if title else task


def id_list(ids: list[str]) -> str:
    shown = ", ".join(ids[:_MAX_LISTED])
    return shown + (f" and {len(ids) - _MAX_LISTED} more" if len(ids) > _MAX_LISTED else "")
