"""Layouts real projects use, through whole cycles: doctests run by
``--doctest-modules`` (a docstring's prose is the author's, its examples are
tests), and a ``testpaths`` that leaves a new test file outside what the test
command collects (it is refused, never committed unrun)."""

from __future__ import annotations

import subprocess

from tests.conftest import Repo
from tests.integration.calc_project import SETUP_PY, egg_info, gtd_json, make_project, run_cli

WORDS = '''\
"""Small helpers for words."""


def first(items):
    """Return the first item.

    >>> first([3, 4])
    3
    """
    return items[0]
'''


def _doctest_project(repo: Repo) -> Repo:
    repo.write("pytest.ini", "[pytest]\naddopts = --doctest-modules\n")
    repo.write("words.py", WORDS)
    return make_project(repo)


def _cycle(repo: Repo, files: dict[str, str]) -> dict[str, object]:
    begun = gtd_json(repo, "cycle", "begin")
    assert begun["status"] == "task", begun
    for path, text in files.items():
        repo.write(path, text)
    return gtd_json(repo, "cycle", "end")


def test_rewording_a_doctests_prose_passes(repo: Repo) -> None:
    _doctest_project(repo)
    reworded = WORDS.replace("Return the first item.", "The item at the front, unchanged.")
    ended = _cycle(repo, {"words.py": reworded})
    assert ended["status"] == "passed", ended
    assert repo.git("show", "HEAD:words.py") == reworded


def test_changing_a_doctests_expected_output_is_refused(repo: Repo) -> None:
    _doctest_project(repo)
    ended = _cycle(repo, {"words.py": WORDS.replace("    3\n", "    4\n").replace("[0]", "[1]")})
    assert ended["status"] == "reverted", ended
    assert ended["reason"] == "a protected test was changed: words.py::words.first (doctest)"
    assert repo.git("show", "HEAD:words.py") == WORDS


FAILING = "def test_never_true():\n    assert 1 == 2\n"
PASSING = "from calc import add\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n"


def _testpaths_project(repo: Repo) -> Repo:
    repo.write("pytest.ini", "[pytest]\ntestpaths = tests\n")
    return make_project(repo)


def test_a_new_test_file_outside_testpaths_is_refused_not_committed(repo: Repo) -> None:
    _testpaths_project(repo)
    before = repo.git("rev-parse", "HEAD").strip()
    ended = _cycle(repo, {"integration/test_x.py": FAILING})
    assert ended["status"] == "reverted", ended
    assert ended["reason"] == (
        "new test file integration/test_x.py did not run: it is outside the test paths"
        " (testpaths = tests): put it under tests/"
    )
    assert repo.git("rev-parse", "HEAD").strip() == before
    assert not (repo.path / "integration" / "test_x.py").exists()
    assert "new_tests" not in ended  # none ran


def test_a_new_test_file_under_testpaths_runs_and_must_pass(repo: Repo) -> None:
    """The twin: the same files under tests/ run; the failing one is refused for
    failing, the passing one lands with its test counted."""
    _testpaths_project(repo)
    failed = _cycle(repo, {"tests/test_x.py": FAILING})
    assert failed["status"] == "reverted", failed
    assert "tests/test_x.py::test_never_true" in str(failed["reason"]), failed
    assert failed["new_tests"] == "1 ran, 0 passed", failed
    passed = _cycle(repo, {"tests/test_zero.py": PASSING})
    assert passed["status"] == "passed", passed
    assert passed["tests"] == "3 / 3", passed
    assert passed["new_tests"] == "1 ran, 1 passed", passed
    # What a person reads: the memory file the report is made from says it too.
    memory = (repo.path / ".deepflow" / "auto-memory.yaml").read_text()
    assert "new_tests: '1 ran, 1 passed'" in memory


def test_install_metadata_the_install_rewrote_is_named_with_the_command(repo: Repo) -> None:
    """A tracked calc.egg-info/ that the project's install rewrites: `begin`
    answers dirty (a person's files are never set aside), names the folder and
    the command; that command, run as written, lets the next tick start."""
    repo.write("setup.py", SETUP_PY)
    egg_info(repo)  # committed as the project had it: before calc.py existed
    make_project(repo)
    assert "calc.egg-info/PKG-INFO" in repo.git("ls-files")
    egg_info(repo)  # the install: SOURCES.txt now lists calc.py
    assert repo.git("status", "--porcelain").strip() == "M calc.egg-info/SOURCES.txt"
    res = run_cli(repo, "cycle", "begin")
    assert res.code == 0, res.stderr
    command = (
        "git rm -r -q --cached -- calc.egg-info && printf '\\n%s\\n' calc.egg-info/"
        " >> .gitignore && git add .gitignore && git commit -q -m 'Stop tracking calc.egg-info'"
    )
    assert res.stdout.splitlines() == [
        "status: dirty",
        "paths: calc.egg-info/SOURCES.txt",
        "message: 1 uncommitted change not made by a cycle, untouched",
        "next: end this tick; the human runs the install_metadata: command (and commits"
        " or stashes any other work)",
        "install_metadata: calc.egg-info/: tracked, and rewritten by the project's install"
        f" (pip install -e .); stop tracking it: `{command}`",
    ]
    assert "calc.egg-info/SOURCES.txt" in repo.git("status", "--porcelain")  # untouched
    # A night of such ticks starts nothing: the report's State says why, and what to do.
    assert _state_of(repo) == (
        "**Waiting** — uncommitted changes no cycle made (calc.egg-info/SOURCES.txt): each "
        "tick starts nothing until they are committed or stashed. calc.egg-info/: tracked, "
        f"and rewritten by the project's install (pip install -e .); stop tracking it: `{command}`"
    )
    # Set-up says the same before any tick meets it.
    repo.git("stash", "-q")
    setup = run_cli(repo, "auto", "setup")
    assert setup.code == 0, setup.stderr
    assert (
        "install_metadata: calc.egg-info/: tracked, and rewritten by the project's install"
        f" (pip install -e .); stop tracking it: `{command}`"
    ) in setup.stdout.splitlines(), setup.stdout
    repo.git("stash", "pop", "-q")
    subprocess.run(command, shell=True, cwd=repo.path, check=True)
    assert repo.git("status", "--porcelain").strip() == ""
    assert (repo.path / "calc.egg-info" / "SOURCES.txt").exists()  # kept, now ignored
    answer = gtd_json(repo, "cycle", "begin")
    assert answer["status"] == "task", answer
    assert _state_of(repo).startswith("**Running** — cycle 1, T1"), _state_of(repo)


def _state_of(repo: Repo) -> str:
    """The first paragraph of the report's State."""
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    return report.split("## State\n\n", 1)[1].split("\n\n", 1)[0]


def test_untracked_install_metadata_never_makes_the_tree_dirty(repo: Repo) -> None:
    """The common case: the project tracks no egg-info, and its install writes one."""
    repo.write("setup.py", SETUP_PY)
    make_project(repo)
    egg_info(repo)
    assert (repo.path / "calc.egg-info" / "PKG-INFO").exists()
    assert repo.git("status", "--porcelain").strip() == ""
    answer = gtd_json(repo, "cycle", "begin")
    assert answer["status"] == "task", answer
