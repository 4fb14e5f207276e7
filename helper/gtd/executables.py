"""Finding an executable on a ``PATH``. Imports nothing but ``os``: the held test
command is found with it before the helper has loaded anything else
(gtd.auto.ratchet.early)."""

from __future__ import annotations

import os


def which(name: str, path: str | None) -> str | None:
    """``shutil.which`` for POSIX, where gtd runs: importing shutil pulls in bz2,
    lzma and zlib (~5 ms), and `gtd ratchet run` is measured against the bare test
    command."""
    if os.sep in name:
        candidates = [name]
    else:
        candidates = [os.path.join(d, name) for d in (path or os.defpath).split(os.pathsep)]
    for candidate in candidates:
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None
