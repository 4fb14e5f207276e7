"""`gtd hook pre-tool-use`: the plugin's PreToolUse hook (gtd.auto.guard).

Claude Code runs it before every edit, shell command and Skill call; it must be
quick and must never get in the way by failing: anything unexpected lets the call
through as it is (the ratchet still judges the cycle)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def pre_tool_use() -> int:
    try:
        event = json.loads(sys.stdin.read() or "{}")
        root = _root(event.get("cwd"))
        if root is None:
            return 0
        from gtd.auto import guard

        if guard.is_tick(event):
            text = guard.answer(guard.tick_allowed(root), "allow")
        else:
            refused = guard.decide(root, event)
            if refused is None and guard.sandboxed_bash(root, event) is not None:
                text = guard.answer(guard.sandboxed_bash(root, event), "allow")
            else:
                text = guard.answer(refused)
    except Exception:  # a broken guard must never block the session
        return 0
    if text:
        sys.stdout.write(text + "\n")
    return 0


def _root(cwd: object) -> Path | None:
    """The repository the call runs in: the nearest folder up from ``cwd`` that
    holds ``.git`` and gtd's state folder."""
    start = Path(cwd if isinstance(cwd, str) and cwd else ".").resolve()
    from gtd.auto import guard

    tree = guard.wave_worktree(str(start))
    if tree is not None:  # a wave's implementer works there: its loop's tree decides
        return guard.wave_owner(tree)
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder if (folder / ".deepflow").is_dir() else None
    return None
