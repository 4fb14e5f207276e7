"""Class C, the helper's own files: `.deepflow/` holds files only the helper
writes (the worker's log, the lock, the brief, the report, the memory, the
render count), ignored, so a revert never touches them, and the agent can
replace any of them by another kind of file. A link or a hard link to a
person's file must never be written through; a named pipe must never block the
helper; a folder is kept (set aside under `.git/gtd/set-aside/`, named on
stderr), never deleted, and the loop goes on."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.redteam.conftest import Cli, Project, assert_passed, assert_refused, run_gtd

TOTAL = "tests/test_total.py"
CHECK_LOG = ".deepflow/check.log"
PERSONS = "my notes: the only copy, written over months\n" * 20
TRACEBACK = "Traceback (most recent call last)"


def _end(project: Project, timeout: float = 300) -> Cli:
    res = run_gtd(project.path, "cycle", "end", "--json", timeout=timeout)
    assert TRACEBACK not in res.stdout + res.stderr, res.stderr[-3000:]
    return res


def _set_aside(project: Project, rel: str) -> list[Path]:
    """Where the helper kept a folder it found at ``rel``: the folders of that
    name under `.git/gtd/set-aside/`."""
    name = rel.rpartition("/")[2]
    return sorted((project.path / ".git/gtd/set-aside").glob(f"*/{name}"))


def _assert_kept(project: Project, rel: str, said: str) -> None:
    """The agent's folder at ``rel`` is kept whole where the helper's message
    says, and the name is free for the helper's own file."""
    kept = _set_aside(project, rel)
    assert len(kept) == 1, f"{rel}: not set aside once: {kept}\n{said}"
    assert (kept[0] / "inside").read_text() == "x\n"
    assert str(project.path / rel) in said, said
    assert str(kept[0]) in said, said
    assert not (project.path / rel).is_dir()


def _make_folder(project: Project, rel: str) -> None:
    target = project.path / rel
    target.unlink(missing_ok=True)
    target.mkdir()
    (target / "inside").write_text("x\n")


# -- the worker's log ------------------------------------------------------------------


def test_check_log_made_a_link_to_a_persons_file(project: Project, tmp_path: Path) -> None:
    """`.deepflow/check.log` made a link to a person's file outside the repository:
    the worker opened it with O_TRUNC through the link, emptying the person's
    file. It now removes the link and creates a new file of its own."""
    person = tmp_path / "home-notes.txt"
    person.write_text(PERSONS)
    before = project.state()
    project.begin()
    project.break_total()
    log = project.path / CHECK_LOG
    log.unlink(missing_ok=True)
    log.symlink_to(person)
    answer = project.end()
    assert person.read_text() == PERSONS, f"written through the link: {person.read_text()[:300]!r}"
    assert_refused(project, answer, before, names=[TOTAL])
    assert not log.is_symlink()
    assert log.is_file()


# Slow: the same mechanism (the name unlinked, a new file made) as
# test_check_log_made_a_link_to_a_persons_file, which keeps it in the quick loop.
@pytest.mark.slow
def test_check_log_made_a_hard_link_to_a_persons_file(project: Project) -> None:
    """The same through a hard link (same file system): no link to see, the
    person's inode is the log's."""
    person = project.path.parent / "home-notes.txt"
    person.write_text(PERSONS)
    before = project.state()
    project.begin()
    project.break_total()
    log = project.path / CHECK_LOG
    log.unlink(missing_ok=True)
    os.link(person, log)
    answer = project.end()
    assert person.read_text() == PERSONS, f"written through: {person.read_text()[:300]!r}"
    assert_refused(project, answer, before, names=[TOTAL])
    assert os.stat(log).st_ino != os.stat(person).st_ino


def test_check_log_made_a_named_pipe_never_stalls_the_worker(project: Project) -> None:
    """`.deepflow/check.log` made a named pipe with no reader: the worker's
    open(O_WRONLY) waited for a reader forever, `end` its whole wait and every
    later `begin` answered busy. The pipe is removed (it holds nothing) and the
    verdict comes in at once."""
    before = project.state()
    project.begin()
    project.break_total()
    log = project.make_pipe(CHECK_LOG)
    try:
        try:
            res = _end(project, timeout=90)
        except subprocess.TimeoutExpired:
            raise AssertionError("`gtd cycle end` still waits after 90 s") from None
        assert_refused(project, res.json(), before, names=[TOTAL])
        assert log.is_file()
    finally:
        # a worker blocked on the pipe (before the fix) is let go
        try:
            fd = os.open(log, os.O_RDONLY | os.O_NONBLOCK)
            time.sleep(1)
            os.close(fd)
        except OSError:
            pass


