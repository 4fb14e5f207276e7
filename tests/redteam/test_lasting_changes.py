"""Changes outside the repository that outlive their cycle's revert.

The test environment is not the repository's: a revert puts the tree back but
leaves a lenient module in a folder the suite links in (`ratchet.link`), a
`.pth` in the virtualenv, a library edited where it lies. The cycle that made
the change is reverted for it; the next one would begin in the changed
environment and be judged under it, so a regression it hides lands one cycle
later. Every `begin` compares the environment with the one the baseline ran in,
and halts the loop naming the change; a person undoes it, or keeps it and takes
the baseline again.

The project here imports its assertion helper from `vendor/`, an ignored
folder the suite links in and puts on its import path."""

from __future__ import annotations

from typing import Any

from tests.redteam import project as proj
from tests.redteam.conftest import Project

TOTAL = "tests/test_total.py"
CHECKS = "vendor/checks.py"
LENIENT = "def assert_cents(actual, expected):\n    return None\n"


def _vendored(project: Project) -> None:
    pyproject = project.read("pyproject.toml").replace(
        'addopts = "--doctest-modules"', 'addopts = "--doctest-modules"\npythonpath = ["vendor"]'
    )
    project.write(CHECKS, proj.ASSERTS)  # ignored: the person's, outside git
    project.person_commits(
        {
            ".gitignore": project.read(".gitignore") + "vendor/\n",
            "pyproject.toml": pyproject,
            ".deepflow/config.yaml": project.read(".deepflow/config.yaml") + "  link: [vendor]\n",
            TOTAL: project.read(TOTAL).replace("from testing.asserts import", "from checks import"),
        },
        "tests: the vendored checks",
    )


def _halted(answer: dict[str, Any], named: str = CHECKS) -> None:
    assert answer["status"] == "halted", answer
    assert answer["task"] == "baseline", answer
    assert "test environment changed since the baseline was taken" in answer["reason"], answer
    assert named in answer["reason"], answer


def test_a_linked_module_made_lenient_and_used_a_cycle_later(project: Project) -> None:
    _vendored(project)
    project.begin()
    project.write(CHECKS, LENIENT)  # the environment only: reverted for it
    first = project.end()
    assert first["status"] == "reverted", first
    assert CHECKS in first["reason"], first
    assert project.read(CHECKS) == LENIENT  # not the repository's: the revert leaves it
    answer = project.gtd("cycle", "begin", "--json").json()
    _halted(answer)
    # Held: every later tick answers the same until a person acts.
    _halted(project.gtd("cycle", "begin", "--json").json())
    assert "Halted" in project.read(".deepflow/auto-report.md")


def test_a_linked_module_changed_between_cycles(project: Project) -> None:
    """As a process the agent left running would, after its cycle ended."""
    _vendored(project)
    project.begin()
    project.do_t1()
    assert project.end()["status"] == "passed"
    project.write(CHECKS, LENIENT)
    _halted(project.gtd("cycle", "begin", "--json").json())


def _first_cycle_passes(project: Project) -> None:
    """The loop under way: the baseline of the person's commit taken, T1 done."""
    project.begin()
    project.do_t1()
    assert project.end()["status"] == "passed"


def test_a_person_commits_after_the_environment_changed(project: Project) -> None:
    """A person's commit takes a new baseline: not in a changed environment,
    which that baseline would accept unseen."""
    _vendored(project)
    _first_cycle_passes(project)
    project.write(CHECKS, LENIENT)
    project.person_commits({"README.md": "# Inventory\n\nA note.\n"}, "readme: a note")
    _halted(project.gtd("cycle", "begin", "--json").json())


def test_legit_a_person_undoes_the_change_and_the_loop_goes_on(project: Project) -> None:
    """A module added to the linked folder, found at `begin` and taken away
    again: the environment is the baseline's, and a reset lets the loop go on."""
    _vendored(project)
    _first_cycle_passes(project)
    project.write("vendor/extra.py", "VALUE = 1\n")
    _halted(project.gtd("cycle", "begin", "--json").json(), "vendor/extra.py")
    (project.path / "vendor/extra.py").unlink()
    project.gtd("cycle", "reset", "--json")
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


def test_legit_a_person_keeps_the_change_and_takes_the_baseline_again(project: Project) -> None:
    _vendored(project)
    _first_cycle_passes(project)
    stricter = proj.ASSERTS + "\n\ndef assert_positive(value):\n    assert value > 0\n"
    project.write(CHECKS, stricter)  # a person's upgrade of the vendored helper
    _halted(project.gtd("cycle", "begin", "--json").json())
    # Halted again after a reset alone: the environment is still not the baseline's.
    project.gtd("cycle", "reset", "--json")
    _halted(project.gtd("cycle", "begin", "--json").json())
    assert project.gtd("ratchet", "snapshot", "--json").json()["status"] == "ok"
    project.gtd("cycle", "reset", "--json")
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"
