"""A wave in the headless loop (`gtd loop --agent CMD --parallel N`,
docs/parallel.md): one agent process per task of the wave at once, each with
its worktree as working directory and its brief on stdin, each in its own
process group killed after ``agent_timeout_minutes``; once every one has
exited, each task's cycle is ended in the wave's order (plan order), as the
serial loop ends its one cycle (gtd.auto.headless)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gtd import proc
from gtd.auto import agent_fence
from gtd.fsio import read_bytes

# One task's end, given its cycle and how its agent ran: the answer of `end`,
# the agent's exit status and the tail of its output.
EndOne = Callable[[int, proc.Result], tuple[Mapping[str, Any], int, str | None]]


def run(
    root: Path, argv: list[str], answer: Mapping[str, Any], timeout_min: int, end_one: EndOne
) -> list[tuple[Mapping[str, Any], int, str | None]]:
    """Run the wave ``answer`` names: its agents at once (``argv`` unfenced: each
    is fenced to its worktree here), then its ends in order."""
    cycles = [int(c) for c in answer["cycles"]]
    briefs = [str(b) for b in answer["briefs"]]
    places = [Path(str(w)) for w in answer["worktrees"]]

    groups: list[int] = []  # each agent's process group (proc.run starts one each)

    def one(index: int) -> proc.Result:
        brief = read_bytes(Path(briefs[index])).decode("utf-8", "replace")
        # Each agent fenced to its own worktree: the person's tree, git's folder
        # and the other tasks' worktrees read-only (gtd.auto.agent_fence).
        fenced = agent_fence.wrap_in(argv, root, places[index])[0]
        return proc.run(
            fenced, places[index], timeout=timeout_min * 60, input_text=brief, started=groups.append
        )

    pool = ThreadPoolExecutor(max_workers=len(cycles))
    try:
        results = list(pool.map(one, range(len(cycles))))
    except KeyboardInterrupt:
        # Ctrl-C reaches this thread only: the agents go as the serial loop's
        # one does (their tasks stay in the wave for `gtd cycle end`).
        for group in groups:
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGKILL)
        raise
    finally:
        pool.shutdown(wait=True)
    return [end_one(cycle, result) for cycle, result in zip(cycles, results, strict=True)]
