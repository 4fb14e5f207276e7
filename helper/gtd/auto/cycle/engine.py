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

This module is the facade the CLI, the loop and the tests use (``Cycle(root,
now).begin(...)``, ``.end(...)``, ``.reset(...)``); the transitions live in
layers, each built on the one below so none imports another back: gtd.auto.cycle
.steps (what all share), .recovery (finishing and recovery), .end (`end` and the
worker's check, forked by gtd.auto.cycle.worker), .begin.
"""

from __future__ import annotations

import json

from gtd.auto import records, state
from gtd.auto.cycle import answers
from gtd.auto.cycle.answers import Answer
from gtd.auto.cycle.begin import Beginning
from gtd.auto.faults import crash_point
from gtd.auto.rendering import render
from gtd.auto.state import require_setup, sealed_config
from gtd.errors import GtdError, StateError
from gtd.fsio import locked


class Cycle(Beginning):
    """A cycle's transitions: `begin` (gtd.auto.cycle.begin), `end` and the worker's
    `work` (gtd.auto.cycle.end), recovery (gtd.auto.cycle.recovery), and `reset`."""

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


def dump(answer: Answer) -> str:
    return json.dumps(answer)


__all__ = ["Cycle", "StateError", "crash_point", "render", "require_setup", "sealed_config"]
