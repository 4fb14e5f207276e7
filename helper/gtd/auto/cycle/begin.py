"""`gtd cycle begin` (gtd.auto.cycle.engine): what the tick should do. It sweeps
what a killed helper left, judges or recovers a cycle no one will end, takes the
baseline again after a person's commit, and for the next task seals the journal
and writes the brief, only ever on a clean tree."""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING

from gtd import paths, session
from gtd.auto import breaker, harness, records, state
from gtd.auto.config import AutoConfig
from gtd.auto.cycle import answers, yours
from gtd.auto.cycle.answers import Answer
from gtd.auto.cycle.end import Ending
from gtd.auto.cycle.steps import uncommitted
from gtd.auto.cycle.worker import fork
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord, Memory
from gtd.auto.plan import Plan, Task
from gtd.auto.rendering import notify as _notify
from gtd.auto.rendering import render, render_report, rendered_count
from gtd.auto.state import State, require_setup, sealed_config
from gtd.errors import RepoError
from gtd.fsio import TEMP_MARK, atomic_write, locked, temp_owner
from gtd.git_locks import stale_locks
from gtd.git_parse import WorkTree
from gtd.processes import alive

if TYPE_CHECKING:
    from typing import Any

    from gtd.session import Session

# How long `begin` waits for a snapshot refresh before answering busy: an injected
# tick command has two minutes in Claude Code.
_REFRESH_WAIT_S = 90.0
# The temp file of an atomic write of .claude/settings.local.json (gtd.auto.sandbox).
_SETTINGS_TEMP = f".settings.local.json{TEMP_MARK}"


