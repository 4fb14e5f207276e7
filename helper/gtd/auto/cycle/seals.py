"""What a cycle must leave as it found it, recorded at `begin` and checked at `end`.

The agent works in the repository with the user's rights, so besides the tree it
could change what judges the tree: the repository's git configuration and
attributes (filters, fsmonitor, autocrlf, hooksPath, a bare repository, a work
tree elsewhere), its hooks, and the test interpreter's site-packages (a ``.pth``
runs in every test process). Each is recorded when the cycle begins. At `end`
a change is a revert that names it; and the git configuration and attributes are
put back as they were before anything else is done, so the candidate is read,
and the base restored, under the rules the cycle began with.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gtd.auto.ratchet import environment
from gtd.fsio import atomic_write_bytes
from gtd.git import Git

# Files of the git directory kept whole in the seal (small, and restored verbatim).
_KEPT = {"git_config": "config", "git_attributes": "info/attributes"}


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        return b""


def _hooks_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return "missing"
    for name in names:
        digest.update(name.encode("utf-8", errors="surrogateescape") + b"\0")
        data = _read(folder / name)
        digest.update(hashlib.sha256(data or b"").hexdigest().encode() + b"\0")
    return digest.hexdigest()


def take(git: Git, env_dirs: Sequence[str]) -> dict[str, Any]:
    git_dir = git.git_dir()
    sealed: dict[str, Any] = {
        "hooks": _hooks_digest(git_dir / "hooks"),
        "environment": environment.fingerprint(env_dirs),
        "empty_dirs": sorted(git.empty_dirs()),
    }
    for key, rel in _KEPT.items():
        data = _read(git_dir / rel)
        sealed[key] = None if data is None else base64.b64encode(data).decode("ascii")
    return sealed


def restore(git: Git, seals: dict[str, Any]) -> list[str]:
    """Put the git configuration and attributes back as sealed; return a reason for
    each that had changed (naming the keys of a changed configuration)."""
    git_dir = git.git_dir()
    out: list[str] = []
    for key, rel in _KEPT.items():
        if key not in seals:
            continue
        path = git_dir / rel
        now = _read(path)
        raw = seals[key]
        sealed = None if raw is None else base64.b64decode(raw)
        if now == sealed:
            continue
        what = _changed_keys(sealed, now) if key == "git_config" else ""
        name = "git configuration" if key == "git_config" else "git attributes"
        out.append(f"{name} changed: {path}" + (f" ({what})" if what else ""))
        if sealed is None:
            path.unlink(missing_ok=True)
        else:
            atomic_write_bytes(path, sealed)
    return out


def _changed_keys(before: bytes | None, after: bytes | None) -> str:
    old, new = _entries(before), _entries(after)
    keys = sorted({k for k in old.keys() | new.keys() if old.get(k) != new.get(k)})
    return ", ".join(keys[:5]) + (", …" if len(keys) > 5 else "")


def _entries(data: bytes | None) -> dict[str, list[str]]:
    """``section.key`` → values, from a git config file (a reader good enough to
    name what changed; git itself decides what the file means)."""
    out: dict[str, list[str]] = {}
    section = ""
    for raw in (data or b"").decode("utf-8", errors="replace").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            head = line[1 : line.find("]")] if "]" in line else line[1:]
            name, _, sub = head.partition(" ")
            section = name + (f".{sub.strip().strip(chr(34))}" if sub else "")
            continue
        key, _, value = line.partition("=")
        out.setdefault(f"{section}.{key.strip()}", []).append(value.strip())
    return out


def broken(git: Git, seals: dict[str, Any], env_dirs: Sequence[str]) -> list[str]:
    """The sealed things, other than config and attributes, that changed."""
    git_dir = git.git_dir()
    out: list[str] = []
    if _hooks_digest(git_dir / "hooks") != seals.get("hooks"):
        out.append(f"git hooks changed: {git_dir / 'hooks'}")
    before = seals.get("environment") or {}
    changed = environment.changes(before, environment.fingerprint(env_dirs))
    if changed:
        out.append(f"test environment changed: {changed[0]}")
    return out
