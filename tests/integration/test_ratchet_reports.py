"""Per-test reports from real pytest runs: the entry-point plugin, its JUnit XML
fallback, and that both classify every kind of outcome the same way."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gtd import proc
from gtd.auto.config import Config
from gtd.auto.ratchet import pytest_report, reports
from gtd.auto.ratchet.runner import run_tests
from tests.conftest import Repo

pytestmark = pytest.mark.slow

PY = shlex.quote(sys.executable)
# xdist and hypothesis stay out of the inner runs (they triple their start-up);
# autoload stays on, which is how the plugin loads.
PYTEST = f"{PY} -m pytest -q -p no:cacheprovider -p no:xdist -p no:hypothesispytest"

SUITE = """\
import pytest


def test_pass():
    pass


def test_fail():
    assert False


@pytest.mark.skip(reason="not today")
def test_skip():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


@pytest.mark.xfail(reason="fixed already")
def test_xpass():
    pass


@pytest.mark.xfail(reason="must fail", strict=True)
def test_xpass_strict():
    pass


@pytest.fixture
def broken_setup():
    raise RuntimeError("setup")


def test_setup_error(broken_setup):
    pass


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")


def test_teardown_error(broken_teardown):
    pass


class TestGroup:
    class TestInner:
        @pytest.mark.parametrize("n", [1, 2])
        def test_param(self, n):
            assert n == 1
