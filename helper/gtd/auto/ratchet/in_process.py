"""What both reporters inside the test process share: the pytest plugin
(gtd.auto.ratchet.pytest_report, its parts in ``plugin``) and the unittest
runner (gtd.auto.ratchet.unittest_report). Each loads this file by path from
beside itself, as it loads contract.py. Never imported by gtd.

- :func:`open_channel`: where a run's lines go. The helper's socket or pipe,
  named in the environment with its device and inode (a descriptor that only
  has the same number is not written to), else the settings' report file (a
  process that did not inherit the descriptor), else nowhere.
- :class:`RoomRedirect`: a module the import system would load from under the
  live repository (an editable install: a ``.pth`` path, setuptools' import
  finder) loads from the same place in the room, where the judged tree is. One
  with no counterpart there (a file git does not see) loads as found, and is
  evidence (``redirect-missing``).

Standard library only, syntax for Python 3.7 and later: the unittest runner
runs under the project's interpreter.
"""

from __future__ import annotations

import os
import sys

# typing for the type checker only: this file runs in the project's own test
# process, whose cost is measured against the bare test command (stdlib, no typing)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

# Bound at import, before any conftest or test runs: code that later replaces
# them does not change where the lines go or where a module loads from.
_fstat = os.fstat
_open = os.open
_set_inheritable = os.set_inheritable
_exists = os.path.exists
_isabs = os.path.isabs
_join = os.path.join


def open_channel(variable: str, report: str | None) -> tuple[int, str]:
    """The descriptor a run's lines go to (-1: nowhere) and how (``pipe``, or
    ``file`` where the descriptor named in ``variable`` as ``fd:dev:inode`` is
    not this process's and ``report`` names a file to append to). The
    descriptor is made non-inheritable: a test's subprocesses never get it."""
    try:
        fd, dev, ino = (int(part) for part in os.environ.get(variable, "").split(":"))
        st = _fstat(fd)
        if (st.st_dev, st.st_ino) == (dev, ino):
            _set_inheritable(fd, False)
            return fd, "pipe"
    except (ValueError, OSError):
        pass
    if not report:
        return -1, "pipe"
    try:
        return _open(report, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "file"
    except OSError:
        return -1, "file"


class RoomRedirect:
    """Paths and import specs under the live repository, moved to the room.
    ``live``: the live root's normal forms (as given, links resolved); ``norm``:
    how a path is put in that form; ``evidence(kind, subject, detail)``: where a
    module with no counterpart in the room is told."""

    def __init__(
        self,
        live: Sequence[str],
        room: str,
        norm: Callable[[str], str],
        evidence: Callable[[str, str, str], None],
    ) -> None:
        self.live = tuple(live)
        self.room = room
        self.norm = norm
        self.evidence = evidence

    def room_path(self, path: str) -> str | None:
        norm = self.norm(path)
        for live in self.live:
            if norm == live or norm.startswith(live + os.sep):
                return _join(self.room, norm[len(live) :].lstrip(os.sep))
        return None

    def rewrite_sys_path(self) -> None:
        sys.path[:] = [(self.room_path(p) or p) if p else p for p in sys.path]

    def spec(self, name: str, spec: Any) -> Any:
        """``spec`` (found by the other finders), loading from the room where it
        is under the live root."""
        origin = getattr(spec, "origin", None)
        locations = getattr(spec, "submodule_search_locations", None)
        if isinstance(origin, str) and _isabs(origin):
            moved = self.room_path(origin)
            if moved is None:
                return spec
            if not _exists(moved):
                self.evidence("redirect-missing", name, origin)
                return spec
            import importlib.util  # here: most imports are not the live root's

            paths = None
            if locations is not None:
                paths = [self.room_path(str(p)) or str(p) for p in locations]
            made = importlib.util.spec_from_file_location(
                name, moved, submodule_search_locations=paths
            )
            return made if made is not None else spec
        if locations is not None:  # a namespace package: no file, only its paths
            paths = [str(p) for p in locations]
            if any(self.room_path(p) for p in paths):
                import importlib.machinery

                made = importlib.machinery.ModuleSpec(name, None, is_package=True)
                made.submodule_search_locations = [self.room_path(p) or p for p in paths]
                return made
        return spec
