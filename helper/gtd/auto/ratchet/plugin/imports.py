"""The import watch, first on ``sys.meta_path``: where each import resolves. A
module under the live root loads from the same place under the room instead
(editable installs of both kinds end up here), one under a forbidden root is
noted, and so is code from outside every folder the session may load from. And
the test environment's files the session ran as code, judged by their change
time (EnvironmentFiles)."""

from __future__ import annotations

import stat
import sys
from typing import TYPE_CHECKING, Any, cast

from .bytecode import _KNOWN_LOADERS, no_fresh_bytecode
from .paths import (
    _abspath,
    _both,
    _dirname,
    _editable_folders,
    _isabs,
    _lstat,
    _norm,
    _stat,
    _under,
)
from .shapes import _environment_roots
from .terms import P

if TYPE_CHECKING:
    from .provenance import Provenance
    from .settings import Settings
    from .sink import Sink


class ImportWatch:
    """First on ``sys.meta_path``: sees where each import resolves. A module under
    the live root loads from the same place under the room instead (editable
    installs of both kinds end up here), and one under a forbidden root is noted."""

    def __init__(
        self, settings: Settings, sink: Sink, provenance: Provenance, plugin_file: str
    ) -> None:
        self.settings = settings
        self.sink = sink
        self.provenance = provenance
        self.plugin_file = plugin_file  # the entry point's file: its folder is a home
        redirect = settings.redirect
        self.live = _both(redirect[0]) if redirect else ()
        self.room = redirect[1] if redirect else ""
        # the move itself, as the unittest runner makes it (in_process.py)
        self.redirect = P.RoomRedirect(self.live, self.room, _norm, sink.evidence)
        self.busy: set[str] = set()
        self.asked: set[str] = set()  # every module name the import system looked for
        self.before = set(sys.modules)  # loaded before the watch: not its to judge
        self.home: tuple[str, ...] = ()  # where the session's code may come from
        self.outside: set[str] = set()  # modules already reported as from elsewhere
        # (name, origin) of every import, where the environment's files are judged:
        # a module taken out of sys.modules again still ran
        self.origins: list[tuple[str, str]] | None = [] if settings.env_since is not None else None

    def start(self) -> None:
        """First on ``sys.meta_path``, with ``sys.path`` the room's."""
        import importlib

        self.rewrite_sys_path()
        if self.room:
            self.settle()
            self.provenance.room = _both(self.room)
        sys.meta_path.insert(0, self)  # type: ignore[arg-type]
        importlib.invalidate_caches()

    @staticmethod
    def finish() -> None:
        """Off ``sys.meta_path`` once the session is over and its end line
        written: the watch has nothing left to see. Left there it keeps pytest's
        objects reachable until the interpreter's shutdown clears every module
        by hand (~19 M instructions, ~4 ms of each run, counted with valgrind);
        taken off, they are freed as usual."""
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, ImportWatch)]

    def settle(self) -> None:
        """Where code may legitimately come from, fixed once ``sys.path`` is the
        room's and before any code of the project runs: the room, the test
        environment (its prefixes, the user's site folder) and every folder on the
        import path now (PYTHONPATH, ``.pth`` entries). A module found anywhere
        else — through a ``sys.path`` entry the code under test adds, say — runs
        code the commit does not hold."""
        import site

        roots = [self.room, _dirname(_abspath(self.plugin_file))]
        roots += [sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix)]
        roots.append(getattr(sys, "base_exec_prefix", sys.exec_prefix))
        user_site = getattr(site, "getusersitepackages", None)  # absent in some venvs
        if user_site is not None:
            roots.append(user_site())
        roots += [p for p in sys.path if isinstance(p, str)]
        roots += _editable_folders()
        self.home = tuple({r for root in roots if root for r in _both(root)})

    def from_elsewhere(self, name: str, file: object) -> None:
        """Evidence when ``file``, the code of module ``name`` (or of a function
        of it), lies outside every folder of ``home``. Named by the top-level
        package, the unit a baseline that imports from there too is known by."""
        top = name.partition(".")[0]
        if (
            self.home
            and isinstance(file, str)
            and _isabs(file)
            and top not in self.outside
            and not _under(_norm(file), self.home)
        ):
            self.outside.add(top)
            self.sink.evidence("outside-module", top, f"{name}: code from {file}")

    def room_path(self, path: str) -> str | None:
        return self.redirect.room_path(path)

    def rewrite_sys_path(self) -> None:
        if self.live:
            self.redirect.rewrite_sys_path()

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        self.asked.add(name)
        if name in self.busy:
            return None
        self.busy.add(name)
        try:
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None)
                if finder is cast(object, self) or find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    return self.resolved(name, spec)
            return None
        finally:
            self.busy.discard(name)

    def resolved(self, name: str, spec: Any) -> Any:
        try:
            if self.live:
                spec = self.redirected(name, spec)
            spec = no_fresh_bytecode(spec)
            origin = getattr(spec, "origin", None)
            if isinstance(origin, str):
                self.provenance.written(origin)
                if self.origins is not None:
                    self.origins.append((name, origin))
            loader = getattr(spec, "loader", None)
            if (
                loader is not None
                and type(loader) not in _KNOWN_LOADERS
                and self.provenance.in_room(origin) is not None
            ):
                kind = type(loader)
                detail = f"{origin} by {kind.__module__}.{kind.__qualname__}"
                self.sink.evidence("loader", name, detail)
            forbidden = self.settings.forbidden
            if isinstance(origin, str) and forbidden and _under(_norm(origin), forbidden):
                self.sink.module(name, origin)
            else:
                self.from_elsewhere(name, origin)
        except Exception as exc:
            self.sink.evidence("internal", "import watch", type(exc).__name__)
        return spec

    def redirected(self, name: str, spec: Any) -> Any:
        return self.redirect.spec(name, spec)


