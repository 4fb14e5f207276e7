"""Finishing a cycle and recovering one a crash or a dead agent left (the cycle
engine, gtd.auto.cycle.engine): commit or revert, then record. Every step is
sealed in the journal before the next, so a rerun (by `end`, the worker or the
next `begin`) finishes the job."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gtd.auto import breaker, harness, records, state
from gtd.auto.cycle import answers, named_pipes, yours
from gtd.auto.cycle.steps import Steps
from gtd.auto.faults import crash_point
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord
from gtd.auto.rendering import render
from gtd.auto.state import State, sealed_config
from gtd.errors import CommitBlocked, GitBlocked, GitError, GtdError

if TYPE_CHECKING:
    from typing import Any

    from gtd.auto.memory import CycleStatus


class Recovery(Steps):
    """Recovery and finishing, shared by `end`, its worker and `begin`."""

    def _pausing(self, st: State, current: Journal, told: harness.Stop | None) -> State | None:
        """The state with ``current`` sealed as paused, when the harness stopped its
        agent (gtd.auto.cycle.paused); None when it did not, or when the helper's
        state was tampered with (that is a halt, whatever stopped the agent)."""
        from gtd.auto.cycle import paused

        brief = None
        if current.wave is not None:  # its own implementer's transcript, not another's
            from gtd.auto.cycle import waves

            wave = waves.read(self.git, st)
            entry = None if wave is None else wave.of(current.cycle)
            brief = None if entry is None else entry.brief
        stop = paused.detect(current, self.now.epoch, told, brief)
        if stop is None or state.tampered(self.root, self.git, st, strict=True):
            return None
        current = paused.sealed(current, stop)
        return state.write(self.git, st, f"cycle {current.cycle}: paused", journal=current)

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
                named_pipes.clear(self.root, exc)
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
        elif current.wave is not None:  # its work is a worktree's: the person's tree is not touched
            from gtd.auto.cycle import wave_landing

            seals.restore(self.git, current.seals or {})
            seals.restore_hooks(self.root, self.git, current.seals or {})
            return self._record(st, *wave_landing.set_aside(self.git, current))
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
        sign = current.tick_commit is None and finish.signs(self.git)  # once for both
        if current.work_commit is None:
            work = finish.work_commit(self.git, current, sign)
            current = current.evolve(work_commit=work)
            st = state.write(self.git, st, f"cycle {current.cycle}: work commit", journal=current)
            crash_point("work-commit")
        assert current.work_commit is not None
        if current.tick_commit is None:
            final = (
                finish.tick_commit(self.git, current, current.work_commit, sign)
                if current.kind == "task"
                else current.work_commit
            )
            current = current.evolve(tick_commit=final)
            st = state.write(self.git, st, f"cycle {current.cycle}: tick commit", journal=current)
        assert current.tick_commit is not None
        finish.move_branch(self.git, current, current.tick_commit)
        crash_point("tick-commit")
        if current.wave is not None:  # the person's tree never held the work
            from gtd.auto.cycle import wave_landing

            wave_landing.bring(self.root, self.git, current, current.tick_commit)
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
        kind: CycleStatus = "skipped" if status == "skipped" else "reverted"
        rec = CycleRecord(
            cycle=current.cycle, task=current.task, title=current.title,
            status="passed" if status == "passed" else kind, commit=commit,
            reason=current.reason, at=self.now.iso, tests_passed=current.tests_passed,
            tests_total=current.tests_total, build_ok=current.build_ok, spike=current.spike,
            learning=current.learning, tests_failed=current.tests_failed,
            tests_skipped=current.tests_skipped, duration_s=current.duration_s,
            kept=None if status == "passed" else kept,
            agent_exit=current.agent_exit, agent_tail=current.agent_tail, flaky=current.flaky,
            env_skipped=current.env_skipped, look_at=current.look_at, review=current.review,
            review_s=current.review_s, yours=yours.said(current), new_tests=current.new_tests,
            usage=used[0], usage_tick=used[1], usage_review=used[2], wave=current.wave,
        )  # fmt: skip
        if current.wave is not None:  # a wave's times, for the report (gtd.auto.report_waves)
            rec = _wave_times(rec, current)
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
        others = None
        if current.wave is not None:
            from gtd.auto.cycle import wave_landing

            others = wave_landing.after_record(self.git, st, current, rec.status)
        st = state.write(
            self.git,
            st,
            f"cycle {current.cycle} ({current.task}): {rec.status}",
            journal=None,
            pending=None,
            append=new,
            others=others,
            **updates,
        )
        if current.wave is not None or config.parallel > 1:
            from gtd.auto.cycle import wave_landing

            wave_landing.finished(self.git, st, current, rec.status)
        seals.drop_copies(self.git.git_dir())
        crash_point("recorded")
        state.write_mirrors(self.root, st, snapshot_paths=listed)
        render(self.root, st, the_plan, self.now)
        return st, rec, trip


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


def _wave_times(rec: CycleRecord, journal: Journal) -> CycleRecord:
    """``rec`` with its wave's times to the millisecond, read as it is recorded
    (the command's own `now` is when it started, before its check): from the
    wave's start, and from the start of its check when it was checked."""
    import time

    from gtd.clock import now

    # each against the clock its start was read from (the check's: time.time)
    turn = None if journal.objects_checked is None else time.time() - journal.objects_checked
    return rec._replace(
        wave_s=round(max(0.0, now().epoch - journal.started_epoch), 3),
        turn_s=None if turn is None else round(max(0.0, turn), 3),
    )
