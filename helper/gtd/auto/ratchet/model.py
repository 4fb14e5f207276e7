"""The ratchet's values: one command's run, a whole run, the snapshot, file hashes.

Plain immutable NamedTuple values shared by the pure verdict and the edge modules; the JSON
form of each lives in gtd.auto.ratchet.snapshot (the sidecar file)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Literal, NamedTuple

# What one test did in one run. ``xpassed``: an xfail-marked test passed (pytest
# counts a strict one as failed); ``xfailed``: it failed as expected; ``error``: its
# setup, teardown or collection failed. OUTCOMES runs from best to worst, and that
# order is the rank: a test reported more than once (a failing teardown after a
# passing call, two sessions, a forged line) keeps its worst outcome. Why this
# order: passed as written; passed against the expectation to fail; did not run;
# ran and failed, as expected; failed; could not even be set up, torn down or
# collected. The plugin's contract lists the same names in the same order.
Outcome = Literal["passed", "xpassed", "skipped", "xfailed", "failed", "error"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "xpassed", "skipped", "xfailed", "failed", "error")
_RANK: Mapping[Outcome, int] = {outcome: rank for rank, outcome in enumerate(OUTCOMES)}
# The four-way split JUnit XML makes: an xfail is skipped, a non-strict xpass passed.
_JUNIT: Mapping[Outcome, Outcome] = {"xfailed": "skipped", "xpassed": "passed"}

Kind = Literal["build", "test", "typecheck", "lint"]
# The order commands run and are judged in.
KINDS: tuple[Kind, ...] = ("build", "test", "typecheck", "lint")

# How each kind is named in a reason ("test command not found: pytest").
LABELS: Mapping[str, str] = {
    "build": "build command",
    "test": "test command",
    "typecheck": "typecheck command",
    "lint": "lint command",
}


class CommandRun(NamedTuple):
    """One configured command, run once."""

    kind: Kind
    command: str
    exit_code: int
    duration_s: float
    timeout_s: float
    timed_out: bool = False
    # The executable (or python -m module) that does not exist; None when it ran.
    missing: str | None = None
    output_tail: str = ""

    @property
    def not_found(self) -> bool:
        return self.missing is not None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.missing is None


class RunResult(NamedTuple):
    """Every configured command of one run, plus per-test outcomes.

    ``tests`` is None when no runner reported JUnit XML (judged by exit code only);
    an empty mapping means a runner reported and ran zero tests.
    """

    commands: tuple[CommandRun, ...] = ()
    tests: Mapping[str, Outcome] | None = None

    def command(self, kind: str) -> CommandRun | None:
        return next((c for c in self.commands if c.kind == kind), None)

    @property
    def tests_passed(self) -> int | None:
        if self.tests is None:
            return None
        return sum(1 for o in self.tests.values() if o == "passed")

    @property
    def tests_total(self) -> int | None:
        return None if self.tests is None else len(self.tests)


class Snapshot(NamedTuple):
    """What the ratchet protects and the baseline it compares against.

    ``files``: the snapshot test files (path → sha256 of the content).
    ``protected``: protected test configuration (path → sha256 of the part that
    governs tests; "" when the file exists but has no such part).
    """

    files: Mapping[str, str] = MappingProxyType({})
    protected: Mapping[str, str] = MappingProxyType({})
    baseline: RunResult = RunResult()

    @property
    def baseline_red(self) -> bool:
        return self.baseline_reason is not None

    @property
    def baseline_reason(self) -> str | None:
        """Why the baseline cannot anchor a ratchet, or None when it can.

        A command that is missing or times out is never usable. A failing test
        command is fatal only when the runner gives no per-test outcomes (the exit
        code is then all we have) and there are tests to protect: with zero test
        files the first cycle is a bootstrap and a red exit code is expected.
        """
        from gtd.auto.ratchet.verdict import command_reason

        for run in self.baseline.commands:
            if run.timed_out or run.missing is not None:
                return f"baseline {command_reason(run)}"
        test = self.baseline.command("test")
        if test is not None and not test.ok and self.baseline.tests is None and self.files:
            return f"baseline {command_reason(test)}, with no per-test results (JUnit XML)"
        return None


class FileHashes(NamedTuple):
    """The working tree as the integrity check sees it.

    ``files``: each snapshot test file's current sha256, None when it is gone.
    ``new_files``: test files not in the snapshot (path → sha256), to spot renames.
    ``protected``: protected configuration found now (path → digest, as in Snapshot).
    """

    files: Mapping[str, str | None]
    new_files: Mapping[str, str]
    protected: Mapping[str, str]


def worst_by_test(pairs: Iterable[tuple[str, Outcome]]) -> dict[str, Outcome]:
    """``{test id: outcome}`` from (test id, outcome) pairs, the worst outcome winning."""
    out: dict[str, Outcome] = {}
    for test_id, outcome in pairs:
        previous = out.get(test_id)
        if previous is None or _RANK[outcome] > _RANK[previous]:
            out[test_id] = outcome
    return out


def rank(outcome: Outcome) -> int:
    """Higher is worse (see OUTCOMES)."""
    return _RANK[outcome]


def as_junit(outcome: Outcome) -> Outcome:
    """``outcome`` as JUnit XML classifies it: passed, skipped, failed or error."""
    return _JUNIT.get(outcome, outcome)


def merge(results: Iterable[Mapping[str, Outcome]]) -> dict[str, Outcome]:
    """Union of several reports; a test in more than one keeps its worst outcome."""
    return worst_by_test(pair for result in results for pair in result.items())
