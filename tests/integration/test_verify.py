"""`gtd verify` end to end: real git repositories, real pytest, the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gtd.auto.setup import ensure_excluded
from gtd.git import Git
from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import CALC, MUL, MUL_TEST, PYTEST, TESTS

PLAN_TODO = """\
# Calculator

### spec-calc

- [ ] **T1**: Add mul
  - Files: calc.py, tests/test_mul.py
  - Blocked by: none
"""


def done_project(repo: Repo, *, extra: dict[str, str] | None = None) -> str:
    """A repository whose only task is done: work commit, then the PLAN.md tick."""
    repo.write("calc.py", CALC)
    repo.write("tests/test_calc.py", TESTS)
    repo.write("conftest.py", "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n")
    repo.write("PLAN.md", PLAN_TODO)
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {PYTEST}\n")
    repo.commit_all("initial")
    ensure_excluded(Git(repo.path))  # as `gtd auto setup` does
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    for rel, text in (extra or {}).items():
        repo.write(rel, text)
    repo.commit_all("T1: Add mul")
    short = repo.git("rev-parse", "--short", "HEAD").strip()
    repo.write(
        "PLAN.md", PLAN_TODO.replace("- [ ] **T1**: Add mul", f"- [x] **T1**: Add mul ✓ ({short})")
    )
    repo.commit_all(f"T1: mark done in PLAN.md ({short})")
    return short


def verify(repo: Repo) -> dict[str, object]:
    res = run_gtd(repo.path, "verify", "--json")
    assert res.code == 0, res.stderr
    data = res.json
    assert isinstance(data, dict)
    return data


def levels(answer: dict[str, object]) -> dict[str, dict[str, str]]:
    out = answer["levels"]
    assert isinstance(out, list)
    return {level["level"]: level for level in out}


def test_verify_passes_on_a_completed_plan(repo: Repo) -> None:
    done_project(repo)
    answer = verify(repo)
    assert answer["status"] == "passed", answer
    lv = levels(answer)
    assert list(lv) == ["L0", "L1", "L2", "L4"]
    assert lv["L0"] == {
        "level": "L0",
        "name": "build",
        "status": "skipped",
        "detail": "not configured",
    }
    assert lv["L1"]["status"] == "passed"
    assert lv["L1"]["detail"] == "1 task matches its Files"
    assert lv["L2"]["status"] in ("skipped", "passed")  # depends on coverage being installed
    assert lv["L4"] == {
        "level": "L4",
        "name": "tests",
        "status": "passed",
        "detail": "3 / 3 tests passed",
    }
    assert "ready for review" in str(answer["message"])
    assert "never merges or pushes" in str(answer["message"])
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "| Verify L0 (build) | – skipped (not configured) |" in report
    assert "| Verify L4 (tests) | ✓ passed (3 / 3 tests passed) |" in report
    assert repo.status() == ""  # no coverage/junit litter

    text = run_gtd(repo.path, "verify")
    assert text.code == 0
    assert text.stdout.splitlines()[0] == "status: passed"
    assert "L4 tests: passed (3 / 3 tests passed)" in text.stdout


def test_verify_never_deletes_files_the_junit_glob_matches(repo: Repo) -> None:
    """`ratchet.junit_xml: "**/*.xml"` beside a tracked data file and an ignored
    build file that are not test reports: verify reads reports, deletes nothing."""
    catalog = '<?xml version="1.0"?>\n<catalog/>\n'
    done_project(repo, extra={"data/catalog.xml": catalog, ".gitignore": "build/\n"})
    config = f'ratchet:\n  test_command: {PYTEST}\n  junit_xml: "**/*.xml"\n'
    repo.write(".deepflow/config.yaml", config)
    repo.commit_all("junit glob")
    build = repo.write("build/cache.xml", "<cache/>\n")
    answer = verify(repo)
    assert levels(answer)["L4"]["status"] == "passed", answer
    assert (repo.path / "data/catalog.xml").read_text() == catalog
    assert build.read_text() == "<cache/>\n"
    assert repo.status() == ""


def test_verify_fails_when_the_suite_is_red(repo: Repo) -> None:
    done_project(repo)
    repo.write("tests/test_broken.py", "def test_broken():\n    assert 1 == 2\n")
    repo.commit_all("a red test")
    answer = verify(repo)
    assert answer["status"] == "failed"
    l4 = levels(answer)["L4"]
    assert l4["status"] == "failed"
    assert "3 / 4 tests passed" in l4["detail"]
    assert "tests/test_broken.py::test_broken" in l4["detail"]
    assert "L4 tests failed" in str(answer["message"])


def test_verify_warns_about_files_a_task_did_not_list(repo: Repo) -> None:
    short = done_project(repo, extra={"extra.py": "X = 1\n"})
    answer = verify(repo)
    assert answer["status"] == "passed"  # a warning is not a failure
    l1 = levels(answer)["L1"]
    assert l1["status"] == "warning"
    assert l1["detail"] == "T1 changed unlisted extra.py"
    assert short  # the hash in PLAN.md resolved


def test_verify_counts_open_tasks_and_runs_the_build(repo: Repo) -> None:
    done_project(repo)
    plan = (repo.path / "PLAN.md").read_text()
    repo.write("PLAN.md", plan + "- [ ] **T2**: Add div\n  - Files: calc.py\n  - Blocked by: T1\n")
    repo.write(
        ".deepflow/config.yaml",
        f"ratchet:\n  test_command: {PYTEST}\n"
        f"  build_command: {sys.executable} -c 'raise SystemExit(3)'\n",
    )
    repo.commit_all("more")
    answer = verify(repo)
    assert answer["status"] == "failed"
    assert answer["open_tasks"] == ["T2"]
    assert levels(answer)["L0"]["status"] == "failed"
    assert levels(answer)["L0"]["detail"] == "exit code 3"
    assert "1 task not done: T2" in str(answer["message"])


def test_verify_outside_a_repository_is_an_error(tmp_path: Path) -> None:
    res = run_gtd(tmp_path, "verify", "--json")
    assert res.code == 1
    assert res.json["status"] == "error"


# What a pyenv (or asdf) shim is: a shell script that finds the real program for the
# active Python and execs it. Its first line names bash, not python.
SHIM = """\
#!/usr/bin/env bash
set -e
program="${{0##*/}}"
exec "{python}" -m "$program" "$@"
"""
# A script that only looks like pytest from outside.
IMPOSTOR = """\
#!/bin/sh
echo "pytest 9.0.0"
"""


def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    shims = tmp_path / "shims"
    shims.mkdir()
    exe = shims / "pytest"
    exe.write_text(script)
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")


def test_coverage_finds_pytest_behind_a_shell_shim(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done_project(repo)
    on_path(tmp_path, monkeypatch, SHIM.format(python=sys.executable))
    # (without this environment's hypothesis and xdist, as PYTEST: ~1 s a run)
    command = "pytest -q -p no:cacheprovider -p no:hypothesispytest -p no:xdist"
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {command}\n")
    repo.commit_all("the test command goes through the shim")
    answer = verify(repo)
    lv = levels(answer)
    assert lv["L4"]["status"] == "passed", lv
    has_coverage = subprocess.run([sys.executable, "-c", "import coverage"]).returncode == 0
    if has_coverage:  # the shim's interpreter measured the suite
        assert lv["L2"]["status"] == "passed", lv
        assert lv["L2"]["detail"].endswith("% of lines")
    else:  # recognised as pytest; only coverage itself is missing
        assert lv["L2"]["detail"] == "not available (coverage not installed)"
    assert repo.status() == ""  # the probe leaves nothing behind


def test_a_script_named_pytest_that_is_not_pytest_is_not_measured(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done_project(repo)
    on_path(tmp_path, monkeypatch, IMPOSTOR)
    repo.write(".deepflow/config.yaml", "ratchet:\n  test_command: pytest\n")
    repo.commit_all("a fake pytest")
    l2 = levels(verify(repo))["L2"]
    assert l2["detail"] == "not available (test command is not pytest)"
