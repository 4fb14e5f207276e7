"""What a cycle must leave as it found it, recorded at `begin` and checked at `end`.

The agent works in the repository with the user's rights, so besides the tree it
could change what judges the tree: the repository's git configuration and hooks
(programs git runs, filters, fsmonitor), the test interpreter's site-packages (a
``.pth`` runs in every test process), the sealed state's history (a deleted
revert record would reset the breaker). Each is fingerprinted when the cycle
begins; a difference at `end` is a revert that names it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gtd.auto.ratchet import environment
from gtd.git import Git


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "unreadable"


def _hooks_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return "missing"
    for name in names:
        digest.update(name.encode("utf-8", errors="surrogateescape") + b"\0")
        digest.update(_file_digest(folder / name).encode() + b"\0")
    return digest.hexdigest()


def take(git: Git, env_dirs: Sequence[str]) -> dict[str, Any]:
    git_dir = git.git_dir()
    return {
        "git_config": _file_digest(git_dir / "config"),
        "git_attributes": _file_digest(git_dir / "info" / "attributes"),
        "hooks": _hooks_digest(git_dir / "hooks"),
        "environment": environment.fingerprint(env_dirs),
        "empty_dirs": sorted(git.empty_dirs()),
    }


def broken(git: Git, seals: dict[str, Any], env_dirs: Sequence[str]) -> list[str]:
    """Every sealed thing that changed, as revert reasons naming it."""
    git_dir = git.git_dir()
    out: list[str] = []
    if _file_digest(git_dir / "config") != seals.get("git_config"):
        out.append(f"git configuration changed: {git_dir / 'config'}")
    if _file_digest(git_dir / "info" / "attributes") != seals.get("git_attributes"):
        out.append(f"git attributes changed: {git_dir / 'info' / 'attributes'}")
    if _hooks_digest(git_dir / "hooks") != seals.get("hooks"):
        out.append(f"git hooks changed: {git_dir / 'hooks'}")
    before = seals.get("environment") or {}
    changed = environment.changes(before, environment.fingerprint(env_dirs))
    if changed:
        out.append(f"test environment changed: {changed[0]}")
    return out
