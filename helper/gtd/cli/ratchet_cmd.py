"""`gtd ratchet snapshot` and `gtd ratchet run`.

A verdict is not an error: `run` exits 0 whether the ratchet passes or fails (the
JSON says ``"passed"``); only an operational problem (no snapshot, a bad config, a
damaged sealed state, not a repository) exits non-zero."""

from __future__ import annotations

from typing import Any

from gtd.cli.output import emit, root
from gtd.errors import GtdError

_FAILING_TAIL = 20


def snapshot(as_json: bool) -> int:
    from gtd import paths
    from gtd.auto import baseline, state
    from gtd.auto.config import load_auto_config
    from gtd.auto.ratchet import snapshot as codec
    from gtd.fsio import locked
    from gtd.git import Git

    top = root()
    git = Git(top, hardened=True)
    head = git.head()
    if head is None:
        raise GtdError("the repository has no commits", "commit once, then take the snapshot")
    config = load_auto_config(top)
    with locked(top / paths.LOCK):
        if state.read(git).journal is not None:
            raise GtdError(
                "a cycle (or a baseline run) is in flight: its snapshot is the one it is judged by",
                "let it finish, then take the snapshot",
            )
    snap = baseline.take(git, config, head)
    with locked(top / paths.LOCK):
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
        "bootstrap": described["bootstrap"],
        "baseline": described,
    }
    lines = [f"Ratchet snapshot: {count} pre-existing test files"]
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
    from gtd.auto import records, state
    from gtd.auto.cycle.engine import sealed_config
    from gtd.auto.ratchet import check, room
    from gtd.auto.ratchet import snapshot as codec
    from gtd.git import Git

    top = root()
    git = Git(top, hardened=True)
    st = state.read(git, snapshot=True)
    raw = state.read_blob(git, st, state.SNAPSHOT)
    if raw is None or not st.set_up:
        raise GtdError(
            "no ratchet snapshot yet", "run `gtd ratchet snapshot` first (or `gtd auto setup`)"
        )
    snap = codec.loads(raw, f"{state.REF}:{state.SNAPSHOT}")
    config = sealed_config(st)
    tolerated = frozenset(records.fold(st.records).quarantined)
    with room.acquire(git) as rm:
        candidate = git.worktree_tree(rm.slot / "candidate.index")
        judged = check.judge_candidate(
            git, rm, config, snap, base=snap.head, candidate=candidate, tolerated=tolerated
        )
    verdict, result = judged.verdict, judged.run
    commands = []
    for cmd in result.commands:
        entry = codec.command_json(cmd)
        if not cmd.ok:
            entry["output_tail"] = cmd.output_tail
        commands.append(entry)
    payload: dict[str, Any] = {
        "status": "passed" if verdict.passed else "failed",
        "passed": verdict.passed,
        "reason": verdict.reason,
        "details": list(verdict.details),
        "tests_passed": verdict.tests_passed,
        "tests_failed": verdict.tests_failed,
        "tests_skipped": verdict.tests_skipped,
        "tests_total": verdict.tests_total,
        "build_ok": verdict.build_ok,
        "commands": commands,
    }
    if verdict.passed:
        health = []
        if verdict.tests_total is not None:
            health.append(f"tests {verdict.tests_passed}/{verdict.tests_total}")
        if verdict.build_ok is not None:
            health.append("build passing" if verdict.build_ok else "build failing (tolerated)")
        head = "Ratchet: passed" + (f" — {', '.join(health)}" if health else "")
    else:
        head = f"Ratchet: failed — {verdict.reason}"
    lines = [head]
    lines.extend(f"  - {d}" for d in verdict.details[1:])
    lines.extend(codec.summary_lines(result, snap.baseline))
    for cmd in result.commands:
        if not cmd.ok and cmd.output_tail:
            tail = cmd.output_tail.splitlines()[-_FAILING_TAIL:]
            lines.append(f"--- last output of the {cmd.kind} command ---")
            lines.extend(tail)
    emit(payload, "\n".join(lines), as_json)
    return 0
