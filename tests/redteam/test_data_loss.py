"""Class F: data-loss paths. What a person does while the loop runs, and files
that merely look like the helper's, must never be lost: a file created while
`gtd cycle end` runs the tests survives (in the tree or in a kept ref) on pass
and on fail; a `ratchet.junit_xml` glob never deletes unrelated XML; a branch
other than the one the cycle began on is never rewritten."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.redteam import project as proj
from tests.redteam.conftest import Project, assert_passed, assert_refused

TOTAL = "tests/test_total.py"
PERSON_FILE = "notes/person.txt"
PERSON_TEXT = "written by a person while the tests ran\n"


def _handshake_test(started: Path, created: Path, *, fails: bool) -> str:
    """A new test that signals it is running, then waits (up to 30 s) until the
    person has written their file: `end` is provably mid-run when they do.
    ``fails``: it then fails, so the cycle is refused and reverted. (A change that
    also broke an old test would be refused without running the new tests.)"""
    return f"""\
import time
from pathlib import Path

STARTED = Path({str(started)!r})
CREATED = Path({str(created)!r})


def test_waits_for_the_person():
    STARTED.write_text("started")
    deadline = time.monotonic() + 30
    while not CREATED.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert {not fails}, "the cycle's new test fails"
"""


class Person(threading.Thread):
    """Waits until the handshake test runs, then does ``act`` in the repository."""

    def __init__(self, sync: Path, act: Callable[[], object]) -> None:
        super().__init__(daemon=True)
        self.started_flag = sync / "started"
        self.created_flag = sync / "created"
        self.act = act
        self.acted = False

    def run(self) -> None:
        # (blocks until the test opens the pipe: a test that never runs leaves
        # this daemon thread waiting, and `acted` false)
        with open(self.started_flag) as pipe:
            pipe.read()
        self.act()
        self.acted = True
        self.created_flag.write_text("done")


def _end_while_a_person_acts(
    project: Project, tmp_path: Path, act: Callable[[], object], *, fails: bool
) -> dict[str, Any]:
    import tempfile

    # Outside /tmp (the judged tests' is private in the judge's box), and a named
    # pipe to say "started" (writing one needs no writable file system).
    sync = Path(tempfile.mkdtemp(prefix="gtd-sync-", dir="/var/tmp"))
    person = Person(sync, act)
    os.mkfifo(person.started_flag)
    project.write(
        "tests/test_handshake.py",
        _handshake_test(person.started_flag, person.created_flag, fails=fails),
    )
    person.start()
    try:
        answer = project.end()
        person.join(timeout=5)
    finally:
        shutil.rmtree(sync, ignore_errors=True)
    assert person.acted, "the handshake test never ran during `gtd cycle end`"
    return answer


def _survives(project: Project, answer: dict[str, Any], rel: str, text: str) -> None:
    places = {"tree": (project.path / rel).read_text() if (project.path / rel).exists() else None}
    places["HEAD"] = project.show("HEAD", rel)
    kept = answer.get("kept")
    if isinstance(kept, str):
        places[kept] = project.show(kept, rel)
    assert text in places.values(), f"the person's {rel} was lost: {places} ({answer})"


# `pass` is a variant of `fail` (the revert, where a person's file is likelier to be
# lost), which the quick loop keeps.
@pytest.mark.parametrize("outcome", [pytest.param("pass", marks=pytest.mark.slow), "fail"])
def test_file_a_person_creates_while_end_runs_the_tests_survives(
    project: Project, tmp_path: Path, outcome: str
) -> None:
    project.begin()
    project.do_t1()
    answer = _end_while_a_person_acts(
        project, tmp_path, lambda: project.write(PERSON_FILE, PERSON_TEXT), fails=outcome == "fail"
    )
    assert answer.get("status") == ("passed" if outcome == "pass" else "reverted"), answer
    _survives(project, answer, PERSON_FILE, PERSON_TEXT)


def test_edit_a_person_makes_to_a_tracked_file_during_a_failing_end_survives(
    project: Project, tmp_path: Path
) -> None:
    edited = proj.README + "\nA person's note.\n"
    project.begin()
    answer = _end_while_a_person_acts(
        project, tmp_path, lambda: project.write("README.md", edited), fails=True
    )
    assert answer.get("status") == "reverted", answer
    _survives(project, answer, "README.md", edited)


def _xml(project: Project) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for rel in ("data/catalog.xml", "build/cache.xml"):
        path = project.path / rel
        out[rel] = path.read_text() if path.exists() else None
    return out


# Set-up of a template of its own and two cycles: the multi-cycle tests run in the
# slow set.
@pytest.mark.slow
def test_junit_xml_glob_never_deletes_unrelated_xml(
    make_project: Callable[[str], Project],
) -> None:
    """`ratchet.junit_xml: "**/*.xml"` with a tracked data file and an ignored
    build file that are not test reports: setup, a passing and a failing cycle
    leave both exactly as they were."""
    project = make_project("junit")
    tracked = project.show("HEAD", "data/catalog.xml")
    assert tracked is not None
    wanted = {
        "data/catalog.xml": tracked,
        "build/cache.xml": '<?xml version="1.0"?>\n<cache built="yes"/>\n',
    }
    assert _xml(project) == wanted, "setup deleted XML files that are not test reports"
    project.begin()
    project.do_t1()
    assert_passed(project, project.end())
    assert _xml(project) == wanted, "a passing cycle deleted XML files that are not test reports"
    project.base = project.head()
    before = project.state()
    project.begin()
    project.break_total()
    assert_refused(project, project.end(), before, names=[TOTAL])
    assert _xml(project) == wanted, "a failing cycle deleted XML files that are not test reports"


def test_other_branch_is_never_rewritten_when_the_agent_passes_on_it(project: Project) -> None:
    feature = project.ref("feature")
    project.begin()
    project.agent_git("checkout", "-q", "feature")
    project.do_t1()
    answer = project.end()
    assert project.ref("feature") == feature, f"the branch `feature` was rewritten: {answer}"
    assert project.branch() == "main", f"HEAD is on {project.branch()!r}, not main: {answer}"
    if answer.get("status") == "passed":
        assert project.show("HEAD", "tests/test_pricing.py") == proj.TEST_PRICING
    else:
        assert project.head() == project.base


def test_ignored_file_a_cycle_unignores_survives_the_revert(project: Project) -> None:
    """A person keeps an ignored file (build output, a `.env`); the cycle edits
    `.gitignore` so that it no longer ignores it, and fails. The candidate then
    holds the person's file as one the cycle added: the revert puts `.gitignore`
    back and leaves the file, ignored again, exactly as it was; the kept ref holds no
    copy of it (a kept ref never holds a file git ignored when the cycle began: a
    person's `.env` would be in git). A file the cycle added that the base does not
    ignore is still removed."""
    person = "build/cache.xml"
    project.write(person, PERSON_TEXT)
    before = project.state()
    project.begin()
    project.break_total()
    project.write(".gitignore", proj.GITIGNORE.replace("build/\n", ""))
    project.write("inventory/report.py", '"""Stock reports."""\n')
    answer = project.end()
    # (refused for the person's file itself now: it would be committed)
    assert_refused(project, answer, before, names=[TOTAL, person])
    assert (project.path / person).read_text() == PERSON_TEXT, "the person's ignored file is gone"
    assert project.show(answer["kept"], person) is None, "a person's ignored file is in git"
    assert project.show(answer["kept"], "inventory/report.py") is not None


SECRET = "build/.env"
SECRET_TEXT = "API_TOKEN=a-persons-secret\n"


def test_an_ignored_secret_a_passing_cycle_unignores_is_never_committed(
    project: Project,
) -> None:
    """A person keeps credentials in an ignored file; the cycle's `.gitignore` edit
    stops ignoring it and its work passes. The candidate tree would hold the
    secret, and the helper would commit it. A file that was ignored when the cycle
    began is never the cycle's to commit: the cycle is refused naming it, the
    revert puts `.gitignore` back and leaves the file, ignored again."""
    project.write(SECRET, SECRET_TEXT)
    before = project.state()
    project.begin()
    project.do_t1()
    project.write(".gitignore", proj.GITIGNORE.replace("build/\n", ""))
    answer = project.end()
    committed = project.observe("log", "main", "--format=%h %s", "--", SECRET)
    assert not committed, f"the secret was committed: {committed} {answer}"
    agents = {"tests/test_pricing.py": proj.TEST_PRICING}
    assert_refused(project, answer, before, names=[SECRET], kept=agents)
    assert project.show(answer["kept"], SECRET) is None, "the secret is in the kept ref"
    assert (project.path / SECRET).read_text() == SECRET_TEXT, "the person's file is gone"
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


@pytest.mark.slow  # a twin or a variant: the quick loop keeps one test a mechanism
def test_legit_cycle_unignores_a_file_it_makes(project: Project) -> None:
    """The twin: a file the cycle itself made, which the base ignores, lands with
    the `.gitignore` edit that lets git see it."""
    project.begin()
    project.do_t1()
    project.write("build/schema.json", '{"version": 1}\n')
    project.write(".gitignore", proj.GITIGNORE.replace("build/\n", ""))
    answer = project.end()
    assert_passed(project, answer)
    assert project.show("HEAD", "build/schema.json") == '{"version": 1}\n'
