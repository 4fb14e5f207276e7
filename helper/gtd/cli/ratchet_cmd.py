"""`gtd ratchet snapshot` and `gtd ratchet run`.

A verdict is not an error: `run` exits 0 whether the ratchet passes or fails (the
JSON says ``"passed"``); only an operational problem (no snapshot, a bad config, a
corrupt sidecar, not a repository) exits non-zero."""

from __future__ import annotations

from typing import Any

from gtd.cli.output import emit, root
from gtd.errors import GtdError

_FAILING_TAIL = 20


def snapshot(as_json: bool) -> int:
    from gtd.auto import ratchet
    from gtd.auto.config import load_config
    from gtd.auto.ratchet.snapshot import SNAPSHOT_TXT, summary_lines

    top = root()
    config = load_config(top)
    snap = ratchet.take_snapshot(top, config)
    baseline = ratchet.describe_baseline(snap)
    payload: dict[str, Any] = {
        "status": "baseline-red" if snap.baseline_red else "ok",
        "snapshot": SNAPSHOT_TXT,
        "test_files": len(snap.files),
        "protected": sorted(snap.protected),
        "test_command": config.test_command,
        "test_command_source": config.test_command_source,
        "bootstrap": baseline["bootstrap"],
        "baseline": baseline,
    }
    lines = [f"Ratchet snapshot: {len(snap.files)} pre-existing test files"]
    lines.append(f"Protected test config: {', '.join(sorted(snap.protected)) or 'none'}")
    if snap.baseline.commands:
        lines.append("Baseline:")
        lines.extend(summary_lines(snap.baseline))
    else:
        lines.append(
            "Baseline: no commands to run (no test command configured or detected); "
            "set ratchet.test_command in .deepflow/config.yaml"
        )
    if ratchet.bootstrap_needed(snap):
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
    from gtd.auto import ratchet
    from gtd.auto.config import load_config
    from gtd.auto.ratchet.snapshot import command_json, summary_lines

    top = root()
    snap = ratchet.load_snapshot(top)
    if snap is None:
        raise GtdError(
            "no ratchet snapshot in .deepflow/",
            "run `gtd ratchet snapshot` first (or `gtd auto setup`)",
        )
    config = load_config(top)
    verdict, result = ratchet.check(top, config, snap)
    commands = []
    for cmd in result.commands:
        entry = command_json(cmd)
        if not cmd.ok:
            entry["output_tail"] = cmd.output_tail
        commands.append(entry)
    payload: dict[str, Any] = {
        "status": "passed" if verdict.passed else "failed",
        "passed": verdict.passed,
        "reason": verdict.reason,
        "details": list(verdict.details),
        "tests_passed": verdict.tests_passed,
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
    lines.extend(summary_lines(result, snap.baseline))
    for cmd in result.commands:
        if not cmd.ok and cmd.output_tail:
            tail = cmd.output_tail.splitlines()[-_FAILING_TAIL:]
            lines.append(f"--- last output of the {cmd.kind} command ---")
            lines.extend(tail)
    emit(payload, "\n".join(lines), as_json)
    return 0
