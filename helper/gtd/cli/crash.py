"""What a bug leaves behind: a crash log (the version, the command, the traceback)
and one line that says where it is. Loaded only when an unexpected exception
reached gtd.cli.main; the CLI then exits 3 (docs/errors.md)."""

from __future__ import annotations

import os
import platform
import sys
import traceback
from pathlib import Path

from gtd import __version__


def log_path() -> Path:
    """``$XDG_CACHE_HOME/gtd/gtd.log`` (``~/.cache`` without it): outside every
    repository, so a crash never dirties a working tree."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "gtd" / "gtd.log"


def log_text(exc: BaseException, args: list[str]) -> str:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return (
        "### version information\n\n"
        f"gtd: {__version__}\n"
        f"python: {sys.version.splitlines()[0]} ({sys.executable})\n"
        f"platform: {platform.platform()}\n\n"
        "### command\n\n"
        f"gtd {' '.join(args)}\n"
        f"cwd: {os.getcwd()}\n\n"
        "### traceback\n\n"
        f"{tb}"
    )


def report(exc: BaseException, args: list[str]) -> str:
    """Write the crash log (replacing the last one) and say what happened and where
    the log is. A log that cannot be written puts the traceback on stderr instead."""
    text = log_text(exc, args)
    what = f"an unexpected error occurred: {type(exc).__name__}: {exc}"
    path = log_path()
    try:
        from gtd.fsio import atomic_write

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text)
    except OSError as err:
        sys.stderr.write(text)
        return f"{what}\n  the crash log could not be written ({err}); it is above"
    return f"{what}\n  this is a bug in gtd: the crash log is at {path} (include it in a report)"
