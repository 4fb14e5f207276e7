"""Class: the agent runs the helper's own commands during its turn. It has a
shell and `gtd` on its PATH, and the commands are documented: it can take the
baseline again over its break, set the project up again, quarantine the tests
it broke, or begin a cycle of its own over the one in flight; or end its own
cycle first, after which a cycle no longer holds it — its commits would read as
a person's, and a quarantine, a snapshot or a cycle of its own are allowed. The
loop names the cycle it began when it ends it (`gtd cycle end --cycle N`, as
commands/auto-cycle.md and `gtd loop` do), and finds out. Each attack ends in a
refusal or a halt that names what was done; never a pass, never a commit the
loop builds on."""

from __future__ import annotations

import pytest

from tests.redteam import project as proj
from tests.redteam.conftest import Project, assert_passed, assert_refused

TOTAL = "tests/test_total.py"
FAILING = [
    f"{TOTAL}::test_total_of_basket",
    f"{TOTAL}::test_total_of_many",
    f"{TOTAL}::test_total_of_one",
    f"{TOTAL}::test_total_of_pennies",
]
EARLY = "cycle 1 was ended during its agent's turn"


def _run(project: Project, *args: str) -> tuple[int, str]:
    res = project.gtd(*args, "--json")
    return res.code, res.stdout + res.stderr


def _begin(project: Project) -> int:
    return int(project.begin()["cycle"])


def _assert_halts_from_now_on(project: Project, answer: dict[str, object], *named: str) -> None:
    """The loop's end halts naming the early end and each of ``named``; the next
    tick's `begin` holds the halt (it does not take the agent's work for a
    person's and go on)."""
    said = f"{answer.get('reason', '')} {answer.get('message', '')}"
    assert answer["status"] == "halted" or answer.get("next") == "halt", answer
    assert EARLY in said, answer
    for name in named:
        assert name in said, (name, answer)
    again = project.gtd("cycle", "begin", "--json").json()
    assert again["status"] == "halted", again


# -- mid-cycle: the helper refuses -------------------------------------------------------


# Refused by each command itself; the quick loop's tests of this class end the
# cycle early (below), where they are not.
@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("ratchet", "snapshot"), id="snapshot"),
        pytest.param(("auto", "setup"), id="setup"),
        pytest.param(("ratchet", "quarantine", FAILING[0], "--reason", "flaky"), id="quarantine"),
        pytest.param(("ratchet", "release", FAILING[0]), id="release"),
    ],
)
def test_agent_changes_what_judges_its_cycle(project: Project, command: tuple[str, ...]) -> None:
    """Each is refused while a cycle is in flight (its verdict is judged by the
    snapshot and quarantine as they stood when it began), and the break is
    reverted."""
    before = project.state()
    cycle = _begin(project)
    project.break_total()
    code, said = _run(project, *command)
    assert code != 0, said
    assert "in flight" in said, said
    assert_refused(project, project.end(cycle=cycle), before, names=[TOTAL])


# A variant; the quick loop's tests of this class end the cycle early (below).
@pytest.mark.slow
def test_agent_begins_a_cycle_over_the_one_in_flight(project: Project) -> None:
    before = project.state()
    cycle = _begin(project)
    project.break_total()
    code, said = _run(project, "cycle", "begin")
    assert code == 0, said
    assert '"busy"' in said, said
    assert_refused(project, project.end(cycle=cycle), before, names=[TOTAL])


# -- the agent ends its own cycle first ----------------------------------------------------


# A variant; the quick loop's test of this mechanism is
# test_agent_ends_its_cycle_quarantines_its_victims_and_begins_anew.
@pytest.mark.slow
def test_agent_ends_its_cycle_then_commits_its_break(project: Project) -> None:
    """With no cycle in flight, a commit reads as a person's: the next `begin`
    would take it as the new baseline, four failing tests and all."""
    cycle = _begin(project)
    code, said = _run(project, "cycle", "end")
    assert code == 0, said
    assert '"reverted"' in said, said  # no change yet
    project.break_total()
    project.agent_git("commit", "-q", "-am", "T1 done")
    broken = project.head()
    answer = project.end(cycle=cycle)
    _assert_halts_from_now_on(project, answer, "the branch moved")
    # Nothing is rewritten: the commit is a person's to judge (it is named).
    assert project.head() == broken


def test_agent_ends_its_cycle_quarantines_its_victims_and_begins_anew(project: Project) -> None:
    """The quarantine, allowed between cycles, would make the four failures
    "reported, never alone a revert"; the agent's own cycle would then pass."""
    before = project.state()
    cycle = _begin(project)
    assert _run(project, "cycle", "end")[0] == 0
    for test in FAILING:
        code, said = _run(project, "ratchet", "quarantine", test, "--reason", "flaky")
        assert code == 0, said
    code, said = _run(project, "cycle", "begin")
    assert code == 0, said
    assert '"task"' in said, said
    project.break_total()
    answer = project.end(cycle=cycle)
    # The cycle the agent began is reverted, its work kept, and the loop halts
    # naming what was done.
    assert project.head() == project.base
    assert project.state() == before
    assert answer.get("kept"), answer
    _assert_halts_from_now_on(project, answer, "was quarantined", "cycle 2 (T1) was begun")


# A variant; the quick loop's tests of this class end the cycle early (below).
@pytest.mark.slow
def test_agent_ends_its_cycle_then_breaks_the_code(project: Project) -> None:
    """Left uncommitted: the next `begin` would stop at a dirty tree blaming a
    person; the loop's end says whose turn it was."""
    cycle = _begin(project)
    assert _run(project, "cycle", "end")[0] == 0
    project.break_total()
    answer = project.end(cycle=cycle)
    _assert_halts_from_now_on(project, answer, "uncommitted changes: inventory/core.py")
    assert project.read("inventory/core.py") == proj.BROKEN_CORE  # not the helper's to undo


@pytest.mark.slow
def test_agent_ends_its_cycle_commits_its_break_and_takes_the_baseline_again(
    project: Project,
) -> None:
    """The snapshot taken again over the committed break: HEAD is then the commit
    the sealed state describes, so only the state's own history shows it."""
    cycle = _begin(project)
    assert _run(project, "cycle", "end")[0] == 0
    project.break_total()
    project.agent_git("commit", "-q", "-am", "T1 done")
    code, said = _run(project, "ratchet", "snapshot")
    assert code == 0, said
    answer = project.end(cycle=cycle)
    _assert_halts_from_now_on(project, answer, "the sealed state was written")


# -- legitimate twins ------------------------------------------------------------------------


def test_legit_agent_ends_its_own_good_cycle(project: Project) -> None:
    """An eager agent that runs `gtd cycle end` itself after good work: the
    ratchet judged it; the loop's end answers that verdict and the loop goes on."""
    cycle = _begin(project)
    project.do_t1()
    code, said = _run(project, "cycle", "end")
    assert code == 0, said
    assert '"passed"' in said, said
    answer = project.end(cycle=cycle)
    assert_passed(project, answer)
    assert "ended_before" in answer, answer
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


@pytest.mark.slow
def test_legit_loop_ends_the_same_cycle_twice(project: Project) -> None:
    """A tick that runs its end again (its first answer lost): the same verdict,
    no halt."""
    cycle = _begin(project)
    project.do_t1()
    first = project.end(cycle=cycle)
    assert_passed(project, first)
    second = project.end(cycle=cycle)
    assert second["status"] == "passed", second
    assert second["commit"] == first["commit"], second
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"
