"""The sink: where every line of the run goes (the helper's pipe, or the settings'
file) and how each is made (a session's lines, its evidence, capped per kind).
Every part that reports is handed the sink; none writes on its own."""

from __future__ import annotations

import errno
import json
import os
import time
from typing import TYPE_CHECKING

from .terms import C, P

if TYPE_CHECKING:
    from .settings import Settings

# Bound at import, before any conftest or test runs: code that later replaces
# os.write or json's encoder does not change what the plugin writes.
_write = os.write
_dumps = json.dumps
_now = time.monotonic

_EVIDENCE_MAX = 50  # per kind and session: enough to see the pattern, never a flood
# A changed value is one line each, and what the baseline shows is not held against
# a change: a suite whose own code changes many values (caches, counters) must not
# have the ones beyond the cap read as new in a run that imports in another order.
_EVIDENCE_MAX_OF = {"changed-value": 1000}
_BATCH_BYTES = 3500  # under PIPE_BUF (4096): lines of two sessions never interleave
_BATCH_S = 0.25


class Output:
    """Where lines go: the inherited pipe when it really is this run's, else the
    settings' file, opened for appending once. A write that fails stops writing
    (the reader then finds the session unfinished), never the run.

    Lines of passing tests wait in a small buffer, written when it nears the size
    a pipe writes atomically or a quarter of a second after the last write; every
    other line goes out at once, with what waits before it. One write per ~40
    fast passing tests instead of one each: each write wakes the reader, and that
    costs more than the rest of the plugin's work per test together.

    The pipe found closed means the helper that started the run is gone (killed:
    it reads until the run has ended): nobody will read what the tests do, and
    they would go on in a clean room the next run takes over. The run's process
    group ends then (:func:`_abandon`). A run that writes output of its own
    dies at its next write into the helper's output pipe anyway; one that
    writes none (``-p no:terminal``) learns it only here."""

    def __init__(self, settings: Settings) -> None:
        self.fd, self.via = P.open_channel(C.ENV_FD, settings.report)
        self.waiting: list[str] = []
        self.size = 0
        self.flushed = _now()

    def later(self, text: str) -> None:
        self.waiting.append(text)
        self.size += len(text)
        if self.size > _BATCH_BYTES or _now() - self.flushed > _BATCH_S:
            self.line("")

    def line(self, text: str) -> None:
        if self.waiting:
            text = "".join(self.waiting) + text
            self.waiting = []
            self.size = 0
        self.flushed = _now()
        if self.fd < 0 or not text:
            return
        data = text.encode("ascii", "replace")
        try:
            while data:
                data = data[_write(self.fd, data) :]
        except OSError as exc:
            self.fd = -1
            if self.via == "pipe" and exc.errno in _GONE:
                _abandon()


_GONE = (errno.EPIPE, errno.ECONNRESET)  # the helper's end of the pipe is closed


def _abandon() -> None:
    """End this run: its process group where this process leads it (the helper
    starts it in a session of its own: the tests' subprocesses go too), else this
    process alone."""
    try:
        if os.getpgid(0) == os.getpid():
            os.killpg(0, 9)  # SIGKILL
    except OSError:
        pass  # not allowed, or gone already: this process ends below anyway
    os._exit(1)


class Sink:
    """One session's lines: each stamped with the session's id, lines made before
    its start line held until it is written, evidence capped per kind."""

    def __init__(self, out: Output) -> None:
        self.out = out
        self.session = f"{os.getpid():x}-{os.urandom(3).hex()}"
        self.evidence_count: dict[str, int] = {}
        self.early: list[str] | None = []  # lines made before the start line
        self.modules: set[str] = set()  # forbidden modules already reported

    def emit(self, kind: str, fields: dict[str, object]) -> None:
        record: dict[str, object] = {C.KIND: kind, C.SESSION: self.session}
        record.update(fields)
        line = _dumps(record) + "\n"
        if kind == C.START:
            self.out.line(line)
            early, self.early = self.early, None
            for held in early or ():
                self.out.line(held)
        elif self.early is not None:
            # before the session's start line (evidence of an import a conftest
            # made while pytest loaded it): a reader would count it as no
            # session's, so it waits for the start line
            self.early.append(line)
        else:
            self.out.line(line)

    def evidence(self, what: str, subject: str, detail: str = "") -> None:
        count = self.evidence_count.get(what, 0)
        self.evidence_count[what] = count + 1
        if count < _EVIDENCE_MAX_OF.get(what, _EVIDENCE_MAX):
            self.emit(C.EVIDENCE, {"what": what, "subject": subject, "detail": detail})

    def module(self, name: str, file: str) -> None:
        if name not in self.modules:
            self.modules.add(name)
            self.evidence("forbidden-module", name, file)
