"""An in-memory stand-in for the edge: a repository as dicts, the step-mode actions
performed on it, and the mutators' fixpoint loop. Lets the tests walk whole
workflows through the pure core without git."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field

from gtd.step.actions import (
    SQUASH_TEMPLATE,
    Action,
    CaptureCheck,
    ClosePackage,
    HealthCheck,
    MakeCommit,
    RunCheck,
    RunTests,
    Squash,
    WriteSquashTemplate,
)
from gtd.step.events import Change, Commit, Invoker, LineDiff, WorkingTree
from gtd.step.machine import Resolution, resolve
from gtd.step.settings import StepConfig
from gtd.step.states import State
from gtd.step.steering import (
    ERRORS,
    FEEDBACK,
    HEALTH,
    REVIEW,
    SQUASH_MSG,
    STEERING_FILES,
    packages_from_paths,
)

MERGE_BASE = "b" * 40
HOPS = 100


def _changes(old: dict[str, str], new: dict[str, str]) -> tuple[Change, ...]:
    out = []
    for path in sorted(old.keys() | new.keys()):
        if path not in old:
            out.append(Change("A", path))
        elif path not in new:
            out.append(Change("D", path))
        elif old[path] != new[path]:
            out.append(Change("M", path))
    return tuple(out)


def _line_diff(old: str, new: str) -> LineDiff:
    removed, added = [], []
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return LineDiff(tuple(removed), tuple(added))


@dataclass
class Outcome:
    commits: list[str]
    state: State
    refusal: str | None


@dataclass
class Sim:
    config: StepConfig = field(default_factory=StepConfig)
    files: dict[str, str] = field(default_factory=lambda: {"README.md": "hello\n"})
    tests: list[bool] = field(default_factory=list)  # scripted results, True = green
    oracle: Callable[[], bool] | None = None  # asked once the script runs out
    commits: list[Commit] = field(default_factory=list)
    snapshots: dict[str, dict[str, str]] = field(default_factory=dict)
    made: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.snapshots[MERGE_BASE] = {}
        self.commit("chore: init")

    # -- the repository ------------------------------------------------------------

    @property
    def head_files(self) -> dict[str, str]:
        return self.snapshots[self.commits[-1].sha] if self.commits else {}

    def commit(self, subject: str) -> None:
        old = self.snapshots[self.commits[-1].sha] if self.commits else {}
        changes = _changes(old, self.files)
        review = None
        if any(c.path == REVIEW and c.status == "M" for c in changes):
            review = _line_diff(old[REVIEW], self.files[REVIEW])
        sha = format(len(self.snapshots) + 1, "040x")
        parent = self.commits[-1].sha if self.commits else MERGE_BASE
        self.commits.append(Commit(sha, subject, parent, changes, review))
        self.snapshots[sha] = dict(self.files)
        self.made.append(subject)

    def tree(self) -> WorkingTree:
        return WorkingTree(
            present=frozenset(p for p in STEERING_FILES if p in self.files),
            dirty=_changes(self.head_files, self.files),
            packages=packages_from_paths(self.files),
            feedback_text=self.files.get(FEEDBACK),
            squash_msg_text=self.files.get(SQUASH_MSG),
        )

    def resolve(self, invoker: Invoker = None) -> Resolution:
        return resolve(self.commits, self.tree(), self.config, invoker)

    @property
    def subjects(self) -> list[str]:
        return [c.subject for c in self.commits]

    # -- the edge --------------------------------------------------------------------

    def _run(self) -> bool:
        if self.tests:
            return self.tests.pop(0)
        assert self.oracle is not None, "the scenario ran out of scripted test results"
        return self.oracle()

    def perform(self, action: Action) -> None:
        if isinstance(action, MakeCommit):
            for path in action.removes:
                self.files.pop(path, None)
            self.commit(action.subject)
        elif isinstance(action, RunTests):
            self.files.pop(FEEDBACK, None)
            if self._run():
                self.commit("gtd: tests green")
            else:
                self.files[ERRORS if action.cap_reached else FEEDBACK] = "FAILED test_x\n"
                self.commit("gtd: errors")
        elif isinstance(action, ClosePackage):
            self.files.pop(FEEDBACK, None)
            prefix = f".gtd/{action.package}/"
            for path in [p for p in self.files if p.startswith(prefix)]:
                del self.files[path]
            self.commit("gtd: package done")
        elif isinstance(action, WriteSquashTemplate):
            self.files[SQUASH_MSG] = SQUASH_TEMPLATE
            self.commit("gtd: squash template")
        elif isinstance(action, Squash):
            message = self.files.pop(SQUASH_MSG)
            keep = next(i for i, c in enumerate(self.commits) if c.sha == action.base)
            del self.commits[keep + 1 :]
            self.commit(message.splitlines()[0])
        elif isinstance(action, HealthCheck):
            if not self._run():
                if action.cap_reached:
                    self.files.pop(HEALTH, None)
                self.files[ERRORS if action.cap_reached else HEALTH] = "FAILED test_y\n"
                self.commit("gtd: health-check")
            elif action.commit_green:
                self.files.pop(HEALTH, None)
                self.commit("gtd: tests green")
        elif isinstance(action, RunCheck):
            self.run_check_script()
        elif isinstance(action, CaptureCheck):
            if action.moves_to is not None:
                self.files[action.moves_to] = self.files.pop(FEEDBACK)
            for path in action.removes:
                self.files.pop(path, None)
            self.commit(action.subject)
        else:  # pragma: no cover - exhaustive
            raise AssertionError(action)

    def run_check_script(self) -> None:
        """What gtd's check script does: FEEDBACK.md with the output when red,
        nothing when green (and never a stale FEEDBACK.md)."""
        self.files.pop(FEEDBACK, None)
        if not self._run():
            self.files[FEEDBACK] = "FAILED test_z\n"

    def step(self, invoker: Invoker) -> Outcome:
        """``gtd step`` / ``gtd step-agent`` / ``gtd step check``: gather, resolve,
        act, to a fixpoint. After the check script ran (the idle carve-out) the loop
        goes on as the check, its capture a first hop of its own (as the edge)."""
        self.made = []
        first = True
        for _ in range(HOPS):
            r = self.resolve(invoker)
            if r.refusal is not None:
                return Outcome(self.made, r.state, r.refusal if first else None)
            if r.action is None or (not first and not r.continues_chain):
                return Outcome(self.made, r.state, None)
            before = (self.subjects, [c.sha for c in self.commits], dict(self.files))
            self.perform(r.action)
            if isinstance(r.action, RunCheck):
                invoker, first = "check", True
                continue
            first = False
            if (self.subjects, [c.sha for c in self.commits], self.files) == before:
                return Outcome(self.made, r.state, None)
        raise AssertionError(f"edge loop exceeded {HOPS} hops without reaching fixpoint")
