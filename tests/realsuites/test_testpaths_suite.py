"""A real project whose pytest configuration sets ``testpaths``: pluggy 1.6.0
from its sdist (tox.ini ``[pytest] testpaths = testing``, warnings as errors),
its command configured: ``pytest`` with no paths, so ``testpaths`` decides.
Its virtualenv is pytest's, which installs pluggy 1.6.0 itself: the tests
import that copy (the same release as the source).

A failing test file in a new top-level ``integration/`` folder, outside
``testpaths``, is refused naming the test paths and where to put it, never
committed unrun; the same file under ``testing/`` runs, and its failure
reverts the cycle with the answer counting the new test that ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.realsuites.projects import (
    built_once,
    cli_env,
    copy_of,
    copy_venv,
    git,
    gtd,
    json_of,
    sdist,
    session_env,
    unpack,
    venv,
)

pytestmark = pytest.mark.slow

NAME, VERSION = "pluggy", "1.6.0"
PLAN = (
    "# Real suite\n\n### spec-real\n\n"
    "- [ ] **T1**: Test the hooks from outside\n  - Files: testing/\n  - Blocked by: none\n"
)
FAILING = "def test_never_true():\n    assert 1 == 2\n"
COMMAND = ".venv/bin/python -m pytest --ignore=testing/benchmark.py"


def build(where: Path) -> tuple[Path, dict[str, Any]]:
    env = session_env(where / "home")
    ready = unpack(sdist(NAME, VERSION, env), where / "ready")
    (ready / "PLAN.md").write_text(PLAN)
    (ready / ".gitignore").write_text(".venv/\n")
    # tox.ini's [testenv] runs `{env:_PLUGGY_TOX_CMD:pytest}`, which detection
    # does not read as pytest; testing/benchmark.py needs pytest-benchmark.
    (ready / ".deepflow").mkdir()
    (ready / ".deepflow" / "config.yaml").write_text(f"ratchet:\n  test_command: {COMMAND}\n")
    git(ready, env, "init", "-q", "-b", "main")
    git(ready, env, "add", "-A")
    git(ready, env, "commit", "-q", "-m", f"{NAME} {VERSION} from its sdist")
    copy_venv(venv((), env), ready / ".venv")
    code, answer, stderr = gtd(ready, env, "auto", "setup")
    assert code == 0, stderr
    return ready, answer


@pytest.fixture(scope="session")
def ready(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The set-up repository, built once per run (xdist workers share it)."""
    return built_once(tmp_path_factory, "testpaths", build)


def test_setup_is_ready_with_testpaths(ready: tuple[Path, dict[str, Any]]) -> None:
    _, answer = ready
    assert answer["status"] == "ready", answer
    assert answer["test_command"] == COMMAND
    # (a test or two of pluggy's fail against the installed copy: tolerated)
    assert answer["baseline"]["tests_passed"] >= 100, answer


def test_a_new_test_outside_testpaths_is_refused_saying_where(
    ready: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    repo = copy_of(ready[0], tmp_path / "repo")
    base = git(repo, cli_env(), "rev-parse", "HEAD")
    json_of(repo, "cycle", "begin")
    (repo / "integration").mkdir()
    (repo / "integration" / "test_outside.py").write_text(FAILING)
    answer = json_of(repo, "cycle", "end")
    assert answer["status"] == "reverted", answer
    assert answer["reason"] == (
        "new test file integration/test_outside.py did not run: it is outside the test "
        "paths (testpaths = testing): put it under testing/"
    ), answer["reason"]
    assert "new_tests" not in answer
    assert git(repo, cli_env(), "rev-parse", "HEAD") == base


def test_the_same_file_under_testpaths_runs_and_must_pass(
    ready: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    repo = copy_of(ready[0], tmp_path / "repo")
    json_of(repo, "cycle", "begin")
    (repo / "testing" / "test_gtd_new.py").write_text(FAILING)
    answer = json_of(repo, "cycle", "end")
    assert answer["status"] == "reverted", answer
    assert answer["reason"].startswith("tests failed: "), answer["reason"]
    assert "testing/test_gtd_new.py::test_never_true" in answer["reason"]
    assert answer["new_tests"] == "1 ran, 0 passed", answer
