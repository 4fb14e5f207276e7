"""The snapshot's JSON form and its presentation. Pure: values in, text out.

The snapshot lives in the helper's sealed state (gtd.auto.state: ``snapshot.json``
in ``refs/gtd/state``); ``.deepflow/auto-snapshot.json`` and the deepflow-style
path list ``.deepflow/auto-snapshot.txt`` are mirrors for people. A snapshot that
does not parse is an error naming where it came from, never a silent reset.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from gtd.auto.ratchet.model import (
    KINDS,
    OUTCOMES,
    CommandRun,
    Environment,
    Kind,
    Outcome,
    RunResult,
    Snapshot,
)
from gtd.errors import InputError
from gtd.names import json_bytes

if TYPE_CHECKING:
    from typing import Any

FORMAT = 2
_REDO = "run `gtd auto setup` to take a fresh snapshot and baseline"


def dumps(snap: Snapshot) -> bytes:
    doc = {
        "format": FORMAT,
        "head": snap.head,
        "files": dict(sorted(snap.files.items())),
        "doctests": {p: dict(sorted(d.items())) for p, d in sorted(snap.doctests.items())},
        "protected": dict(sorted(snap.protected.items())),
        "collected": snap.collected,
        "environment": snap.environment._asdict(),
        "accepted": snap.accepted,
        "baseline": run_json(snap.baseline),
    }
    # A protected file whose name is not UTF-8 is kept by its exact bytes.
    return json_bytes(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def run_json(run: RunResult) -> dict[str, Any]:
    return {
        # (``left`` only where the box looked: other runs' bytes unchanged)
        "commands": [
            {k: v for k, v in c._asdict().items() if k != "left" or v is not None}
            for c in run.commands
        ],
        "tests": None if run.tests is None else dict(run.tests),
        "skips": dict(run.skips),
    }


def loads(data: bytes, name: str) -> Snapshot:
    def bad(message: str) -> InputError:
        return InputError(name, f"corrupt ratchet snapshot: {message}", hint=_REDO)

    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise bad(f"not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise bad("not a JSON object")
    if doc.get("format") != FORMAT:
        raise bad(f"unknown format {doc.get('format')!r} (this gtd reads format {FORMAT})")
    files = _str_map(doc.get("files"), "files", bad)
    protected = _str_map(doc.get("protected"), "protected", bad)
    raw_doctests = doc.get("doctests", {})
    raw_doctests = {} if raw_doctests is None else raw_doctests
    if not isinstance(raw_doctests, dict):
        raise bad("doctests is not a mapping")
    doctests = {p: _str_map(d, f"doctests[{p!r}]", bad) for p, d in raw_doctests.items()}
    env = doc.get("environment") or {}
    if not isinstance(env, dict):
        raise bad("environment is not a mapping")
    environment = Environment(
        dirs=tuple(str(d) for d in env.get("dirs") or ()),
        shadowable=tuple(str(n) for n in env.get("shadowable") or ()),
        plugin=bool(env.get("plugin")),
        evidence=tuple(str(e) for e in env.get("evidence") or ()),
        plugins=_optional_strs(env.get("plugins")),
        hooks=_optional_strs(env.get("hooks")),
        kinds=_optional_strs(env.get("kinds")),
    )
    accepted = doc.get("accepted")
    return Snapshot(
        head=str(doc.get("head") or ""),
        files=files,
        protected=protected,
        baseline=run_from_json(doc.get("baseline"), bad),
        doctests=doctests,
        collected=bool(doc.get("collected")),
        environment=environment,
        accepted=accepted if isinstance(accepted, str) else None,
    )


def _optional_strs(value: object) -> tuple[str, ...] | None:
    return tuple(str(v) for v in value) if isinstance(value, list) else None


def run_from_json(baseline: Any, bad: Any) -> RunResult:
    if not isinstance(baseline, dict):
        raise bad("baseline is missing")
    raw_cmds = baseline.get("commands")
    if not isinstance(raw_cmds, list):
        raise bad("baseline.commands is not a list")
    commands = tuple(_command(c, i, bad) for i, c in enumerate(raw_cmds))
    raw_tests = baseline.get("tests")
    tests: dict[str, Outcome] | None = None
    if raw_tests is not None:
        tests = {}
        for test_id, outcome in _str_map(raw_tests, "baseline.tests", bad).items():
            if outcome not in OUTCOMES:
                raise bad(f"baseline.tests[{test_id!r}]: unknown outcome {outcome!r}")
            tests[test_id] = outcome
    skips = _str_map(baseline.get("skips", {}), "baseline.skips", bad)
    return RunResult(commands, tests, skips)


def _str_map(value: Any, what: str, bad: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise bad(f"{what} is not a mapping of strings")
    return cast(dict[str, str], value)


def _command(raw: Any, index: int, bad: Any) -> CommandRun:
    where = f"baseline.commands[{index}]"
    if not isinstance(raw, dict):
        raise bad(f"{where} is not an object")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise bad(f"{where}.kind: unknown kind {kind!r}")
    spec: Mapping[str, tuple[type, ...]] = {
        "command": (str,),
        "exit_code": (int,),
        "duration_s": (int, float),
        "timeout_s": (int, float),
        "timed_out": (bool,),
        "output_tail": (str,),
    }
    for key, types in spec.items():
        value = raw.get(key)
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            raise bad(f"{where}.{key} is missing or has the wrong type")
    missing = raw.get("missing")
    if missing is not None and not isinstance(missing, str):
        raise bad(f"{where}.missing has the wrong type")
    left = raw.get("left")  # absent: nobody looked (before gtd did, or unboxed)
    if left is not None and (
        not isinstance(left, list) or not all(isinstance(c, str) for c in left)
    ):
        raise bad(f"{where}.left is not a list of strings")
    return CommandRun(
        kind=cast(Kind, kind),
        command=raw["command"],
        exit_code=raw["exit_code"],
        duration_s=float(raw["duration_s"]),
        timeout_s=float(raw["timeout_s"]),
        timed_out=raw["timed_out"],
        missing=missing,
        output_tail=raw["output_tail"],
        left=None if left is None else tuple(left),
    )


def bootstrap_needed(snapshot: Snapshot) -> bool:
    """No test files to protect: the first cycle writes baseline tests."""
    return not snapshot.files and not snapshot.doctests


# -- presentation ---------------------------------------------------------------------


def describe_baseline(snapshot: Snapshot) -> dict[str, Any]:
    """The baseline as a JSON-ready dict (for `gtd ratchet snapshot --json`, setup)."""
    base = snapshot.baseline
    tests = base.tests or {}
    failing = sorted(t for t, o in tests.items() if o in ("failed", "error"))
    return {
        "tests_passed": base.tests_passed,
        "tests_failed": len(failing) if base.tests is not None else None,
        "tests_skipped": sum(1 for o in tests.values() if o == "skipped")
        if base.tests is not None
        else None,
        "tests_total": base.tests_total,
        "tests_failing": failing,
        "per_test": base.tests is not None,
        "commands": [command_json(c) for c in base.commands],
        "red": snapshot.baseline_red,
        "reason": snapshot.baseline_reason,
        "bootstrap": bootstrap_needed(snapshot),
        "accepted": snapshot.accepted,
    }


def command_json(run: CommandRun) -> dict[str, Any]:
    return {
        "kind": run.kind,
        "command": run.command,
        "ok": run.ok,
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
        "not_found": run.not_found,
        "duration_s": run.duration_s,
        "reason": None if run.ok else _command_reason(run),
    }


def summary_lines(run: RunResult, baseline: RunResult | None = None) -> list[str]:
    """One line per command: `test command: passing (24/24 tests)`."""
    lines: list[str] = []
    for cmd in run.commands:
        state = "passing" if cmd.ok else _command_reason(cmd)
        if cmd.kind == "test" and run.tests is not None:
            state += f" ({run.tests_passed}/{run.tests_total} tests passed)"
        elif cmd.kind == "test":
            state += " (exit code only: no per-test results)"
        before = baseline.command(cmd.kind) if baseline is not None else None
        if not cmd.ok and before is not None and not before.ok:
            state += " — failing at baseline too, tolerated"
        lines.append(f"  {cmd.kind}: {cmd.command} → {state}")
    return lines


def _command_reason(run: CommandRun) -> str:
    from gtd.auto.ratchet.model import command_reason

    return command_reason(run)
