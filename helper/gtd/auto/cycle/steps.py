"""What every transition of a cycle shares (gtd.auto.cycle.engine): the repository,
the clock, the lock, reading the sealed state (repairing what stops git reading
it), the report's line of the work in flight, and which verdict was told.

The transitions build on this in layers, each on the one below, so none imports
another back: recovery (finishing a cycle, every step idempotent), end (judging,
through the worker), begin (which may judge or recover what a tick left), and the
engine's ``Cycle`` on top."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import paths
from gtd.auto import breaker, records, state
from gtd.auto.cycle import answers
from gtd.auto.cycle.answers import Answer
from gtd.auto.memory import Halt, Memory
from gtd.auto.plan import Plan
from gtd.auto.rendering import render, render_report
from gtd.auto.state import State, sealed_config
from gtd.clock import Now
from gtd.errors import GitError, InputError, RepoError
from gtd.fsio import atomic_write, read_bytes, state_lock
from gtd.git import Git
from gtd.git_parse import WorkTree
from gtd.names import readable

if TYPE_CHECKING:
    from gtd.session import Session


class Steps:
    """The ground of a cycle's transitions: ``root``, ``now``, its hardened git."""

    def __init__(self, root: Path, now: Now) -> None:
        self.root = root
        self.now = now
        self.git = Git(root, hardened=True)
        self._asker: Session | None = None  # who runs `begin` (see begin)
        # How many tasks a wave may start, where the caller says (`gtd loop
        # --parallel N`); None: the sealed config's `parallel:`.
        self.parallel: int | None = None

    @property
    def _lock(self) -> Path:
        return state_lock(self.root)

    def _read_repairing(self, *, snapshot: bool = False) -> tuple[State, list[str]]:
        """The sealed state (its snapshot too with ``snapshot``); when git cannot
        read the repository at all, the files a cycle in flight changed that stop
        it are put back first (gtd.auto.cycle.seals.repair_unreadable; said on
        stderr), and the reasons returned."""
        from gtd.auto.cycle import seals

        try:
            return state.read(self.git, snapshot=snapshot), []
        except (GitError, RepoError):
            repaired = seals.repair_unreadable(self.root)
            if not repaired:
                raise
        for why in repaired:
            print(f"gtd: {readable(why)}", file=sys.stderr)
        return state.read(self.git, snapshot=snapshot), repaired

    def _take_back_common_dir(self) -> str | None:
        """A ``commondir`` file that redirects the repository, set aside before git
        reads anything (gtd.auto.cycle.seals); said on stderr."""
        from gtd.auto.cycle import seals

        why = seals.take_back_common_dir(self.root)
        if why is not None:
            print(f"gtd: {readable(why)}", file=sys.stderr)
        return why

    def _force_halt(self, st: State, halt: Halt, subject: str) -> Answer:
        """Record ``halt`` (a forced one: it holds until `gtd cycle reset`), render
        memory and the report, and answer it."""
        from gtd.auto import plan_file

        st = state.write(self.git, st, subject, append=[halt])
        state.write_mirrors(self.root, st)
        _, the_plan = plan_file.load(self.root)
        render(self.root, st, the_plan, self.now)
        mem = records.fold(st.records)
        trip = breaker.check(
            mem, sealed_config(st).circuit_breaker_threshold, [t.id for t in the_plan.pending]
        )
        assert trip is not None
        return answers.halted(trip)

    def _show(self, st: State, the_plan: Plan | None = None, mem: Memory | None = None) -> None:
        """Put the work now in flight at the top of the report: someone reading it
        during a long cycle sees what runs, not only what ran."""
        if the_plan is None:
            from gtd.auto import plan_file

            try:
                the_plan = plan_file.load(self.root)[1]
            except InputError:  # the agent's doing, say (the verdict puts it back)
                return
        render_report(self.root, st, the_plan, self.now, mem=mem)

    def _reported(self) -> int:
        try:
            return int(read_bytes(self.root / paths.REPORTED).strip() or 0)
        except (OSError, ValueError):
            return 0

    def acknowledge(self, cycle: int) -> None:
        """The caller showed cycle `cycle`'s verdict itself (`gtd loop` prints what
        `end` answered in-process): the next `begin` does not repeat it."""
        self._mark_reported(cycle)

    def _mark_reported(self, cycle: int) -> None:
        with contextlib.suppress(OSError):
            atomic_write(self.root / paths.REPORTED, f"{cycle}\n")


def uncommitted(tree: WorkTree) -> list[str]:
    """The working tree's uncommitted work: the helper's own files aside, untracked
    yet visible (a `.gitignore` negation a cycle committed), which are nobody's
    work; counted, they would stop every later cycle."""
    return [e.path for e in tree.entries if not (e.untracked and paths.is_private(e.path))]
