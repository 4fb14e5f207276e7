"""The selection the helper asks for: only these files, or only these node ids;
nothing else is collected, and no conftest.py outside it is loaded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .paths import _both, _dirname, _isdir, _join, _norm

if TYPE_CHECKING:
    import pytest

    from .settings import Settings
    from .sink import Sink


class Selection:
    """Only these files, or only these node ids (which name their files too)."""

    def __init__(self, settings: Settings) -> None:
        root = settings.root
        self.ids: set[tuple[str, str]] | None = None
        rel_files = list(settings.files or [])
        folders: dict[str, str] = {}
        if settings.ids is not None:
            self.ids = set()
            for node_id in settings.ids:
                file, _, rest = node_id.partition("::")
                rel_files.append(file)
                self.ids.update((p, rest) for p in _both(_join(root, file), folders))
        self.files: set[str] = set()
        self.dirs: set[str] = set()
        self._paths: dict[int, tuple[object, str]] = {}
        for rel in rel_files:
            for path in _both(_join(root, rel), folders):
                self.files.add(path)
                parent = _dirname(path)
                while parent not in self.dirs:
                    self.dirs.add(parent)
                    parent, previous = _dirname(parent), parent
                    if parent == previous:
                        break

    def allows_path(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    def keeps(self, item: pytest.Item) -> bool:
        # A module's items share its path object: each one is made a string once.
        raw = item_path(item)
        known = self._paths.get(id(raw))
        if known is None or known[0] is not raw:  # (the object kept: its id stays its)
            known = self._paths[id(raw)] = (raw, _norm(raw))
        path = known[1]
        if path not in self.files:
            return False
        return self.ids is None or (path, item.nodeid.partition("::")[2]) in self.ids


def item_path(item: Any) -> object:
    path = getattr(item, "path", None)  # pytest >= 7
    return path if path is not None else item.fspath


def guard_conftests(selection: Selection, pm: Any, sink: Sink) -> None:
    """Load no conftest.py outside the selection, including those pytest loads
    before collecting (the arguments' own and their ``test*`` subdirectories')."""
    for name in ("_loadconftestmodules", "_getconftestmodules"):  # pytest >= 8, older
        original = getattr(pm, name, None)
        if original is not None:
            break
    else:
        sink.evidence("guard-missing", "conftest loading", "this pytest has no known method")
        return
    loads_only = name == "_loadconftestmodules"

    def guarded(path: object, *args: object, **kwargs: object) -> object:
        text = _norm(path)
        directory = text if _isdir(text) else _dirname(text)
        if directory in selection.dirs:
            return original(path, *args, **kwargs)
        return None if loads_only else []

    setattr(pm, name, guarded)
