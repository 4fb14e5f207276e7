"""The headless loop's agent (`gtd loop --agent CMD`) under the same write policy
as the implementer's Bash in Claude Code (gtd.auto.sandbox): bubblewrap shows it
the whole system as it is, with the protected paths bound read-only over
themselves. Its network and the rest of the filesystem are left as they are (an
agent CLI needs its API, its own state and the temporary folder); what the
ratchet protects cannot be written, moved or removed, whatever program tries.

`claude -p` as the agent also reads the project's settings, so its own Bash
runs in Claude Code's sandbox too; this wrapper fences the agent process itself
and any agent that has no sandbox of its own.

A wave's agent (docs/parallel.md) works in a worktree of the helper's, inside
git's folder: :func:`wrap_in` fences it to that worktree. The person's tree and
git's folder (every other wave worktree in it, refs, objects, hooks, config) are
read-only, the worktree is writable, and inside it what the ratchet protects
(the same paths, relative to the worktree) and its ``.git`` file (which names
the git folder the helper reads the candidate through) are read-only again.
Each agent of a wave is a process of its own, so each gets a fence of its own:
unlike Claude Code's sandbox, whose one settings file all subagents share
(docs/threat-model.md).
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
    return [bwrap, "--dev-bind", "/", "/", *_read_only(deny), "--", *argv], None


def wrap_in(argv: list[str], root: Path, worktree: Path) -> tuple[list[str], str | None]:
    """``argv`` run under bubblewrap writable in ``worktree`` (a wave's checkout)
    and read-only in the repository at ``root`` and its git folder; and a note
    when it cannot be fenced (None when it is). The agent's working directory is
    the caller's to set (the worktree)."""
    from gtd.auto import sandbox

    if os.environ.get("GTD_SANDBOX") == "off":
        return argv, "the agent runs unfenced (GTD_SANDBOX=off)"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        why = sandbox.unavailable() or "bwrap not found"
        return argv, f"the agent runs unfenced: {why}; the ratchet still judges every cycle"
    return [bwrap, *fence_in(root, worktree), "--", *argv], None


def fence_in(root: Path, worktree: Path) -> list[str]:
    """bubblewrap's options for :func:`wrap_in` (the order is the point: a later
    bind covers an earlier one)."""
    from gtd.auto import sandbox
    from gtd.auto.cycle import worktrees
    from gtd.git import Git

    git = Git(root)
    real = Path(os.path.realpath(root))
    mine = Path(os.path.realpath(worktree))
    if not mine.is_dir() or mine == real:
        raise ValueError(f"not a worktree of the helper's to fence an agent to: {worktree}")
    deny = sandbox.policy(root, git, sandbox.protected_files(root, git))["filesystem"]["denyWrite"]
    common = os.path.realpath(git.common_dir())
    # The whole repository and git's folder read-only first (the person's tree
    # holds files no deny entry names: the agent has no business in any of it);
    # then the denied paths outside them (git's configuration in the home
    # folder, the person's other worktrees) but the writable one itself.
    outside = [
        p for p in deny if not _under(p, str(real)) and not _under(p, common) and p != str(mine)
    ]
    # The folder of every wave worktree of the loop, wherever it is: the other
    # tasks' checkouts are no agent's but their own.
    waves = os.path.realpath(worktrees.home(git))
    binds = _read_only([str(real), common, waves, *outside])
    binds += ["--bind", str(mine), str(mine)]
    # Inside the worktree, what is denied in the person's tree, at the same
    # relative paths: its .git file, PLAN.md, .deepflow/, the protected tests.
    inside = [str(mine / os.path.relpath(p, real)) for p in deny if _under(p, str(real))]
    binds += _read_only([p for p in inside if p != str(mine)])
    return ["--dev-bind", "/", "/", *binds]


def _read_only(found: list[str]) -> list[str]:
    binds: list[str] = []
    for path in found:
        if os.path.lexists(path):
            binds += ["--ro-bind", path, path]
    return binds


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