"""

EXPECTED = {
    "tests/test_kinds.py::test_pass": "passed",
    "tests/test_kinds.py::test_fail": "failed",
    "tests/test_kinds.py::test_skip": "skipped",
    "tests/test_kinds.py::test_xfail": "skipped",
    "tests/test_kinds.py::test_xpass": "passed",
    "tests/test_kinds.py::test_xpass_strict": "failed",
    "tests/test_kinds.py::test_setup_error": "error",
    "tests/test_kinds.py::test_teardown_error": "error",
    "tests/test_kinds.py::TestGroup::TestInner::test_param[1]": "passed",
    "tests/test_kinds.py::TestGroup::TestInner::test_param[2]": "failed",
    "tests/test_later.py": "skipped",
}


@pytest.fixture
def suite(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> Repo:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    repo.write("tests/test_kinds.py", SUITE)
    repo.write(
        "tests/test_later.py",
        "import pytest\n\npytest.skip('later', allow_module_level=True)\n",
    )
    return repo


def _files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".git" / "gtd-cache").glob("ratchet-*"))


def test_plugin_classifies_every_outcome_and_no_xml_is_written(suite: Repo) -> None:
    files = reports.prepare(suite.path)
    result = proc.run(shlex.split(PYTEST), suite.path, env=reports.environment(files))
    assert result.returncode == 1, result.output
    assert files.outcomes.is_file(), result.output
    assert not files.junit_xml.exists()  # the plugin switched pytest's XML off
    assert reports.collect(suite.path, files, None) == EXPECTED
    assert _files(suite.path) == []  # the run's own files are gone, the plugin stays
    assert (suite.path / ".git" / "gtd-cache" / "pytest-site" / "gtd_ratchet_report.py").is_file()


def test_junit_fallback_agrees_with_the_plugin(
    suite: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, with_plugin = run_tests(suite.path, PYTEST, Config(test_command=PYTEST))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the plugin cannot load
    run, with_junit = run_tests(suite.path, PYTEST, Config(test_command=PYTEST))
    assert run.exit_code == 1
    assert with_plugin == with_junit == EXPECTED


def test_a_module_that_cannot_be_imported_is_one_error_either_way(
    suite: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.write("tests/test_broken.py", "import no_such_module_for_gtd\n")
    run, with_plugin = run_tests(suite.path, PYTEST, Config(test_command=PYTEST))
    assert run.exit_code == 2  # pytest stops after a collection error
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    _, with_junit = run_tests(suite.path, PYTEST, Config(test_command=PYTEST))
    assert (
        with_plugin
        == with_junit
        == {
            "tests/test_broken.py": "error",
            "tests/test_later.py": "skipped",
        }
    )


def test_a_command_that_replaces_pythonpath_falls_back_to_junit(suite: Repo) -> None:
    command = f"PYTHONPATH=/nowhere {PYTEST} tests/test_kinds.py"
    run, tests = run_tests(suite.path, command, Config(test_command=command))
    assert run.exit_code == 1, run.output_tail
    assert tests is not None
    assert tests["tests/test_kinds.py::test_teardown_error"] == "error"
    assert len(tests) == 10


def test_every_pytest_session_of_a_command_is_reported(suite: Repo) -> None:
    command = f"{PYTEST} tests/test_kinds.py -k pass; {PYTEST} tests/test_later.py"
    _, tests = run_tests(suite.path, command, Config(test_command=command))
    assert tests == {
        "tests/test_kinds.py::test_pass": "passed",
        "tests/test_kinds.py::test_xpass": "passed",
        "tests/test_kinds.py::test_xpass_strict": "failed",
        "tests/test_later.py": "skipped",
    }


def test_ids_are_relative_to_the_repository_when_pytest_runs_in_a_subdirectory(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    repo.write("backend/pytest.ini", "[pytest]\n")
    repo.write("backend/tests/test_api.py", "def test_ok():\n    pass\n")
    command = f"cd backend && {PYTEST}"
    _, tests = run_tests(repo.path, command, Config(test_command=command))
    assert tests == {"backend/tests/test_api.py::test_ok": "passed"}


def test_the_tests_see_the_users_environment(suite: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/kept")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-rN")
    suite.write(
        "tests/test_env.py",
        "import os, sys\n\n\n"
        "def test_env():\n"
        "    assert os.environ['PYTHONPATH'] == '/kept'\n"
        "    assert os.environ['PYTEST_ADDOPTS'] == '-rN'\n"
        "    assert not [k for k in os.environ if k.startswith('GTD_RATCHET')]\n"
        "    assert not [p for p in sys.path if 'pytest-site' in p]\n",
    )
    command = f"{PYTEST} tests/test_env.py"
    run, tests = run_tests(suite.path, command, Config(test_command=command))
    assert tests == {"tests/test_env.py::test_env": "passed"}, run.output_tail


def test_a_pytest_started_by_a_test_does_not_report_into_the_run(suite: Repo) -> None:
    suite.write(
        "tests/test_nested.py",
        "import subprocess, sys\n\n\n"
        "def test_runs_pytest():\n"
        "    subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',\n"
        "                    'tests/test_kinds.py'], capture_output=True)\n",
    )
    command = f"{PYTEST} tests/test_nested.py"
    _, tests = run_tests(suite.path, command, Config(test_command=command))
    assert tests == {"tests/test_nested.py::test_runs_pytest": "passed"}


def test_xdist_workers_report_through_the_controller(
    suite: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed")
    command = f"{PY} -m pytest -q -p no:cacheprovider -n 2 tests/test_kinds.py"
    _, tests = run_tests(suite.path, command, Config(test_command=command))
    assert tests == {k: v for k, v in EXPECTED.items() if k.startswith("tests/test_kinds.py::")}


def test_outside_a_git_directory_a_temporary_one_is_used_and_removed(tmp_path: Path) -> None:
    files = reports.prepare(tmp_path)
    assert files.scratch is not None
    assert files.site.is_relative_to(files.scratch)
    assert (files.site / "gtd_ratchet_report-1.dist-info" / "entry_points.txt").is_file()
    assert reports.collect(tmp_path, files, None) is None
    assert not files.scratch.exists()


def test_a_stale_plugin_copy_is_replaced(repo: Repo) -> None:
    site = repo.path / ".git" / "gtd-cache" / "pytest-site"
    site.mkdir(parents=True)
    (site / "gtd_ratchet_report.py").write_text("# an older helper's plugin\n")
    reports.prepare(repo.path)
    source = Path(pytest_report.__file__).read_text()
    assert (site / "gtd_ratchet_report.py").read_text() == source


def test_the_plugin_reads_the_names_the_runner_sets() -> None:
    assert (pytest_report.REPORT_ENV, pytest_report.JUNIT_ENV, pytest_report.SITE_ENV) == (
        reports.REPORT_ENV,
        reports.JUNIT_ENV,
        reports.SITE_ENV,
    )


def test_a_report_that_cannot_be_written_never_fails_the_run(suite: Repo) -> None:
    files = reports.prepare(suite.path)
    env = reports.environment(files)
    env[reports.REPORT_ENV] = str(suite.path / "no" / "such" / "dir.jsonl")
    argv = [*shlex.split(PYTEST), "tests/test_kinds.py", "-k", "pass"]
    result = proc.run(argv, suite.path, env=env)
    reports.discard(files)
    assert "INTERNALERROR" not in result.output
    assert "1 failed, 1 passed, 7 deselected, 1 xpassed" in result.output  # as without gtd
    assert result.returncode == 1


def test_report_files_of_a_killed_run_are_removed_by_the_next(repo: Repo) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs
    cache = repo.path / ".git" / "gtd-cache"
    cache.mkdir(parents=True)
    orphans = [cache / f"ratchet-{dead.pid}.jsonl", cache / f"ratchet-{dead.pid}.xml"]
    alive = cache / f"ratchet-{os.getppid()}.jsonl"  # a running process's: kept
    for path in [*orphans, alive, cache / "config.json"]:
        path.write_text("")
    files = reports.prepare(repo.path)
    reports.discard(files)
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        ["config.json", alive.name, "pytest-site"]
    )


def test_blocking_the_plugin_by_name_chooses_the_junit_fallback(suite: Repo) -> None:
    files = reports.prepare(suite.path)
    argv = [*shlex.split(PYTEST), "-p", "no:gtd_ratchet_report"]
    proc.run(argv, suite.path, env=reports.environment(files))
    assert not files.outcomes.exists()
    assert files.junit_xml.is_file()
    assert reports.collect(suite.path, files, None) == EXPECTED
