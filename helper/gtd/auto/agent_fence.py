"""The headless loop's agent (`gtd loop --agent CMD`) under the same write policy
as the implementer's Bash in Claude Code (gtd.auto.sandbox): bubblewrap shows it
the whole system as it is, with the protected paths bound read-only over
themselves. Its network and the rest of the filesystem are left as they are (an
agent CLI needs its API, its own state and the temporary folder); what the
ratchet protects cannot be written, moved or removed, whatever program tries.

`claude -p` as the agent also reads the project's settings, so its own Bash
runs in Claude Code's sandbox too; this wrapper fences the agent process itself
and any agent that has no sandbox of its own.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def wrap(argv: list[str], root: Path) -> tuple[list[str], str | None]:
    """``argv`` run under bubblewrap with the protected paths read-only, and a
    note for the loop's output when it cannot be (None when it is)."""
    from gtd.auto import sandbox
    from gtd.git import Git

    if os.environ.get("GTD_SANDBOX") == "off":
        return argv, "the agent runs unfenced (GTD_SANDBOX=off)"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        why = sandbox.unavailable() or "bwrap not found"
        return argv, f"the agent runs unfenced: {why}; the ratchet still judges every cycle"
    git = Git(root)
    deny = sandbox.policy(root, git, sandbox.protected_files(root, git))["filesystem"]["denyWrite"]
    binds: list[str] = []
    for path in deny:
        if os.path.lexists(path):
            binds += ["--ro-bind", path, path]
    return [bwrap, "--dev-bind", "/", "/", *binds, "--", *argv], None