class EnvironmentFiles:
    """The test environment's files the session ran as code (a module's file: the
    virtualenv's, the interpreter's own library, a folder on the import path),
    judged at a cycle's end by their change time against the moment its agent
    began. The environment's fingerprint (gtd.auto.ratchet.environment) reads the
    top-level entries of its folders: an installed library edited where it lies
    (a file inside a package, or one given back its size and modification time)
    keeps them all as they were, and the tests run the edit. A change time
    cannot be set back, and a file renamed or linked into place gets a new one.
    Bytecode caches are not judged (any first import writes one); a module's
    source is."""

    def __init__(self, sink: Sink, site: str | None, since: int, watch: ImportWatch) -> None:
        self.sink = sink
        self.since = since
        # the run's own files (the plugin's entry point, written for this run)
        self.own = _both(_dirname(site)) if site else ()
        self.prefixes = tuple(f for p in _environment_roots() for f in _both(p))
        self.room = watch.provenance.room
        self.home = watch.home
        self.seen: set[str] = set()

    @classmethod
    def asked(cls, settings: Settings, watch: ImportWatch | None) -> EnvironmentFiles | None:
        since = settings.env_since
        if since is None or watch is None or not watch.home:
            return None
        return cls(watch.sink, settings.site, since, watch)

    def ran(self, name: str, file: str) -> None:
        """``file`` (normalised), the code of module ``name``."""
        if file in self.seen:
            return
        self.seen.add(file)
        if (self.own and _under(file, self.own)) or not _under(file, self.home):
            return  # a module a test wrote and imports: outside-module's to judge
        if _under(file, self.room) and not _under(file, self.prefixes):
            return  # the candidate's own (an in-room virtualenv is the environment)
        path = file
        while True:
            try:
                st = _lstat(path)
                changed = st.st_ctime_ns
                if stat.S_ISLNK(st.st_mode):
                    changed = max(changed, _stat(path).st_ctime_ns)
                break
            except NotADirectoryError:  # inside an archive: the archive is the file
                parent = _dirname(path)
                if parent == path:
                    return
                path = parent
            except OSError:
                return  # gone by the end
        if changed >= self.since:
            self.sink.evidence("environment-file", name, path)
