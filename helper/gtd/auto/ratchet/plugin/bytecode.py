"""The bytecode guard: no bytecode written since the run began is loaded in it.
The import system's source loader is replaced (through the import watch) by one
that reads no cache changed since the run's start, and pytest's reader of its
own caches of rewritten test modules is wrapped likewise. The loaders also tell
provenance what they loaded and the values watch which modules' imports ended."""

from __future__ import annotations

import os
import sys
from importlib.machinery import (  # frozen: loaded with the interpreter
    ExtensionFileLoader,
    SourceFileLoader,
    SourcelessFileLoader,
)
from typing import TYPE_CHECKING, Any, cast

from .paths import _abs, _dirname, _join, _norm, _stat, _under
from .shapes import _hypothesis_strength

if TYPE_CHECKING:
    from .provenance import Provenance
    from .settings import Settings
    from .sink import Sink
    from .values import Values

# No bytecode written since the run began is loaded in it. The code under test
# runs before most modules are imported (the tests' conftest imports it first), so
# it could write the cache of one not imported yet, with a header that matches
# its source and code of its own: pytest's cache of a test module it rewrites, or
# the import system's of an assertion helper. That module would run the forged
# code, its file untouched. The room keeps no bytecode newer than its sync
# (gtd.auto.ratchet.room prunes it), and the settings file is written after the
# sync: a cache that changed since is this run's, and the module is compiled from
# its source instead, as where there is no cache. (One a test writes for a later
# process, an xdist worker's say, costs that process a compile, nothing more.)


# Where bytecode caches belong, as the run began: the code under test could point
# sys.pycache_prefix at a folder of caches it forged before the run.
_PYCACHE_PREFIX = getattr(sys, "pycache_prefix", None)


def _cache_in_place(source: object, cache: object) -> bool:
    """Whether ``cache`` is where the run's own caches of ``source`` go: its
    folder's ``__pycache__``, or under the prefix the run began with."""
    text = cache if type(cache) is str else str(cache)
    if _PYCACHE_PREFIX:
        return _under(_norm(_dirname(_abs(text))), (_norm(_PYCACHE_PREFIX),))
    origin = source if type(source) is str else str(source)
    if _abs(text) is text and _abs(origin) is origin:
        # (both in abspath's form already, as nearly every module's are: their
        # folders compared as they are, without dirname and join, ~100 times a run)
        return text.rpartition(os.sep)[0] == origin.rpartition(os.sep)[0] + _IN_PYCACHE
    folder = _dirname(_abs(text))
    return folder == _join(_dirname(_abs(origin)), "__pycache__")


_IN_PYCACHE = os.sep + "__pycache__"


class _NoFreshBytecode(SourceFileLoader):
    """The import system's loader of a source module, which reads no bytecode
    changed since :attr:`since_ns` (opened once: what is judged is what is read),
    and tells provenance what it loaded (the guard sets these three at its
    start; the loader is made by the import watch, which passes nothing)."""

    since_ns = 0
    provenance: Provenance
    values: Values

    def get_code(self, fullname: str) -> Any:
        code = super().get_code(fullname)
        self.provenance.loaded(self.path, code)
        return code

    def exec_module(self, module: Any) -> None:
        before = _hypothesis_strength()
        super().exec_module(module)
        self.provenance.executed(module)
        self.values.imported(module)
        self.values.examples_after(module, before)

    def get_data(self, path: str) -> bytes:
        if path == self.path:
            return super().get_data(path)
        if not _cache_in_place(self.path, path):
            raise OSError(f"bytecode outside the run's caches: {path}")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            if os.fstat(fd).st_ctime_ns >= self.since_ns:
                raise OSError(f"bytecode written during this run: {path}")
            chunks: list[bytes] = []
            while True:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
        finally:
            os.close(fd)


_GET_DATA = _NoFreshBytecode.__dict__["get_data"]


class _WatchedExtension(ExtensionFileLoader):
    """The import system's loader of a compiled extension, which tells
    the values watch what it loaded: a library first loaded during the run (cmath,
    say) is recorded as its import left it, before the code under test that
    imported it can patch it."""

    values: Values

    def exec_module(self, module: Any) -> None:
        super().exec_module(module)
        self.values.imported(module)
        _plain_loader(module, self, ExtensionFileLoader)


class _WatchedSourceless(SourcelessFileLoader):
    """The same for a module shipped as bytecode only."""

    values: Values

    def exec_module(self, module: Any) -> None:
        super().exec_module(module)
        self.values.imported(module)
        _plain_loader(module, self, SourcelessFileLoader)


def _plain_loader(module: Any, loader: Any, kind: type[Any]) -> None:
    """The module's loader made the import system's own again once it is
    recorded: one of this plugin's classes, held by a module that outlives
    the session (readline's, a single-phase extension, is kept to the end of
    the interpreter's shutdown), keeps every object of the session reachable
    until the shutdown clears modules by hand (~13 M instructions a run)."""
    plain = kind(loader.name, loader.path)
    spec = getattr(module, "__spec__", None)
    if spec is not None and spec.loader is loader:
        spec.loader = plain
    if getattr(module, "__loader__", None) is loader:
        module.__loader__ = plain


_WATCHED_LOADERS = {
    ExtensionFileLoader: _WatchedExtension,
    SourcelessFileLoader: _WatchedSourceless,
}
_WATCHED_EXEC = {kind: kind.__dict__["exec_module"] for kind in _WATCHED_LOADERS.values()}


