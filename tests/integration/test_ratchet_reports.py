"""Per-test reports from real pytest runs: the entry-point plugin streaming into the
helper's pipe (or a file), its JUnit XML fallback, and that both classify every
kind of outcome the same way as far as JUnit can tell."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gtd import proc
from gtd.auto.config import AutoConfig
from gtd.auto.ratchet import contract, early, report_listener
from gtd.auto.ratchet.commands import run_tests
from gtd.auto.ratchet.model import as_junit
from gtd.auto.ratchet.results import Report, Result
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


def test_skip_inside():
    pytest.skip("no network")


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

K = "tests/test_kinds.py::"
RICH = {
    K + "test_pass": Result("passed"),
    K + "test_fail": Result("failed"),
    K + "test_skip": Result("skipped", "tests/test_kinds.py:12", "not today"),
    K + "test_skip_inside": Result("skipped", "tests/test_kinds.py:18", "no network"),
    K + "test_xfail": Result("xfailed", None, "known"),
    K + "test_xpass": Result("xpassed"),
    K + "test_xpass_strict": Result("failed"),
    K + "test_setup_error": Result("error"),
    K + "test_teardown_error": Result("error"),
    K + "TestGroup::TestInner::test_param[1]": Result("passed"),
    K + "TestGroup::TestInner::test_param[2]": Result("failed"),
    "tests/test_later.py": Result("skipped", "tests/test_later.py:3", "later"),
}
# What the verdict compares: JUnit's four outcomes.
EXPECTED = {test_id: as_junit(result.outcome) for test_id, result in RICH.items()}


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


def run(
    root: Path,
    command: str,
    request: report_listener.Request | None = None,
    *,
    inherit: bool = True,
    timeout: float | None = None,
) -> tuple[proc.Result, Report]:
    """The command with the reporting environment; ``inherit=False`` keeps the pipe
    from it (the way tox or a ``close_fds`` wrapper would)."""
    listener = report_listener.start(request or report_listener.Request(root))
    argv, _ = proc.command_argv(command)
    pass_fds = listener.pass_fds if inherit else ()
    result = proc.run(argv, root, env=listener.env, pass_fds=pass_fds, timeout=timeout)
    return result, listener.finish()


def test_plugin_reports_every_outcome_with_details_and_no_xml(suite: Repo) -> None:
    listener = report_listener.start(report_listener.Request(suite.path))
    argv = [*shlex.split(PYTEST), "-rs"]
    result = proc.run(argv, suite.path, env=listener.env, pass_fds=listener.pass_fds)
    assert result.returncode == 1, result.output
    assert not listener.files.junit_xml.exists()  # the plugin switched pytest's XML off
    report = listener.finish()
    assert not listener.files.folder.exists()  # the run's files are gone
    assert report.source == "plugin"
    assert dict(report.tests) == RICH
    assert report.complete, report.problems
    assert report.junit_outcomes == EXPECTED
    # A skip's location and reason read as pytest's own summary says them.
    for test_id in (K + "test_skip", K + "test_skip_inside", "tests/test_later.py"):
        where, reason = RICH[test_id].where, RICH[test_id].reason
        assert f"SKIPPED [1] {where}: {reason}" in result.output
    (session,) = report.sessions
    assert (session.via, session.ended, session.consistent, session.exit_status) == (
        "pipe",
        True,
        True,
        1,
    )
    assert session.rootpath == os.path.realpath(suite.path)
    assert report.evidence == ()


def test_junit_fallback_agrees_with_the_plugin_as_far_as_junit_can_tell(
    suite: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, with_plugin = run(suite.path, PYTEST)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the plugin cannot load
    result, with_junit = run(suite.path, PYTEST)
    assert result.returncode == 1
    assert with_junit.source == "junit"
    assert with_junit.sessions == ()
    # JUnit writes a non-strict xpass like a pass; everything else it keeps.
    assert dict(with_junit.tests) == {
        test_id: r._replace(outcome="passed") if r.outcome == "xpassed" else r
        for test_id, r in with_plugin.tests.items()
    }
    # And through the runner, what the verdict compares is the same either way.
    _, legacy = run_tests(suite.path, PYTEST, AutoConfig(test_command=PYTEST))
    assert legacy.junit_outcomes == EXPECTED


def test_a_module_that_cannot_be_imported_is_one_error_either_way(
    suite: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.write("tests/test_broken.py", "import no_such_module_for_gtd\n")
    run_, with_plugin = run_tests(suite.path, PYTEST, AutoConfig(test_command=PYTEST))
    assert run_.exit_code == 2  # pytest stops after a collection error
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    _, with_junit = run_tests(suite.path, PYTEST, AutoConfig(test_command=PYTEST))
    expected = {"tests/test_broken.py": "error", "tests/test_later.py": "skipped"}
    assert with_plugin.junit_outcomes == with_junit.junit_outcomes == expected


def test_a_command_that_replaces_pythonpath_falls_back_to_junit(suite: Repo) -> None:
    command = f"PYTHONPATH=/nowhere {PYTEST} tests/test_kinds.py"
    run_, report = run_tests(suite.path, command, AutoConfig(test_command=command))
    assert run_.exit_code == 1, run_.output_tail
    tests = report.junit_outcomes
    assert tests is not None
    assert tests[K + "test_teardown_error"] == "error"
    assert len(tests) == 11


def test_every_pytest_session_of_a_command_is_reported(suite: Repo) -> None:
    command = f"{PYTEST} tests/test_kinds.py -k pass; {PYTEST} tests/test_later.py"
    _, report = run(suite.path, command)
    assert report.outcomes == {
        K + "test_pass": "passed",
        K + "test_xpass": "xpassed",
        K + "test_xpass_strict": "failed",
        "tests/test_later.py": "skipped",
    }
    assert len(report.sessions) == 2
    assert report.complete


def test_ids_are_relative_to_the_repository_when_pytest_runs_in_a_subdirectory(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    repo.write("backend/pytest.ini", "[pytest]\n")
    repo.write("backend/tests/test_api.py", "def test_ok():\n    pass\n")
    _, report = run(repo.path, f"cd backend && {PYTEST}")
    assert report.outcomes == {"backend/tests/test_api.py::test_ok": "passed"}
    assert [i.file for i in report.items] == ["backend/tests/test_api.py"]
    assert report.sessions[0].inipath == str(repo.path / "backend" / "pytest.ini")


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
        "    assert not [p for p in sys.path if 'ratchet-' in p]\n",
    )
    _, report = run(suite.path, f"{PYTEST} tests/test_env.py")
    assert report.outcomes == {"tests/test_env.py::test_env": "passed"}


def test_a_pytest_started_by_a_test_does_not_report_into_the_run(suite: Repo) -> None:
    suite.write(
        "tests/test_nested.py",
        "import subprocess, sys\n\n\n"
        "def test_runs_pytest():\n"
        "    subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',\n"
        "                    'tests/test_kinds.py'], capture_output=True, close_fds=False)\n",
    )
    _, report = run(suite.path, f"{PYTEST} tests/test_nested.py")
    assert report.outcomes == {"tests/test_nested.py::test_runs_pytest": "passed"}
    assert len(report.sessions) == 1


def test_xdist_workers_report_through_the_controller(
    suite: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed")
    _, report = run(suite.path, f"{PY} -m pytest -q -p no:cacheprovider -n 2 tests/test_kinds.py")
    assert dict(report.tests) == {k: v for k, v in RICH.items() if k.startswith(K)}
    assert report.complete, report.problems
    workers = sorted(s.worker for s in report.sessions if s.worker)
    assert workers == ["gw0", "gw1"]  # each wrote its own lines, through the file
    assert {s.via for s in report.sessions if s.worker} == {"file"}
    assert len(report.items) == 11  # what the workers collected


def test_a_killed_run_keeps_what_finished_and_says_it_did_not_finish(repo: Repo) -> None:
    repo.write(
        "tests/test_dies.py",
        "import os, signal\n\n\n"
        "def test_a():\n    pass\n\n\n"
        "def test_b():\n    assert False\n\n\n"
        "def test_c():\n    os.kill(os.getpid(), signal.SIGKILL)\n",
    )
    result, report = run(repo.path, PYTEST)
    assert result.returncode == -9
    assert report.outcomes == {
        "tests/test_dies.py::test_a": "passed",
        "tests/test_dies.py::test_b": "failed",
    }
    assert report.problems == (f"pytest session {report.sessions[0].id} did not finish",)
    assert report.junit_outcomes is None  # the verdict sees results missing


def test_a_large_suite_never_blocks_on_the_pipe(repo: Repo) -> None:
    # ~2,000 lines of ~250 bytes: several times what a pipe buffers.
    repo.write(
        "tests/test_many.py",
        "import pytest\n\n\n"
        "@pytest.mark.parametrize('n', range(2000), ids=lambda n: f'{n:04}' + 'x' * 180)\n"
        "def test_n(n):\n    pass\n",
    )
    result, report = run(repo.path, PYTEST, timeout=300)
    assert result.returncode == 0, result.output[-2000:]
    assert not result.timed_out
    assert len(report.tests) == 2000
    assert report.complete


def test_where_the_pipe_is_not_inherited_the_file_takes_the_lines(suite: Repo) -> None:
    # A wrapper that starts pytest with close_fds (tox, most runners do).
    wrapper = (
        "import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-m', 'pytest', "
        "'-q', '-p', 'no:cacheprovider', '-p', 'no:xdist', 'tests/test_kinds.py']).returncode)"
    )
    _, report = run(suite.path, f"{PY} -c {shlex.quote(wrapper)}")
    assert [s.via for s in report.sessions] == ["file"]
    assert dict(report.tests) == {k: v for k, v in RICH.items() if k.startswith(K)}


def test_a_reused_descriptor_number_is_never_written_to(suite: Repo, tmp_path: Path) -> None:
    # The wrapper puts another file under the number the environment names, and
    # pytest inherits that file, not the pipe.
    other = tmp_path / "other.txt"
    wrapper = (
        "import os, sys\n"
        f"fd = int(os.environ[{contract.ENV_FD!r}].split(':')[0])\n"
        f"os.dup2(os.open({str(other)!r}, os.O_WRONLY | os.O_CREAT), fd)\n"
        "os.execv(sys.executable, [sys.executable, '-m', 'pytest', '-q', '-p', "
        "'no:cacheprovider', '-p', 'no:xdist', 'tests/test_kinds.py'])\n"
    )
    _, report = run(suite.path, f"{PY} -c {shlex.quote(wrapper)}")
    assert other.read_text() == ""
    assert [s.via for s in report.sessions] == ["file"]
    assert len(report.tests) == 11


def test_a_forged_passed_line_never_hides_a_real_failure(repo: Repo) -> None:
    # A later test finds the plugin's pipe and writes "passed" for the failure, and
    # for a test that never ran.
    repo.write("tests/test_a.py", "def test_broken():\n    assert 1 + 1 == 3\n")
    repo.write(
        "tests/test_b.py",
        "import json, os, sys\n\n\n"
        "def test_forge():\n"
        "    state = next(m._STATE for m in list(sys.modules.values())\n"
        "                 if getattr(m, '_STATE', None) is not None and hasattr(m, 'Recorder'))\n"
        "    for test in ('tests/test_a.py::test_broken', 'tests/test_a.py::test_invented'):\n"
        "        line = {'k': 't', 's': state.session, 'id': test, 'o': 'passed', 'w': 'call'}\n"
        "        os.write(state.out.fd, (json.dumps(line) + '\\n').encode())\n",
    )
    _, report = run(repo.path, PYTEST)
    assert report.outcomes is not None
    assert report.outcomes["tests/test_a.py::test_broken"] == "failed"
    assert not report.complete  # the session's own counts give the invented test away
    assert report.junit_outcomes is None


def test_outside_a_git_directory_a_temporary_one_is_used_and_removed(tmp_path: Path) -> None:
    listener = report_listener.start(report_listener.Request(tmp_path))
    folder = listener.files.folder
    assert not folder.is_relative_to(tmp_path)
    stub = [p for p in listener.files.site.glob("gtd_ratchet_*.py")]
    assert len(stub) == 1
    entry = next(listener.files.site.glob("*.dist-info")) / "entry_points.txt"
    assert entry.read_text() == f"[pytest11]\ngtd_ratchet_report = {stub[0].stem}\n"
    assert listener.finish().source == "none"
    assert not folder.exists()


def test_each_run_names_its_entry_point_afresh_so_no_file_can_shadow_it(suite: Repo) -> None:
    # A module named like the plugin, first on sys.path under `python -m pytest`.
    suite.write("gtd_ratchet_report.py", "raise SystemExit('shadowed')\n")
    names = set()
    for _ in range(2):
        listener = report_listener.start(report_listener.Request(suite.path))
        names.add(next(listener.files.site.glob("gtd_ratchet_*.py")).name)
        listener.abort()
    assert len(names) == 2
    _, report = run(suite.path, f"{PYTEST} tests/test_kinds.py -k pass")
    assert report.source == "plugin"
    assert report.sessions[0].via == "pipe"


def test_report_files_of_a_killed_run_are_removed_by_the_next(repo: Repo) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs
    cache = repo.path / ".git" / "gtd-cache"
    (cache / f"ratchet-{dead.pid}" / "site").mkdir(parents=True)
    (cache / "pytest-site").mkdir()  # an older helper's plugin copy
    orphans = [cache / f"ratchet-{dead.pid}.jsonl", cache / f"ratchet-{dead.pid}.xml"]
    alive = cache / f"ratchet-{os.getppid()}.jsonl"  # a running process's: kept
    for path in [*orphans, alive, cache / "config.json"]:
        path.write_text("")
    report_listener.start(report_listener.Request(repo.path)).abort()
    assert sorted(p.name for p in cache.iterdir()) == sorted(["config.json", alive.name])


def test_two_runs_of_one_process_keep_their_files_apart(repo: Repo) -> None:
    first = report_listener.start(report_listener.Request(repo.path))
    second = report_listener.start(report_listener.Request(repo.path))
    assert first.files.folder != second.files.folder
    assert first.pass_fds != second.pass_fds
    first.abort()
    assert second.files.folder.is_dir()
    assert second.finish().source == "none"


def test_blocking_the_plugin_by_name_chooses_the_junit_fallback(suite: Repo) -> None:
    _, report = run(suite.path, f"{PYTEST} -p no:gtd_ratchet_report")
    assert report.source == "junit"
    assert report.junit_outcomes == EXPECTED


def test_a_report_that_cannot_be_written_never_fails_the_run(suite: Repo) -> None:
    listener = report_listener.start(report_listener.Request(suite.path))
    listener.files.lines.mkdir()  # the file cannot be opened, and no pipe is passed
    argv = [*shlex.split(PYTEST), "tests/test_kinds.py", "-k", "pass"]
    result = proc.run(argv, suite.path, env=listener.env)
    report = listener.finish()
    assert "INTERNALERROR" not in result.output
    assert "1 failed, 1 passed, 8 deselected, 1 xpassed" in result.output  # as without gtd
    assert result.returncode == 1
    assert report.source == "junit"  # the plugin left pytest's XML on


def test_a_plugin_that_fails_to_load_leaves_pytest_and_its_xml_alone(
    suite: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "pytest_report.py"
    broken.write_text("raise RuntimeError('the plugin is broken')\n")
    monkeypatch.setattr(report_listener, "_PLUGIN_SOURCE", broken)
    result, report = run(suite.path, f"{PYTEST} tests/test_kinds.py")
    assert "INTERNALERROR" not in result.output
    assert "the plugin is broken" not in result.output
    assert result.returncode == 1
    assert report.source == "junit"
    assert report.junit_outcomes == {k: v for k, v in EXPECTED.items() if k.startswith(K)}


def test_a_helper_not_installed_as_plain_files_runs_a_copy_of_the_plugin_and_its_parts(
    suite: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As from a zip: the plugin, its contract and every part are copied among the
    # run's files, laid out as installed, and that copy reports.
    monkeypatch.setattr(early, "plugin_installed", lambda source: False)
    listener = report_listener.start(report_listener.Request(suite.path))
    copy = listener.files.folder / "plugin"
    parts = sorted(p.name for p in (copy / "plugin").glob("*.py"))
    installed = Path(early.PLUGIN_SOURCE).parent / "plugin"
    assert parts == sorted(p.name for p in installed.glob("*.py"))
    assert (copy / "pytest_report.py").is_file()
    assert (copy / "contract.py").is_file()
    assert (copy / "in_process.py").is_file()
    argv, _ = proc.command_argv(f"{PYTEST} tests/test_kinds.py")
    proc.run(argv, suite.path, env=listener.env, pass_fds=listener.pass_fds)
    report = listener.finish()
    assert report.source == "plugin"
    assert report.junit_outcomes == {k: v for k, v in EXPECTED.items() if k.startswith(K)}
    loaded = {p.file for p in report.sessions[0].plugins if p.name == report_listener.PLUGIN_NAME}
    assert loaded == {str(copy / "pytest_report.py")}


def test_the_settings_file_is_the_contract(tmp_path: Path) -> None:
    request = report_listener.Request(
        tmp_path,
        only_files=("tests/test_a.py",),
        forbidden=(tmp_path / "live",),
        redirect=report_listener.Redirect(tmp_path / "live", tmp_path),
        guarded=("tests/conftest.py", "tests/helpers.py"),
        env_since_ns=1_764_000_000_000_000_000,
    )
    listener = report_listener.start(request)
    try:
        settings = json.loads(Path(listener.env[contract.ENV_SETTINGS]).read_text())
        fd, dev, ino = (int(p) for p in listener.env[contract.ENV_FD].split(":"))
        st = os.fstat(fd)
        assert (fd, dev, ino) == (listener.pass_fds[0], st.st_dev, st.st_ino)
    finally:
        listener.abort()
    assert settings == {
        contract.SETTING_VERSION: contract.VERSION,
        contract.SETTING_REPORT: str(listener.files.lines),
        contract.SETTING_JUNIT: str(listener.files.junit_xml),
        contract.SETTING_SITE: str(listener.files.site),
        contract.SETTING_ROOT: str(tmp_path),
        contract.SETTING_FILES: ["tests/test_a.py"],
        contract.SETTING_IDS: None,
        contract.SETTING_FORBIDDEN: [str(tmp_path / "live")],
        contract.SETTING_LIVE: str(tmp_path / "live"),
        contract.SETTING_ROOM: str(tmp_path),
        contract.SETTING_GUARDED: ["tests/conftest.py", "tests/helpers.py"],
        contract.SETTING_ENV_SINCE: 1_764_000_000_000_000_000,
    }
