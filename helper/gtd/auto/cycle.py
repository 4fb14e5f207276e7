"""One auto-mode cycle (DESIGN §4.2): begin, end, reset, and crash recovery.

`begin` answers what the tick should do and, for a task, records the journal and
writes the brief. `end` runs the ratchet and then either commits the cycle's work
plus the PLAN.md tick, or restores the tree to the cycle's base; then it records
memory, the breaker and the report. Every answer is a dict with a ``status``; a
verdict is never an error. State changes happen under the lock; the long test run
in `end` happens outside it, announced by the journal's ``checking`` phase.

Crash safety rests on three facts: `begin` only starts a cycle on a clean tree,
so every change present at `end` is the cycle's own; a revert first stores the
whole working tree under refs/gtd/reverted/cycle-N, so even a human edit made
during the cycle survives; and each step of `end` is idempotent and recorded in
the journal, so a rerun (by `end` or by the next `begin`) finishes the job.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from gtd import paths
from gtd.auto import journal as journal_mod
from gtd.auto.journal import Journal
from gtd.clock import Now
from gtd.errors import GtdError, StateError
from gtd.fsio import atomic_write, locked
from gtd.git import Git, WorkTree, remove_created

Answer = dict[str, Any]

BOOTSTRAP = "BOOTSTRAP"


def crash_point(name: str) -> None:
    """Test hook: `GTD_CRASH_AT=<name>` kills the helper here, as a power cut would.
    The fault tests use it to prove every point of `end` is recoverable."""
    if os.environ.get("GTD_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


class Cycle:
    def __init__(self, root: Path, now: Now) -> None:
        from gtd.auto.config import load_config

        self.root = root
        self.now = now

        self.git = Git(self.root)
        self.config = load_config(self.root)

    # -- begin -----------------------------------------------------------------------

    def begin(self) -> Answer:
        with locked(self.root / paths.LOCK):
            recovered: str | None = None
            current = journal_mod.load(self.root)
            if current is not None:
                busy = self._busy(current)
                if busy is not None:
                    return busy
                recovered = self._recover(current)
            answer = self._begin_locked()
        if recovered:
            answer["recovered"] = recovered
        return answer

    def _begin_locked(self) -> Answer:
        from gtd.auto import breaker, memory_file, plan, plan_file

        _, the_plan = plan_file.load_valid(self.root)
        mem = memory_file.load_fast(self.root / paths.MEMORY, self.root)
        pending = [t.id for t in the_plan.pending]
        trip = breaker.check(mem, self.config.circuit_breaker_threshold, pending)
        if trip is not None:
            return {
                "status": "halted",
                "task": trip.task,
                "reason": trip.reason,
                "message": trip.message,
                "next": f"stop the loop; fix {trip.task} by hand, then run `gtd cycle reset`",
            }
        tree = self.git.state()
        dirty = [e.path for e in tree.entries]
        if dirty:
            return {
                "status": "dirty",
                "paths": dirty,
                "message": f"{len(dirty)} uncommitted change(s) not made by a cycle, untouched",
                "next": "end this tick; the human commits or stashes their work",
            }
        pick = plan.pick(the_plan)
        shaped = plan.answer(the_plan, pick)
        if shaped["status"] == "complete":
            done = shaped["done"]
            return {
                "status": "complete",
                "done": done,
                "message": f"All tasks complete ({done} done).",
                "next": "stop the loop, then run `gtd verify`",
            }
        if shaped["status"] == "blocked":
            return {
                "status": "blocked",
                "blocked": shaped["blocked"],
                "message": "All remaining tasks are blocked: "
                + "; ".join(f"{t.id} by {', '.join(b)}" for t, b in pick.blocked),
                "next": "stop the loop; resolve the blockers in PLAN.md by hand",
            }
        assert pick.task is not None
        return self._start(the_plan, pick.task, mem, tree)

    def _start(self, the_plan: Any, task: Any, mem: Any, tree: WorkTree) -> Answer:
        from gtd.auto import brief, memory, ratchet
        from gtd.templates import template

        snapshot = ratchet.load_snapshot(self.root)
        if snapshot is None:
            raise GtdError("no ratchet snapshot yet", "run `gtd auto setup` first")
        head = tree.head
        if head is None:
            raise StateError("the repository has no commits", "commit once, then run again")
        # A human may have committed PLAN.md or config edits since the last cycle;
        # the tree is clean here, so what is on disk is what the cycle starts from.
        ratchet.resync_owned(self.root, snapshot)
        sidecar = ratchet.sidecar_digest(self.root)
        number = memory.next_cycle_number(mem)
        test_command = self.config.test_command or "(no test command detected)"
        bootstrap = ratchet.bootstrap_needed(snapshot) and not any(
            r.task == BOOTSTRAP and r.status == "passed" for r in mem.cycles
        )
        if bootstrap:
            files = sorted({f for t in the_plan.tasks for f in t.files})
            text = brief.render_bootstrap(
                template("brief-bootstrap.md"), cycle=number, files=files, test_command=test_command
            )
            entry = Journal(
                cycle=number, task=BOOTSTRAP, title="baseline tests", kind="bootstrap",
                spike=False, base=head, branch=tree.branch, started_at=self.now.iso,
                started_epoch=self.now.epoch, sidecar=sidecar,
            )  # fmt: skip
        else:
            text = brief.render_task(
                template("brief.md"),
                cycle=number,
                task=task,
                failures=memory.failures_for(mem, task.id),
                learnings=[f"{item.spike}: {item.insight}" for item in memory.learnings(mem)],
                test_command=test_command,
            )
            entry = Journal(
                cycle=number, task=task.id, title=task.title, kind="task", spike=task.spike,
                base=head, branch=tree.branch, started_at=self.now.iso,
                started_epoch=self.now.epoch, sidecar=sidecar,
            )  # fmt: skip
        atomic_write(self.root / paths.BRIEF, text)
        journal_mod.save(self.root, entry)
        return {
            "status": "task",
            "cycle": number,
            "task": entry.task,
            "title": entry.title,
            "kind": entry.kind,
            "spike": entry.spike,
            "files": list(task.files) if not bootstrap else [],
            "brief": paths.BRIEF,
            "brief_text": text,
            "next": "run the implementer subagent on the brief, then `gtd cycle end`",
        }

    def _busy(self, current: Journal) -> Answer | None:
        """A live cycle answers busy; a dead or abandoned one returns None (recover)."""
        age_s = self.now.epoch - current.started_epoch
        limit_s = self.config.agent_timeout_minutes * 60
        live = False
        if current.phase == "agent":
            live = age_s < limit_s
        elif current.phase == "checking":
            live = current.pid is not None and _alive(current.pid)
        # committing / reverting only ever appear under the lock we now hold, so a
        # journal left in those phases belongs to a process that died mid-way.
        if not live:
            return None
        return {
            "status": "busy",
            "cycle": current.cycle,
            "task": current.task,
            "phase": current.phase,
            "since": current.started_at,
            "message": f"cycle {current.cycle} ({current.task}) is in flight ({current.phase})",
            "next": "end this tick; the running cycle finishes on its own",
        }

    def _recover(self, current: Journal) -> str:
        if current.phase in ("agent", "checking"):
            if current.phase == "agent":
                minutes = self.config.agent_timeout_minutes
                reason = f"abandoned: no `gtd cycle end` within {minutes} min"
            else:
                reason = "interrupted: `gtd cycle end` stopped before its verdict"
            current = current.evolve(phase="reverting", passed=False, reason=reason)
            journal_mod.save(self.root, current)
        answer = self._finish(current)
        what = "committed" if answer["status"] == "passed" else "reverted"
        return f"cycle {current.cycle} ({current.task}) was interrupted; {what} it" + (
            f": {current.reason}" if current.reason and what == "reverted" else ""
        )

    # -- end -------------------------------------------------------------------------

    def end(self, learning: str | None) -> Answer:
        from gtd.auto import ratchet

        with locked(self.root / paths.LOCK):
            current = journal_mod.load(self.root)
            if current is None:
                raise GtdError("no cycle in flight", "run `gtd cycle begin` first")
            if current.phase in ("committing", "reverting"):
                return self._finish(current)
            if (
                current.phase == "checking"
                and current.pid
                and current.pid != os.getpid()
                and _alive(current.pid)
            ):
                raise GtdError(
                    f"cycle {current.cycle} is already being checked (pid {current.pid})"
                )
            current = current.evolve(phase="checking", pid=os.getpid(), learning=learning)
            journal_mod.save(self.root, current)
        crash_point("checking")

        tree = self.git.state()
        guard = self._guard(current, tree)
        snapshot = ratchet.load_snapshot(self.root)
        if snapshot is None:
            raise GtdError("no ratchet snapshot", "run `gtd auto setup` first")
        run = None
        reason: str | None
        if guard is not None:
            passed, reason = False, guard
            tests_passed = tests_total = None
            build_ok: bool | None = None
        else:
            verdict, run = ratchet.check(self.root, self.config, snapshot)
            passed, reason = verdict.passed, verdict.reason
            tests_passed, tests_total, build_ok = (
                verdict.tests_passed, verdict.tests_total, verdict.build_ok
            )  # fmt: skip

        with locked(self.root / paths.LOCK):
            current = current.evolve(
                phase="committing" if passed else "reverting",
                passed=passed, reason=reason, tests_passed=tests_passed,
                tests_total=tests_total, build_ok=build_ok,
            )  # fmt: skip
            if passed and run is not None:
                ratchet.save_pending(self.root, ratchet.advance(snapshot, run, self.root))
            journal_mod.save(self.root, current)
            crash_point("verdict")
            return self._finish(current)

    def _guard(self, current: Journal, tree: WorkTree) -> str | None:
        """Checks that need no test run. (PLAN.md and the config are protected by the
        ratchet's integrity check, like the test files.)"""
        from gtd.auto import ratchet

        changed = [e.path for e in tree.entries] + [e.orig for e in tree.entries if e.orig]
        if ratchet.sidecar_digest(self.root) != current.sidecar:
            return "ratchet snapshot modified: .deepflow/auto-snapshot.json"
        if current.kind == "bootstrap":
            if tree.head != current.base:
                return "bootstrap cycle made commits of its own"
            non_tests = [p for p in changed if not ratchet.is_test_path(p)]
            if non_tests:
                return f"bootstrap changed non-test files: {', '.join(sorted(non_tests)[:5])}"
        if not changed and tree.head == current.base and not current.spike:
            return "no changes: the implementer left the tree as it was"
        return None

    # -- finishing (shared by end and recovery; every step idempotent) ---------------

    def _finish(self, current: Journal) -> Answer:
        if current.phase == "committing":
            commit = self._commit(current)
            status = "passed"
        else:
            self._revert(current)
            commit = None
            status = "failed"
        return self._record(current, status, commit)

    def _commit(self, current: Journal) -> str:
        from gtd.auto import plan, plan_file, ratchet

        work = current.work_commit or self._find_cycle_commit(current, tick=False)
        if work is None:
            head = self.git.head()
            if head != current.base:
                # The agent committed despite the brief: fold its commits into ours
                # so the cycle stays one attributable change.
                self.git.run("reset", "-q", "--soft", current.base)
            message = f"{current.task}: {current.title}\n\n{self._trailers(current)}"
            self.git.run("add", "-A")
            self.git.run(
                "commit", "-q", "--no-verify", "--allow-empty", "-F", "-", input_text=message
            )
            work = self.git.head()
            assert work is not None
            crash_point("work-commit")
        current = current.evolve(work_commit=work)
        journal_mod.save(self.root, current)
        short = self.git.short(work)
        if current.kind == "task":
            text, the_plan = plan_file.load(self.root)
            task = the_plan.get(current.task)
            if task is not None and task.status != "done":
                atomic_write(self.root / paths.PLAN, plan.tick(text, current.task, short))
                crash_point("plan-ticked")
            if self.git.status() and self._find_cycle_commit(current, tick=True) is None:
                message = (
                    f"{current.task}: mark done in PLAN.md ({short})\n\n{self._trailers(current)}"
                )
                self.git.run("add", "--", paths.PLAN)
                self.git.run("commit", "-q", "--no-verify", "-F", "-", input_text=message)
                crash_point("tick-commit")
        ratchet.commit_pending(self.root)
        return short

    def _find_cycle_commit(self, current: Journal, *, tick: bool) -> str | None:
        """The cycle's own work (or tick) commit, if a crashed run already made it."""
        log = self.git.run(
            "log",
            "--format=%H%x1f%s%x1f%(trailers:key=Gtd-Cycle,valueonly,separator=%x2c)%x1e",
            f"{current.base}..HEAD",
        )
        for record in log.split("\x1e"):
            fields = record.strip().split("\x1f")
            if len(fields) != 3 or fields[2].strip() != str(current.cycle):
                continue
            if fields[1].startswith(f"{current.task}: mark done in PLAN.md") == tick:
                return fields[0]
        return None

    def _trailers(self, current: Journal) -> str:
        return f"Gtd-Task: {current.task}\nGtd-Cycle: {current.cycle}\n"

    def _revert(self, current: Journal) -> None:
        """Restore the tree to the cycle's base, byte for byte, after keeping
        everything the cycle left under refs/gtd/reverted/cycle-N."""
        from gtd.auto import ratchet

        ref = f"{paths.REVERTED_REF}{current.cycle}"
        if not self.git.ok("rev-parse", "--verify", "-q", ref):
            keep = self._tree_commit(
                f"gtd: reverted work of cycle {current.cycle} ({current.task})"
            )
            self.git.run("update-ref", ref, keep)
            crash_point("reverted-kept")
        if current.branch and self.git.branch() != current.branch:
            self.git.run("checkout", "-q", "-f", current.branch)
        self.git.run("reset", "-q", "--hard", current.base)
        for entry in self.git.status():
            if entry.untracked:
                remove_created(self.root, entry.path)
        ratchet.drop_pending(self.root)

    def _tree_commit(self, message: str) -> str:
        """A commit of the whole working tree (tracked + untracked, ignores respected)
        on top of HEAD, built in a private index so the real index is untouched."""
        index = self.root / paths.STATE_DIR / "revert.index"
        env = {"GIT_INDEX_FILE": str(index)}
        try:
            self.git.run("read-tree", "HEAD", env=env)
            self.git.run("add", "-A", env=env)
            tree = self.git.run("write-tree", env=env).strip()
        finally:
            index.unlink(missing_ok=True)
        return self.git.run("commit-tree", tree, "-p", "HEAD", "-m", message).strip()

    def _record(self, current: Journal, status: str, commit: str | None) -> Answer:
        from gtd.auto import breaker, memory, memory_file, plan_file, report

        path = self.root / paths.MEMORY
        mem, doc = memory_file.load(path)
        rec = memory.CycleRecord(
            cycle=current.cycle, task=current.task, title=current.title,
            status="passed" if status == "passed" else "failed", commit=commit,
            reason=current.reason, at=self.now.iso, tests_passed=current.tests_passed,
            tests_total=current.tests_total, build_ok=current.build_ok, spike=current.spike,
            learning=current.learning,
        )  # fmt: skip
        mem = memory.record_cycle(mem, rec)
        _, the_plan = plan_file.load(self.root)
        pending = [t.id for t in the_plan.pending]
        trip = breaker.check(mem, self.config.circuit_breaker_threshold, pending)
        if trip is not None:  # logged in `halts` (idempotent, like the cycle record)
            mem = memory.record_halt(mem, breaker.halt_record(trip, current.cycle, self.now.iso))
        memory_file.save(path, mem, doc)
        title = the_plan.title or next((t.spec for t in the_plan.tasks if t.spec), None)
        atomic_write(
            self.root / paths.REPORT, report.render(title or self.root.name, mem, self.now.iso)
        )
        crash_point("recorded")
        journal_mod.clear(self.root)
        answer: Answer = {
            "status": "passed" if status == "passed" else "reverted",
            "cycle": current.cycle,
            "task": current.task,
            "remaining": len(pending),
        }
        if commit:
            answer["commit"] = commit
        if current.reason and status != "passed":
            answer["reason"] = current.reason
            answer["kept"] = f"{paths.REVERTED_REF}{current.cycle}"
        if current.tests_total is not None:
            answer["tests"] = f"{current.tests_passed} / {current.tests_total}"
        if trip is not None:
            answer["next"] = "halt"
            answer["message"] = trip.message
        elif not pending:
            answer["next"] = "complete"
            answer["message"] = "All tasks complete. Stop the loop and run `gtd verify`."
        else:
            answer["next"] = "continue"
            answer["message"] = f"Cycle complete. {len(pending)} tasks remaining."
        return answer

    # -- reset -----------------------------------------------------------------------

    def reset(self, task: str | None) -> Answer:
        from gtd.auto import memory, memory_file

        with locked(self.root / paths.LOCK):
            path = self.root / paths.MEMORY
            mem, doc = memory_file.load(path)
            mem, cleared = memory.reset_breaker(mem, task, self.config.circuit_breaker_threshold)
            if cleared:
                memory_file.save(path, mem, doc)
        if not cleared:
            return {"status": "unchanged", "message": "no tripped circuit breaker to reset"}
        return {
            "status": "reset",
            "tasks": cleared,
            "message": f"circuit breaker reset for {', '.join(cleared)}; the loop may run again",
        }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
