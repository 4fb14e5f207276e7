"""The ratchet's values: one command's run, a whole run, the snapshot, file hashes.

Plain immutable NamedTuple values shared by the pure verdict and the edge modules; the JSON
form of each lives in gtd.auto.ratchet.snapshot (the sidecar file)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Literal

# What one test did in one run. ``xpassed``: an xfail-marked test passed (pytest
# counts a strict one as failed); ``xfailed``: it failed as expected; ``error``: its
# setup, teardown or collection failed. OUTCOMES runs from best to worst, and that
# order is the rank: a test reported more than once (a failing teardown after a
# passing call, two sessions, a forged line) keeps its worst outcome. Why this
# order: passed as written; passed against the expectation to fail; did not run;
# ran and failed, as expected; failed; could not even be set up, torn down or
# collected. The plugin's contract lists the same names in the same order.
if TYPE_CHECKING:
    Outcome = Literal["passed", "xpassed", "skipped", "xfailed", "failed", "error"]
else:
    Outcome = str
OUTCOMES: tuple[Outcome, ...] = ("passed", "xpassed", "skipped", "xfailed", "failed", "error")
_RANK: Mapping[Outcome, int] = {outcome: rank for rank, outcome in enumerate(OUTCOMES)}
# The four-way split JUnit XML makes: an xfail is skipped, a non-strict xpass passed.
_JUNIT: Mapping[Outcome, Outcome] = {"xfailed": "skipped", "xpassed": "passed"}

if TYPE_CHECKING:
    Kind = Literal["build", "test", "typecheck", "lint"]
else:
    Kind = str
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
    # The command lines of the processes still running in the judge's box when
    # the test command ended (gtd.auto.ratchet.leftovers); None where nobody
    # looked (unboxed, another command, a snapshot taken before gtd looked).
    left: tuple[str, ...] | None = None

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
    # Where each test that did not pass was skipped or marked to fail (``path:line``,
    # repository-relative when inside it): whose decision the skip was.
    skips: Mapping[str, str] = MappingProxyType({})

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


class Environment(NamedTuple):
    """What the baseline run said about the test interpreter (from the plugin)."""

    dirs: tuple[str, ...] = ()  # directories on its sys.path outside the repository
    shadowable: tuple[str, ...] = ()  # top-level module names a new file must not take
    plugin: bool = False  # whether the per-test plugin reported at all
    # Tamper evidence the baseline already showed ("kind|subject"): the project's own
    # set-up (a -p plugin, a late conftest), not a later change.
    evidence: tuple[str, ...] = ()
    # The plugins the baseline run loaded that implement any hook (their files,
    # "./"-relative inside the checkout): None for a snapshot taken before they
    # were recorded. (Snapshots before 2026-12 kept only those with report hooks,
    # as ``report_plugins``: that narrower list is not read.)
    plugins: tuple[str, ...] | None = None
    # Each hook a plugin from the checkout's own files implemented ("<hook>
    # <label>", the label as in ``plugins``): the product's support module a
    # conftest loads is code the change may edit, and a hook it gains reaches
    # every old test. None: a snapshot taken before they were recorded.
    hooks: tuple[str, ...] | None = None
    # The tamper-evidence kinds the baseline's plugin could report (contract.py):
    # a later gtd's plugin may report kinds this baseline never looked for (the
    # project's own suite shows them too), so `begin` takes a new baseline when
    # they differ. None: a snapshot taken before they were recorded.
    kinds: tuple[str, ...] | None = None


class Snapshot(NamedTuple):
    """What the ratchet protects and the baseline it compares against.

    ``head``: the commit the snapshot describes (the cycle base it guards).
    ``files``: the snapshot test files, path → git blob id: any change is a
    modification.
    ``doctests``: modules whose only tests are doctests, path → {doctest name →
    digest of its docstring}: the code around them may change, the examples not.
    ``protected``: protected test configuration, path → digest of the part that
    governs tests ("" when the file exists but has no such part).
    ``collected``: the test files came from the runner's own collection (pytest),
    not only from name patterns.
    """

    head: str = ""
    files: Mapping[str, str] = MappingProxyType({})
    protected: Mapping[str, str] = MappingProxyType({})
    baseline: RunResult = RunResult()
    doctests: Mapping[str, Mapping[str, str]] = MappingProxyType({})
    collected: bool = False
    environment: Environment = Environment()
    accepted: str | None = None  # baseline problems the person accepted at setup

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
        for run in self.baseline.commands:
            if run.timed_out or run.missing is not None:
                return f"baseline {command_reason(run)}"
        test = self.baseline.command("test")
        if test is not None and not test.ok and self.baseline.tests is None and self.files:
            return f"baseline {command_reason(test)}, with no per-test results (JUnit XML)"
        return None

    @property
    def test_paths(self) -> list[str]:
        """Every file whose tests the snapshot protects, sorted."""
        return sorted({*self.files, *self.doctests})


class FileHashes(NamedTuple):
    """The candidate tree as the integrity check sees it (all read from git objects).

    ``files``: each snapshot test file's blob id now, None when it is gone.
    ``new_files``: test files not in the snapshot (path → blob id), to spot renames.
    ``protected``: protected configuration found now (path → digest, as in Snapshot).
    ``doctests``: each snapshot doctest module's docstring digests now (None: gone).
    ``new_modules``: Python modules the candidate adds in a folder without an
    ``__init__.py`` (a folder that may be on the import path: the root, a test
    folder pytest inserts, ``src``).
    ``submodules``: submodule paths whose recorded commit changed, appeared or went.
    """

    files: Mapping[str, str | None]
    new_files: Mapping[str, str]
    protected: Mapping[str, str]
    doctests: Mapping[str, Mapping[str, str] | None] = MappingProxyType({})
    new_modules: tuple[str, ...] = ()
    submodules: tuple[str, ...] = ()


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


# How long the last line of a failed command's output may be in its reason.
_LINE_MAX = 120


def command_reason(run: CommandRun) -> str:
    """Why one command run counts as a failure, in a few words."""
    label = LABELS[run.kind]
    if run.timed_out:
        return f"timeout after {run.timeout_s:g} s ({label})"
    if run.missing is not None:
        return f"{label} not found: {run.missing}"
    head = "test command failed" if run.kind == "test" else f"{run.kind} failed"
    last = _last_line(run.output_tail)
    return f"{head} (exit {run.exit_code})" + (f": {last}" if last else "")


def _last_line(text: str) -> str:
    for raw in reversed(text.splitlines()):
        line = raw.strip().strip("=").strip()
        if line:
            return line if len(line) <= _LINE_MAX else line[: _LINE_MAX - 1] + "…"
    return ""
