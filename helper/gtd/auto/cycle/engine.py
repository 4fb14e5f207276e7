"""One auto-mode cycle (docs/commands.md, "The cycle"): begin, end, reset, and crash recovery.

`begin` answers what the tick should do and, for a task, seals the journal and
writes the brief. `end` hands the judging to a worker process of its own (its own
session, so it outlives the tool call that started it) and waits for the verdict
up to ``ratchet.wait_seconds``; the worker judges the candidate in the clean room,
then commits it or restores the base, and seals the record. A verdict that comes
later is reported by the next `begin` (``previous:``).

Crash safety rests on three facts: `begin` only starts a cycle on a clean tree,
so every change present at `end` is the cycle's own; a revert first stores the
whole working tree under refs/gtd/reverted/cycle-N; and each step of finishing is
sealed in the journal before the next, so a rerun (by `end` or by the next
`begin`) finishes the job. Everything a decision depends on is read from the
sealed state (gtd.auto.state), never from files the agent could edit.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

from gtd import paths, session
from gtd.auto import breaker, harness, records, state
from gtd.auto.config import AutoConfig
from gtd.auto.cycle import answers, pipes, yours
from gtd.auto.cycle.answers import Answer
from gtd.auto.cycle.worker import fork
from gtd.auto.faults import crash_point
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord, Halt, Memory
from gtd.auto.plan import Plan, Task
from gtd.auto.rendering import notify as _notify
from gtd.auto.rendering import render, render_report, rendered_count
from gtd.auto.state import State, require_setup, sealed_config
from gtd.clock import Now
from gtd.errors import (
    CommitBlocked,
    GitBlocked,
    GitError,
    GtdError,
    InputError,
    RepoError,
    StateError,
)
from gtd.fsio import (
    TEMP_MARK,
    atomic_write,
    locked,
    read_bytes,
    state_lock,
    temp_owner,
)
from gtd.git import Git, WorkTree, stale_locks
from gtd.names import readable
from gtd.proc import alive

TYPE_CHECKING = False  # typing's own to the type checker (see gtd.hints)
if TYPE_CHECKING:
    from typing import Any

    from gtd.auto.cycle.spent import Said
    from gtd.session import Session

# How long `begin` waits for a snapshot refresh before answering busy: an injected
# tick command has two minutes in Claude Code.
_REFRESH_WAIT_S = 90.0
# The temp file of an atomic write of .claude/settings.local.json (gtd.auto.sandbox).
_SETTINGS_TEMP = f".settings.local.json{TEMP_MARK}"


class Cycle:
    def __init__(self, root: Path, now: Now) -> None:
        self.root = root
        self.now = now
        self.git = Git(root, hardened=True)
        self._asker: Session | None = None  # who runs `begin` (see begin)

    @property
    def _lock(self) -> Path:
        return state_lock(self.root)

    # -- begin -----------------------------------------------------------------------

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
            answer, child = self._begin_clean(st)
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

    def _read_repairing(self) -> tuple[State, list[str]]:
        """The sealed state; when git cannot read the repository at all, the files
        a cycle in flight changed that stop it are put back first (gtd.auto.cycle
        .seals.repair_unreadable; said on stderr), and the reasons returned."""
        from gtd.auto.cycle import seals

        try:
            return state.read(self.git), []
        except (GitError, RepoError):
            repaired = seals.repair_unreadable(self.root)
            if not repaired:
                raise
        for why in repaired:
            print(f"gtd: {readable(why)}", file=sys.stderr)
        return state.read(self.git), repaired

    def _take_back_common_dir(self) -> str | None:
        """A ``commondir`` file that redirects the repository, set aside before git
        reads anything (gtd.auto.cycle.seals); said on stderr."""
        from gtd.auto.cycle import seals

        why = seals.take_back_common_dir(self.root)
        if why is not None:
            print(f"gtd: {readable(why)}", file=sys.stderr)
        return why

    def _unattended(self, journal: Journal) -> bool:
        """A cycle in its agent phase that no agent works on any more: the Claude
        Code session that began it is gone, or is the one asking (its ticks run one
        after another, each implementer in the foreground, so the tick that began
        it is over). A cycle begun outside a session, or by another that still
        runs, may have an agent at work: it waits for the agent timeout."""
        if journal.phase != "agent" or journal.kind == "baseline":
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

    def _pausing(self, st: State, current: Journal, told: harness.Stop | None) -> State | None:
        """The state with ``current`` sealed as paused, when the harness stopped its
        agent (gtd.auto.cycle.paused); None when it did not, or when the helper's
        state was tampered with (that is a halt, whatever stopped the agent)."""
        from gtd.auto.cycle import paused

        stop = paused.detect(current, self.now.epoch, told)
        if stop is None or state.tampered(self.root, self.git, st, strict=True):
            return None
        current = paused.sealed(current, stop)
        return state.write(self.git, st, f"cycle {current.cycle}: paused", journal=current)

    def _relinked(self, st: State) -> tuple[State, str | None]:
        """A `.git` the cycle in its agent phase replaced with a link elsewhere, put
        back (`end`'s first step): the state, read again from the repository
        itself when it was, and what was put back."""
        from gtd.auto.cycle import seals

        assert st.journal is not None
        relinked = seals.restore_dot_git(self.root, st.journal.seals or {})
        if relinked is None:
            return st, None
        print(f"gtd: {readable(relinked)}", file=sys.stderr)
        return state.read(self.git), relinked

    def _hand_over(
        self,
        st: State,
        current: Journal,
        redirected: str | None,
        *,
        learning: str | None,
        detach: bool,
    ) -> tuple[State, Journal, int | None]:
        """The agent's turn is over: seal the cycle as ``checking`` and, with
        ``detach``, start the worker that judges it (its pid returned; 0 without).
        State the agent tampered with, or a repository it redirected, is a revert
        instead, sealed as ``reverting`` for the caller to finish (None returned)."""
        tampered = state.tampered(self.root, self.git, st, strict=True)
        if tampered or redirected:
            current = current.evolve(
                phase="reverting",
                passed=False,
                reason=f"helper state modified: {tampered[0]}" if tampered else redirected,
                halt=bool(tampered),
            )
            st = state.write(self.git, st, f"cycle {current.cycle}: revert", journal=current)
            return st, current, None
        current = current.evolve(phase="checking", pid=None, learning=learning or current.learning)
        if not detach:
            current = current.evolve(pid=os.getpid())
        st = state.write(self.git, st, f"cycle {current.cycle}: check", journal=current)
        child = 0
        if detach:
            # The mirror follows each seal: a crash may leave it one seal behind
            # (which `tampered` allows), never two (which reads as tampering).
            state.write_mirrors(self.root, st)
            cycle = current.cycle
            child = fork(self.root, lambda: Cycle(self.root, self.now).work(cycle))
            current = current.evolve(pid=child)
            st = state.write(self.git, st, f"cycle {cycle}: worker {child}", journal=current)
            crash_point("worker-named", child)
            crash_point("worker-running")  # `end` alone: its worker goes on
        state.write_mirrors(self.root, st)
        self._show(st)
        return st, current, child

    def _live(self, journal: Journal, config: AutoConfig) -> bool:
        if journal.phase == "agent":
            return self.now.epoch - journal.started_epoch < config.agent_timeout_minutes * 60
        if journal.phase == "checking":
            return alive(journal.pid)
        # committing / reverting only ever appear under the lock we now hold, so a
        # journal left in those phases belongs to a process that died mid-way.
        return False

    def _begin_clean(self, st: State) -> tuple[Answer, int | None]:
        from gtd.auto import plan, plan_file

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
        dirty = _uncommitted(tree)
        if dirty:
            return answers.dirty(dirty, _install_metadata(tree)), None
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
        pick = plan.pick(the_plan)
        shaped = plan.answer(the_plan, pick)
        if shaped["status"] == "complete":
            return answers.complete(shaped["done"]), None
        if shaped["status"] == "blocked":
            return answers.blocked(shaped["blocked"]), None
        assert pick.task is not None
        from gtd.auto.cycle import ceiling

        st, halt, warning = ceiling.gate(self.root, self.git, st, pick.task.id, self.now)
        if halt is not None:
            return halt, None
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

    def _recover(self, st: State) -> tuple[State, str]:
        current = st.journal
        assert current is not None
        if current.kind == "baseline":
            st = state.write(self.git, st, "drop an interrupted baseline run", journal=None)
            state.write_mirrors(self.root, st)
            return st, "a baseline run was interrupted; it runs again"
        held = self._pausing(st, current, None) if current.phase == "agent" else None
        if held is not None and held.journal is not None:
            st, current = held, held.journal
        if current.phase in ("agent", "checking"):
            config = sealed_config(st)
            if current.phase == "agent":
                minutes = config.agent_timeout_minutes
                reason = f"abandoned: no `gtd cycle end` within {minutes} min"
            else:
                reason = "interrupted: `gtd cycle end` stopped before its verdict"
            halt = False
            tampered = state.tampered(self.root, self.git, st)
            if tampered:
                reason, halt = f"helper state modified: {tampered[0]}", True
            current = current.evolve(phase="reverting", passed=False, reason=reason, halt=halt)
            st = state.write(self.git, st, f"cycle {current.cycle}: revert", journal=current)
        try:
            try:
                st, rec, _trip = self._finish(st)
            except GitBlocked as exc:  # the cycle's pipe; one that is not raises again
                pipes.clear(self.root, exc)
                st, rec, _trip = self._finish(state.read(self.git))
        except CommitBlocked:  # recorded in the journal: every tick says why
            return state.read(self.git), ""
        except GtdError as exc:
            if current.phase != "reverting" or not current.reason:
                raise
            # What the revert was for may say why it cannot be done (a forged
            # object moved aside that the base needed): every tick says both.
            raise GtdError(f"{exc.message} (reverting: {current.reason})", exc.hint) from exc
        self._mark_reported(rec.cycle)
        return st, answers.recovered(current, committed=rec.status == "passed")

    # -- end -------------------------------------------------------------------------

    def end(
        self,
        learning: str | None,
        *,
        cycle: int | None = None,
        detach: bool = True,
        agent_exit: int | None = None,
        agent_tail: str | None = None,
        review: str | None = None,
        stopped: harness.Stop | None = None,
        spent: Said | None = None,
    ) -> Answer:
        """Judge the cycle in flight. ``cycle``: the one the caller began (the loop
        names it): where it is no longer in flight, its agent ended it, and
        :meth:`_overtaken` answers. ``detach``: in a worker process that outlives
        this one, waiting up to ``ratchet.wait_seconds`` for its verdict; otherwise
        here, to the end (`gtd loop`). ``agent_exit`` / ``agent_tail``: how the
        agent's process ended, when the caller ran it (`gtd loop`), for the record;
        ``stopped``: what it said of a harness failure (gtd.auto.harness.from_agent),
        which pauses the cycle instead of judging it (gtd.auto.cycle.paused).
        ``review``: the reviewer's verdict line, after a `review` answer.
        ``spent``: what the loop's agent (and reviewer) printed, where it may say
        what its run used (else the session's transcripts say; gtd.auto.cycle.spent)."""
        with locked(self._lock):
            redirected = self._take_back_common_dir()
            st, repaired = self._read_repairing()
            redirected = redirected or (repaired[0] if repaired else None)
            require_setup(self.root, st)
            state.adopt_journal(self.root, st)  # a `begin` killed before its mirror
            current = st.journal
            if cycle is not None and (
                current is None or current.kind == "baseline" or current.cycle != cycle
            ):
                return self._overtaken(st, cycle)
            if current is None or current.kind == "baseline":
                raise GtdError("no cycle in flight", "run `gtd cycle begin` first")
            if current.phase == "agent":
                st, relinked = self._relinked(st)
                if relinked is not None:  # read again, from the repository itself
                    if st.journal is None:
                        raise GtdError(relinked, "no cycle is in flight in the repository itself")
                    current = st.journal
                    redirected = redirected or relinked
            if agent_exit is not None and current.phase == "agent":
                current = current.evolve(agent_exit=agent_exit, agent_tail=agent_tail)
            if current.phase == "agent":  # sealed with the cycle's next seal
                from gtd.auto.cycle import spent as spending

                current = spending.collect(current, self.now.epoch, sealed_config(st), spent)
            if current.phase == "agent" and not redirected:
                held = self._pausing(st, current, stopped)
                if held is not None:
                    return self._answer(*self._finish(held)[1:])
            if current.phase == "agent" and current.kind == "task" and current.review is None:
                asked = self._review(st, current, review)
                if isinstance(asked, dict):
                    return asked
                current = asked
            if current.phase in ("committing", "reverting"):
                return self._answer(*self._finish(st)[1:])
            if current.phase == "checking" and alive(current.pid):
                return answers.checking(current)
            st, current, started = self._hand_over(
                st, current, redirected, learning=learning, detach=detach
            )
            if started is None:
                return self._answer(*self._finish(st)[1:])
            child = started
        if not detach:
            self.work(current.cycle)
            return self._answer_for(current)
        return self._wait(current, child, sealed_config(st).wait_s)

    def _review(self, st: State, current: Journal, given: str | None) -> Journal | Answer:
        """With ``review.agent``: the reviewer's brief and a `review` answer the
        first time (sealed, so the second `end` knows it was asked); the cycle
        with the reviewer's verdict the second. Unchanged without the option."""
        if not sealed_config(st).review_agent:
            return current
        from gtd.auto.cycle import review

        if given is None and current.review_asked_epoch is None:
            from gtd.auto.ratchet import snapshot as snapshot_codec

            raw = state.read_blob(self.git, st, state.SNAPSHOT)
            held = snapshot_codec.loads(raw, state.SNAPSHOT).files if raw else {}
            tests = sorted(p for p in held if p.endswith(".py"))
            brief = review.write_brief(self.root, self.git, current, tests)
            current = current.evolve(review_asked_epoch=self.now.epoch)
            st = state.write(self.git, st, f"cycle {current.cycle}: review", journal=current)
            state.write_mirrors(self.root, st)
            return answers.review(current, brief)
        asked = current.review_asked_epoch
        return current.evolve(
            review=review.verdict(given or ""),
            review_s=None if asked is None else round(max(self.now.epoch - asked, 0.0), 1),
        )

    def _overtaken(self, st: State, cycle: int) -> Answer:
        """The loop's end of cycle ``cycle``, which a `gtd cycle end` during its
        agent's turn ended already (gtd.auto.cycle.overtaken): that cycle's own
        answer where nothing changed since, else a halt naming what did; a cycle
        begun since in its agent phase is reverted first (judged, a quarantine or
        a baseline taken since would let it pass)."""
        from gtd.auto.cycle import overtaken

        rec, at = overtaken.record_of(cycle, st.records)
        later = st.journal if st.journal is not None and st.journal.kind != "baseline" else None
        if rec is None or (later is not None and later.cycle < cycle):
            raise GtdError(
                f"cycle {cycle} is not in flight and never ended",
                "pass the `cycle:` number `gtd cycle begin` answered",
            )
        tree = self.git.state()
        expected = str((st.summary or {}).get("head") or "")
        moved = (tree.head, expected) if tree.head and tree.head != expected else None
        dirty = _uncommitted(tree)
        changed = overtaken.changes(
            rec, st.records[at + 1 :], state.subject(self.git, st), later, moved, dirty
        )
        if not changed:
            answer = self._answer(rec, self._trip(st))
            answer["ended_before"] = (
                f"cycle {cycle} was ended before this `gtd cycle end` (during its agent's turn)"
            )
            return answer
        why = overtaken.reason(cycle, changed)
        if later is not None and later.phase == "agent":
            current = later.evolve(phase="reverting", passed=False, reason=why, halt=True)
            st = state.write(self.git, st, f"cycle {later.cycle}: revert", journal=current)
            return self._answer(*self._finish(st)[1:])
        halt = breaker.forced_halt(rec.task, cycle, why, self.now.iso)
        return self._force_halt(st, halt, f"halted: cycle {cycle} ended early")

    def _wait(self, current: Journal, child: int, wait_s: float) -> Answer:
        deadline = time.monotonic() + wait_s
        while True:
            done, _ = os.waitpid(child, os.WNOHANG)
            if done:
                return self._answer_for(current)
            if time.monotonic() >= deadline:
                return answers.checking(current)
            time.sleep(0.02)

    def _answer_for(self, current: Journal) -> Answer:
        st = state.read(self.git)
        rec = next(
            (r for r in st.records if isinstance(r, CycleRecord) and r.cycle == current.cycle),
            None,
        )
        if rec is None:
            if st.journal is not None and st.journal.blocked:
                return answers.stopped(st.journal)
            raise GtdError(
                f"the check of cycle {current.cycle} stopped before its verdict "
                f"(see {paths.CHECK_LOG})",
                "the next `gtd cycle begin` reverts it and goes on",
            )
        return self._answer(rec, self._trip(st))

    def _trip(self, st: State) -> breaker.Trip | None:
        from gtd.auto import plan_file

        _, the_plan = plan_file.load(self.root)
        pending = [t.id for t in the_plan.pending]
        return breaker.check(
            records.fold(st.records), sealed_config(st).circuit_breaker_threshold, pending
        )

    def _answer(self, rec: CycleRecord, trip: breaker.Trip | None) -> Answer:
        from gtd.auto import plan_file

        _, the_plan = plan_file.load(self.root)
        return answers.ended(rec, len(the_plan.pending), trip)

    def work(self, cycle: int) -> None:
        """The check of cycle ``cycle``: judge, then commit or revert and record.
        Runs in the worker `end` started (or in `end` itself, not detached)."""
        from gtd.auto.cycle import judging

        with locked(self._lock):
            st = state.read(self.git)
            current = st.journal
            if (
                current is None
                or current.cycle != cycle
                or current.phase != "checking"
                or current.pid != os.getpid()
            ):
                return  # not ours (the starter died before naming us, or a rerun)
        crash_point("checking")
        try:
            try:
                verdict = judging.judge(self.root, self.git, st, self.now)
            except GitBlocked as exc:  # the cycle's pipe; one that is not raises again
                removed = pipes.clear(self.root, exc)
                verdict = judging.Decision(
                    False,
                    f"a named pipe where git reads a file: {readable(removed[0])} (removed)",
                    head=self.git.head(),
                )
            with locked(self._lock):
                st = state.read(self.git)
                if st.journal is None or st.journal.pid != os.getpid():
                    return  # recovered behind our back (we looked dead): nothing is ours
                current = verdict.journal(st.journal)
                st = state.write(
                    self.git,
                    st,
                    f"cycle {cycle}: {'pass' if current.passed else 'revert'}",
                    journal=current,
                    pending=verdict.pending,
                )
                crash_point("verdict")
                self._finish(st)
        except CommitBlocked:
            return  # recorded in the journal by _finish; the next begin retries
        except GtdError as exc:
            # Something only a person can fix (a git lock that is not ours, a broken
            # repository): say it where `end` and the next `begin` will read it.
            with locked(self._lock):
                st = state.read(self.git)
                if st.journal is not None and st.journal.pid == os.getpid():
                    message = exc.render().replace("\n", " ")
                    if st.journal.phase == "reverting" and st.journal.reason:
                        # What the revert was for may say why it cannot be done (a
                        # forged object moved aside that the base needed).
                        message += f" (reverting: {st.journal.reason})"
                    blocked = st.journal.evolve(blocked=message)
                    state.write(self.git, st, f"cycle {cycle}: stopped", journal=blocked)
            raise

    # -- finishing (shared by end and recovery; every step idempotent) ---------------

    def _finish(self, st: State) -> tuple[State, CycleRecord, breaker.Trip | None]:
        from gtd.auto.cycle import finish, large, litter, seals

        current = st.journal
        assert current is not None
        if current.phase == "committing":
            try:
                st, commit = self._commit(st)
            except CommitBlocked as exc:
                blocked = f"{exc.message} — {exc.hint}" if exc.hint else exc.message
                st = state.write(
                    self.git,
                    st,
                    f"cycle {current.cycle}: commit blocked",
                    journal=current.evolve(blocked=blocked),
                )
                raise
            st = self._note(st, yours.after(self.git, current))
            status = "passed"
        else:
            seals.restore(self.git, current.seals or {})
            seals.restore_hooks(self.root, self.git, current.seals or {})
            git = self.git
            if seals.outside_changes(git, current.seals or {}):
                git = git.without_outside_config()  # the agent's filters write nothing
            changes = git.changes()  # one status for both (the folders stay where they are)
            added = [c.path for c in changes if c.untracked or c.xy[0] == "A"]
            moved = yours.before_keep(git, current, added)
            if moved:  # a person's ignored files out of the tree: never in a kept ref
                st = self._note(st, moved)
                current = st.journal
                assert current is not None
                changes = git.changes()
            large.set_aside(git, current.cycle, sealed_config(st).max_file_mb, changes)
            litter.set_aside(git, current.cycle, changes)
            kept = finish.keep(git, current, self._scratch())
            made = git.rev(kept)
            if made != current.kept_commit:  # sealed: a later finish knows it as ours
                current = current.evolve(kept_commit=made)
                st = state.write(self.git, st, f"cycle {current.cycle}: kept", journal=current)
            crash_point("reverted-kept")
            try:
                refused = finish.restore(self.root, git, current, kept).reason()
            except OSError as exc:  # the work is kept; putting the base back is not done
                raise _unrestorable(f"{exc.filename or self.root}: {exc.strerror}") from exc
            except GitError as exc:  # git's checkout met the same
                if not any(why in exc.message for why in _UNCHANGEABLE):
                    raise
                raise _unrestorable(exc.message) from exc
            if refused is not None and not (current.reason or "").startswith(refused):
                # Names git listed that lead outside the tree (a forged tree
                # object): left alone, and a person must look before the loop
                # goes on (the object is still in the store).
                why = f"{refused}; {current.reason}" if current.reason else refused
                current = current.evolve(reason=why, halt=True)
                st = state.write(self.git, st, f"cycle {current.cycle}: revert", journal=current)
            st = self._note(st, yours.after(self.git, current))
            commit = None
            status = "reverted"
            return self._record(st, status, commit, finish.drop_if_empty(git, current, kept))
        return self._record(st, status, commit)

    def _note(self, st: State, notes: list[str]) -> State:
        """What was done for the person's work, sealed in the journal (a rerun
        after a crash finds it done, and the record still says it)."""
        assert st.journal is not None
        noted = yours.merged(st.journal, notes)
        if noted is None:
            return st
        return state.write(self.git, st, f"cycle {noted.cycle}: your work", journal=noted)

    def _scratch(self) -> Path:
        """The helper's folder in the git directory (private indexes)."""
        from gtd.own_files import private_dir

        return private_dir(self.git.git_dir())

    def _commit(self, st: State) -> tuple[State, str]:
        from gtd.auto.cycle import finish

        current = st.journal
        assert current is not None
        if current.work_commit is None:
            work = finish.work_commit(self.git, current)
            current = current.evolve(work_commit=work)
            st = state.write(self.git, st, f"cycle {current.cycle}: work commit", journal=current)
            crash_point("work-commit")
        assert current.work_commit is not None
        if current.tick_commit is None:
            final = (
                finish.tick_commit(self.git, current, current.work_commit)
                if current.kind == "task"
                else current.work_commit
            )
            current = current.evolve(tick_commit=final)
            st = state.write(self.git, st, f"cycle {current.cycle}: tick commit", journal=current)
        assert current.tick_commit is not None
        finish.move_branch(self.git, current, current.tick_commit)
        crash_point("tick-commit")
        finish.sync_tree(self.root, self.git, current, current.tick_commit)
        crash_point("plan-ticked")
        made = current.work_commit
        assert made is not None
        return st, self.git.short(made)

    def _record(
        self, st: State, status: str, commit: str | None, kept: str | None = None
    ) -> tuple[State, CycleRecord, breaker.Trip | None]:
        from gtd.auto import baseline, memory, plan_file
        from gtd.auto.cycle import paused, seals
        from gtd.auto.cycle import spent as spending

        current = st.journal
        assert current is not None
        config = sealed_config(st)
        used = spending.recorded(current, self.now.epoch, config)
        rec = CycleRecord(
            cycle=current.cycle, task=current.task, title=current.title,
            status="passed" if status == "passed" else "reverted", commit=commit,
            reason=current.reason, at=self.now.iso, tests_passed=current.tests_passed,
            tests_total=current.tests_total, build_ok=current.build_ok, spike=current.spike,
            learning=current.learning, tests_failed=current.tests_failed,
            tests_skipped=current.tests_skipped, duration_s=current.duration_s,
            kept=None if status == "passed" else kept,
            agent_exit=current.agent_exit, agent_tail=current.agent_tail, flaky=current.flaky,
            env_skipped=current.env_skipped, look_at=current.look_at, review=current.review,
            review_s=current.review_s, yours=yours.said(current), new_tests=current.new_tests,
            usage=used[0], usage_tick=used[1], usage_review=used[2],
        )  # fmt: skip
        mem = records.fold(st.records)
        stop = paused.stop_of(current) if status != "passed" else None
        if stop is not None:
            rec = paused.record(rec, stop, mem, config, self.now.epoch)
        new: list[records.Record] = [rec]
        mem = records.apply(mem, rec)
        too_long = paused.halt_if_too_long(mem, config, current.cycle, self.now.iso)
        if too_long is not None:
            new.append(too_long)
            mem = records.apply(mem, too_long)
        _, the_plan = plan_file.load(self.root)
        pending = [t.id for t in the_plan.pending]
        if current.halt and current.reason:
            halt = breaker.forced_halt(current.task, current.cycle, current.reason, self.now.iso)
            new.append(halt)
            mem = records.apply(mem, halt)
        trip = breaker.check(mem, config.circuit_breaker_threshold, pending)
        if trip is not None and not current.halt and too_long is None:
            halt = breaker.halt_record(trip, current.cycle, self.now.iso)
            if memory.record_halt(mem, halt) != mem:
                new.append(halt)
        updates: dict[str, Any] = {}
        listed: list[str] | None = None
        if status == "passed" and current.tick_commit is not None:
            snap, summary, listed = baseline.advanced(self.git, st, current.tick_commit)
            updates = {"snapshot": snap, "summary": summary}
        if current.objects_checked is not None:  # (a cycle recovered unjudged checked none)
            checked = {"objects_checked": current.objects_checked}
            updates["summary"] = {**updates.get("summary", st.summary or {}), **checked}
        st = state.write(
            self.git,
            st,
            f"cycle {current.cycle} ({current.task}): {rec.status}",
            journal=None,
            pending=None,
            append=new,
            **updates,
        )
        seals.drop_copies(self.git.git_dir())
        crash_point("recorded")
        state.write_mirrors(self.root, st, snapshot_paths=listed)
        render(self.root, st, the_plan, self.now)
        return st, rec, trip

    # -- reset -----------------------------------------------------------------------

    def reset(self, task: str | None) -> Answer:
        from gtd.auto import memory, plan_file

        with locked(self._lock):
            st = state.read(self.git)
            require_setup(self.root, st)
            config = sealed_config(st)
            mem = records.fold(st.records)
            _, the_plan = plan_file.load(self.root)
            if task is not None:
                known = [t.id for t in the_plan.tasks]
                stopped = mem.stop.task if mem.stop is not None else None
                if task not in known and task not in mem.consecutive_reverts and task != stopped:
                    raise GtdError(
                        f"unknown task {task}",
                        f"PLAN.md's tasks are {', '.join(known) or 'none'}",
                    )
            _, cleared = memory.reset_breaker(mem, task, config.circuit_breaker_threshold)
            if not cleared:
                return answers.unchanged()
            reset = records.Reset(task, self.now.iso, config.circuit_breaker_threshold)
            st = state.write(self.git, st, f"reset {task or 'all'}", append=[reset])
            render(self.root, st, the_plan, self.now)
        return answers.reset(cleared)


def _uncommitted(tree: WorkTree) -> list[str]:
    """The working tree's uncommitted work: the helper's own files aside, untracked
    yet visible (a `.gitignore` negation a cycle committed), which are nobody's
    work; counted, they would stop every later cycle."""
    return [e.path for e in tree.entries if not (e.untracked and paths.is_private(e.path))]


def _install_metadata(tree: WorkTree) -> str | None:
    """The advice on tracked files among the changes that the project's install
    regenerates (a ``*.egg-info/``): they stay the person's to commit or untrack."""
    from gtd.auto import install_metadata

    found = install_metadata.folders(e.path for e in tree.entries if not e.untracked)
    return install_metadata.advice(found) if found else None


def dump(answer: Answer) -> str:
    return json.dumps(answer)


__all__ = ["Cycle", "StateError", "crash_point", "render", "require_setup", "sealed_config"]


# What git and the system say of a file that cannot be removed or written.
_UNCHANGEABLE = ("Operation not permitted", "Permission denied", "unable to unlink")


def _unrestorable(what: str) -> GtdError:
    """A file the revert cannot remove or write (made immutable, say): every tick
    says which and how to fix it, instead of failing the same way unexplained."""
    return GtdError(
        f"the revert cannot change a file: {what}",
        "make it removable and writable again (`lsattr` shows an immutable or "
        "append-only attribute, `chattr -i -a` clears it; check its permissions), "
        "then `gtd cycle begin`: it finishes the revert; the cycle's work is kept",
    )
