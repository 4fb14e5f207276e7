"""`gtd cycle end` (gtd.auto.cycle.engine): the agent's turn is over; the cycle is
handed to a worker process of its own (gtd.auto.cycle.worker) that judges it in
the clean room, then commits or reverts it and seals the record, while `end`
waits for the verdict up to ``ratchet.wait_seconds``."""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

from gtd import paths
from gtd.auto import breaker, harness, records, state
from gtd.auto.cycle import answers, named_pipes
from gtd.auto.cycle.answers import Answer
from gtd.auto.cycle.recovery import Recovery
from gtd.auto.cycle.steps import uncommitted
from gtd.auto.cycle.worker import fork
from gtd.auto.faults import crash_point
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord
from gtd.auto.state import State, require_setup, sealed_config
from gtd.errors import CommitBlocked, GitBlocked, GtdError
from gtd.fsio import locked
from gtd.names import readable
from gtd.processes import alive

if TYPE_CHECKING:
    from gtd.auto.cycle.spent import Said


class Ending(Recovery):
    """`end` and the worker's check; `begin` builds on it to judge a cycle its
    `end` never came for."""

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
            child = fork(self.root, lambda: Ending(self.root, self.now).work(cycle))
            current = current.evolve(pid=child)
            st = state.write(self.git, st, f"cycle {cycle}: worker {child}", journal=current)
            crash_point("worker-named", child)
            crash_point("worker-running")  # `end` alone: its worker goes on
        state.write_mirrors(self.root, st)
        self._show(st)
        return st, current, child

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
            # (the snapshot too: the mirrors' check before the hand-over reads it)
            st, repaired = self._read_repairing(snapshot=True)
            redirected = redirected or (repaired[0] if repaired else None)
            require_setup(self.root, st)
            state.adopt_journal(self.root, st)  # a `begin` killed before its mirror
            if cycle is not None and state.WAVE in st.entries:
                from gtd.auto.cycle import wave_landing

                taken = wave_landing.take_turn(self, cycle, spent)  # a wave's task: its turn
                if taken is not None:
                    return taken
                st = state.read(self.git)
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

                wave = None
                if current.wave is not None:
                    from gtd.auto.cycle import waves

                    wave = waves.read(self.git, st)
                config = sealed_config(st)
                current = spending.collect(current, self.now.epoch, config, spent, wave)
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
        dirty = uncommitted(tree)
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
            # The snapshot with the rest, in the same git call: the judging reads
            # it twice (the mirrors' check, the ratchet), a process apiece otherwise.
            st = state.read(self.git, snapshot=True)
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
                if current.wave is not None:  # a worktree's tree (gtd.auto.cycle.waves)
                    from gtd.auto.cycle import wave_landing

                    verdict = wave_landing.judge(self.root, self.git, st)
                else:
                    verdict = judging.judge(self.root, self.git, st, self.now)
            except GitBlocked as exc:  # the cycle's pipe; one that is not raises again
                removed = named_pipes.clear(self.root, exc)
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
