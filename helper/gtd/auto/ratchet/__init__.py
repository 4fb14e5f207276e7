"""The test ratchet (DESIGN §4.3): a snapshot of the test files, the protected test
configuration and a baseline run; after each cycle, a check that nothing protected
changed and nothing that passed got worse.

Modules, one noun each: ``model`` (values), ``files`` (which paths are tests),
``protect`` (test configuration digests), ``junit`` (per-test outcomes),
``runner`` (running the commands), ``verdict`` (the pure decision), ``snapshot``
(the files on disk). :func:`check` is what the cycle engine calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gtd.auto.config import Config
from gtd.auto.ratchet.files import is_test_file, is_test_path, list_tree
from gtd.auto.ratchet.model import CommandRun, FileHashes, Outcome, RunResult, Snapshot
from gtd.auto.ratchet.snapshot import (
    advance,
    baseline_red,
    bootstrap_needed,
    commit_pending,
    current_hashes,
    describe_baseline,
    drop_pending,
    load_snapshot,
    refresh_owned,
    resync_owned,
    save_pending,
    save_snapshot,
    sidecar_digest,
    take_snapshot,
)

if TYPE_CHECKING:  # the verdict is only needed by `end`; `begin` must stay cheap
    from gtd.auto.ratchet.verdict import Verdict

__all__ = [
    "CommandRun",
    "FileHashes",
    "Outcome",
    "RunResult",
    "Snapshot",
    "advance",
    "baseline_red",
    "bootstrap_needed",
    "check",
    "commit_pending",
    "current_hashes",
    "describe_baseline",
    "drop_pending",
    "is_test_file",
    "is_test_path",
    "load_snapshot",
    "refresh_owned",
    "resync_owned",
    "save_pending",
    "save_snapshot",
    "sidecar_digest",
    "take_snapshot",
]


def check(root: Path, config: Config, snapshot: Snapshot) -> tuple[Verdict, RunResult]:
    """Check the working tree against ``snapshot``: integrity first (no command runs
    when it fails), then every configured command once, then the verdict."""
    from gtd.auto.ratchet import runner
    from gtd.auto.ratchet.verdict import integrity, judge

    listing = list_tree(root)  # one listing: the integrity check's and the sweep's
    violations = integrity(snapshot, current_hashes(root, snapshot, listing))
    if violations:
        return judge(snapshot.baseline, RunResult(), violations), RunResult()
    run = runner.run_all(root, config, untracked=set(listing.untracked))
    return judge(snapshot.baseline, run, ()), run


def __getattr__(name: str) -> Any:
    # Verdict, integrity and judge load on first use (PEP 562).
    if name in ("Verdict", "integrity", "judge"):
        from gtd.auto.ratchet import verdict

        return getattr(verdict, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
