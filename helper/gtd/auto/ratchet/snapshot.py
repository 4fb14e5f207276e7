"""The snapshot on disk: taking it, reading and writing it, advancing it.

Two files in ``.deepflow/``:

- ``auto-snapshot.txt``: the snapshot test files, one path a line (deepflow's
  format, for people and deepflow tools; informational only);
- ``auto-snapshot.json``: the authority: each test file's sha256, the protected
  configuration digests and the baseline run (per-command results, per-test
  outcomes). A corrupt sidecar is an error naming the file, never a silent reset.

After a passing cycle the engine stores the advanced snapshot as *pending*
(``auto-snapshot.pending.json``) before it commits, promotes it with
:func:`commit_pending` once the commit is made (refreshing PLAN.md's digest, which
the PLAN.md tick changed) and drops it on a revert; both are idempotent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from gtd.auto.config import Config
from gtd.auto.ratchet import files as files_mod
from gtd.auto.ratchet import protect
from gtd.auto.ratchet.model import (
    KINDS,
    OUTCOMES,
    CommandRun,
    FileHashes,
    Kind,
    Outcome,
    RunResult,
    Snapshot,
)
from gtd.errors import InputError
from gtd.fsio import atomic_write

SNAPSHOT_TXT = ".deepflow/auto-snapshot.txt"
SNAPSHOT_JSON = ".deepflow/auto-snapshot.json"
PENDING_JSON = ".deepflow/auto-snapshot.pending.json"
# 2: protected configuration is keyed per governing section ("pyproject.toml
# [tool.pytest.ini_options]"); a format-1 snapshot's keys would all read as changed,
# so it is refused with the command that takes a fresh one.
FORMAT = 2

_REDO = "run `gtd ratchet snapshot` to take a fresh snapshot and baseline"


# -- taking and advancing -------------------------------------------------------------


def take_snapshot(root: Path, config: Config) -> Snapshot:
    """Hash the tracked test files and the protected configuration, run the
    configured commands once for the baseline, and save it all."""
    listing = files_mod.list_tree(root)
    snap = Snapshot(
        files=files_mod.hash_files(root, files_mod.test_files(listing.tracked)),
        protected=protect.discover(root, listing.present, _commands(config)),
        baseline=_run_all(root, config),
    )
    save_snapshot(root, snap)
    return snap


def advance(snapshot: Snapshot, run: RunResult, root: Path) -> Snapshot:
    """The snapshot after a passing cycle: every test file now present (tracked or
    untracked, not ignored) becomes protected — the agent's new tests included —
    and the cycle's run becomes the baseline. Runs nothing."""
    del snapshot  # everything it protected is still in the tree (the cycle passed)
    listed = files_mod.list_tree(root).present
    return Snapshot(
        files=files_mod.hash_files(root, files_mod.test_files(listed)),
        protected=protect.discover(root, listed, [c.command for c in run.commands]),
        baseline=run,
    )


def current_hashes(
    root: Path, snapshot: Snapshot, listing: files_mod.Listing | None = None
) -> FileHashes:
    """The working tree as the integrity check sees it: hashing, and one git call
    unless the caller has ``listing`` already."""
    listed = (listing or files_mod.list_tree(root)).present
    new = [p for p in files_mod.test_files(listed) if p not in snapshot.files]
    return FileHashes(
        files={p: files_mod.sha256_file(root / p) for p in snapshot.files},
        new_files=files_mod.hash_files(root, new),
        # The baseline's commands: the snapshot's digests were taken with them.
        protected=protect.discover(root, listed, [c.command for c in snapshot.baseline.commands]),
    )


def _commands(config: Config) -> list[str]:
    """The configured commands: which of them may run a task runner decides what
    configuration is protected (gtd.auto.ratchet.invocation)."""
    found = (config.build_command, config.test_command, config.typecheck_command)
    return [c for c in (*found, config.lint_command) if c]


def bootstrap_needed(snapshot: Snapshot) -> bool:
    """No test files to protect: the first cycle writes baseline tests."""
    return not snapshot.files


def baseline_red(snapshot: Snapshot) -> bool:
    return snapshot.baseline_red


# -- files ----------------------------------------------------------------------------


def save_snapshot(root: Path, snap: Snapshot) -> None:
    atomic_write(root / SNAPSHOT_JSON, _dumps(snap))
    atomic_write(root / SNAPSHOT_TXT, "".join(f"{p}\n" for p in sorted(snap.files)))


def load_snapshot(root: Path) -> Snapshot | None:
    """The saved snapshot; None when none was ever taken."""
    path = root / SNAPSHOT_JSON
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if (root / SNAPSHOT_TXT).exists():
            raise InputError(
                SNAPSHOT_JSON,
                f"missing beside {SNAPSHOT_TXT}: without hashes the ratchet cannot check",
                hint=_REDO,
            ) from None
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(SNAPSHOT_JSON, f"unreadable: {exc}", hint=_REDO) from None
    return _loads(text, SNAPSHOT_JSON)


