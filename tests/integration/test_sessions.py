"""A cycle whose `gtd cycle end` never ran (the tick forgot it, was interrupted, or
Claude Code crashed) is judged by the next `begin` of the same session, or of any
session once the one that began it is gone; another live session, or none, waits
for the agent timeout as before. Real git repositories, real pytest runs, the real
CLI run by a real process named as Claude Code's client
(tests/integration/session_client.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration.calc_project import CALC, MUL, MUL_TEST, gtd_json, make_project
from tests.integration.session_client import Client, start_time


@pytest.fixture
def project(repo: Repo) -> Repo:
    make_project(repo)
    assert repo.status() == ""
    return repo


def consecutive_reverts(repo: Repo) -> object:
    import yaml

    return yaml.safe_load((repo.path / ".deepflow/auto-memory.yaml").read_text())[
        "consecutive_reverts"
    ]


def test_begin_records_the_session_that_began_the_cycle(project: Repo, tmp_path: Path) -> None:
    with Client(tmp_path / "client") as client:
        assert client.begin(project.path)["status"] == "task"
        journal = json.loads((project.path / ".deepflow/cycle.json").read_text())
        session = journal["session"]
        assert (session["pid"], session["start"]) == (client.pid, start_time(client.pid))
        assert session["boot"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    # sealed: the mirror above is a copy of what refs/gtd/state holds
    sealed = json.loads(project.git("show", "refs/gtd/state:journal.json"))
    assert sealed["session"] == session


def test_the_same_session_judges_its_forgotten_cycle_at_its_next_tick(
    project: Repo, tmp_path: Path
) -> None:
    with Client(tmp_path / "client") as client:
        first = client.begin(project.path)
        assert (first["status"], first["task"]) == ("task", "T1")
        project.write("calc.py", MUL)
        project.write("tests/test_mul.py", MUL_TEST)
        # no `gtd cycle end`: the tick ended without it

        again = client.begin(project.path)

    assert again["previous"].startswith("cycle 1 T1 passed"), again
    assert (again["status"], again["task"], again["cycle"]) == ("task", "T2", 2)
    assert "T1: Add mul" in project.subjects()[1]
    assert (project.path / "calc.py").read_text() == MUL


def test_a_crashed_sessions_cycle_is_judged_by_the_next_session(
    project: Repo, tmp_path: Path
) -> None:
    base = project.git("rev-parse", "HEAD").strip()
    with Client(tmp_path / "first") as first:
        first.begin(project.path)
        project.write("calc.py", "def add(a, b):\n    return a - b\n")
    # killed mid-cycle: a new session starts

    with Client(tmp_path / "second") as second:
        answer = second.begin(project.path)

    # judged, not abandoned: the tests failed, so the ratchet reverted it
    assert answer["previous"].startswith("cycle 1 T1 reverted: tests failed"), answer
    assert "abandoned" not in json.dumps(answer)
    assert (answer["status"], answer["task"], answer["cycle"]) == ("task", "T1", 2)
    assert project.git("rev-parse", "HEAD").strip() == base
    assert (project.path / "calc.py").read_text() == CALC
    kept = project.git("show", "refs/gtd/reverted/cycle-1:calc.py")
    assert "a - b" in kept  # the work is kept
    assert consecutive_reverts(project) == {"T1": 1}


def test_a_crashed_sessions_cycle_is_judged_from_a_terminal_too(
    project: Repo, tmp_path: Path
) -> None:
    """The session that began it is gone, so no agent of it is at work: whoever
    asks next, with a session or without, has it judged."""
    with Client(tmp_path / "first") as first:
        first.begin(project.path)
        project.write("calc.py", MUL)
        project.write("tests/test_mul.py", MUL_TEST)

    answer = gtd_json(project, "cycle", "begin")  # the suite's commands have no session

    assert str(answer["previous"]).startswith("cycle 1 T1 passed"), answer
    assert answer["task"] == "T2"


def test_another_live_session_waits_for_the_agent_timeout(project: Repo, tmp_path: Path) -> None:
    with Client(tmp_path / "first") as first, Client(tmp_path / "second") as second:
        first.begin(project.path)
        project.write("calc.py", MUL)  # the first session's agent is at work

        busy = second.begin(project.path)
        assert (busy["status"], busy["phase"]) == ("busy", "agent")

        late = second.run(
            project.path, "cycle", "begin", "--json", env={"GTD_CLOCK_OFFSET_S": str(46 * 60)}
        )
        assert late.code == 0, late.stderr
    assert "abandoned" in late.json["recovered"]


def test_a_cycle_begun_outside_any_session_waits_for_the_agent_timeout(
    project: Repo, tmp_path: Path
) -> None:
    """`gtd loop`, cron or a person's shell: nothing tells whether its agent still
    works, so even a Claude Code session that asks waits, as before."""
    gtd_json(project, "cycle", "begin")
    project.write("calc.py", MUL)
    with Client(tmp_path / "client") as client:
        busy = client.begin(project.path)
    assert (busy["status"], busy["phase"]) == ("busy", "agent")
    assert (project.path / "calc.py").read_text() == MUL


def test_a_forged_session_in_the_mirror_changes_nothing_and_is_tampering(
    project: Repo, tmp_path: Path
) -> None:
    """The agent of a live session rewrites the journal's mirror to name a session
    that is gone: `begin` reads the sealed journal, not the mirror, and `end` sees
    the tampering."""
    with Client(tmp_path / "first") as first, Client(tmp_path / "second") as second:
        first.begin(project.path)
        mirror = project.path / ".deepflow/cycle.json"
        journal = json.loads(mirror.read_text())
        journal["session"]["pid"] = 2**22 + 1  # above the kernel's pid_max default
        mirror.write_text(json.dumps(journal, indent=2) + "\n")
        project.write("calc.py", MUL)

        busy = second.begin(project.path)
        assert (busy["status"], busy["phase"]) == ("busy", "agent")

        ended = first.run(project.path, "cycle", "end", "--json")
    assert ended.json["status"] == "reverted"
    assert "helper state modified" in ended.json["reason"]


def test_a_check_longer_than_begins_wait_answers_busy_then_reports(
    repo: Repo, tmp_path: Path
) -> None:
    """The suite outlives `begin`'s wait: the tick is told the cycle is being
    judged, and a later tick reports the verdict."""
    make_project(repo, config_extra="  wait_seconds: 0\n")
    with Client(tmp_path / "client") as client:
        client.begin(repo.path)
        repo.write("calc.py", MUL)
        repo.write("tests/test_mul.py", MUL_TEST)

        judging = client.begin(repo.path)
        assert (judging["status"], judging["phase"]) == ("busy", "checking"), judging
        assert "without `gtd cycle end`" in judging["message"]

        import time

        deadline = time.monotonic() + 120
        answer = judging
        while answer["status"] == "busy" and time.monotonic() < deadline:
            time.sleep(0.3)
            answer = client.begin(repo.path)
    assert answer["previous"].startswith("cycle 1 T1 passed"), answer
    assert answer["task"] == "T2"


def test_state_tampered_with_in_a_crashed_session_reverts_and_halts(
    project: Repo, tmp_path: Path
) -> None:
    """Judged as `end` would: an edited mirror of the sealed state is tampering,
    reverted unjudged (the work kept) and the loop halted for a person."""
    with Client(tmp_path / "first") as first:
        first.begin(project.path)
        project.write("calc.py", MUL)
        project.write("tests/test_mul.py", MUL_TEST)
        mirror = project.path / ".deepflow/cycle.json"
        mirror.write_text(mirror.read_text().replace('"Add mul"', '"Add mul (done)"'))

    with Client(tmp_path / "second") as second:
        answer = second.begin(project.path)

    assert answer["status"] == "halted", answer
    assert "helper state modified: .deepflow/cycle.json" in answer["recovered"]
    assert (project.path / "calc.py").read_text() == CALC
    assert "mul" in project.git("show", "refs/gtd/reverted/cycle-1:calc.py")
