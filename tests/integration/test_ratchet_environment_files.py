"""The plugin at a cycle's end: the test environment's files the session ran as
code, judged by their change time against the moment the cycle's agent began.
A real pytest, a library folder on ``PYTHONPATH`` outside the room (the
environment, as a virtualenv's site-packages is), and real change times."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gtd.auto.ratchet.results import Report
from tests.integration.plugin_runs import PYTEST, clean_env, in_room, run

TEST_LIBS = """\
import sys

import rt_old
import rt_pkg.inner


def test_libraries():
    assert rt_old.VALUE == 1 and rt_pkg.inner.VALUE == 2


def test_a_module_of_its_own(tmp_path):
    (tmp_path / "rt_written_by_the_test.py").write_text("VALUE = 3\\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import rt_written_by_the_test
    finally:
        sys.path.remove(str(tmp_path))
    assert rt_written_by_the_test.VALUE == 3
"""
# Imported, then taken out of sys.modules again: its code still ran.
HIDING = """\
import sys

import rt_hidden

del sys.modules["rt_hidden"]


def test_hidden():
    assert rt_hidden.VALUE == 4
"""


@pytest.fixture
def room(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    clean_env(monkeypatch)
    root, lib = tmp_path / "room", tmp_path / "lib"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_libs.py").write_text(TEST_LIBS)
    (lib / "rt_pkg").mkdir(parents=True)
    (lib / "rt_old.py").write_text("VALUE = 1\n")
    (lib / "rt_pkg" / "__init__.py").write_text("")
    (lib / "rt_pkg" / "inner.py").write_text("VALUE = 2\n")
    (lib / "rt_hidden.py").write_text("VALUE = 4\n")
    monkeypatch.setenv("PYTHONPATH", str(lib))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    return root, lib


def _run(root: Path, since_ns: int | None) -> Report:
    request = in_room(root, ())._replace(env_since_ns=since_ns)
    report = run(root, f"{PYTEST} tests", request)
    assert report.outcomes, report
    assert set(report.outcomes.values()) == {"passed"}, report
    return report


def _files(report: Report) -> list[str]:
    return sorted(ev.detail for ev in report.evidence if ev.kind == "environment-file")


def _after_now() -> int:
    """A moment later than any change time so far, and earlier than any to come:
    file times come from a clock that lags the precise one by up to a tick (an
    agent's first edit comes seconds after the cycle's begin)."""
    time.sleep(0.05)
    now = time.time_ns()
    time.sleep(0.05)
    return now


def test_files_changed_before_the_cycle_began_are_no_evidence(room: tuple[Path, Path]) -> None:
    root, _ = room
    report = _run(root, _after_now())
    assert _files(report) == []
    assert {ev.kind for ev in report.evidence} <= {"outside-module"}, report.evidence


def test_a_library_file_edited_since_the_cycle_began_is_evidence(
    room: tuple[Path, Path],
) -> None:
    root, lib = room
    since = _after_now()
    inner = lib / "rt_pkg" / "inner.py"
    was = inner.stat()
    inner.write_text("VALUE = 2\n")  # the same bytes, written again
    assert inner.stat().st_size == was.st_size
    assert _files(_run(root, since)) == [str(inner)]


@pytest.mark.slow  # the quick loop keeps the first two and the last
def test_modification_time_set_back_does_not_hide_the_edit(room: tuple[Path, Path]) -> None:
    import os

    root, lib = room
    since = _after_now()
    old = lib / "rt_old.py"
    was = old.stat()
    old.write_text("VALUE = 1\n")
    os.utime(old, ns=(was.st_atime_ns, was.st_mtime_ns))
    assert old.stat().st_mtime_ns == was.st_mtime_ns
    assert _files(_run(root, since)) == [str(old)]


@pytest.mark.slow  # the quick loop keeps the first two and the last
def test_a_file_renamed_into_place_or_linked_is_evidence(room: tuple[Path, Path]) -> None:
    root, lib = room
    kept = lib.parent / "kept.py"
    kept.write_text("VALUE = 1\n")  # older than the cycle: its own change time is too
    since = _after_now()
    kept.replace(lib / "rt_old.py")
    inner = lib / "rt_pkg" / "inner.py"
    copy = lib.parent / "inner-copy.py"
    copy.write_text(inner.read_text())
    inner.unlink()
    inner.symlink_to(copy)
    assert _files(_run(root, since)) == sorted([str(lib / "rt_old.py"), str(inner)])


@pytest.mark.slow  # the quick loop keeps the first two and the last
def test_a_module_taken_out_of_sys_modules_is_still_judged(room: tuple[Path, Path]) -> None:
    root, lib = room
    (root / "tests" / "test_hiding.py").write_text(HIDING)
    since = _after_now()
    (lib / "rt_hidden.py").write_text("VALUE = 4\n")
    assert _files(_run(root, since)) == [str(lib / "rt_hidden.py")]


@pytest.mark.slow  # the quick loop keeps the first two and the last
def test_a_module_from_an_archive_made_since_is_evidence_naming_the_archive(
    room: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An archive on the path (the interpreter's own ``pythonXY.zip`` comes
    before its library): its modules are judged by the archive's change time."""
    import os
    import zipfile

    root, lib = room
    archive = lib.parent / "vendor.zip"
    monkeypatch.setenv("PYTHONPATH", f"{archive}{os.pathsep}{lib}")
    since = _after_now()
    with zipfile.ZipFile(archive, "w") as made:
        made.writestr("rt_old.py", "VALUE = 1\n")  # before the folder's on the path
    assert _files(_run(root, since)) == [str(archive)]


def test_nothing_is_judged_outside_a_cycle_or_outside_the_environment(
    room: tuple[Path, Path],
) -> None:
    """`gtd ratchet run` asks for no moment (no cycle began); the module a test
    writes to its temporary folder and the room's own files are not the
    environment's, however new."""
    root, lib = room
    since = _after_now()
    (lib / "rt_old.py").write_text("VALUE = 1\n")
    assert _files(_run(root, None)) == []
    (root / "tests" / "test_libs.py").write_text(TEST_LIBS + "\n")
    (lib / "rt_old.py").write_text("VALUE = 1\n")
    report = _run(root, since)
    assert _files(report) == [str(lib / "rt_old.py")]
