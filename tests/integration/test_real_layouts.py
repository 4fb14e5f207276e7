"""Layouts real projects use, through whole cycles: doctests run by
``--doctest-modules`` (a docstring's prose is the author's, its examples are
tests), and a ``testpaths`` that leaves a new test file outside what the test
command collects (it is refused, never committed unrun)."""

from __future__ import annotations

from tests.conftest import Repo
from tests.integration.calc_project import gtd_json, make_project

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
    assert ended["reason"] == "snapshot test modified: words.py::words.first (doctest)"
    assert repo.git("show", "HEAD:words.py") == WORDS
