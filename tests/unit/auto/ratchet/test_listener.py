"""The report listener parses lines as the pipe delivers them: however the stream is
cut into reads, the report is the one the whole stream makes."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from gtd.auto.ratchet import contract as C
from gtd.auto.ratchet import report_listener
from gtd.auto.ratchet.report_lines import parse
from gtd.auto.ratchet.results import Result


def _stream(root: Path) -> bytes:
    def line(kind: str, **fields: object) -> str:
        return json.dumps({C.KIND: kind, C.SESSION: "s1", **fields}, ensure_ascii=False)

    lines = [
        line(C.START, v=C.VERSION, pid=7, root=str(root), ini=None, via="pipe", sel=None),
        line(C.TEST, id="t.py::café_ü", o="passed", w="call"),  # multi-byte characters
        line(C.TEST, id="t.py::b", o="failed", w="call"),
        '{"k": "t", "s": "s1", "id": "t.py::c", "o": "pas',  # cut short: unreadable
        line(C.TEST, id="t.py::d", o="skipped", w="setup", at="t.py:3", r="why"),
    ]
    end = line(C.END, exit=1, counts={"passed": 1, "failed": 1, "skipped": 1})
    # A CRLF line break, and the last line without its newline.
    return ("\n".join(lines[:2]) + "\r\n" + "\n".join(lines[2:]) + "\n" + end).encode()


def _written_in(root: Path, data: bytes, cuts: list[int]) -> report_listener.Listener:
    listener = report_listener.start(report_listener.Request(root), where=root / "reports")
    fd = listener.pass_fds[0]
    last = 0
    for cut in [*cuts, len(data)]:
        os.write(fd, data[last:cut])
        last = cut
        time.sleep(0.002)  # let the reader take each piece as a read of its own
    return listener


def test_a_stream_cut_anywhere_reads_as_the_whole_stream(tmp_path: Path) -> None:
    data = _stream(tmp_path)
    whole = parse(data.decode().splitlines(), str(tmp_path))
    assert whole.tests == {
        "t.py::café_ü": Result("passed"),
        "t.py::b": Result("failed"),
        "t.py::d": Result("skipped", "t.py:3", "why"),
    }
    assert whole.problems == ("1 unreadable line",)
    inside = data.index("é".encode()) + 1  # between the two bytes of é
    crlf = data.index(b"\r\n") + 1  # between CR and LF
    newline = data.index(b"\n")
    for cuts in ([inside], [crlf], [newline, newline + 1], [inside, crlf, len(data) - 3]):
        report = _written_in(tmp_path, data, cuts).finish()
        assert report.tests == whole.tests, cuts
        assert report.problems == whole.problems, cuts
    one_byte_reads = sorted({*range(inside - 4, inside + 4), *range(crlf - 4, crlf + 4)})
    report = _written_in(tmp_path, data, one_byte_reads).finish()
    assert report.tests == whole.tests
    assert report.problems == whole.problems


def _nice(task: str) -> int:
    # /proc/<pid>/task/<tid>/stat: the 19th field is the nice value (after the
    # name in parentheses, which may hold spaces).
    fields = Path(task, "stat").read_text().rpartition(")")[2].split()
    return int(fields[16])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own nice is Linux's")
def test_the_reader_runs_behind_the_tests_and_the_helper_does_not(tmp_path: Path) -> None:
    """The reader wakes for every line; at the tests' priority each wake-up took
    the test process's core (docs/performance.md). Only the reader is lowered."""
    main = _nice(f"/proc/self/task/{threading.get_native_id()}")
    listener = report_listener.start(report_listener.Request(tmp_path), where=tmp_path / "reports")
    try:
        reader = f"/proc/self/task/{listener._thread.native_id}"
        deadline = time.monotonic() + 10
        while _nice(reader) == main and main < 10 and time.monotonic() < deadline:
            time.sleep(0.01)  # the thread lowers itself as it starts
        assert _nice(reader) == max(main, 10)
        assert _nice(f"/proc/self/task/{threading.get_native_id()}") == main
    finally:
        listener.abort()
