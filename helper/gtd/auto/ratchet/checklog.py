"""The run's output in ``.deepflow/check.log``.

A cycle's check runs in a worker whose standard output and error are that log
(gtd.auto.cycle.worker, a new file each time). The commands' output goes to pipes
the helper reads, so without this module the log held only the worker's own
words: nothing when all went well. The worker calls :func:`to` once; from then
on each command the ratchet runs adds its record (the command, how it ended, its
output's end) and the box it ran in (:func:`note`), each in one write. The log
is bounded: a record keeps the last :data:`RECORD_MAX` bytes of its output, and
the log stops growing at :data:`LOG_MAX` (a line says so). Outside the worker
(`gtd ratchet run`, whose standard output is its answer) nothing is written."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gtd.proc import Result

RECORD_MAX = 64 << 10
LOG_MAX = 1 << 20
_state: dict[str, int] = {}


def to(fd: int) -> None:
    """Records go to ``fd`` (the worker's log) from now on."""
    _state.update(fd=fd, left=LOG_MAX)


def note(line: str) -> None:
    _write(f"gtd: {line}\n".encode())


def record(kind: str, command: str, result: Result) -> None:
    """One command's run: its line, how it ended, the end of its output."""
    if "fd" not in _state:
        return
    how = "timed out" if result.timed_out else f"exit {result.returncode}"
    head = f"$ {command}    # {kind}: {how}, {result.duration_s:.2f} s\n".encode()
    body = result.output.encode("utf-8", "replace")
    if len(body) > RECORD_MAX:
        cut = body[-RECORD_MAX:]
        newline = cut.find(b"\n", 0, 4096)  # from a line's start, where one is near
        body = b"[... earlier output left out ...]\n" + cut[newline + 1 :]
    if body and not body.endswith(b"\n"):
        body += b"\n"
    _write(head + body)


def _write(data: bytes) -> None:
    fd, left = _state.get("fd"), _state.get("left", 0)
    if fd is None or left <= 0:
        return
    if len(data) > left:
        data = data[:left] + b"\n[gtd: check.log is full; later output left out]\n"
    _state["left"] = left - len(data)
    try:
        os.write(fd, data)
    except OSError:  # a log that cannot be written is no reason to fail the run
        _state["left"] = 0
