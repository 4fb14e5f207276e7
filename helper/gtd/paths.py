"""Where auto mode keeps its files, relative to the repository root (DESIGN §4.1)."""

from __future__ import annotations

STATE_DIR = ".deepflow"
PLAN = "PLAN.md"
CONFIG = ".deepflow/config.yaml"
MEMORY = ".deepflow/auto-memory.yaml"
REPORT = ".deepflow/auto-report.md"
SNAPSHOT = ".deepflow/auto-snapshot.txt"
JOURNAL = ".deepflow/cycle.json"
BRIEF = ".deepflow/cycle-brief.md"
LOCK = ".deepflow/.gtd.lock"
IGNORE = ".deepflow/.gitignore"

# Everything in .deepflow/ is helper state kept out of commits, except the human's
# config (and this file itself). Written by `gtd auto setup`.
IGNORE_TEXT = """\
# Written by `gtd auto setup`: gtd's working state (memory, report, snapshot,
# cycle journal, lock) stays out of your commits. Only config.yaml is tracked.
*
!.gitignore
!config.yaml
"""

# Helper-owned files that must never be tracked (a tracked one would make the tree
# dirty after every cycle).
HELPER_STATE = (MEMORY, REPORT, SNAPSHOT, ".deepflow/auto-snapshot.json", JOURNAL, BRIEF, LOCK)

# The ref namespace where a reverted cycle's complete working tree is kept.
REVERTED_REF = "refs/gtd/reverted/cycle-"
