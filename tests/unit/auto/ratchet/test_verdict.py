"""The pure verdict: every integrity rule and every judge rule, with its reason text."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from gtd.auto.ratchet.model import (
    CommandRun,
    FileHashes,
    Kind,
    Outcome,
    RunResult,
    Snapshot,
    command_reason,
)
from gtd.auto.ratchet.verdict import Verdict, integrity, judge, shadowed_name


def cmd(
    kind: Kind = "test",
    code: int = 0,
    *,
    timed_out: bool = False,
    missing: str | None = None,
    tail: str = "",
    timeout: float = 600,
) -> CommandRun:
    command = {"build": "make", "test": "pytest", "typecheck": "mypy .", "lint": "ruff check"}
    return CommandRun(kind, command[kind], code, 0.1, timeout, timed_out, missing, tail)


def res(*commands: CommandRun, tests: Mapping[str, Outcome] | None = None) -> RunResult:
    return RunResult(tuple(commands), tests)


GREEN: dict[str, Outcome] = {"t::a": "passed", "t::b": "passed"}

# (id, baseline, run, expected reason; None = passes)
JUDGE_CASES: list[tuple[str, RunResult, RunResult, str | None]] = [
    ("same-green", res(cmd(), tests=GREEN), res(cmd(), tests=GREEN), None),
    (
        "baseline-test-fails",
        res(cmd(), tests=GREEN),
        res(cmd(code=1), tests={"t::a": "failed", "t::b": "passed"}),
        "tests failed: 1 of 2 (t::a)",
    ),
    (
        "baseline-test-errors",
        res(cmd(), tests=GREEN),
        res(cmd(code=1), tests={"t::a": "passed", "t::b": "error"}),
        "tests failed: 1 of 2 (t::b)",
    ),
    (
        "new-test-must-pass",
        res(cmd(), tests=GREEN),
        res(cmd(code=1), tests={**GREEN, "t::new": "failed"}),
        "tests failed: 1 of 3 (t::new)",
    ),
    (
        "new-passing-test-never-rescues",
        res(cmd(), tests=GREEN),
        res(cmd(code=1), tests={"t::a": "failed", "t::b": "passed", "t::c": "passed"}),
        "tests failed: 1 of 3 (t::a)",
    ),
    (
        "baseline-failures-first-then-new",
        res(cmd(), tests=GREEN),
        res(cmd(code=1), tests={"t::a": "failed", "t::b": "passed", "t::0": "failed"}),
        "tests failed: 2 of 3 (t::a, t::0)",
    ),
    (
        "many-failures-truncated",
        res(cmd(), tests={f"t::{i}": "passed" for i in range(5)}),
        res(cmd(code=1), tests={f"t::{i}": "failed" for i in range(5)}),
        "tests failed: 5 of 5 (t::0, t::1, t::2, …)",
    ),
    (
        "failing-at-baseline-still-failing-is-tolerated",
        res(cmd(code=1), tests={"t::a": "passed", "t::f": "failed"}),
        res(cmd(code=1), tests={"t::a": "passed", "t::f": "error"}),
        None,
    ),
    (
        "skipped-at-baseline-now-failing",
        res(cmd(), tests={"t::a": "passed", "t::s": "skipped"}),
        res(cmd(code=1), tests={"t::a": "passed", "t::s": "failed"}),
        "tests failed: 1 of 2 (t::s)",
    ),
    (
        "baseline-test-now-skipped",
        res(cmd(), tests=GREEN),
        res(cmd(), tests={"t::a": "skipped", "t::b": "passed"}),
        "baseline test now skipped: t::a",
    ),
    (
        "baseline-tests-now-skipped",
        res(cmd(), tests=GREEN),
        res(cmd(), tests={"t::a": "skipped", "t::b": "skipped"}),
        "baseline tests now skipped: 2 (t::a, t::b)",
    ),
    (
        "baseline-test-vanished",
        res(cmd(), tests=GREEN),
        res(cmd(), tests={"t::a": "passed", "t::c": "passed"}),
        "baseline test vanished: t::b",
    ),
    (
        "baseline-tests-vanished",
        res(cmd(), tests=GREEN),
        res(cmd(), tests={}),
        "baseline tests vanished: 2 (t::a, t::b)",
    ),
    (
        "test-count-dropped",
        res(cmd(code=1), tests={"t::a": "passed", "t::f": "failed", "t::s": "skipped"}),
        res(cmd(), tests={"t::a": "passed"}),
        "test count dropped: 3 → 1",
    ),
    (
        "timeout",
        res(cmd(), tests=GREEN),
        res(cmd(code=-15, timed_out=True)),
        "timeout after 600 s (test command)",
    ),
    (
        "timeout-fraction",
        res(cmd(), tests=GREEN),
        res(cmd(code=-15, timed_out=True, timeout=0.5)),
        "timeout after 0.5 s (test command)",
    ),
    (
        "missing-executable",
        res(cmd(), tests=GREEN),
        res(cmd(code=127, missing="pytest")),
        "test command not found: pytest",
    ),
    (
        "missing-even-if-missing-at-baseline",
        res(cmd(code=127, missing="ruff")),
        res(cmd(code=127, missing="ruff")),
        "test command not found: ruff",
    ),
    (
        "per-test-report-missing",
        res(cmd(), tests=GREEN),
        res(cmd()),
        "test results missing: no JUnit XML this run (baseline had 2 tests)",
    ),
    (
        "per-test-report-missing-and-failed",
        res(cmd(), tests=GREEN),
        res(cmd(code=4, tail="ERROR: usage: pytest [options]\n")),
        "test command failed (exit 4): ERROR: usage: pytest [options]",
    ),
    (
        "all-tests-fine-but-green-command-went-red",
        res(cmd(), tests=GREEN),
        res(
            cmd(code=1, tail="== 2 passed in 0.1s ==\nFAIL Required test coverage not reached"),
            tests=GREEN,
        ),
        "test command failed (exit 1): FAIL Required test coverage not reached",
    ),
    (
        "zero-tests-at-baseline-no-report-now-passes-exit-0",
        res(cmd(code=5), tests={}),
        res(cmd()),
        None,
    ),
    ("exit-code-only-green", res(cmd()), res(cmd()), None),
    (
        "exit-code-only-red",
        res(cmd()),
        res(cmd(code=1, tail="FAILED\n")),
        "test command failed (exit 1): FAILED",
    ),
    (
        "exit-code-only-must-exit-0-even-if-red-at-baseline",
        res(cmd(code=5)),
        res(cmd(code=5, tail="no tests ran\n")),
        "test command failed (exit 5): no tests ran",
    ),
    (
        "exit-code-only-baseline-but-report-now",
        res(cmd()),
        res(cmd(code=1), tests={"t::a": "failed"}),
        "tests failed: 1 of 1 (t::a)",
    ),
    (
        "build-went-red",
        res(cmd("build"), cmd(), tests=GREEN),
        res(cmd("build", 2, tail="error: x\n"), cmd(), tests=GREEN),
        "build failed (exit 2): error: x",
    ),
    (
        "lint-red-at-baseline-tolerated",
        res(cmd(), cmd("lint", 1), tests=GREEN),
        res(cmd(), cmd("lint", 1), tests=GREEN),
        None,
    ),
    (
        "lint-red-at-baseline-but-timed-out-now",
        res(cmd(), cmd("lint", 1), tests=GREEN),
        res(cmd(), cmd("lint", -9, timed_out=True, timeout=30), tests=GREEN),
        "timeout after 30 s (lint command)",
    ),
    (
        "typecheck-went-red",
        res(cmd(), cmd("typecheck"), tests=GREEN),
        res(cmd(), cmd("typecheck", 1, tail="Found 1 error in 1 file\n"), tests=GREEN),
        "typecheck failed (exit 1): Found 1 error in 1 file",
    ),
    (
        "newly-configured-command-must-pass",
        res(cmd(), tests=GREEN),
        res(cmd(), cmd("lint", 1), tests=GREEN),
        "lint failed (exit 1)",
    ),
    (
        "build-reported-before-tests",
        res(cmd("build"), cmd(), tests=GREEN),
        res(cmd("lint", 0), cmd(code=1), cmd("build", 1), tests={"t::a": "failed"}),
        "build failed (exit 1)",
    ),
]


@pytest.mark.parametrize(
    ("baseline", "run", "reason"),
    [pytest.param(b, r, reason, id=name) for name, b, r, reason in JUDGE_CASES],
)
def test_judge(baseline: RunResult, run: RunResult, reason: str | None) -> None:
    verdict = judge(baseline, run, [])
    assert verdict.reason == reason
    assert verdict.passed is (reason is None)
    assert (verdict.details[0] if verdict.details else None) == reason


def test_judge_reports_every_failure_in_details() -> None:
    baseline = res(cmd("build"), cmd(), tests={**GREEN, "t::c": "passed"})
    run = res(cmd("build", 1), cmd(code=1), tests={"t::a": "failed", "t::b": "skipped"})
    verdict = judge(baseline, run, [])
    assert verdict.details == (
        "build failed (exit 1)",
        "tests failed: 1 of 2 (t::a)",
        "baseline test now skipped: t::b",
        "baseline test vanished: t::c",
    )


def test_judge_health_figures() -> None:
    run = res(cmd("build"), cmd(), tests={"t::a": "passed", "t::b": "skipped"})
    verdict = judge(res(cmd("build"), cmd(), tests={"t::a": "passed"}), run, [])
    assert verdict == Verdict(
        True, None, tests_passed=1, tests_total=2, build_ok=True, tests_failed=0, tests_skipped=1
    )
    bare = judge(res(cmd()), res(cmd()), [])
    assert (bare.tests_passed, bare.tests_total, bare.build_ok) == (None, None, None)


def test_integrity_violations_decide_alone() -> None:
    verdict = judge(
        res(cmd(), tests=GREEN), RunResult(), ["a protected test was changed: t.py", "x"]
    )
    assert verdict == Verdict(
        False,
        "a protected test was changed: t.py",
        details=("a protected test was changed: t.py", "x"),
    )


def test_command_reason_truncates_long_lines() -> None:
    reason = command_reason(cmd("lint", 1, tail="x" * 500))
    assert reason.startswith("lint failed (exit 1): xxx")
    assert len(reason) < 150
    assert reason.endswith("…")


# -- integrity ------------------------------------------------------------------------

SNAP = Snapshot(
    files={"tests/test_a.py": "A", "tests/test_b.py": "B"},
    protected={"conftest.py": "C", "pytest.ini": "P", "pyproject.toml": "", "PLAN.md": "M"},
)
PROTECTED_NOW = dict(SNAP.protected)


def now(
    files: Mapping[str, str | None] | None = None,
    new: Mapping[str, str] | None = None,
    protected: Mapping[str, str] | None = None,
) -> FileHashes:
    return FileHashes(
        files={**dict(SNAP.files), **(files or {})},
        new_files=new or {},
        protected=PROTECTED_NOW if protected is None else protected,
    )


def without(key: str) -> dict[str, str]:
    return {k: v for k, v in PROTECTED_NOW.items() if k != key}


INTEGRITY_CASES: list[tuple[str, Snapshot, FileHashes, list[str]]] = [
    ("intact", SNAP, now(), []),
    (
        "intact-with-new-test-files",
        SNAP,
        now(new={"tests/test_new.py": "N"}),
        [],
    ),
    (
        "modified",
        SNAP,
        now({"tests/test_a.py": "A2"}),
        ["a protected test was changed: tests/test_a.py"],
    ),
    (
        "deleted",
        SNAP,
        now({"tests/test_b.py": None}),
        ["a protected test file was deleted or renamed: tests/test_b.py"],
    ),
    (
        "renamed",
        SNAP,
        now({"tests/test_b.py": None}, new={"tests/test_c.py": "B"}),
        ["a protected test file was renamed: tests/test_b.py → tests/test_c.py"],
    ),
    (
        "conftest-modified",
        SNAP,
        now(protected={**PROTECTED_NOW, "conftest.py": "C2"}),
        ["protected test config modified: conftest.py"],
    ),
    (
        "pytest-ini-deleted",
        SNAP,
        now(protected=without("pytest.ini")),
        ["protected test config deleted: pytest.ini"],
    ),
    (
        "pyproject-section-added",
        SNAP,
        now(protected={**PROTECTED_NOW, "pyproject.toml": "T"}),
        ["protected test config modified: pyproject.toml"],
    ),
    (
        "pyproject-without-section-deleted-is-fine",
        SNAP,
        now(protected=without("pyproject.toml")),
        [],
    ),
    (
        "tox-ini-added",
        SNAP,
        now(protected={**PROTECTED_NOW, "tox.ini": "X"}),
        ["protected test config added: tox.ini"],
    ),
    (
        "conftest-added-in-tests",
        SNAP,
        now(protected={**PROTECTED_NOW, "tests/conftest.py": "X"}),
        ["protected test config added: tests/conftest.py"],
    ),
    (
        "conftest-of-a-new-test-folder-is-fine",
        SNAP,
        now(protected={**PROTECTED_NOW, "tests/api/conftest.py": "X"}),
        [],
    ),
    (
        "setup-cfg-without-section-added-is-fine",
        SNAP,
        now(protected={**PROTECTED_NOW, "setup.cfg": ""}),
        [],
    ),
    (
        "plan-modified",
        SNAP,
        now(protected={**PROTECTED_NOW, "PLAN.md": "M2"}),
        ["protected file modified: PLAN.md"],
    ),
    (
        "config-added",
        SNAP,
        now(protected={**PROTECTED_NOW, ".deepflow/config.yaml": "Y"}),
        ["protected file added: .deepflow/config.yaml"],
    ),
    (
        "bootstrap-may-configure-the-runner",
        Snapshot(files={}, protected={"PLAN.md": "M"}),
        FileHashes({}, {"tests/test_a.py": "A"}, {"PLAN.md": "M", "pytest.ini": "P"}),
        [],
    ),
    (
        "bootstrap-may-not-touch-the-plan",
        Snapshot(files={}, protected={"PLAN.md": "M"}),
        FileHashes({}, {}, {"PLAN.md": "M2"}),
        ["protected file modified: PLAN.md"],
    ),
    (
        "tests-before-config-all-listed",
        SNAP,
        now(
            {"tests/test_a.py": "A2", "tests/test_b.py": None},
            protected={**PROTECTED_NOW, "conftest.py": "C2"},
        ),
        [
            "a protected test was changed: tests/test_a.py",
            "a protected test file was deleted or renamed: tests/test_b.py",
            "protected test config modified: conftest.py",
        ],
    ),
]


@pytest.mark.parametrize(
    ("snap", "current", "expected"),
    [pytest.param(s, c, e, id=name) for name, s, c, e in INTEGRITY_CASES],
)
def test_integrity(snap: Snapshot, current: FileHashes, expected: list[str]) -> None:
    assert integrity(snap, current) == expected


@pytest.mark.parametrize(
    ("baseline", "reason"),
    [
        (res(cmd(), tests=GREEN), None),
        (res(cmd(code=1), tests={"t::a": "failed"}), None),  # per-test: tolerable
        (res(cmd(code=1)), "baseline test command failed (exit 1), with no per-test results"),
        (res(cmd(code=127, missing="pytest")), "baseline test command not found: pytest"),
        (res(cmd("lint", 1), cmd()), None),
        (res(cmd("lint", -9, timed_out=True)), "baseline timeout after 600 s (lint command)"),
    ],
)
def test_baseline_red(baseline: RunResult, reason: str | None) -> None:
    snap = Snapshot(files={"tests/test_a.py": "A"}, baseline=baseline)
    if reason is None:
        assert snap.baseline_reason is None
    else:
        assert snap.baseline_reason is not None
        assert snap.baseline_reason.startswith(reason)
    assert snap.baseline_red is (reason is not None)


def test_red_exit_code_is_expected_without_test_files() -> None:
    snap = Snapshot(files={}, baseline=res(cmd(code=5)))
    assert not snap.baseline_red


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("pytest.py", "pytest"),
        ("pytest.pyc", "pytest"),
        ("pytest.cpython-311-x86_64-linux-gnu.so", "pytest"),
        ("pytest.abi3.so", "pytest"),
        ("tests/xdist/__init__.py", "xdist"),
        ("xdist/__init__.pyc", "xdist"),
        ("__init__.py", None),
        ("README.md", None),
        ("__pycache__/pytest.cpython-311.pyc", "pytest.cpython-311"),
    ],
)
def test_shadowed_name_of_every_form_python_imports(path: str, name: str | None) -> None:
    """Sourceless bytecode and extension modules are found by name like source;
    bytecode in ``__pycache__`` carries a tag no import asks for."""
    assert shadowed_name(path) == name