def save_pending(root: Path, snap: Snapshot) -> None:
    atomic_write(root / PENDING_JSON, _dumps(snap))


def commit_pending(root: Path) -> None:
    """Make the pending snapshot the snapshot (no-op when there is none)."""
    path = root / PENDING_JSON
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    snap = refresh_owned(root, _loads(text, PENDING_JSON))
    save_snapshot(root, snap)
    path.unlink(missing_ok=True)


def drop_pending(root: Path) -> None:
    (root / PENDING_JSON).unlink(missing_ok=True)


def refresh_owned(root: Path, snap: Snapshot) -> Snapshot:
    """Re-digest PLAN.md and the gtd config: files only the helper and the human
    change between cycles (the PLAN.md tick; a human's committed edit)."""
    protected = dict(snap.protected)
    for rel in protect.OWNED:
        try:
            protected[rel] = protect.digest(rel, (root / rel).read_bytes())
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            protected.pop(rel, None)
    return Snapshot(snap.files, protected, snap.baseline)


def resync_owned(root: Path, snap: Snapshot | None = None) -> bool:
    """At `cycle begin` (clean tree): adopt the human's committed edits to PLAN.md
    or the gtd config since the snapshot, so they are not blamed on the next cycle.
    ``snap`` is the saved snapshot when the caller has loaded it already. Returns
    whether the saved snapshot changed."""
    if snap is None:
        snap = load_snapshot(root)
    if snap is None:
        return False
    fresh = refresh_owned(root, snap)
    if fresh.protected == snap.protected:
        return False
    save_snapshot(root, fresh)
    return True


def sidecar_digest(root: Path) -> str | None:
    """sha256 of the saved sidecar: record it at `cycle begin`, compare at `end`, and
    an agent that rewrote the snapshot to unprotect a test is caught."""
    return files_mod.sha256_file(root / SNAPSHOT_JSON)


# -- presentation ---------------------------------------------------------------------


def describe_baseline(snapshot: Snapshot) -> dict[str, Any]:
    """The baseline as a JSON-ready dict (for `gtd ratchet snapshot --json`, setup)."""
    base = snapshot.baseline
    failing = sorted(t for t, o in (base.tests or {}).items() if o in ("failed", "error"))
    return {
        "tests_passed": base.tests_passed,
        "tests_total": base.tests_total,
        "tests_failing": failing,
        "per_test": base.tests is not None,
        "commands": [command_json(c) for c in base.commands],
        "red": snapshot.baseline_red,
        "reason": snapshot.baseline_reason,
        "bootstrap": bootstrap_needed(snapshot),
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
            state += " (exit code only: no JUnit XML)"
        before = baseline.command(cmd.kind) if baseline is not None else None
        if not cmd.ok and before is not None and not before.ok:
            state += " — failing at baseline too, tolerated"
        lines.append(f"  {cmd.kind}: {cmd.command} → {state}")
    return lines


# -- JSON form ------------------------------------------------------------------------


def _dumps(snap: Snapshot) -> str:
    doc = {
        "format": FORMAT,
        "files": dict(sorted(snap.files.items())),
        "protected": dict(sorted(snap.protected.items())),
        "baseline": {
            "commands": [c._asdict() for c in snap.baseline.commands],
            "tests": None if snap.baseline.tests is None else dict(snap.baseline.tests),
        },
    }
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def _loads(text: str, name: str) -> Snapshot:
    def bad(message: str) -> InputError:
        return InputError(name, f"corrupt ratchet snapshot: {message}", hint=_REDO)

    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise bad(f"not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise bad("not a JSON object")
    if doc.get("format") != FORMAT:
        raise bad(f"unknown format {doc.get('format')!r} (this gtd reads format {FORMAT})")
    files = _str_map(doc.get("files"), "files", bad)
    protected = _str_map(doc.get("protected"), "protected", bad)
    baseline = doc.get("baseline")
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
    return Snapshot(files, protected, RunResult(commands, tests))


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
    return CommandRun(
        kind=cast(Kind, kind),
        command=raw["command"],
        exit_code=raw["exit_code"],
        duration_s=float(raw["duration_s"]),
        timeout_s=float(raw["timeout_s"]),
        timed_out=raw["timed_out"],
        missing=missing,
        output_tail=raw["output_tail"],
    )


# Running commands and wording verdicts are only needed by snapshot/check, never by
# `cycle begin`, which imports this module on every tick.
def _run_all(root: Path, config: Config) -> RunResult:
    from gtd.auto.ratchet import runner

    return runner.run_all(root, config)


def _command_reason(run: CommandRun) -> str:
    from gtd.auto.ratchet.verdict import command_reason

    return command_reason(run)