def _known_loaders() -> frozenset[type]:
    """The loaders whose work on a file of the room is what the file holds: the
    source loader (replaced by :class:`_NoFreshBytecode`, which keeps what it
    loaded), bytecode and extension loaders, zip archives, and pytest's own
    assertion rewriter — as this process had them before any code of the project
    ran. A finder the code under test puts on ``sys.meta_path`` can answer for a
    module of the room with a loader that runs any text under the file's name."""
    from zipimport import zipimporter

    known: set[type] = {
        SourceFileLoader,
        _NoFreshBytecode,
        SourcelessFileLoader,
        ExtensionFileLoader,
        *_WATCHED_LOADERS.values(),
        zipimporter,
    }
    rewrite = sys.modules.get("_pytest.assertion.rewrite")
    hook = getattr(rewrite, "AssertionRewritingHook", None)
    if isinstance(hook, type):
        known.add(hook)
    return frozenset(known)


_KNOWN_LOADERS = _known_loaders()
_GET_CODE = _NoFreshBytecode.__dict__["get_code"]
_EXEC_MODULE = _NoFreshBytecode.__dict__["exec_module"]


def no_fresh_bytecode(spec: Any) -> Any:
    """``spec`` with its loader replaced by the guard's kind of it, where the
    guard asks for that (called by the import watch for every import)."""
    loader: Any = getattr(spec, "loader", None)
    kind = type(loader)
    if kind is SourceFileLoader and _NoFreshBytecode.since_ns:
        spec.loader = _NoFreshBytecode(loader.name, loader.path)
    elif kind in _WATCHED_LOADERS and _NoFreshBytecode.values.files is not None:
        spec.loader = _WATCHED_LOADERS[kind](loader.name, loader.path)
    return spec


def _pyc_stat(path: object) -> tuple[int, int, int] | None:
    try:
        st = _stat(cast(str, path))
    except (OSError, TypeError, ValueError):
        return None
    return (st.st_ino, st.st_ctime_ns, st.st_size)


class BytecodeGuard:
    """Bytecode guarded from the run's start: the import system's through the
    import watch (:class:`_NoFreshBytecode`), pytest's cache of rewritten test
    modules by wrapping the function that reads it. A cache replaced between
    the look and the read is not used either."""

    def __init__(
        self, settings: Settings, sink: Sink, provenance: Provenance, values: Values
    ) -> None:
        self.since = settings.since_ns
        self.sink = sink
        self.provenance = provenance
        self.values = values
        self.guarded: dict[str, Any] = {}  # pytest's functions, as the guard wraps them

    def start(self) -> None:
        provenance, values = self.provenance, self.values
        _NoFreshBytecode.provenance = provenance
        for kind in (_NoFreshBytecode, *_WATCHED_LOADERS.values()):
            kind.values = values  # type: ignore[attr-defined]
        since = self.since
        if not since:
            return
        _NoFreshBytecode.since_ns = since
        try:
            from _pytest.assertion import rewrite
        except ImportError:  # no assertion rewriting: nothing of pytest's to guard
            return
        original = getattr(rewrite, "_read_pyc", None)
        if original is None:
            self.sink.evidence("guard-missing", "bytecode", "this pytest has no _read_pyc")
            return

        def _read_pyc(source: object, pyc: object, *args: Any, **kwargs: Any) -> Any:
            before = _pyc_stat(pyc) if _cache_in_place(source, pyc) else None
            if before is None or before[1] >= since:
                return None  # none, elsewhere, or this run's: rewritten from the source
            code = original(source, pyc, *args, **kwargs)
            if _pyc_stat(pyc) != before:
                return None
            provenance.loaded(source, code)
            return code

        rewrite._read_pyc = self.guarded["_read_pyc"] = _read_pyc
        rewrite_test = getattr(rewrite, "_rewrite_test", None)
        if rewrite_test is None:
            self.sink.evidence("guard-missing", "provenance", "this pytest has no _rewrite_test")
            return

        def _rewrite_test(fn: object, *args: Any, **kwargs: Any) -> Any:
            made = rewrite_test(fn, *args, **kwargs)
            if isinstance(made, tuple) and len(made) == 2:  # (source stat or hash, code)
                provenance.loaded(fn, made[1])
            return made

        rewrite._rewrite_test = self.guarded["_rewrite_test"] = _rewrite_test

    def finish(self) -> list[tuple[str, str, str]]:
        """What of the guard's work is no longer in place."""
        if not self.since:
            return []
        out = []
        rewrite = sys.modules.get("_pytest.assertion.rewrite")
        for name, wrapped in self.guarded.items():
            if getattr(rewrite, name, None) is not wrapped:
                out.append(f"_pytest.assertion.rewrite.{name}")
        loader = _NoFreshBytecode
        if (
            loader.__dict__.get("get_data") is not _GET_DATA
            or loader.__dict__.get("get_code") is not _GET_CODE
            or loader.__dict__.get("exec_module") is not _EXEC_MODULE
            or loader.since_ns != self.since
        ):
            out.append("gtd_ratchet_report._NoFreshBytecode")
        for kind, method in _WATCHED_EXEC.items():
            if kind.__dict__.get("exec_module") is not method:
                out.append(f"gtd_ratchet_report.{kind.__name__}")
        why = "the guard against this run's bytecode undone"
        return [("patched", label, why) for label in out]
