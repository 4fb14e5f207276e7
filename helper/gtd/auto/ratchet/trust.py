"""Whether a run's results can be taken at their word: what the plugin saw
(tampering, configuration read from outside the room, a report that did not
finish), plugins the baseline did not load, and files of the judged tree
written while the commands ran."""

from __future__ import annotations

import os
import re
from pathlib import Path

from gtd.auto.config import AutoConfig
from gtd.auto.ratchet import box, hooks_seen, room
from gtd.auto.ratchet.model import CommandRun, Snapshot
from gtd.auto.ratchet.results import Report
from gtd.git import Git

# Evidence a new test may make of itself in its session, which the old tests' is
# not: code loaded from outside (a test of a plugin loader writes a module to its
# temporary folder), its own item handed another function to run (a project's
# conftest may wrap the tests it collects).
_NEW_TESTS_OWN = frozenset({"outside-module", "replaced-test"})


def report_problems(
    report: Report,
    rm: room.Room,
    snapshot: Snapshot,
    *,
    new_tests: bool = False,
    test: CommandRun | None = None,
    config: AutoConfig | None = None,
) -> list[str]:
    """What the plugin saw that makes its results untrustworthy: tampering with the
    reporting (not seen at the baseline), configuration or conftests read from
    outside the room, a report that did not finish. In the new tests' session,
    code loaded from outside is theirs to load (a test of a plugin loader writes
    a module to its temporary folder): it cannot reach the old tests."""
    out: list[str] = []
    known = set(snapshot.environment.evidence)
    # A file of the room is named as the repository's: the room is gone by the
    # time a person reads the reason.
    room_tree, live = f"{rm.tree}{os.sep}", f"{rm.live}{os.sep}"
    for ev in report.evidence:
        if f"{ev.kind}|{ev.subject}" in known or (new_tests and ev.kind in _NEW_TESTS_OWN):
            continue
        where = f" ({ev.detail.replace(room_tree, live)})" if ev.detail else ""
        if ev.kind == "outside-module":
            out.append(
                "the tests ran code from outside the repository and the test "
                f"environment: {ev.subject}{where}"
            )
        elif ev.kind == "environment-file":
            out.append(
                f"test environment changed since the cycle began: {ev.detail} "
                f"(module {ev.subject}), run as code by the tests"
            )
        else:
            out.append(f"test reporting tampered with: {ev.subject}{where}")
    for session in report.sessions:
        for path in (session.inipath, *session.conftests):
            if path and os.path.isabs(path) and not _inside(path, rm.tree):
                out.append(f"pytest read configuration outside the clean room: {path}")
    if report.source == "plugin" and report.problems:
        ended = f": {box.cause(test, box.plan(config))}" if test and config is not None else ""
        first = _SESSION_ID.sub(r"\1", report.problems[0])
        out.append(f"test results incomplete: {first}{_stopped_at(report)}{ended}")
    return out


# The plugin's name for a test process ("pytest session 2-a06e34"): the check log
# keeps it; in a reason it is a word a person can do nothing with.
_SESSION_ID = re.compile(r"^(pytest|unittest) session \S+")


def _stopped_at(report: Report) -> str:
    """Where a pytest that did not finish stopped: the first collected test with no
    result (the one running when the process ended), or collection itself."""
    if not report.items:
        return " (stopped before it had collected the tests)"
    for item in report.items:
        if not item.deselected and item.node_id not in report.tests:
            return f" (stopped at {item.node_id})"
    return ""


def _inside(path: str, folder: Path) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base + os.sep)


def untrusted(
    git: Git, rm: room.Room, snapshot: Snapshot, report: Report, submodules: frozenset[str]
) -> bool:
    """Whether a run made only to excuse failures or skips (run again, or on the
    base commit) cannot be taken at its word: the same reasons that refuse the
    first run, or a file of the checkout written while it ran."""
    problems = report_problems(report, rm, snapshot) + hooks_seen.new_plugins(report, rm, snapshot)
    return bool(problems or room.touched(git, rm, submodules))


def written(git: Git, rm: room.Room, submodules: frozenset[str]) -> list[str]:
    """A file of the judged tree written in the room while the commands ran: the
    code under test swapped under the tests' feet (by a process the agent left
    running, say), or a suite that rewrites its own tracked files. Either way
    the run did not judge the candidate."""
    return [
        f"file changed in the clean room during the test run: {p}"
        for p in room.touched(git, rm, submodules)[:1]
    ]
