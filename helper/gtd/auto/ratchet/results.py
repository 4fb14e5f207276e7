"""What one test run reports, as values: per-test results, the items pytest
collected, the sessions that ran, and the tamper evidence they recorded.

Plain immutable NamedTuples, made by gtd.auto.ratchet.report_lines (the plugin's lines)
and gtd.auto.ratchet.junit (JUnit XML), put together by gtd.auto.ratchet.report_listener.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from gtd.auto.ratchet.model import Outcome, as_junit, rank
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Literal

    ItemKind = Literal["function", "doctest-module", "doctest-text", "other"]
else:
    ItemKind = str
ITEM_KINDS: tuple[ItemKind, ...] = ("function", "doctest-module", "doctest-text", "other")

# Where the per-test results came from: the plugin's lines, JUnit XML (the plugin
# did not load, or another runner), or nowhere (the exit code alone decides).
if TYPE_CHECKING:
    Source = Literal["plugin", "junit", "none"]
else:
    Source = str


class Result(NamedTuple):
    """One test's outcome; for a skip where it was skipped (``path:line``,
    repository-relative when inside it) and why; for an xfail, why."""

    outcome: Outcome
    where: str | None = None
    reason: str | None = None


class Item(NamedTuple):
    """One item pytest collected: its node id and file (both repository-relative
    when inside the repository) and its kind. ``deselected``: collected, not run
    (``-k``, ``-m``, a plugin, or the run's selection). ``docstring``: for a
    module doctest, the sha256 of the examples pytest parsed from its docstring
    (gtd.auto.ratchet.doctests.examples_digest)."""

    node_id: str
    file: str
    kind: ItemKind
    deselected: bool = False
    docstring: str | None = None


class Evidence(NamedTuple):
    """A sign that something in the test process changed how tests are reported.
    ``kind`` is one of contract.EVIDENCE_KINDS; ``subject`` names what (a pytest
    function, a plugin, a module, a test); ``detail`` says where (a file)."""

    kind: str
    subject: str
    detail: str
    session: str


class Plugin(NamedTuple):
    """A registered plugin that implements a hook able to change a test's report.
    ``late``: registered after the session began (by a test, the code under test,
    or a conftest loaded during collection)."""

    name: str
    file: str | None
    hooks: tuple[str, ...]
    late: bool
    implements: tuple[str, ...] = ()  # every hook it implements, by the hook's name


class Environment(NamedTuple):
    """The interpreter a session ran in, as it saw itself at the end."""

    executable: str
    prefix: str
    base_prefix: str
    python: str
    path: tuple[str, ...]
    site: tuple[str, ...]
    pth: tuple[str, ...]  # the .pth files in the site directories
    pytest: str  # pytest's own file, and pluggy's
    pluggy: str


class Session(NamedTuple):
    """One pytest process that loaded the plugin (a controller, an xdist worker, or
    each pytest of a command that runs several)."""

    id: str
    pid: int
    worker: str | None
    rootpath: str  # pytest's rootdir
    inipath: str | None
    via: str  # "pipe", or "file" where the pipe was not inherited
    selected: bool | None  # the run's selection in force; None when none was asked
    ended: bool  # its end line arrived
    consistent: bool  # its end line's counts match the test lines read
    exit_status: int | None = None
    conftests: tuple[str, ...] = ()  # repository-relative when inside it
    plugins: tuple[Plugin, ...] = ()
    environment: Environment | None = None


class Report(NamedTuple):
    """Everything one test run reported."""

    source: Source
    tests: Mapping[str, Result]
    items: tuple[Item, ...] = ()
    sessions: tuple[Session, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    # Why the report cannot be taken at its word: a session that did not finish, lines
    # of a session that never started, counts that disagree, a selection not applied.
    problems: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Every session finished as the plugin wrote it (and any selection asked
        for was in force). JUnit XML cannot say, and counts as complete."""
        return not self.problems

    @property
    def outcomes(self) -> dict[str, Outcome] | None:
        """``{test id: outcome}``, or None when nothing reported per test."""
        if self.source == "none":
            return None
        return {test_id: result.outcome for test_id, result in self.tests.items()}

    @property
    def junit_outcomes(self) -> dict[str, Outcome] | None:
        """The outcomes as JUnit XML classifies them (an xfail is skipped, a
        non-strict xpass passed), or None when there are none or the report is not
        complete: what the verdict has always compared."""
        if self.source == "none" or not self.complete:
            return None
        return {test_id: as_junit(result.outcome) for test_id, result in self.tests.items()}


NO_REPORT = Report("none", {})


def worst(pairs: Iterable[tuple[str, Result]]) -> dict[str, Result]:
    """``{test id: result}``, the worst outcome winning (the first one on a tie)."""
    out: dict[str, Result] = {}
    for test_id, result in pairs:
        previous = out.get(test_id)
        if previous is None or rank(result.outcome) > rank(previous.outcome):
            out[test_id] = result
    return out
