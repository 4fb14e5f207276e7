"""Telling a person: the configured notifier run once per event (gtd.auto.notify).

The edge of notifications. Whoever seals something an event comes from (`gtd cycle
begin` / `end`, the check worker, `gtd loop`, `gtd verify`) calls :func:`kick`
after the seal; it costs no process when nothing is waiting. Otherwise it starts a
detached grandchild (its own session, nobody's child to wait for) that delivers:
the tick goes on at once, however long the notifier takes.

Exactly once: the delivered ids are kept in ``.deepflow/notified.json``, written
atomically after each run. The deliverer takes a lock of its own
(``.deepflow/.notify.lock``, never the state lock the loop waits on), then reads
the sealed records and the marker, so two ticks that both kick deliver each event
once between them; a crash between the seal and the delivery leaves the event
undelivered in the marker, and the next kick delivers it. The one window left is
a crash while the notifier itself runs: it is run again (``GTD_EVENT_ID`` lets a
notifier that must never repeat itself tell).

A notifier that fails, is missing or outlives ``notify.timeout_seconds`` (its
process group is killed) counts as delivered, not retried: its failure is kept in
the marker and shown in the report's Notifications section and `gtd auto status`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import paths
from gtd.auto import notify
from gtd.auto.notify import Event
from gtd.fsio import atomic_write, held, locked, read_bytes
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Any

    from gtd.auto.config import AutoConfig
    from gtd.auto.state import State

    Rerender = Callable[[Path], None]

MARKER = paths.STATE_DIR + "/notified.json"
LOCK = paths.STATE_DIR + "/.notify.lock"
_SHOWN_FAILURES = 5  # the report lists the last few; the marker keeps more
_KEPT_FAILURES = 50


class Failure(NamedTuple):
    id: str
    kind: str
    at: str
    why: str


class Marker(NamedTuple):
    since: int  # records before this index were sealed before notifications began
    delivered: tuple[str, ...] = ()
    failures: tuple[Failure, ...] = ()


def _index(event_id: str) -> int:
    return int(event_id.rpartition(":")[2])


def load(root: Path) -> Marker | None:
    """The marker, or None where there is none (or none that reads: it is remade)."""
    try:
        data = json.loads(read_bytes(root / MARKER))
        return Marker(
            int(data["since"]),
            tuple(str(i) for i in data.get("delivered", ())),
            tuple(Failure(**f) for f in data.get("failures", ())),
        )
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _save(root: Path, marker: Marker) -> None:
    data = {
        "since": marker.since,
        "delivered": list(marker.delivered),
        "failures": [f._asdict() for f in marker.failures[-_KEPT_FAILURES:]],
    }
    atomic_write(root / MARKER, json.dumps(data, indent=1) + "\n")


def waiting(marker: Marker, found: list[Event]) -> list[Event]:
    done = set(marker.delivered)
    return [e for e in found if e.id not in done and _index(e.id) >= marker.since]


def kick(
    root: Path, st: State, extra: Event | None = None, *, rerender: Rerender | None = None
) -> None:
    """Deliver what is waiting, in the background. Called with the state sealed
    (under the state lock or not). Never raises: telling is not the loop's work.
    ``rerender(root)`` runs after a failed delivery (gtd.auto.rendering.rerender:
    handed in, so this module never imports the renderer that imports it)."""
    try:
        _kick(root, st, extra, rerender)
    except Exception as exc:
        print(f"gtd: notifications: {exc}", file=sys.stderr)


def _kick(root: Path, st: State, extra: Event | None, rerender: Rerender | None) -> None:
    from gtd.auto.state import sealed_config

    if st.summary is None or not sealed_config(st).notify_command:
        return
    marker = load(root)
    if marker is None:
        # Notifications begin now: what was sealed before is history, not news.
        # Made before any event can follow, so a crash after one finds it. A
        # deliverer at work (the lock taken) writes its own: never wait for it.
        with held(root / LOCK) as taken:
            if taken and load(root) is None:
                _save(root, Marker(since=len(st.records)))
        marker = load(root)
        if marker is None:
            return
    found = notify.events(st.records) + ([extra] if extra else [])
    if not waiting(marker, found):
        return
    _detached(lambda: deliver(root, extra, rerender=rerender))


def deliver(
    root: Path, extra: Event | None = None, *, rerender: Rerender | None = None
) -> list[tuple[Event, str | None]]:
    """Run the notifier for each waiting event, in order; what each did (None:
    delivered, else why not). Holds the notify lock throughout. After a failure,
    ``rerender(root)`` (see :func:`kick`)."""
    from gtd.auto import state
    from gtd.auto.faults import crash_point
    from gtd.auto.state import sealed_config
    from gtd.git import Git

    done: list[tuple[Event, str | None]] = []
    with locked(root / LOCK, timeout_s=3600.0):
        st = state.read(Git(root, hardened=True))
        if st.summary is None:
            return done
        config = sealed_config(st)
        marker = load(root) or Marker(since=len(st.records))
        found = notify.events(st.records) + ([extra] if extra else [])
        for event in waiting(marker, found):
            if not config.notify_command:
                break
            why = run(root, config, event)
            crash_point("notified")
            failures = marker.failures
            if why is not None:
                failures += (Failure(event.id, event.kind, event.at, why),)
            marker = marker._replace(delivered=(*marker.delivered, event.id), failures=failures)
            _save(root, marker)
            done.append((event, why))
    if rerender is not None and any(why for _, why in done):
        rerender(root)
    return done


def run(root: Path, config: AutoConfig, event: Event) -> str | None:
    """Run the notifier for ``event``: None when it succeeded, else why not."""
    from gtd import proc

    assert config.notify_command is not None
    try:
        argv, _ = proc.command_argv(config.notify_command)
    except ValueError as exc:
        return f"cannot split the notifier command: {exc}"
    env = {**os.environ, **environment(root, event)}
    result = proc.run(
        argv,
        root,
        timeout=config.notify_timeout_s,
        input_text=json.dumps(event.as_json()) + "\n",
        env=env,
    )
    if result.ok:
        return None
    if result.not_found:
        return f"notifier not found: {argv[0]}"
    if result.timed_out:
        return f"notifier killed after {config.notify_timeout_s:g} s"
    last = next((x.strip() for x in reversed(result.output.splitlines()) if x.strip()), "")
    return f"notifier exited {result.returncode}" + (f": {last[:200]}" if last else "")


def environment(root: Path, event: Event) -> dict[str, str]:
    values = {
        "GTD_EVENT": event.kind,
        "GTD_EVENT_ID": event.id,
        "GTD_MESSAGE": event.message,
        "GTD_REPO": str(root),
        "GTD_TASK": event.task or "",
        "GTD_CYCLE": "" if event.cycle is None else str(event.cycle),
        "GTD_REASON": event.reason or "",
        "GTD_VERDICT": event.verdict or "",
    }
    return values


def completed(
    root: Path, verdict: str, done: int, at: str, *, rerender: Rerender | None = None
) -> None:
    """`gtd verify` ran with no task left: tell of it (once for this history)."""
    from gtd.auto import state
    from gtd.git import Git

    try:
        st = state.read(Git(root, hardened=True))
    except Exception as exc:
        print(f"gtd: notifications: {exc}", file=sys.stderr)
        return
    kick(root, st, notify.complete(st.records, verdict, done, at), rerender=rerender)


def report_lines(root: Path) -> list[str]:
    """The report's Notifications section: the notifier's recent failures (none
    shown when every event was delivered)."""
    marker = load(root)
    if marker is None or not marker.failures:
        return []
    lines = ["", "## Notifications", ""]
    for f in marker.failures[-_SHOWN_FAILURES:]:
        lines.append(f"- {f.kind} ({f.at}): not delivered: {f.why}")
    return lines


def last_failure(root: Path) -> Failure | None:
    marker = load(root)
    return marker.failures[-1] if marker and marker.failures else None


def _detached(work: Callable[[], Any]) -> None:
    """Run ``work()`` in a grandchild of its own session, stdio on /dev/null: the
    caller waits only for the short-lived child between (no zombie is left in a
    long `gtd loop`), and never for the work."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        return
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        # Nothing of the caller's stays open here: a lock it holds, a pipe its
        # own caller reads to the end.
        os.closerange(3, 65536)
        work()
        code = 0
    except BaseException:
        code = 1
    os._exit(code)
