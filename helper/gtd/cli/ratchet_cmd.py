"""`gtd ratchet snapshot` and `gtd ratchet run`.

A verdict is not an error: `run` exits 0 whether the ratchet passes or fails (the
JSON says ``"passed"``); only an operational problem (no snapshot, a bad config, a
damaged sealed state, not a repository) exits non-zero."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gtd.cli.output import emit, root
from gtd.errors import GtdError
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from gtd.auto.config import AutoConfig
    from gtd.auto.ratchet.held import Held
    from gtd.auto.ratchet.model import Snapshot
    from gtd.auto.ratchet.room import Room
    from gtd.auto.state import State
    from gtd.git import Git
    from gtd.git_parse import TreeEntry

_FAILING_TAIL = 20


def snapshot(as_json: bool) -> int:
    from gtd import paths
    from gtd.auto import baseline, state
    from gtd.auto.config import load_auto_config
    from gtd.auto.ratchet import snapshot as codec
    from gtd.fsio import locked, state_lock
    from gtd.git import Git

    top = root()
    git = Git(top, hardened=True)
    head = git.head()
    if head is None:
        raise GtdError("the repository has no commits", "commit once, then take the snapshot")
    config = load_auto_config(top)
    with locked(state_lock(top)):
        if state.read(git).journal is not None:
            raise GtdError(
                "a cycle (or a baseline run) is in flight: its snapshot is the one it is judged by",
                "let it finish, then take the snapshot",
            )
    snap = baseline.take(git, config, head)
    with locked(state_lock(top)):
        st = state.read(git)
        if st.journal is not None:
            raise GtdError("a cycle began while the baseline ran", "take the snapshot again")
        baseline.seal(top, git, st, snap, config, message="ratchet snapshot")
    described = codec.describe_baseline(snap)
    count = len(snap.test_paths)
    payload: dict[str, Any] = {
        "status": "baseline-red" if snap.baseline_red else "ok",
        "snapshot": paths.SNAPSHOT,
        "test_files": count,
        "protected": sorted(snap.protected),
        "test_command": config.test_command,
        "test_command_source": config.test_command_source,
        "test_command_why": config.test_command_reason,
        "linked": list(config.links),
        "bootstrap": described["bootstrap"],
        "baseline": described,
    }
    files = "test file" if count == 1 else "test files"
    lines = [f"Ratchet snapshot: {count} pre-existing {files}"]
    if config.test_command:
        lines.append(f"Test command: {config.test_command} ({config.test_command_reason})")
    if config.links:
        lines.append(f"Linked into the clean room: {', '.join(config.links)}")
    lines.append(f"Protected test config: {', '.join(sorted(snap.protected)) or 'none'}")
    if snap.baseline.commands:
        lines.append("Baseline:")
        lines.extend(codec.summary_lines(snap.baseline))
    else:
        lines.append(
            "Baseline: no commands to run (no test command configured or detected); "
            "set ratchet.test_command in .deepflow/config.yaml"
        )
    if codec.bootstrap_needed(snap):
        lines.append(
            "No test files yet: the first cycle is a bootstrap that writes baseline tests."
        )
    if snap.baseline_reason is not None:
        lines.append(
            f"Baseline is red: {snap.baseline_reason}. The ratchet cannot tell a regression "
            "from this failure: fix it (or report per-test results as JUnit XML, see "
            "ratchet.junit_xml) and take the snapshot again."
        )
    emit(payload, "\n".join(lines), as_json)
    return 0


def run(as_json: bool) -> int:
    from gtd.auto.ratchet import early

    try:
        return _run(as_json)
    finally:
        early.discard()  # a test process started from the hint that nothing took


def _run(as_json: bool) -> int:
    import contextlib

    from gtd import threads
    from gtd.auto.ratchet import room
    from gtd.git import Git

    top = root()
    git = Git(top, hardened=True)
    with room.acquire(git) as rm:
        index = room.candidate_index(rm)
        # The test command starts first, held until the room is ready: its
        # interpreter and pytest load (~300 ms) while everything below runs.
        st, raw, config, held = _launch(git, rm)
        with held or contextlib.nullcontext():  # a failure below: the process ends
            # The candidate tree takes four git calls in a row, which need nothing
            # of the snapshot: they run while the rest of the judging code loads
            # (side by side on two cores).
            built, (snap, base_files) = threads.both(
                lambda: _candidate_over_head(git, index), lambda: _sealed(git, st, raw)
            )
            from gtd.auto import records
            from gtd.auto.ratchet import check  # loaded by _sealed, beside the build

            head, head_tree = st.head or (None, None)
            # None: HEAD was unborn (or the early build failed, and says why now).
            candidate = built if built is not None else git.worktree_tree(index, head)
            job = check.JudgeRequest(
                snap,
                base=snap.head,
                base_tree=head_tree if head == snap.head else None,
                base_files=base_files if head == snap.head else None,
                candidate=candidate,
                tolerated=frozenset(records.fold(st.records).quarantined),
                held=held,
            )
            judged = check.judge_candidate(git, rm, config, job)
    from gtd.auto.ratchet import snapshot as codec
    from gtd.auto.shorten import shorten, shorten_word

    verdict, result = judged.verdict, judged.run
    reason = None if verdict.reason is None else shorten(verdict.reason)
    details = [shorten(d) for d in verdict.details]
    commands = []
    for cmd in result.commands:
        entry = codec.command_json(cmd)
        if not cmd.ok:
            entry["output_tail"] = cmd.output_tail
        commands.append(entry)
    payload: dict[str, Any] = {
        "status": "passed" if verdict.passed else "failed",
        "passed": verdict.passed,
        "reason": reason,
        "details": details,
        "tests_passed": verdict.tests_passed,
        "tests_failed": verdict.tests_failed,
        "tests_skipped": verdict.tests_skipped,
        "tests_total": verdict.tests_total,
        "build_ok": verdict.build_ok,
        "commands": commands,
    }
    from gtd.auto.ratchet import box

    judge_box = box.plan(config)  # (asked once a process: the run's own answer)
    payload["boxed"] = judge_box.boxed
    payload["box"] = judge_box.described
    if verdict.passed:
        health = []
        if verdict.tests_total is not None:
            health.append(f"tests {verdict.tests_passed}/{verdict.tests_total}")
        if verdict.build_ok is not None:
            health.append("build passing" if verdict.build_ok else "build failing (tolerated)")
        head = "Ratchet: passed" + (f" — {', '.join(health)}" if health else "")
    else:
        head = f"Ratchet: failed — {reason}"
    lines = [head]
    lines.extend(f"  - {d}" for d in details[1:])
    if not judge_box.boxed:
        lines.append(f"Note: {judge_box.described} (docs/judge-box.md)")
    if judged.flaky:
        payload["flaky"] = [shorten_word(t) for t in judged.flaky]
        lines.append(f"Flaky (failed, then passed when run again): {', '.join(payload['flaky'])}")
    lines.extend(codec.summary_lines(result, snap.baseline))
    for cmd in result.commands:
        if not cmd.ok and cmd.output_tail:
            tail = cmd.output_tail.splitlines()[-_FAILING_TAIL:]
            lines.append(f"--- last output of the {cmd.kind} command ---")
            lines.extend(tail)
    emit(payload, "\n".join(lines), as_json)
    return 0


# -- quarantine by hand ----------------------------------------------------------------

_PERSON_EVIDENCE = "quarantined by hand (gtd ratchet quarantine)"


def quarantine(test: str, reason: str | None, as_json: bool) -> int:
    """Take a test out of the ratchet's judgement: its failures are reported, never
    alone the reason for a revert. Recorded in the sealed history, between cycles."""
    from gtd.auto.memory import Quarantine
    from gtd.auto.ratchet import snapshot as codec

    def change(st: Any, mem: Any, at: str) -> tuple[list[Any], dict[str, Any]]:
        if test in mem.quarantined:
            return [], {
                "status": "unchanged",
                "test": test,
                "message": "the test is already quarantined",
            }
        from gtd.auto import state

        raw = state.read_blob(st.git, st.state, state.SNAPSHOT)
        snap = codec.loads(raw, f"{state.ref(st.git)}:{state.SNAPSHOT}") if raw else None
        known = (snap.baseline.tests or {}) if snap is not None else {}
        if test not in known:
            raise GtdError(f"unknown test: {_shown(test)}", _closest(test, sorted(known)))
        last = max((c.cycle for c in mem.cycles), default=0)
        entry = Quarantine(test, last, at, reason or _PERSON_EVIDENCE, by="person")
        return [entry], {
            "status": "quarantined",
            "test": test,
            "evidence": entry.evidence,
            "message": "its failures are reported and never alone revert a cycle",
            "next": f"put it back with `gtd ratchet release {_quoted(test)}`",
        }

    return _record_by_hand(f"quarantine {test}", change, as_json)


def release(test: str, as_json: bool) -> int:
    """Put a quarantined test back under the ratchet: its failures count again."""
    from gtd.auto import records

    def change(st: Any, mem: Any, at: str) -> tuple[list[Any], dict[str, Any]]:
        if test not in mem.quarantined:
            listed = ", ".join(_shown(t) for t in sorted(mem.quarantined)) or "none"
            return [], {
                "status": "unchanged",
                "test": test,
                "message": f"the test is not quarantined (quarantined: {listed})",
            }
        return [records.Release(test, at)], {
            "status": "released",
            "test": test,
            "message": "its failures count again from the next cycle",
        }

    return _record_by_hand(f"release {test}", change, as_json)


class _Sealed(NamedTuple):
    git: Any
    state: Any


def _record_by_hand(subject: str, change: Any, as_json: bool) -> int:
    """Append what ``change`` decides to the sealed records under the state lock,
    refused while a cycle or a baseline run is in flight (whose verdict must not
    change under it: the implementer works only while a cycle is in flight), then
    re-render memory and the report."""
    from gtd.auto import plan_file, records, state
    from gtd.auto.rendering import render
    from gtd.auto.state import require_setup
    from gtd.clock import now
    from gtd.fsio import locked, state_lock
    from gtd.git import Git

    top = root()
    git = Git(top, hardened=True)
    at = now()
    with locked(state_lock(top)):
        st = state.read(git)
        require_setup(top, st)
        if st.journal is not None:
            raise GtdError(
                "a cycle (or a baseline run) is in flight: its verdict is judged by the "
                "quarantine as it stood when it began",
                "run this between cycles (after `gtd cycle end`, or stop the loop first)",
            )
        mem = records.fold(st.records)
        new, payload = change(_Sealed(git, st), mem, at.iso)
        if new:
            st = state.write(git, st, subject[:200], append=new)
            _, the_plan = plan_file.load(top)
            render(top, st, the_plan, at)
    lines = [f"status: {payload['status']}"]
    lines += [f"{key}: {value}" for key, value in payload.items() if key != "status"]
    emit(payload, "\n".join(lines), as_json)
    return 0


_SHOWN_MAX = 160


def _shown(test: str) -> str:
    """A test id as it is shown in messages: cut in the middle when very long."""
    if len(test) <= _SHOWN_MAX:
        return test
    return test[: _SHOWN_MAX - 41] + "…" + test[-40:]


def _quoted(test: str) -> str:
    import shlex

    return shlex.quote(test)


def _closest(test: str, known: list[str]) -> str:
    import difflib

    near = difflib.get_close_matches(test, known, n=3, cutoff=0.6)
    if near:
        return "did you mean: " + ", ".join(_shown(t) for t in near)
    return (
        f"give the id as `gtd ratchet run` shows it (the baseline has {len(known)} tests, "
        "e.g. tests/test_x.py::test_name)"
    )


def _candidate_over_head(git: Git, index: Path) -> str | None:
    """The candidate tree over whatever HEAD is; None where that fails (no commit
    yet, say): the caller then builds it over the HEAD the sealed state read.
    HEAD moving in between changes nothing the verdict reads: the candidate is the
    working tree's content either way."""
    from gtd.errors import GitError

    try:
        return git.worktree_tree(index, "HEAD")
    except GitError:
        return None


