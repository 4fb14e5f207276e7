"""Where auto mode keeps its files, relative to the repository root (docs/state.md, "State").
The one source of these names: every module imports them from here."""

from __future__ import annotations

STATE_DIR = ".deepflow"
PLAN = "PLAN.md"
CONFIG = ".deepflow/config.yaml"
MEMORY = ".deepflow/auto-memory.yaml"
REPORT = ".deepflow/auto-report.md"
SNAPSHOT = ".deepflow/auto-snapshot.txt"
SNAPSHOT_JSON = ".deepflow/auto-snapshot.json"
JOURNAL = ".deepflow/cycle.json"
BRIEF = ".deepflow/cycle-brief.md"
LOCK = ".deepflow/.gtd.lock"
IGNORE = ".deepflow/.gitignore"
AGENT_LOGS = ".deepflow/agent-logs"
CHECK_LOG = ".deepflow/check.log"
REPORTED = ".deepflow/reported"
RENDERED = ".deepflow/rendered"
# The helper's scratch files (the ratchet's report folders): inside the git
# directory, so never in `git status`; deleting it is always safe.
CACHE_DIR = ".git/gtd-cache"
# The helper's own folder in the git directory (wherever that is: a linked
# worktree's is elsewhere): private indexes, and what it set aside (gtd.own_files).
PRIVATE_DIR = "gtd"
# The name of each of the helper's wave worktrees is this and the task's id.
WAVE_PREFIX = "gtd-wave-"


# The block `gtd auto setup` keeps in .git/info/exclude: gtd's private files are
# ignored on every branch (an ignore file committed on one branch is absent on the
# next), and so is the litter test runs and installs leave (bytecode, caches,
# coverage data, egg-info), which would otherwise make the tree dirty between cycles.
EXCLUDE_BEGIN = "# >>> gtd auto mode (managed by `gtd auto setup`)"
EXCLUDE_END = "# <<< gtd auto mode"
EXCLUDE_LINES = (
    "/.deepflow/*",
    "!/.deepflow/config.yaml",
    "__pycache__/",
    "*.py[co]",
    ".pytest_cache/",
    ".coverage",
    ".coverage.*",
    "htmlcov/",
    ".hypothesis/",
    # Claude Code's personal settings, where the sandbox block goes (gtd.auto.sandbox)
    "/.claude/settings.local.json",
    # What an install step writes beside the code (pip install -e .): the project's
    # own when tracked (an exclude line never hides a tracked file).
    "*.egg-info/",
)


def is_private(path: str) -> bool:
    """A file of the helper's own in STATE_DIR: everything there but the config, as
    the exclude block says. A `.gitignore` negation (read before
    `.git/info/exclude`) can make git see them, yet they are never the project's:
    they change on every cycle."""
    return path.startswith(STATE_DIR + "/") and path != CONFIG


# Helper-owned files that must never be tracked (a tracked one would make the tree
# dirty after every cycle).
HELPER_STATE = (MEMORY, REPORT, SNAPSHOT, SNAPSHOT_JSON, JOURNAL, BRIEF, LOCK)

# Ref namespaces: a reverted cycle's complete working tree, and the sealed state,
# in the main work tree. Every worktree of a repository shares its refs, and each
# runs a loop of its own (its branch, its plan, its breaker): a linked worktree's
# refs are these under refs/gtd/worktrees/<id>/ (refs_of).
GTD_REFS = "refs/gtd/"
REVERTED_REFS = "refs/gtd/reverted/"
REVERTED_REF = f"{REVERTED_REFS}cycle-"
STATE_REF = "refs/gtd/state"
_REF_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def refs_of(worktree: str | None) -> str:
    """The helper's ref namespace in the work tree of a linked worktree's id
    (None: the main work tree). An id that could not be one component of a ref
    name (git before 2.26 kept the folder's name as it was) is spelled by its
    digest."""
    if worktree is None:
        return GTD_REFS
    if not (
        worktree
        and set(worktree) <= _REF_SAFE
        and not worktree.startswith(".")
        and ".." not in worktree
        and not worktree.endswith(".lock")
    ):
        import hashlib

        worktree = "id-" + hashlib.sha1(worktree.encode("utf-8", "surrogateescape")).hexdigest()
    return f"{GTD_REFS}worktrees/{worktree}/"


# The task id of the cycle that writes the first tests of a project without any.
BOOTSTRAP = "BOOTSTRAP"
