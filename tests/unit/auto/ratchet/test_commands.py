"""Running commands: missing executables, shell 127, timeouts, JUnit collection."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from gtd.auto.config import AutoConfig
from gtd.auto.ratchet.commands import planned, run_all, run_command, run_tests, tail
from gtd.auto.ratchet.report_listener import ModuleResolver
from gtd.errors import InputError

PY = shlex.quote(sys.executable)


def test_missing_executable(tmp_path: Path) -> None:
    run = run_command(tmp_path, "test", "no-such-tool-gtd --flag", 10)
    assert run.missing == "no-such-tool-gtd"
    assert not run.ok


def test_shell_exit_127_is_not_found(tmp_path: Path) -> None:
    run = run_command(tmp_path, "lint", "no-such-tool-gtd check . && echo ok", 10)
    assert run.missing == "no-such-tool-gtd"


def test_python_m_missing_module_is_not_found(tmp_path: Path) -> None:
    run = run_command(tmp_path, "test", f"{PY} -m no_such_module_gtd -q", 10)
    assert run.missing == "no_such_module_gtd"


def test_timeout(tmp_path: Path) -> None:
    run = run_command(tmp_path, "test", f"{PY} -c 'import time; time.sleep(30)'", 0.5)
    assert run.timed_out
    assert run.timeout_s == 0.5
    assert run.duration_s < 10


def test_failure_keeps_the_output_tail(tmp_path: Path) -> None:
    run = run_command(tmp_path, "build", f"{PY} -c 'import sys; print(\"boom\"); sys.exit(3)'", 10)
    assert (run.exit_code, run.missing, run.timed_out) == (3, None, False)
    assert run.output_tail == "boom"


def test_unsplittable_command_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot split"):
        run_command(tmp_path, "test", "pytest 'unbalanced", 10)


def test_tail_keeps_the_last_lines() -> None:
    text = "\n".join(str(i) for i in range(100)) + "\n"
    assert tail(text).splitlines() == [str(i) for i in range(40, 100)]
    assert len(tail("x" * 2000)) == 501


def test_planned_order_skips_unset() -> None:
    cfg = AutoConfig(lint_command="ruff", build_command="make", test_command="pytest")
    assert planned(cfg) == [("build", "make"), ("test", "pytest"), ("lint", "ruff")]


def test_configured_junit_xml_is_read_and_stale_reports_ignored_not_deleted(
    tmp_path: Path,
) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    stale = reports / "stale.xml"
    stale.write_text("<testsuite><testcase name='old'><failure/></testcase></testsuite>")
    earlier = time.time() - 60  # a run of a minute ago
    os.utime(stale, (earlier, earlier))
    writer = (
        "import pathlib; pathlib.Path('reports/new.xml').write_text("
        "\"<testsuite><testcase classname='ui' name='renders'><failure/></testcase></testsuite>\")"
    )
    cfg = AutoConfig(test_command=f"{PY} -c {shlex.quote(writer)}", junit_xml="reports/*.xml")
    run, report = run_tests(tmp_path, cfg.test_command or "", cfg)
    assert run.ok
    assert report.junit_outcomes == {"ui::renders": "failed"}
    assert stale.exists()  # the glob may match a person's file: never deleted


def test_no_junit_means_exit_code_only(tmp_path: Path) -> None:
    result = run_all(tmp_path, AutoConfig(test_command="true")).result
    assert result.tests is None
    assert [c.kind for c in result.commands] == ["test"]


def test_pytest_addopts_is_appended_not_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x")
    script = "import os; print(os.environ['PYTEST_ADDOPTS'])"
    run = run_command(tmp_path, "test", f"{PY} -c {shlex.quote(script)}", 10)
    assert run.output_tail == "-x"  # run_command alone adds nothing
    cfg = AutoConfig(test_command=f"{PY} -c {shlex.quote(script)}")
    run, _ = run_tests(tmp_path, cfg.test_command or "", cfg)
    assert run.output_tail.startswith("-x --junitxml=")


def test_module_resolver(tmp_path: Path) -> None:
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_a.py").write_text("")
    resolve = ModuleResolver(tmp_path)
    assert resolve("tests.unit.test_a") == ("tests/unit/test_a.py", "")
    assert resolve("tests.unit.test_a.TestX") == ("tests/unit/test_a.py", "TestX")
    assert resolve("tests.unit.test_missing") is None
    assert resolve("Login page") is None
