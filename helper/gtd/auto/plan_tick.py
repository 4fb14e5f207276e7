"""Ticking a finished PLAN.md task: its checkbox line changed, every other byte kept.
Pure: text in, text out (gtd.auto.plan_file writes it)."""

from __future__ import annotations

import re

from gtd.auto.plan import DONE_MARK, MARKER, parse

_BOX = re.compile(rf"^(?P<head>[ \t]*{MARKER}[ \t]+\[)[^\]]?(?P<tail>\])")
_HEX = re.compile(r"[0-9a-fA-F]{4,40}")


def tick(text: str, task_id: str, short_hash: str) -> str:
    """Mark ``task_id`` done with ``✓ (short_hash)``, changing only its checkbox line
    (and that line's trailing blanks); every other byte, line endings included, stays.
    Idempotent: ticking a done task again replaces its hash rather than adding one,
    so crash recovery may safely repeat it. Raises KeyError for an unknown id."""
    if not _HEX.fullmatch(short_hash):
        raise ValueError(f"not a commit hash: {short_hash!r}")
    task = parse(text).get(task_id)
    if task is None:
        raise KeyError(task_id)
    lines = text.split("\n")
    idx = task.line - 1
    raw = lines[idx]
    cr = "\r" if raw.endswith("\r") else ""
    body = raw[: len(raw) - len(cr)]
    bom = "\ufeff" if idx == 0 and body.startswith("\ufeff") else ""
    body = body[len(bom) :]
    body = _BOX.sub(lambda m: f"{m.group('head')}x{m.group('tail')}", body, count=1)
    mark = DONE_MARK.search(body)
    if mark:
        body = body[: mark.start()]
    body = body.rstrip(" \t")
    lines[idx] = f"{bom}{body} ✓ ({short_hash}){cr}"
    return "\n".join(lines)