def _launch(git: Git, rm: Room) -> tuple[State, bytes, AutoConfig, Held | None]:
    """The sealed state (HEAD and its tree too), the snapshot's raw bytes and the
    config; and the test command, started as soon as the config names it and held
    until the room is ready (gtd.auto.ratchet.held)."""
    from gtd.auto import state
    from gtd.auto.ratchet import room
    from gtd.auto.ratchet.held import hold
    from gtd.auto.state import sealed_config

    st = state.read(git, snapshot=True, head=True)
    raw = state.read_blob(git, st, state.SNAPSHOT)
    if raw is None or not st.set_up:
        raise GtdError(
            "no ratchet snapshot yet", "run `gtd ratchet snapshot` first (or `gtd auto setup`)"
        )
    config = sealed_config(st)
    return st, raw, config, hold(rm, config, room.environment(rm))


def _sealed(git: Git, st: State, raw: bytes) -> tuple[Snapshot, dict[str, TreeEntry] | None]:
    """The snapshot, and the listing of HEAD's tree where HEAD is the snapshot's
    commit (the base the candidate is judged on). Loads the judging code too,
    while the candidate tree is built beside it."""
    from gtd.auto import state
    from gtd.auto.ratchet import check  # noqa: F401  (its imports: ~1/3 of the helper's)
    from gtd.auto.ratchet import snapshot as codec

    snap = codec.loads(raw, f"{state.ref(git)}:{state.SNAPSHOT}")
    head, head_tree = st.head or (None, None)
    base_files = git.ls_tree(head_tree) if head_tree is not None and head == snap.head else None
    return snap, base_files