def test_check_log_made_a_folder_is_set_aside_and_good_work_lands(project: Project) -> None:
    """`.deepflow/check.log` made a folder: the worker could not open its log and
    died at once, with a traceback on `end`'s stderr, so every cycle, good work
    included, was reverted as interrupted until the breaker tripped, and nothing
    named the folder. It is set aside (kept, named) and the good work lands."""
    project.begin()
    project.do_t1()
    _make_folder(project, CHECK_LOG)
    res = _end(project)
    assert_passed(project, res.json())
    _assert_kept(project, CHECK_LOG, res.stderr)
    assert (project.path / CHECK_LOG).is_file()


# Slow: several cycles; test_check_log_made_a_folder_is_set_aside_and_good_work_lands
# keeps the mechanism in the quick loop.
@pytest.mark.slow
def test_check_log_made_a_folder_in_a_failing_cycle_fails_no_later_cycle(
    project: Project,
) -> None:
    """The folder made in a failing cycle (ignored, the revert leaves it): the
    cycle is reverted for its break, and the next cycle's good work lands."""
    before = project.state()
    project.begin()
    project.break_total()
    _make_folder(project, CHECK_LOG)
    res = _end(project)
    assert_refused(project, res.json(), before, names=[TOTAL])
    _assert_kept(project, CHECK_LOG, res.stderr)
    project.begin()
    project.do_t1()
    assert_passed(project, _end(project).json())


# -- the helper's other files ------------------------------------------------------------

_WRITTEN = (
    ".deepflow/.gtd.lock",
    ".deepflow/cycle-brief.md",
    ".deepflow/auto-report.md",
    ".deepflow/rendered",
    ".deepflow/auto-memory.yaml",
)


def _quick_one(quick: str, files: tuple[str, ...]) -> list[Any]:
    """``files`` as parameters, all but ``quick`` in the slow set (each a variant
    of the quick one's mechanism)."""
    return [rel if rel == quick else pytest.param(rel, marks=pytest.mark.slow) for rel in files]


# Slow variants: the same sweep before the state lock as the quick `.gtd.lock` case.
OWN_FILES = _quick_one(".deepflow/.gtd.lock", _WRITTEN)


@pytest.mark.parametrize("rel", OWN_FILES)
def test_helper_file_made_a_folder_is_set_aside(project: Project, rel: str) -> None:
    """A file the helper writes in `.deepflow/` made a folder with a file in it
    (ignored: the revert leaves it): every `begin` (and some `end`s) stopped with
    "an unexpected error … this is a bug in gtd", forever. The folder is set aside
    whole, named with where it went, and the loop goes on."""
    before = project.state()
    project.begin()
    project.break_total()
    _make_folder(project, rel)
    res = _end(project)
    assert_refused(project, res.json(), before, names=[TOTAL])
    _assert_kept(project, rel, res.stderr)
    assert project.begin()["status"] == "task"


# Slow variants: test_helper_file_made_a_link_to_a_persons_file[auto-memory] keeps the
# mechanism (a write replaces the link, never writes through it) in the quick loop.
LINKED_FILES = _quick_one(".deepflow/auto-memory.yaml", _WRITTEN)


@pytest.mark.parametrize("rel", LINKED_FILES)
def test_helper_file_made_a_link_to_a_persons_file(
    project: Project, tmp_path: Path, rel: str
) -> None:
    """A file the helper writes in `.deepflow/` made a link to a person's file
    outside the repository: nothing is written through it, and the loop goes on."""
    person = tmp_path / "important.txt"
    person.write_text(PERSONS)
    before = project.state()
    project.begin()
    project.break_total()
    target = project.path / rel
    target.unlink(missing_ok=True)
    target.symlink_to(person)
    res = _end(project)
    assert_refused(project, res.json(), before, names=[TOTAL])
    assert project.begin()["status"] == "task"
    assert person.read_text() == PERSONS, f"{rel}: written through: {person.read_text()[:200]!r}"


# Slow variants: the lock (read first, by every command) keeps the mechanism quick.
_MIRRORS = (".deepflow/cycle.json", ".deepflow/auto-snapshot.json", ".deepflow/auto-snapshot.txt")
PIPED_FILES = _quick_one(".deepflow/.gtd.lock", (*_WRITTEN, *_MIRRORS))  # mirrors: read too


@pytest.mark.parametrize("rel", PIPED_FILES)
def test_helper_file_made_a_named_pipe_never_stalls(project: Project, rel: str) -> None:
    """A file the helper reads or writes in `.deepflow/` made a named pipe: an
    open for reading (or a plain open for writing) waits for a writer that never
    comes, and the loop would hang at that tick. `end` and the next `begin`
    answer in time: the loop goes on, or (the sealed state's mirrors) halts
    naming the file."""
    before = project.state()
    project.begin()
    project.break_total()
    project.make_pipe(rel)
    res = _end(project, timeout=120)
    assert_refused(project, res.json(), before, names=[TOTAL, rel])
    res = run_gtd(project.path, "cycle", "begin", "--json", timeout=60)
    assert TRACEBACK not in res.stdout + res.stderr, res.stderr[-3000:]
    assert res.json()["status"] in ("task", "halted"), res.stdout + res.stderr
