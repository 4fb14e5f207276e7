"""Parsed-YAML cache for the per-tick path.

`gtd cycle begin` runs every minute and needs the config and the memory, but
importing PyYAML alone costs ~30 ms. Both files change rarely, so their parsed,
plain (JSON-safe) content is kept in ``.git/gtd-cache/<name>.json`` keyed by the
file's sha256 and the helper version; a hit skips YAML entirely. The cache lives
inside the git directory so it can never show up in ``git status``. It is
best-effort: any problem reading or writing it just means parsing the YAML.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gtd import __version__
from gtd.fsio import atomic_write


def directory(root: Path) -> Path | None:
    """``.git/gtd-cache``: inside the git directory, never in `git status`. None in a
    worktree or submodule, where ``.git`` is a file (no cache there)."""
    return root / ".git" / "gtd-cache" if (root / ".git").is_dir() else None


def through(root: Path, name: str, data: bytes, parse: Callable[[], Any]) -> Any:
    """The plain value ``parse()`` returns for ``data``, from the cache when the
    same bytes were parsed before. ``parse`` must return JSON-safe data."""
    folder = directory(root)
    if folder is None:
        return parse()
    key = f"{__version__}:{hashlib.sha256(data).hexdigest()}"
    path = folder / f"{name}.json"
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        if entry["key"] == key:
            return entry["value"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    value = parse()
    with contextlib.suppress(OSError, TypeError, ValueError):
        atomic_write(path, json.dumps({"key": key, "value": value}))
    return value
