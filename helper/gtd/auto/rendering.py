"""The files a person reads, rendered from the sealed records: auto-memory.yaml and
auto-report.md (with the notifier's failures), and the count they were rendered
from. Every command that seals records renders through here (the cycle engine,
the baseline worker, set-up, `ratchet run`, `gtd verify`, the notifier after a
failed delivery), so none of them imports the cycle engine to render."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import paths
from gtd.auto import records
from gtd.auto.faults import crash_point
from gtd.auto.state import State, sealed_config
from gtd.fsio import atomic_write, locked, read_bytes, state_lock

WAVE_FILE = "wave.json"  # the wave journal in the sealed state (gtd.auto.cycle.waves.WAVE)

if TYPE_CHECKING:
    from gtd.auto.memory import Memory
    from gtd.auto.plan import Plan
    from gtd.auto.report import Health
    from gtd.auto.wave_journal import Wave
    from gtd.clock import Now


def render(root: Path, st: State, the_plan: Plan, now: Now) -> None:
    """Re-render auto-memory.yaml and auto-report.md from the sealed records."""
    from gtd.auto import memory_file
    from gtd.errors import InputError

    mem = records.fold(st.records)
    path = root / paths.MEMORY
    try:
        _, doc = memory_file.load(path)
    except (InputError, OSError):  # OSError: a pipe, say (gtd.fsio.read_bytes)
        doc = memory_file.Doc()  # a rendering: an unreadable copy is simply replaced
    memory_file.save(path, mem, doc)
    render_report(root, st, the_plan, now, mem=mem)
    atomic_write(root / paths.RENDERED, f"{len(st.records)}\n")
    crash_point("rendered")
    notify(root, st)


def notify(root: Path, st: State) -> None:
    """Tell of what the records now say, in the background (gtd.auto.notifier)."""
    from gtd.auto import notifier

    notifier.kick(root, st, rerender=rerender)


def render_report(
    root: Path,
    st: State,
    the_plan: Plan,
    now: Now,
    *,
    mem: Memory | None = None,
    health: Health | None = None,
    waiting: str | None = None,
) -> None:
    """Re-render auto-report.md alone: what changes when work starts or stops
    (the State at its top), with no new record to fold into memory. ``health``:
    the levels of a `gtd verify` run, for the State and the Health Score;
    ``waiting``: why the tick started nothing (a dirty tree)."""
    from gtd.auto import budget, report, report_notes

    spec = next((t.spec for t in the_plan.tasks if t.spec), None)
    text = report.render(
        report_notes.title(the_plan.title, spec, root.name),
        records.fold(st.records) if mem is None else mem,
        now.iso,
        health,
        plan=the_plan,
        journal=st.journal,
        threshold=sealed_config(st).circuit_breaker_threshold,
        failing=report_notes.failing_at_baseline(st.summary),
        budget=budget.for_next(st.records, budget.ceiling_of(sealed_config(st)), the_plan),
        billing=sealed_config(st).billing,
        waiting=waiting,
        main_line=_main_line(root),
        wave=_wave(root, st),
    )
    from gtd.auto import notifier

    text += "".join(line + "\n" for line in notifier.report_lines(root))
    atomic_write(root / paths.REPORT, text)


def _main_line(root: Path) -> str | None:
    """The main line's name when it is checked out; None when git cannot say (the
    report is a rendering: it never fails for want of a branch name)."""
    from gtd.auto.main_line import main_line
    from gtd.errors import GtdError
    from gtd.git import Git

    try:
        return main_line(Git(root, hardened=True))
    except GtdError:  # git's own bound overrun, say: a rendering never fails on it
        return None


def _wave(root: Path, st: State) -> Wave | None:
    """The wave in flight, as sealed; None when there is none or it cannot be
    read (a rendering never fails on it: `begin` names an unreadable one)."""
    from gtd.auto import state, wave_journal
    from gtd.errors import GtdError
    from gtd.git import Git

    try:
        raw = state.read_blob(Git(root, hardened=True), st, WAVE_FILE)
        return None if raw is None else wave_journal.loads(raw)
    except (GtdError, ValueError, TypeError):
        return None


def rendered_count(root: Path) -> int | None:
    """How many records the memory and report files were last rendered from."""
    try:
        return int(read_bytes(root / paths.RENDERED).strip())
    except (OSError, ValueError):
        return None


def rerender(root: Path) -> None:
    """The report again, under the state lock, from the state sealed now: a failed
    notification shows at once, not at the next cycle's render. Never raises."""
    from gtd.auto import plan_file, state
    from gtd.clock import now
    from gtd.git import Git

    with contextlib.suppress(Exception), locked(state_lock(root), timeout_s=10.0):
        st = state.read(Git(root, hardened=True))
        if st.summary is not None:
            render_report(root, st, plan_file.load(root)[1], now())