class Beginning(Ending):
    """`begin`; it may judge (`end`'s hand-over) or recover what a tick left."""

    def begin(self, asker: Session | None = None) -> Answer:
        """``asker``: the Claude Code session this command runs under (gtd.session
        .current), recorded in the journal of a cycle it starts; None for `gtd loop`
        and commands outside a session."""
        self._asker = asker
        answer, child = self._begin_once()
        if child is None:
            return answer
        # A snapshot refresh or a check started: wait for it a while (a tick's
        # injected command may take two minutes), then answer as if it had never
        # been needed.
        st = state.read(self.git)
        deadline = time.monotonic() + min(sealed_config(st).wait_s, _REFRESH_WAIT_S)
        while time.monotonic() < deadline:
            done, _ = os.waitpid(child, os.WNOHANG)
            if done:
                again, started = self._begin_once()
                return again if started is None else answer
            time.sleep(0.02)
        return answer

    def _begin_once(self) -> tuple[Answer, int | None]:
        """One pass of `begin` under the lock; the pid of a refresh worker it
        started, if it did."""
        with locked(self._lock):
            self._leftovers()
            redirected = self._take_back_common_dir()
            st, repaired = self._read_repairing()
            require_setup(self.root, st)
            _notify(self.root, st)  # what a crash left untold
            state.adopt_journal(self.root, st)
            recovered: str | None = None
            if st.journal is not None and self._unattended(st.journal):
                why = redirected or (repaired[0] if repaired else None)
                st, child, recovered = self._judge_now(st, why)
                if child is not None:
                    assert st.journal is not None
                    return answers.judging(st.journal), child
            if st.journal is not None:
                if self._live(st.journal, sealed_config(st)):
                    return self._with_previous(st, answers.busy(st.journal)), None
                st, recovered = self._recover(st)
                if st.journal is not None and st.journal.blocked:
                    return answers.stopped(st.journal), None
            if st.records and rendered_count(self.root) != len(st.records):
                from gtd.auto import plan_file

                render(self.root, st, plan_file.load(self.root)[1], self.now)
            from gtd.auto.cycle import waves

            st, waiting, settled = waves.settle(self, st)
            recovered = recovered or settled
            answer, child = (waiting, None) if waiting is not None else self._begin_clean(st)
            answer = self._with_previous(st, answer)
        if recovered:
            answer["recovered"] = recovered
        return answer, child

    def _leftovers(self) -> None:
        """Remove what a killed helper of ours left, and nothing else: its
        atomic-write temp files beside PLAN.md, config.yaml and the sandbox
        settings (gtd.auto.sandbox), and git lock files
        its killed git children left in the git directory. The journal mirror's
        temp files are state.adopt_journal's, once the sealed state is read: one
        may be the mirror a killed `begin` had not yet put in place."""
        claude = self.root / ".claude"
        for folder in (self.root, self.root / paths.STATE_DIR, claude):
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                if folder == self.root / paths.STATE_DIR and state.journal_temp(name):
                    continue
                # In .claude only the sandbox settings are the helper's to write.
                if folder == claude and not name.startswith(_SETTINGS_TEMP):
                    continue
                pid = temp_owner(name)
                if pid is not None and not alive(pid):
                    with contextlib.suppress(OSError):
                        os.unlink(folder / name)
        dot = self.root / ".git"
        if dot.is_dir():
            stale_locks(dot)

    def _unattended(self, journal: Journal) -> bool:
        """A cycle in its agent phase that no agent works on any more: the Claude
        Code session that began it is gone, or is the one asking (its ticks run one
        after another, each implementer in the foreground, so the tick that began
        it is over). A cycle begun outside a session, or by another that still
        runs, may have an agent at work: it waits for the agent timeout."""
        if journal.phase != "agent" or journal.kind == "baseline" or journal.wave is not None:
            return False
        recorded = session.from_json(journal.session)
        if recorded is None:
            return False
        return session.relation(recorded, self._asker) in ("gone", "same")

    def _judge_now(self, st: State, redirected: str | None) -> tuple[State, int | None, str | None]:
        """Judge an unattended cycle as its `gtd cycle end` would have: the state
        and the pid of the worker that judges it; or, for a cycle whose state was
        tampered with or whose repository was redirected, the state after the
        revert and what was done (``recovered:``)."""
        st, relinked = self._relinked(st)
        if st.journal is None:  # the repository itself has no cycle in flight
            return st, None, None
        current = st.journal
        held = None if redirected or relinked else self._pausing(st, current, None)
        if held is not None:  # its turn died of the harness: a pause, not a verdict
            st, recovered = self._recover(held)
            return st, None, recovered
        st, _, child = self._hand_over(
            st, current, redirected or relinked, learning=None, detach=True
        )
        if child is not None:
            return st, child, None
        st, recovered = self._recover(st)  # the revert sealed, finished here
        return st, None, recovered

    def _live(self, journal: Journal, config: AutoConfig) -> bool:
        if journal.phase == "agent" and journal.wave is not None:
            return alive(journal.pid)  # its `end` took it (gtd.auto.cycle.wave_landing)
        if journal.phase == "agent":
            return self.now.epoch - journal.started_epoch < config.agent_timeout_minutes * 60
        if journal.phase == "checking":
            return alive(journal.pid)
        # committing / reverting only ever appear under the lock we now hold, so a
        # journal left in those phases belongs to a process that died mid-way.
        return False

    def _begin_clean(self, st: State) -> tuple[Answer, int | None]:
        from gtd.auto import next_task, plan_file

        config = sealed_config(st)
        _, the_plan = plan_file.load_valid(self.root)
        mem = records.fold(st.records)
        pending = [t.id for t in the_plan.pending]
        trip = breaker.check(mem, config.circuit_breaker_threshold, pending)
        if trip is not None:
            return answers.halted(trip), None
        from gtd.auto import pause

        held = pause.current(mem, self.now.epoch)
        if held is not None:
            return answers.paused(held), None
        tree = self.git.state()
        if tree.head is None:
            raise RepoError("the repository has no commits", "commit once, then run again")
        if tree.branch is None:
            raise RepoError(
                "HEAD is detached: a cycle's commits would land on no branch",
                "check out the loop's branch (`git switch <branch>`), then run again",
            )
        dirty = uncommitted(tree)
        if dirty:
            advice = _install_metadata(tree)
            # A night of such ticks changes nothing: the report says why.
            render_report(self.root, st, the_plan, self.now, waiting=_waiting(dirty, advice))
            return answers.dirty(dirty, advice), None
        assert st.summary is not None
        from gtd.auto.cycle import seals

        # Before a person's commit is taken as the new baseline: that baseline
        # would be measured in the changed environment, and accept it unseen.
        moved = seals.environment_changes(st.summary, st.summary.get("environment_dirs") or [])
        if moved:
            return self._halt_on_environment(st, mem, moved[0]), None
        if tree.head != st.summary.get("head"):
            return self._refresh(st, tree.head, tree.branch)
        from gtd.auto.ratchet.contract import EVIDENCE_KINDS
        from gtd.auto.ratchet.doctests import FORMAT as DOCTEST_DIGEST

        if (
            st.summary.get("evidence_kinds") != list(EVIDENCE_KINDS)
            or st.summary.get("plugin_hooks") is not True
            or st.summary.get("doctest_digest") != DOCTEST_DIGEST
        ):
            return self._refresh(st, tree.head, tree.branch, upgraded=True)
        state.mend_snapshot_mirror(self.root, self.git, st)
        pick = next_task.pick(the_plan)
        shaped = next_task.answer(the_plan, pick)
        if shaped["status"] == "complete":
            return answers.complete(shaped["done"]), None
        if shaped["status"] == "blocked":
            return answers.blocked(shaped["blocked"]), None
        assert pick.task is not None
        from gtd.auto.cycle import ceiling

        st, halt, warning = ceiling.gate(self.root, self.git, st, pick.task.id, self.now)
        if halt is not None:
            return halt, None
        if (self.parallel or config.parallel) > 1:
            from gtd.auto.cycle import waves

            started = waves.start(self, st, the_plan, mem, tree.head, tree.branch)
            if started is not None:
                if warning:
                    started["budget"] = warning
                return started, None
        answer = self._start(st, the_plan, pick.task, mem, where=(tree.head, tree.branch))
        if warning:
            answer["budget"] = warning
        return answer, None

    def _halt_on_environment(self, st: State, mem: Memory, change: str) -> Answer:
        """The loop halted: the test environment is not the one the baseline ran
        in. A change a cycle made to it (a `.pth`, a library edited where it lies,
        a linked folder) is not the repository's, so its revert leaves it in
        place, and every later cycle would be judged under it; so would one a
        process left running made between cycles. A person decides: undo it, or
        keep it and take the baseline again."""
        from gtd.auto import memory

        reason = (
            f"test environment changed since the baseline was taken: {change} (put the "
            "environment as you want it, then take the baseline again: `gtd ratchet snapshot`)"
        )
        last = memory.next_cycle_number(mem) - 1
        halt = breaker.forced_halt("baseline", last, reason, self.now.iso)
        return self._force_halt(st, halt, "halted: the test environment changed")

    def _start(
        self, st: State, the_plan: Plan, task: Task, mem: Memory, *, where: tuple[str, str]
    ) -> Answer:
        from gtd.auto import brief, memory
        from gtd.auto.cycle import seals
        from gtd.templates import template

        assert st.summary is not None
        head, branch = where
        config = sealed_config(st)
        number = memory.next_cycle_number(mem)
        test_command = config.test_command or "(no test command detected)"
        bootstrap = bool(st.summary.get("bootstrap")) and not any(
            r.task == paths.BOOTSTRAP and r.status == "passed" for r in mem.cycles
        )
        env_dirs = st.summary.get("environment_dirs") or []
        sealed = seals.take(self.git, env_dirs)
        pinned = yours.begin(self.git, sealed)  # the person's refs, stash, ignored files
        common: dict[str, Any] = {
            "cycle": number,
            "base": head,
            "branch": branch,
            "started_at": self.now.iso,
            "started_epoch": self.now.epoch,
            "seals": sealed,
            "objects_since": state.objects_checked(st),
            "session": None if self._asker is None else session.to_json(self._asker),
            "claude_session": None if self._asker is None else harness.session_id(),
        }
        if bootstrap:
            files = sorted({f for t in the_plan.tasks for f in t.files})
            text = brief.render_bootstrap(
                template("brief-bootstrap.md"), cycle=number, files=files, test_command=test_command
            )
            entry = Journal(
                task=paths.BOOTSTRAP,
                title="baseline tests",
                kind="bootstrap",
                spike=False,
                **common,
            )
            shown: list[str] = []
        else:
            text = brief.render_task(
                template("brief.md"),
                cycle=number,
                task=task,
                failures=memory.failures_for(mem, task.id),
                learnings=[f"{item.spike}: {item.insight}" for item in memory.learnings(mem)],
                test_command=test_command,
                declared=config.protect,
            )
            entry = Journal(task=task.id, title=task.title, kind="task", spike=task.spike, **common)
            shown = list(task.files)
        atomic_write(self.root / paths.BRIEF, text)
        # The mirror is on disk before the seal: a kill between the two leaves it
        # in its temp file for the next command to put in place (state
        # .adopt_journal), not missing, which `end`'s strict check reads as
        # tampering.
        staged = state.stage_journal(self.root, entry)
        try:
            st = state.write(
                self.git, st, f"cycle {number} ({entry.task}): begin", journal=entry, pin=head,
                others={yours.COPY: pinned},
            )  # fmt: skip
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(staged.tmp)
            raise
        state.write_mirrors(self.root, st, staged=staged)
        self._show(st, the_plan, mem)
        return answers.task(entry, shown, text)

    def _refresh(
        self, st: State, head: str, branch: str, *, upgraded: bool = False
    ) -> tuple[Answer, int]:
        """HEAD moved with no cycle in flight: commits a person made (or, with
        ``upgraded``, the snapshot was taken by a gtd whose plugin looked for less
        tamper evidence than this one's). Take a new snapshot and baseline in a
        worker (`begin` waits for it a while, outside the lock) and answer busy
        meanwhile."""
        from gtd.auto.baseline import TAKING
        from gtd.auto.config import load_auto_config

        load_auto_config(self.root)  # a broken config is the person's to fix: say so now
        short = self.git.short(head)
        why = (
            f"snapshot refreshed at {short}: this gtd's test plugin looks for more"
            " than the one that took the baseline"
            if upgraded
            else f"snapshot refreshed after {short} by a person"
        )
        entry = Journal(
            cycle=0,
            task="",
            title=why + TAKING,
            kind="baseline",
            spike=False,
            base=head,
            branch=branch,
            started_at=self.now.iso,
            started_epoch=self.now.epoch,
            phase="checking",
        )
        st = state.write(self.git, st, f"refresh after {short}", journal=entry)
        from gtd.auto import baseline

        child = fork(self.root, lambda: baseline.refresh_worker(self.root))
        entry = entry.evolve(pid=child)
        st = state.write(self.git, st, f"refresh after {short}: worker {child}", journal=entry)
        state.write_mirrors(self.root, st)
        self._show(st)
        return answers.refreshing(why), child

    def _with_previous(self, st: State, answer: Answer) -> Answer:
        """Add the last cycle's verdict to the first `begin` answer after it came in:
        its `end` may have answered `checking` (the tests outlived its wait), or been
        moved to the background by the harness, its answer read by no one."""
        last = next((r for r in reversed(st.records) if isinstance(r, CycleRecord)), None)
        if last is None or last.cycle <= self._reported():
            return answer
        self._mark_reported(last.cycle)
        answer["previous"] = answers.previous(last)
        return answer


def _waiting(dirty: list[str], advice: str | None) -> str:
    """The report's State while ticks answer `dirty`."""
    from gtd.auto.report_text import id_list

    what = (
        f"uncommitted changes no cycle made ({id_list(dirty)}): each tick starts nothing "
        "until they are committed or stashed."
    )
    return f"{what} {advice}" if advice else what


def _install_metadata(tree: WorkTree) -> str | None:
    """The advice on tracked files among the changes that the project's install
    regenerates (a ``*.egg-info/``): they stay the person's to commit or untrack."""
    from gtd.auto import install_metadata

    found = install_metadata.folders(e.path for e in tree.entries if not e.untracked)
    return install_metadata.advice(found) if found else None
