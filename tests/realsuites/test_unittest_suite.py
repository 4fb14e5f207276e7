"""A real unittest-only project judged per test: more-itertools 10.7.0 from its
sdist. Its tox.ini and Makefile run ``python -m unittest``; its test modules add
the doctests of ``more_itertools.more`` and ``more_itertools.recipes`` through
``load_tests``, which pytest never runs. Its virtualenv has nothing installed:
not even pytest.

Setup chooses the project's unittest and says why; the baseline holds every
method and every doctest by name; a doctest's expected output rewritten is
reverted naming it, a broken function is reverted naming its doctest, a change
to a docstring's prose passes, and `gtd verify` fails where ``python -m
unittest`` fails.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.realsuites.projects import (
    bare_venv,
    built_once,
    cli_env,
    copy_of,
    git,
    gtd,
    json_of,
    sdist,
    session_env,
    unpack,
)

pytestmark = pytest.mark.slow

NAME, VERSION = "more-itertools", "10.7.0"
PLAN = (
    "# Real suite\n\n### spec-real\n\n"
    "- [ ] **T1**: Tidy chunked()\n  - Files: more_itertools/more.py\n  - Blocked by: none\n"
)
# chunked()'s first doctest example, and its function's first line of code
EXAMPLE = "        >>> list(chunked([1, 2, 3, 4, 5, 6], 3))\n        [[1, 2, 3], [4, 5, 6]]\n"
PROSE = '    """Break *iterable* into lists of length *n*:\n'
CODE = "    iterator = iter(partial(take, n, iter(iterable)), [])\n"
CHUNKED = "more_itertools/more.py::more_itertools.more.chunked"


def build(where: Path) -> tuple[Path, dict[str, Any]]:
    env = session_env(where / "home")
    ready = unpack(sdist(NAME, VERSION, env), where / "ready")
    (ready / "PLAN.md").write_text(PLAN)
    git(ready, env, "init", "-q", "-b", "main")
    git(ready, env, "add", "-A")
    git(ready, env, "commit", "-q", "-m", f"{NAME} {VERSION} from its sdist")
    bare_venv(ready / ".venv")  # the project's tests need nothing but itself
    code, answer, stderr = gtd(ready, env, "auto", "setup")
    assert code == 0, stderr
    return ready, answer


@pytest.fixture(scope="session")
def ready(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The set-up repository, built once per run (xdist workers share it)."""
    return built_once(tmp_path_factory, "unittest", build)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path}: the edit's anchor is not unique"
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_setup_chooses_unittest_and_holds_every_doctest(
    ready: tuple[Path, dict[str, Any]],
) -> None:
    _, answer = ready
    assert answer["status"] == "ready", answer
    assert answer["test_command"] == ".venv/bin/python -m unittest -v"
    assert answer["test_command_why"] == (
        "tox.ini [testenv] commands runs python -m unittest -v: its own runner, judged per "
        "test; the project's virtualenv .venv/ (linked into the clean room)"
    )
    baseline = answer["baseline"]
    assert baseline["per_test"] is True
    assert baseline["red"] is False
    assert baseline["tests_total"] >= 800


def test_a_doctests_expected_output_rewritten_is_reverted_naming_it(
    ready: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    repo = copy_of(ready[0], tmp_path / "repo")
    base = git(repo, cli_env(), "rev-parse", "HEAD")
    assert json_of(repo, "cycle", "begin")["task"] == "T1"
    edit(repo / "more_itertools/more.py", EXAMPLE, EXAMPLE.replace("[4, 5, 6]]", "[4, 5]]"))
    answer = json_of(repo, "cycle", "end")
    assert answer["status"] == "reverted", answer
    assert answer["reason"] == f"a protected test was changed: {CHUNKED} (doctest)"
    assert git(repo, cli_env(), "rev-parse", "HEAD") == base


def test_broken_code_is_reverted_naming_its_doctest(
    ready: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    repo = copy_of(ready[0], tmp_path / "repo")
    json_of(repo, "cycle", "begin")
    edit(repo / "more_itertools/more.py", CODE, CODE.replace("take, n,", "take, n + 1,"))
    answer = json_of(repo, "cycle", "end")
    assert answer["status"] == "reverted", answer
    assert answer["reason"].startswith("tests failed: ")
    assert CHUNKED in answer["reason"]


def test_a_prose_change_passes(ready: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    repo = copy_of(ready[0], tmp_path / "repo")
    json_of(repo, "cycle", "begin")
    edit(repo / "more_itertools/more.py", PROSE, PROSE.replace("Break", "Split"))
    answer = json_of(repo, "cycle", "end")
    assert answer["status"] == "passed", answer


def test_verify_agrees_with_unittest(ready: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    repo = copy_of(ready[0], tmp_path / "repo")
    edit(repo / "more_itertools/more.py", EXAMPLE, EXAMPLE.replace("[4, 5, 6]]", "[4, 5]]"))
    git(repo, cli_env(), "commit", "-q", "-am", "a person breaks a doctest")
    plain = subprocess.run(
        [str(repo / ".venv/bin/python"), "-m", "unittest"],
        cwd=repo, capture_output=True, text=True, env=cli_env(), timeout=600, check=False,
    )  # fmt: skip
    assert plain.returncode == 1
    assert "FAIL: chunked (more_itertools.more)" in plain.stderr
    _, answer, stderr = gtd(repo, cli_env(), "verify")
    assert answer is not None, stderr
    assert answer["status"] == "failed", answer
    (tests,) = [level for level in answer["levels"] if level["level"] == "L4"]
    assert tests["status"] == "failed"
    assert CHUNKED in tests["detail"]
