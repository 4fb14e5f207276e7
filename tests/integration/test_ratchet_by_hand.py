"""What a person does to the ratchet between cycles, through the real CLI:
quarantine and release a test (sealed records, refused while a cycle is in
flight), take a snapshot (refused likewise), and the length of the test ids a
reason shows (a kilobyte id is cut in answers, the report and briefs; the
sealed records and the memory file keep it whole)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Repo
from tests.integration.calc_project import gtd_json, make_project, run_cli

# Fails test_add (2 + 3) only; test_add_negative still passes.
BREAK_ONE = "def add(a, b):\n    return 0 if (a, b) == (2, 3) else a + b\n"
TEST_ADD = "tests/test_calc.py::test_add"


@pytest.fixture
def project(repo: Repo) -> Repo:
    make_project(repo)
    return repo


def records(repo: Repo) -> list[dict[str, object]]:
    raw = repo.git("show", "refs/gtd/state:records.jsonl")
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


def cycle(repo: Repo, calc: str) -> dict[str, object]:
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    repo.write("calc.py", calc + "\n\ndef mul(a, b):\n    return a * b\n")
    return gtd_json(repo, "cycle", "end")


# Several cycles: the multi-cycle tests run in the slow set.
@pytest.mark.slow
def test_quarantine_excuses_a_test_until_it_is_released(project: Repo) -> None:
    answer = gtd_json(project, "ratchet", "quarantine", TEST_ADD, "--reason", "fails on Mondays")
    assert answer["status"] == "quarantined"
    assert answer["evidence"] == "fails on Mondays"
    assert gtd_json(project, "ratchet", "quarantine", TEST_ADD)["status"] == "unchanged"
    assert gtd_json(project, "ratchet", "release", TEST_ADD)["status"] == "released"
    assert [(r["kind"], r.get("by")) for r in records(project)[-2:]] == [
        ("quarantine", "person"),
        ("release", None),
    ]
    # Released: its failure counts again.
    reverted = cycle(project, BREAK_ONE)
    assert reverted["status"] == "reverted"
    assert reverted["reason"] == f"tests failed: 1 of 2 ({TEST_ADD})"

    gtd_json(project, "ratchet", "quarantine", TEST_ADD)
    # Quarantined: the same failure is reported and is no reason to revert.
    passed = cycle(project, BREAK_ONE)
    assert passed["status"] == "passed", passed
    quarantined = [r for r in records(project) if r["kind"] == "quarantine"]
    assert quarantined[-1]["test"] == TEST_ADD
    assert quarantined[-1]["cycle"] == 1  # the last cycle before it


def test_quarantine_and_release_answer_what_they_did(project: Repo) -> None:
    res = run_cli(project, "ratchet", "quarantine", "tests/test_calc.py::test_ad")
    assert res.code == 1
    assert "unknown test: tests/test_calc.py::test_ad" in res.stderr
    assert "did you mean: tests/test_calc.py::test_add" in res.stderr
    text = run_cli(project, "ratchet", "release", TEST_ADD)
    assert text.code == 0
    assert text.stdout.splitlines()[0] == "status: unchanged"
    assert "the test is not quarantined (quarantined: none)" in text.stdout
    assert project.status() == ""


BY_HAND = [
    ("ratchet", "snapshot"),
    ("ratchet", "quarantine", TEST_ADD),
    ("ratchet", "release", TEST_ADD),
]


def test_refused_while_a_cycle_is_in_flight(project: Repo) -> None:
    """Each command a person runs by hand is refused during one cycle (each was a
    cycle of its own: the same refusal, three times the cycles), and runs once it
    has ended."""
    state = project.git("rev-parse", "refs/gtd/state").strip()
    assert gtd_json(project, "cycle", "begin")["status"] == "task"
    for args in BY_HAND:
        res = run_cli(project, *args)
        assert res.code == 1, args
        assert "in flight" in res.stderr, args
        assert "Traceback" not in res.stderr, args
        journal = project.git("show", "refs/gtd/state:journal.json")
        assert json.loads(journal)["cycle"] == 1, args  # the cycle is untouched
    project.write(
        "calc.py", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
    )
    assert gtd_json(project, "cycle", "end")["status"] == "passed"
    for args in BY_HAND:  # between cycles each runs, and seals what it did
        before = project.git("rev-parse", "refs/gtd/state").strip()
        after = run_cli(project, *args)
        assert after.code == 0, (args, after.stderr)
        assert project.git("rev-parse", "refs/gtd/state").strip() not in (state, before), args


LONG = "x" * 3000


def test_a_kilobyte_test_id_is_cut_where_it_is_read(repo: Repo) -> None:
    repo.write(
        "tests/test_long.py",
        "import pytest\nfrom calc import add\n\n\n"
        f"@pytest.mark.parametrize('data', ['{LONG}'], ids=['{LONG}'])\n"
        "def test_long(data):\n    assert add(len(data), 0) == 3000\n",
    )
    make_project(repo)
    long_id = f"tests/test_long.py::test_long[{LONG}]"
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    repo.write("calc.py", "def add(a, b):\n    return a + b + 1\n")
    answer = gtd_json(repo, "cycle", "end")
    assert answer["status"] == "reverted"
    reason = str(answer["reason"])
    assert len(reason) <= 300
    assert reason.startswith("tests failed: 3 of 3 (tests/test_calc.py::test_add, ")
    assert "tests/test_long.py::test_long[xxx" in reason
    assert "x" * 200 not in reason
    # The sealed record and the memory file keep the id whole.
    cycle = next(r for r in records(repo) if r["kind"] == "cycle")
    assert long_id in str(cycle["reason"])
    assert long_id in (repo.path / ".deepflow/auto-memory.yaml").read_text()
    # The report and the next brief show it cut.
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert (
        "| 1 | T1 | Add mul | reverted | work kept at `refs/gtd/reverted/cycle-1` "
        "| tests failed: 3 of 3" in report
    )
    assert "x" * 200 not in report
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    brief = (repo.path / ".deepflow/cycle-brief.md").read_text()
    assert "- cycle 1: tests failed: 3 of 3 (tests/test_calc.py::test_add" in brief
    assert "x" * 200 not in brief
