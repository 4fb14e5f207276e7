"""The pytest plugin behind the ratchet's per-test results. Never imported by gtd.

How it loads: for each test run the helper writes, into a fresh directory it puts
on ``PYTHONPATH``, a few-line module with a random name (``gtd_ratchet_<token>``)
and a ``*.dist-info`` declaring that module as the ``pytest11`` entry point
``gtd_ratchet_report``. Any pytest the test command starts (directly, through make
or a shell pipeline) autoloads it, and it loads this file by path from the
installed helper. A file in the repository cannot shadow a module name it cannot
know, and the code that runs is the helper's own, not a copy the tests could edit.

What it does (the contract — environment and line format — is contract.py beside
this file, which both sides read):

- streams one JSON line per test report (and one per collection error or skip)
  into the helper's pipe, or appends them to a file where the pipe was not
  inherited: every outcome but a plain pass at once, passes in batches of a few
  kilobytes or a quarter of a second. Outcomes: passed, xpassed, skipped, xfailed,
  failed (a strict xpass too, as pytest says) and error (a failure in setup,
  teardown or collection); a skip carries its location and reason, an xfail its
  reason;
- reports what pytest collected: each item's node id, file and kind;
- applies a selection the helper asks for (only these files, only these node
  ids): nothing else is collected, and no conftest.py outside it is loaded;
- when asked, loads modules from the room instead of the live repository
  (editable installs of either kind: a path added by a ``.pth``, or setuptools'
  import finder);
- records tamper evidence: pytest internals replaced during the session, plugins
  registered late that can change reports, modules loaded from a forbidden root,
  the conftest files and the interpreter's environment.

Degrades, never breaks: nothing here may fail the user's run. Any internal problem
means a report that is missing or flagged, which the verdict treats as missing
results. Where the plugin does not load (a command that replaces ``PYTHONPATH``,
``python -I``, ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), the ``--junitxml`` the helper
also passes stays in force; where it loads and can write, it switches that off.

Runs in the user's test environment: standard library and pytest (6.1 or later)
only, syntax for Python 3.7 and later. Per test it does a dict write and formats
one short line (a write to the pipe for every ~40 passing tests); everything else
happens at start-up, at the end of collection and at the end of the session.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import time
from functools import partial
from importlib.machinery import (  # frozen: loaded with the interpreter
    ExtensionFileLoader,
    SourceFileLoader,
    SourcelessFileLoader,
)
from itertools import chain, compress, count, repeat
from operator import attrgetter, is_not, itemgetter
from operator import is_ as _is
from types import BuiltinFunctionType, CodeType, FunctionType, ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Generator

# Bound at import, before any conftest or test runs: code that later replaces
# os.write or json's encoder does not change what this plugin writes, nor one
# that replaces os.stat or os.lstat what it sees of the room's files.
_write = os.write
_fstat = os.fstat
_stat = os.stat
_lstat = os.lstat
_quote = json.encoder.encode_basestring_ascii
_dumps = json.dumps
_now = time.monotonic
# The same for the path functions every check here decides with: code that
# rebinds ``os.path.isabs`` for its own file cannot make it "relative" to the
# check that looks for code from outside (a rebinding of what they call inside
# is evidence: the path modules are compared as libraries, Values.start).
_isabs = os.path.isabs
_abspath = os.path.abspath
_realpath = os.path.realpath
_normcase = os.path.normcase
_dirname = os.path.dirname
_basename = os.path.basename
_join = os.path.join
_split = os.path.split
_isdir = os.path.isdir
_islink = os.path.islink
_exists = os.path.exists
_PLUGIN_FILE = _abspath(__file__)


def _load_contract() -> Any:
    """contract.py from beside this file: the same names the helper imports."""
    import importlib.util

    path = _join(_dirname(_PLUGIN_FILE), "contract.py")
    spec = importlib.util.spec_from_file_location("gtd_ratchet_contract", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:  # the type checker reads the helper's module; pytest, the file
    from gtd.auto.ratchet import contract as C
else:
    C = _load_contract()

_RANK = {outcome: rank for rank, outcome in enumerate(C.OUTCOMES)}
_REASON_MAX = 300
_EVIDENCE_MAX = 50  # per kind and session: enough to see the pattern, never a flood
# A changed value is one line each, and what the baseline shows is not held against
# a change: a suite whose own code changes many values (caches, counters) must not
# have the ones beyond the cap read as new in a run that imports in another order.
_EVIDENCE_MAX_OF = {"changed-value": 1000}
_BATCH_BYTES = 3500  # under PIPE_BUF (4096): lines of two sessions never interleave
_BATCH_S = 0.25
_MISSING = object()


# Where os.path is posixpath, normcase changes nothing, and an absolute path with no
# empty, "." or ".." part and no trailing slash is what abspath makes of it.
_POSIX = os.path.__name__ == "posixpath"


def _abs(text: str) -> str:
    """``_abspath(text)``, without its work where ``text`` is already in
    that form: nearly every path here is (a module's origin, a test's file), and
    the plugin asks a few thousand times a run (~7,000 instructions each). A
    hidden folder's name (``/.cache``, where the clean room lives) is no "." or
    ".." part: only those, an empty part or a trailing slash need the work."""
    if (
        _POSIX
        and text[:1] == "/"
        and "//" not in text
        and text[-1:] != "/"
        and (
            "/." not in text
            or ("/./" not in text and "/../" not in text and not text.endswith(("/.", "/..")))
        )
    ):
        return text
    return _abspath(text)


_NORMS: dict[str, str] = {}  # an absolute path as given -> _norm of it


def _norm(path: object) -> str:
    # Asked ~1,700 times a run, mostly of the same few hundred module files (the
    # end's checks walk every module again): an absolute path's answer is kept;
    # a relative one's depends on the working folder, which a test may change.
    text = path if type(path) is str else str(path)
    known = _NORMS.get(text)
    if known is None:
        known = _normcase(_abs(text))
        if text[:1] == os.sep:
            _NORMS[text] = known
    return known


def _both(path: str, folders: dict[str, str] | None = None) -> tuple[str, ...]:
    """A path as given and with its symbolic links resolved: pytest and the import
    system may each use either. ``folders``: the folders already resolved by one
    caller that resolves many files of the same folders (a selection of every test
    file): realpath walks each part of a path with an lstat, ~5 M instructions for
    a 500-test suite's files one by one."""
    return (_norm(path), _normcase(_real(path, folders)))


def _real(path: str, folders: dict[str, str] | None) -> str:
    parent, name = _split(path)
    if folders is None or name in ("", ".", "..") or _islink(path):
        return _realpath(path)
    real = folders.get(parent)
    if real is None:
        real = folders[parent] = _realpath(parent)
    return _join(real, name)


def _editable_folders() -> list[str]:
    """The source folders editable installs of the import-finder kind map their
    packages to (setuptools' ``MAPPING``, the ``editables`` redirector's table):
    not on ``sys.path``, yet the environment's own."""
    out: list[str] = []
    for finder in sys.meta_path:
        owner = sys.modules.get(getattr(finder, "__module__", "") or "")
        for source in (finder, owner):
            for attr in ("MAPPING", "_redirections"):
                table = getattr(source, attr, None)
                if isinstance(table, dict):
                    for path in table.values():
                        if isinstance(path, str) and _isabs(path):
                            # a package's folder, or a module's file
                            out.append(path if _isdir(path) else _dirname(path))
    return out


_PREFIXES: dict[tuple[str, ...], tuple[str, ...]] = {}


def _under(path: str, roots: tuple[str, ...]) -> bool:
    prefixes = _PREFIXES.get(roots)
    if prefixes is None:
        prefixes = _PREFIXES[roots] = tuple(root.rstrip(os.sep) + os.sep for root in roots)
    return path in roots or path.startswith(prefixes)


# -- settings --------------------------------------------------------------------------


class Settings:
    """What the helper asked for, read once from the file the environment names."""

    def __init__(self, data: dict[str, Any], since_ns: int | None = None) -> None:
        # When the run began: the settings file's change time (the helper writes
        # it after syncing the room, before any of the room's code runs).
        self.since_ns = since_ns
        self.report: str | None = data.get(C.SETTING_REPORT)
        self.junit: str | None = data.get(C.SETTING_JUNIT)
        self.site: str | None = data.get(C.SETTING_SITE)
        self.root = str(data.get(C.SETTING_ROOT) or os.getcwd())
        files, ids = data.get(C.SETTING_FILES), data.get(C.SETTING_IDS)
        self.files = None if files is None else [str(f) for f in files]
        self.ids = None if ids is None else [str(i) for i in ids]
        self.forbidden = tuple(
            form for path in data.get(C.SETTING_FORBIDDEN) or () for form in _both(str(path))
        )
        live, room = data.get(C.SETTING_LIVE), data.get(C.SETTING_ROOM)
        self.redirect = (str(live), str(room)) if live and room else None
        since = data.get(C.SETTING_ENV_SINCE)
        self.env_since: int | None = since if type(since) is int else None
        guarded = data.get(C.SETTING_GUARDED)
        folders: dict[str, str] = {}
        self.guarded = (
            None
            if guarded is None
            else frozenset(
                form for rel in guarded for form in _both(_join(self.root, str(rel)), folders)
            )
        )


def _read_settings() -> Settings | None:
    path = os.environ.get(C.ENV_SETTINGS)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
            since_ns = os.fstat(handle.fileno()).st_ctime_ns
        if not isinstance(data, dict) or data.get(C.SETTING_VERSION) != C.VERSION:
            return None
        return Settings(data, since_ns)
    except Exception:  # unreadable: no report at all, and the JUnit XML stays on
        return None


# -- output ----------------------------------------------------------------------------


class Output:
    """Where lines go: the inherited pipe when it really is this run's, else the
    settings' file, opened for appending once. A write that fails stops writing
    (the reader then finds the session unfinished), never the run.

    Lines of passing tests wait in a small buffer, written when it nears the size
    a pipe writes atomically or a quarter of a second after the last write; every
    other line goes out at once, with what waits before it. One write per ~40
    fast passing tests instead of one each: each write wakes the reader, and that
    costs more than the rest of the plugin's work per test together.

    The pipe found closed means the helper that started the run is gone (killed:
    it reads until the run has ended): nobody will read what the tests do, and
    they would go on in a clean room the next run takes over. The run's process
    group ends then (:func:`_abandon`). A run that writes output of its own
    dies at its next write into the helper's output pipe anyway; one that
    writes none (``-p no:terminal``) learns it only here."""

    def __init__(self, settings: Settings) -> None:
        self.fd = -1
        self.via = "pipe"
        self.waiting: list[str] = []
        self.size = 0
        self.flushed = _now()
        try:
            fd, dev, ino = (int(part) for part in os.environ.get(C.ENV_FD, "").split(":"))
            st = _fstat(fd)
            if (st.st_dev, st.st_ino) == (dev, ino):
                os.set_inheritable(fd, False)  # a test's subprocesses never get it
                self.fd = fd
        except (ValueError, OSError):
            pass
        if self.fd < 0 and settings.report:
            self.via = "file"
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
            try:
                self.fd = os.open(settings.report, flags, 0o600)
            except OSError:
                self.fd = -1

    def later(self, text: str) -> None:
        self.waiting.append(text)
        self.size += len(text)
        if self.size > _BATCH_BYTES or _now() - self.flushed > _BATCH_S:
            self.line("")

    def line(self, text: str) -> None:
        if self.waiting:
            text = "".join(self.waiting) + text
            self.waiting = []
            self.size = 0
        self.flushed = _now()
        if self.fd < 0 or not text:
            return
        data = text.encode("ascii", "replace")
        try:
            while data:
                data = data[_write(self.fd, data) :]
        except OSError as exc:
            self.fd = -1
            if self.via == "pipe" and exc.errno in _GONE:
                _abandon()


_GONE = (errno.EPIPE, errno.ECONNRESET)  # the helper's end of the pipe is closed


def _abandon() -> None:
    """End this run: its process group where this process leads it (the helper
    starts it in a session of its own: the tests' subprocesses go too), else this
    process alone."""
    try:
        if os.getpgid(0) == os.getpid():
            os.killpg(0, 9)  # SIGKILL
    except OSError:
        pass  # not allowed, or gone already: this process ends below anyway
    os._exit(1)


# -- selection -------------------------------------------------------------------------


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
        raw = _item_path(item)
        known = self._paths.get(id(raw))
        if known is None or known[0] is not raw:  # (the object kept: its id stays its)
            known = self._paths[id(raw)] = (raw, _norm(raw))
        path = known[1]
        if path not in self.files:
            return False
        return self.ids is None or (path, item.nodeid.partition("::")[2]) in self.ids


def _item_path(item: Any) -> object:
    path = getattr(item, "path", None)  # pytest >= 7
    return path if path is not None else item.fspath


def _guard_conftests(state: State, pm: Any) -> None:
    """Load no conftest.py outside the selection, including those pytest loads
    before collecting (the arguments' own and their ``test*`` subdirectories')."""
    selection = state.selection
    assert selection is not None
    for name in ("_loadconftestmodules", "_getconftestmodules"):  # pytest >= 8, older
        original = getattr(pm, name, None)
        if original is not None:
            break
    else:
        state.evidence("guard-missing", "conftest loading", "this pytest has no known method")
        return
    loads_only = name == "_loadconftestmodules"

    def guarded(path: object, *args: object, **kwargs: object) -> object:
        text = _norm(path)
        directory = text if _isdir(text) else _dirname(text)
        if directory in selection.dirs:
            return original(path, *args, **kwargs)
        return None if loads_only else []

    setattr(pm, name, guarded)


# -- imports: redirect and watch -----------------------------------------------------


# -- bytecode written during the run --------------------------------------------------
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


# -- where the project's code comes from ---------------------------------------------
# Code compiled during the run can carry any file name: ``compile(text, file)``
# with the name (and first line) of a file of the room makes code that says it is
# that file's, then ``f.__code__ = ...`` or ``exec`` puts it where the tests call
# it (the assertion helper's body swapped, a good copy of the code under test read
# from outside). The file's name proves nothing; what the import system loaded
# from it does. Every code object made from a file of the room (its module's and
# all nested in it) is kept here, by file; at the end of the session a function of
# the project whose code names such a file and is none of them is reported.
# Likewise each module's functions as its import left them: one rebound since (an
# assertion helper replaced by a function of the package's own, whatever its
# name) is reported too. What the baseline's own run does of this is not held
# against a change (the helper compares the evidence with the baseline's).


class Provenance:
    """The code objects loaded from each file of the room, and the functions each
    module of the room held when its import ended."""

    def __init__(self) -> None:
        self.room: tuple[str, ...] = ()  # set once the import watch knows the room
        self.where: dict[str, object] = {}  # a file as named -> in_room's answer
        self.kept: list[CodeType] = []  # alive, so that an id stays theirs
        self.ids: dict[str, set[int]] = {}
        self.top: dict[str, CodeType] = {}  # a file of the room -> its module's code
        # id(module) -> (module, its name, {attribute: function}) at the import's end
        self.bound: dict[int, tuple[object, str, dict[str, FunctionType]]] = {}
        # Files of the room run as code that were written since the run began (or
        # are gone by its end): no sync wrote them, so no commit holds them — a
        # copy of code kept elsewhere, brought in by the code under test.
        self.fresh: dict[str, str] = {}  # room-relative path -> how
        self.looked: dict[str, str | None] = {}  # a code file as named -> how, or None
        self.chains: dict[str, str | None] = {}  # a folder of the room -> how, or None

    def in_room(self, file: object) -> str | None:
        # (absolute only: an origin such as "built-in" or "frozen" is no file, and
        # made absolute it would name one in the room, the working folder)
        if not self.room or not isinstance(file, str):
            return None
        known = self.where.get(file, _MISSING)
        if known is _MISSING:
            known = None
            if _isabs(file):
                norm = _norm(file)
                known = norm if _under(norm, self.room) else None
            self.where[file] = known
        return cast("str | None", known)

    def loaded(self, file: object, code: object) -> None:
        norm = self.in_room(str(file) if file is not None else None)
        if norm is None or type(code) is not CodeType:
            return
        self.kept.append(code)
        self.top[norm] = code
        _reach(code, self.ids.setdefault(norm, set()))

    def written(self, file: str) -> str | None:
        """How ``file``, run as code, came to be, where the run itself wrote it (or
        a symbolic link on its way, which could lead anywhere) or it is gone; None
        for a file the sync wrote or one outside the room."""
        if file in self.looked:
            return self.looked[file]
        how = None
        norm = self.in_room(file)
        since = _NoFreshBytecode.since_ns
        if norm is not None and since:
            how = self._entry(norm, since, own=True)
            if how is not None:
                root = next(r for r in self.room if _under(norm, (r,)))
                self.fresh[norm[len(root) :].lstrip(os.sep)] = how
        self.looked[file] = how
        return how

    def _entry(self, path: str, since: int, *, own: bool) -> str | None:
        """:meth:`written` for ``path`` inside the room: the file itself (``own``)
        by its change time, a folder on its way only if it is a link (a folder's
        own change time moves with every cache written into it); a member of an
        archive (``x.zip/m.py``) by the archive."""
        if not own and path in self.chains:
            return self.chains[path]
        folder = _dirname(path)
        how: str | None = None
        try:
            st = _lstat(path)
        except NotADirectoryError:  # inside an archive: the archive is the file
            return self._entry(folder, since, own=True)
        except OSError:
            how = "gone by the run's end"
        else:
            if (own or stat.S_ISLNK(st.st_mode)) and st.st_ctime_ns >= since:
                how = "written during the run"
        if how is None and folder not in self.room and _under(folder, self.room):
            how = self._entry(folder, since, own=False)
        if not own:
            self.chains[path] = how
        return how

    def executed(self, module: Any) -> None:
        if self.in_room(getattr(module, "__file__", None)) is None:
            return
        functions = {k: v for k, v in vars(module).items() if type(v) is FunctionType}
        self.bound[id(module)] = (module, str(module.__name__), functions)


def _reach(code: CodeType, ids: set[int]) -> None:
    """``code`` and every code object nested in it, by id, into ``ids``."""
    stack = [code]
    while stack:
        each = stack.pop()
        ids.add(id(each))
        stack.extend(c for c in each.co_consts if type(c) is CodeType)


def _module_code(module: object) -> set[int]:
    """The code a module's functions and classes reach: where a decorator's
    wrapper comes from, its code is nested in one of them."""
    ids: set[int] = set()
    for value in list(vars(module).values()):
        members = list(vars(value).values()) if isinstance(value, type) else [value]
        for member in members:
            function = _function_of(member)
            if function is not None:
                _reach(function.__code__, ids)
    return ids


_PROVENANCE = Provenance()


class _NoFreshBytecode(SourceFileLoader):
    """The import system's loader of a source module, which reads no bytecode
    changed since :attr:`since_ns` (opened once: what is judged is what is read),
    and tells :data:`_PROVENANCE` what it loaded."""

    since_ns = 0

    def get_code(self, fullname: str) -> Any:
        code = super().get_code(fullname)
        _PROVENANCE.loaded(self.path, code)
        return code

    def exec_module(self, module: Any) -> None:
        before = _hypothesis_strength()
        super().exec_module(module)
        _PROVENANCE.executed(module)
        _VALUES.imported(module)
        _VALUES.examples_after(module, before)

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
    :data:`_VALUES` what it loaded: a library first loaded during the run (cmath,
    say) is recorded as its import left it, before the code under test that
    imported it can patch it."""

    def exec_module(self, module: Any) -> None:
        super().exec_module(module)
        _VALUES.imported(module)
        _plain_loader(module, self, ExtensionFileLoader)


class _WatchedSourceless(SourcelessFileLoader):
    """The same for a module shipped as bytecode only."""

    def exec_module(self, module: Any) -> None:
        super().exec_module(module)
        _VALUES.imported(module)
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


def _no_fresh_bytecode(spec: Any) -> Any:
    loader: Any = getattr(spec, "loader", None)
    kind = type(loader)
    if kind is SourceFileLoader and _NoFreshBytecode.since_ns:
        spec.loader = _NoFreshBytecode(loader.name, loader.path)
    elif kind in _WATCHED_LOADERS and _VALUES.files is not None:
        spec.loader = _WATCHED_LOADERS[kind](loader.name, loader.path)
    return spec


def _pyc_stat(path: object) -> tuple[int, int, int] | None:
    try:
        st = _stat(cast(str, path))
    except (OSError, TypeError, ValueError):
        return None
    return (st.st_ino, st.st_ctime_ns, st.st_size)


_GUARDED: dict[str, Any] = {}  # pytest's functions, as the guard wraps them


def _guard_bytecode(state: State) -> None:
    """Bytecode guarded from the run's start: the import system's through the
    import watch (:class:`_NoFreshBytecode`), pytest's cache of rewritten test
    modules by wrapping the function that reads it. A cache replaced between
    the look and the read is not used either."""
    since = state.settings.since_ns
    if not since:
        return
    _NoFreshBytecode.since_ns = since
    try:
        from _pytest.assertion import rewrite
    except ImportError:  # no assertion rewriting: nothing of pytest's to guard
        return
    original = getattr(rewrite, "_read_pyc", None)
    if original is None:
        state.evidence("guard-missing", "bytecode", "this pytest has no _read_pyc")
        return

    def _read_pyc(source: object, pyc: object, *args: Any, **kwargs: Any) -> Any:
        before = _pyc_stat(pyc) if _cache_in_place(source, pyc) else None
        if before is None or before[1] >= since:
            return None  # none, elsewhere, or this run's: rewritten from the source
        code = original(source, pyc, *args, **kwargs)
        if _pyc_stat(pyc) != before:
            return None
        _PROVENANCE.loaded(source, code)
        return code

    rewrite._read_pyc = _GUARDED["_read_pyc"] = _read_pyc
    rewrite_test = getattr(rewrite, "_rewrite_test", None)
    if rewrite_test is None:
        state.evidence("guard-missing", "provenance", "this pytest has no _rewrite_test")
        return

    def _rewrite_test(fn: object, *args: Any, **kwargs: Any) -> Any:
        made = rewrite_test(fn, *args, **kwargs)
        if isinstance(made, tuple) and len(made) == 2:  # (source stat or hash, code)
            _PROVENANCE.loaded(fn, made[1])
        return made

    rewrite._rewrite_test = _GUARDED["_rewrite_test"] = _rewrite_test


def _watch_rewritten_imports() -> None:
    """Protected modules that pytest's assertion rewriter imports (test modules,
    conftests) recorded as their import ends (:class:`Values`), as the import
    system's are by :class:`_NoFreshBytecode`."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:  # no assertion rewriting: the import system loads them
        return
    hook = getattr(rewrite, "AssertionRewritingHook", None)
    original = getattr(hook, "exec_module", None)
    if not isinstance(hook, type) or original is None:
        return

    def exec_module(self: object, module: Any) -> None:
        original(self, module)
        _VALUES.imported(module)

    hook.exec_module = _GUARDED_EXEC["exec_module"] = exec_module  # type: ignore[attr-defined]


_GUARDED_EXEC: dict[str, object] = {}  # pytest's rewriter's exec_module, as wrapped


def _bytecode_guard_undone(settings: Settings) -> list[str]:
    """What of :func:`_guard_bytecode`'s work is no longer in place."""
    if not settings.since_ns:
        return []
    out = []
    rewrite = sys.modules.get("_pytest.assertion.rewrite")
    for name, wrapped in _GUARDED.items():
        if getattr(rewrite, name, None) is not wrapped:
            out.append(f"_pytest.assertion.rewrite.{name}")
    loader = _NoFreshBytecode
    if (
        loader.__dict__.get("get_data") is not _GET_DATA
        or loader.__dict__.get("get_code") is not _GET_CODE
        or loader.__dict__.get("exec_module") is not _EXEC_MODULE
        or loader.since_ns != settings.since_ns
    ):
        out.append("gtd_ratchet_report._NoFreshBytecode")
    for kind, method in _WATCHED_EXEC.items():
        if kind.__dict__.get("exec_module") is not method:
            out.append(f"gtd_ratchet_report.{kind.__name__}")
    return out


# -- tamper evidence: values protected code reads -------------------------------------

# A protected module (a test module, a conftest, a helper in a test folder: a
# file the judged tree takes from the base) cannot be edited by the change; what
# it reads while the tests run can be. Each one's values are recorded as its
# import left them, walked into plain containers, and compared at the end of
# the session: a tolerance constant rebound, a default argument replaced, a dict
# of limits or a class attribute changed, a closure's cell set, a name the test
# module bound its assertion helper to rebound to a builtin. So are the
# builtins and the public functions of the libraries protected modules import,
# as they were when this plugin was imported (before any conftest, test or code
# under test ran) or, for a library loaded since, when the first protected
# module that binds it was imported. The module's own code may change its
# values too (a cache filled, a counter): the baseline's run does the same, and
# the helper does not hold evidence the baseline shows against a change.

_SCALARS = frozenset({int, float, complex, str, bytes, bool, type(None)})
_WALK_BUDGET = 256  # container elements walked per value; beyond, identity only
_WALK_DEPTH = 4
_EMPTY_CELL = ("empty cell",)
# A class's own entries that are data about the class, not values code reads; and
# the list unittest sets on every TestCase class it runs the class cleanups of.
_CLASS_NOISE = frozenset(
    {"__dict__", "__weakref__", "__doc__", "__module__", "__qualname__", "tearDown_exceptions"}
)
# Libraries whose public callables legitimately change in a session: sys's hooks
# (pytest's own), warnings' (logging.captureWarnings replaces showwarning); and
# the hook pytest's threadexception plugin sets for the session.
_UNWATCHED_LIBRARIES = frozenset({"sys", "warnings"})
_UNWATCHED_NAMES = frozenset({"threading.excepthook"})
_BUILTIN_HOOKS = frozenset({"__import__", "__build_class__"})
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement


def _private(module: str) -> bool:
    return module[:1] == "_" or "._" in module


def _dunder(key: str) -> bool:
    return key[:2] == "__" and key[-2:] == "__"


class Values:
    """What protected code reads, as first seen (see above)."""

    def __init__(self) -> None:
        self.files: frozenset[str] | None = None  # protected files; None: not asked
        self.tests: set[str] = set()  # test modules pytest began collecting
        self.seen: set[str] = set()  # files whose modules are recorded
        # each module's namespace as first seen: every one when the plugin was
        # imported, a library loaded since when its import ended
        # (name -> (module, copy, since when))
        self.early: dict[str, tuple[object, dict[str, object], str]] = {}
        # id(module) -> (module, name, {global: (value, shape)}), kept alive so that
        # every id in a shape stays that object's
        self.protected: dict[int, tuple[object, str, dict[str, tuple[object, object]]]] = {}
        self.looked: set[int] = set()  # modules protected ones bind, looked at (ids)
        # libraries protected modules bind: name -> (module, namespace, since when)
        self.read: dict[str, tuple[object, dict[str, object], str]] = {}
        self.kept: list[object] = []
        # names a protected module's import bound to a builtin not of that name:
        # (subject, detail)
        self.stand_ins: list[tuple[str, str]] = []
        self.names: dict[str, int] = {}  # a protected module's name -> id(module)
        # the assertion machinery's modules as first seen (:meth:`machine`):
        # name -> (module, namespace, {class name: (class, its own entries)})
        self.machinery: dict[str, tuple[object, dict[str, object], dict[str, Any]]] = {}
        # hypothesis's modules as first seen (:meth:`property_machine`): name ->
        # (module, its functions and classes, {class name: (class, own entries)})
        self.properties: dict[str, tuple[object, dict[str, object], dict[str, Any]]] = {}
        # names a protected module's import statements bound to other than what
        # they import (:meth:`bindings`): (subject, detail)
        self.bound_by_import: list[tuple[str, str]] = []
        # Every function of a library's namespace (and of the machinery's
        # classes) as first seen, with its code, defaults and keyword defaults
        # then, flattened three to a function: ``f.__code__ = ...`` changes what
        # ``f`` does (pytest.fail, _exists, a function this plugin calls)
        # and leaves it the object first seen
        self.functions: list[FunctionType] = []
        self.states: list[object] = []
        # The classes each library of :data:`_CLASSES_KEPT` defines, as first seen (the
        # run's start, or its import's end): library -> {name: (class, its own
        # entries)}. ``Fraction.__eq__ = ...`` leaves the module's namespace as
        # it was, and the class the one first seen.
        self.classes: dict[str, dict[str, tuple[type, dict[str, object]]]] = {}
        # hypothesis made to try fewer examples while a module of the code under
        # test was imported: (module, (examples, phases) after, before)
        self.weakened: list[tuple[str, _Strength, _Strength]] = []
        self.examples_first: _Strength | None = None  # as hypothesis's import left it
        self.ended = False  # an end line written (:meth:`stop`)

    def start(self, settings: Settings) -> None:
        if settings.guarded is None:
            return
        self.files = settings.guarded
        early = self.early
        # A dict copy of each public module's namespace (~8,000 names of ~150
        # modules at pytest's start, ~0.3 ms): a private one (``_pytest.*``,
        # ``email._parseaddr``) is no API the tests call; pytest's internals are
        # watched by :class:`Identities`.
        for name, module in list(sys.modules.items()):
            if _property_module(name):
                self.property_machine(name, module)
            namespace = getattr(module, "__dict__", None)
            if type(namespace) is dict and not _private(name):
                copy = dict(namespace)
                early[name] = (module, copy, "the run began")
                if name in _KEPT:
                    self.keep_states(copy)
                    if name in _CLASSES_KEPT:
                        self.library_classes(name, copy)
        builtins = early.get("builtins")
        if builtins is not None:
            self.read["builtins"] = builtins
        # and the path modules this plugin's own checks decide with (their
        # functions are bound at its import; what those call is looked up here)
        for name in ("os", os.path.__name__, "genericpath"):
            held = early.get(name)
            if held is not None:
                self.read.setdefault(name, held)
        for name in _machinery_modules():
            loaded = sys.modules.get(name)
            if loaded is not None:
                self.machine(name, loaded)

    def keep_states(self, namespace: dict[str, object]) -> None:
        """Each function of ``namespace`` with its code and defaults (C-level
        iteration: ~1,300 functions at pytest's start)."""
        values = list(namespace.values())
        functions: list[Any] = list(compress(values, map(_is_function, map(type, values))))
        self.functions += functions
        self.states += chain.from_iterable(map(_function_state, functions))

    def library_classes(self, name: str, namespace: dict[str, object]) -> None:
        """Record the classes ``namespace`` (library ``name``'s) defines: each
        one's own entries, and its functions' code and defaults. Classes of C
        (``int``, ``Decimal`` where ``_decimal`` is built) cannot be changed."""
        found: dict[str, tuple[type, dict[str, object]]] = {}
        items: list[tuple[str, Any]] = list(namespace.items())
        # (the classes picked out at C level: ~1,000 names in these libraries)
        for key, value in compress(items, map(isinstance, map(_second, items), repeat(type))):
            if value.__flags__ & _HEAP_TYPE and vars(value).get("__module__") == name:
                entries = dict(vars(value))
                found[key] = (value, entries)
                self.keep_states(entries)
        self.classes[name] = found

    def examples_after(self, module: Any, before: _Strength | None) -> None:
        """Note hypothesis's default settings left weaker (fewer examples, fewer
        phases) by the import of ``module``, if it is the code under test: a
        property test then tries one example, the smallest, and misses what a
        hundred would find. A project's own conftest or test module may load
        any profile; the code under test has no say."""
        loaded = sys.modules.get("hypothesis._settings")
        if self.files is None or loaded is None:
            return
        if self.examples_first is None:
            # (hypothesis loaded before the run began, or its import just ended)
            self.examples_first = before if before is not None else _hypothesis_strength()
            if module is loaded:
                return
        file = getattr(module, "__file__", None)
        norm = _PROVENANCE.in_room(file)
        if norm is None or norm in self.files or _under(norm, _environment_roots()):
            return
        now = _hypothesis_strength()
        was = before if before is not None else self.examples_first
        if now is not None and was is not None and _weaker(now, was):
            self.weakened.append((str(getattr(module, "__name__", norm)), now, was))

    def code_replaced(self) -> list[tuple[str, str]]:
        """The functions (:meth:`keep_states`) whose code, defaults or keyword
        defaults are not, by identity, what they were first seen with."""
        functions = self.functions
        now = list(chain.from_iterable(map(_function_state, functions)))
        out: dict[str, str] = {}
        for at in compress(count(), map(_is_not, now, self.states)):
            function = functions[at // 3]
            what = ("code", "defaults", "keyword defaults")[at % 3]
            name = f"{getattr(function, '__module__', '?')}.{function.__qualname__}"
            out[name] = f"its {what} replaced since first seen: {_describe(function)}"
        return list(out.items())

    def machine(self, name: str, module: object) -> None:
        """Record a module of the assertion machinery (:data:`_MACHINERY`): its
        namespace and, for each class it defines, the class's own entries."""
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is not dict or name in self.machinery:
            return
        classes = {
            key: (value, dict(vars(value)))
            for key, value in list(namespace.items())
            if isinstance(value, type) and getattr(value, "__module__", None) == name
        }
        copy = dict(namespace)
        self.machinery[name] = (module, copy, classes)
        self.keep_states(copy)
        for _, entries in classes.values():
            self.keep_states(entries)

    def imported(self, module: Any) -> None:
        """Record ``module``'s values if it is protected (its import just ended)."""
        files = self.files
        if files is None or id(module) in self.protected:
            return
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            return
        norm = _norm(file)
        if norm not in files and norm not in self.tests:
            if self.ended:
                return  # a library loaded after the end line: nothing compares it
            name = getattr(module, "__name__", None)
            early = self.early
            if isinstance(name, str) and name not in early:
                room = _PROVENANCE.room
                if not (room and _under(norm, room)):
                    # a library loaded since the run began, as its import left it:
                    # the code under test may import it first and patch it at once
                    if not _private(name):
                        copy = dict(vars(module))
                        early[name] = (module, copy, "it was imported")
                        if name in _KEPT:
                            self.keep_states(copy)
                            if name in _CLASSES_KEPT:
                                self.library_classes(name, copy)
                    # (the machinery's modules often have private names:
                    # numpy.testing._private.utils, hypothesis's internals)
                    if name in _MACHINERY:
                        self.machine(name, module)
                    elif _property_module(name):
                        self.property_machine(name, module)
            return
        self.seen.add(norm)
        name = str(getattr(module, "__name__", norm))
        values: dict[str, tuple[object, object]] = {}
        keep = self.kept
        for key, value in list(vars(module).items()):
            if key[:2] == "__" and key[-2:] == "__":
                if key == "__builtins__":  # what functions made later look builtins up in
                    values[key] = (value, id(value))
                continue
            values[key] = (value, _shape(value, name, [_WALK_BUDGET], _WALK_DEPTH, keep))
            if type(value) is ModuleType:
                self.library(value, name)
                continue
            home = getattr(value, "__module__", None) if callable(value) else None
            if type(home) is str and home != name:
                # a function or class bound by name (`from statistics import
                # fmean`): what it calls through its module's globals is read too
                source = sys.modules.get(home)
                if type(source) is ModuleType:
                    self.library(source, name)
            if _stand_in(key, value):
                what = getattr(value, "__name__", "?")
                detail = f"bound by its module's import to the builtin {what}, a name not its own"
                self.stand_ins.append((f"{name}.{key}", detail))
        self.protected[id(module)] = (module, name, values)
        self.names[name] = id(module)
        code = _PROVENANCE.top.get(norm)
        if code is not None:
            self.bindings(module, name, code)

    def bindings(self, module: Any, name: str, code: CodeType) -> None:
        """Each name ``module``'s own import statements bound (once) checked
        against what they import: the module's value in ``sys.modules`` and, for
        a protected module or a library, the value it held when it was first
        seen. A hook on ``builtins.__import__`` (or on the module, or on
        ``sys.modules``) that hands a protected module a stand-in while it
        imports, and takes itself off again, leaves the stand-in bound under
        the real name: nothing changes after the import, so only here does it
        show."""
        namespace = vars(module)
        package = namespace.get("__package__")
        if not isinstance(package, str):
            package = name if hasattr(module, "__path__") else name.rpartition(".")[0]
        out = self.bound_by_import
        for statement in _import_bindings(code):
            bound = statement[4]
            actual = namespace.get(bound, _MISSING)
            if actual is _MISSING:
                continue  # (an import the module's code did not run)
            imported = _imported_name(statement, package)
            if imported is not None:
                wrong = self.binding_wrong(actual, *imported)
                if wrong is not None:
                    out.append((f"{name}.{bound}", wrong))

    def binding_wrong(self, actual: object, target: str, attribute: str | None) -> str | None:
        """What is wrong with ``actual`` as the value an import of ``target``'s
        ``attribute`` (or of the module ``target`` itself) bound, if anything."""
        modules = sys.modules
        source = modules.get(target)
        if attribute is None:
            if actual is source:
                return None
            return f"bound by its import to {_describe(actual)}, not the module {target}"
        if source is None:
            return f"bound by an import of {target}, which is not loaded"
        held = getattr(source, "__dict__", None)
        if type(held) is not dict:
            return None
        value = held.get(attribute, _MISSING)
        if value is _MISSING:
            value = modules.get(f"{target}.{attribute}", _MISSING)
        if value is _MISSING:
            if "__getattr__" in held:  # (a lazy module's names are not held)
                return None
            return f"bound by an import of {target}.{attribute}, which {target} does not hold"
        if actual is not value:
            return f"bound by its import to {_describe(actual)}, not {target}.{attribute}"
        first = self.first_value(target, attribute)
        if first is _MISSING or first is actual:
            return None
        return (
            f"bound by its import to {_describe(actual)}: {target}.{attribute} was "
            f"{_describe(first)} when it was first seen"
        )

    def property_machine(self, name: str, module: object) -> None:
        """Record a module of hypothesis, which decides how many examples a
        property test tries and what they are (its engine, its strategies): the
        functions and classes it defines, and each class's own entries. Its
        modules keep data of their own that changes as tests run (caches,
        counters, submodules bound as they load): that is not judged."""
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is not dict or name in self.properties:
            return
        made: dict[str, object] = {
            key: value
            for key, value in list(namespace.items())
            if type(value) is FunctionType or isinstance(value, type)
            if getattr(value, "__module__", None) == name
        }
        classes = {
            key: (value, dict(vars(value)))
            for key, value in made.items()
            if type(value) is not FunctionType
        }
        self.properties[name] = (module, made, classes)
        self.keep_states(made)
        for _, entries in classes.values():
            self.keep_states(entries)

    def machinery_changed(self) -> list[tuple[str, str]]:
        """The assertion machinery's entries (:meth:`machine`) rebound, removed
        or added since first seen; hypothesis's functions and classes
        (:meth:`property_machine`) rebound or removed, their classes' entries
        rebound, removed or added."""
        out: list[tuple[str, str]] = []
        for name, (module, namespace, classes) in list(self.machinery.items()):
            file = getattr(module, "__file__", None)
            out += _entries_changed(name, vars(module), namespace, _dunder, file)
            for key, (cls, entries) in classes.items():
                out += _entries_changed(f"{name}.{key}", vars(cls), entries, _class_noise)
        for name, (module, made, classes) in list(self.properties.items()):
            # only what the module first made: the names it adds as tests run are data
            namespace = vars(module)
            now = {key: namespace[key] for key in made if key in namespace}
            out += _entries_changed(name, now, made, _dunder)
            for key, (cls, entries) in classes.items():
                out += _entries_changed(f"{name}.{key}", vars(cls), entries, _class_noise)
        return out

    def first_value(self, target: str, attribute: str) -> object:
        """``target``'s ``attribute`` as first seen: as a protected module's
        import left it, or a library's as the run began or its import ended;
        :data:`_MISSING` where it was not held then (or ``target`` was not seen).
        (By name: a module put in sys.modules in place of the one first seen
        under that name is judged by what the first one held.)"""
        at = self.names.get(target)
        if at is not None:
            entry = self.protected[at][2].get(attribute)
            return _MISSING if entry is None else entry[0]
        early = self.early.get(target)
        if early is None:
            return _MISSING
        return early[1].get(attribute, _MISSING)

    def library(self, module: ModuleType, reader: str) -> None:
        """Watch ``module`` (and the modules it holds, one level: ``np.testing``),
        unless it is the project's own (a protected one is recorded itself, the
        change's are its to change)."""
        if id(module) in self.looked:
            return  # (every test module binds pytest: its namespace is looked at once)
        self.looked.add(id(module))
        for one in (module, *[v for v in list(vars(module).values()) if isinstance(v, ModuleType)]):
            name = getattr(one, "__name__", None)
            if not isinstance(name, str) or name in self.read or name in _UNWATCHED_LIBRARIES:
                continue
            if _PROVENANCE.in_room(getattr(one, "__file__", None)) is not None:
                continue
            early = self.early.get(name)
            if early is not None and early[0] is one:
                self.read[name] = early
            else:
                self.read[name] = (one, dict(vars(one)), f"{reader} was imported")

    def stop(self) -> None:
        """No library recorded from here on: the session's end line is written.
        Hypothesis's plugin imports its 74 modules only for the terminal summary,
        after that line: recording them was ~18 M instructions of a 500-test run.
        A protected module still is, and every record stays until the session
        is over (:meth:`release`): an end line the code under test wrote early is
        followed by the real one, which compares them all again."""
        self.ended = True

    def release(self) -> None:
        """Every record let go once the session is over and an end line written:
        left alive, they are walked by pytest's two full collections at its end
        (~7 M instructions)."""
        if self.ended:
            self.__init__()  # type: ignore[misc]  # every field as before the start

    def missing(self) -> set[str]:
        """Test modules pytest collected whose import was not seen ending (a loader
        other than the import system's or pytest's): recorded late, at the end
        of collection."""
        return self.tests - self.seen

    def changed(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for module, name, values in list(self.protected.values()):
            now = vars(module)
            for key, (value, shape) in values.items():
                current = now.get(key, _MISSING)
                if current is _MISSING:
                    out.append((f"{name}.{key}", "removed since its module was imported"))
                elif current is not value and _submodule(current, name, key):
                    continue  # a submodule imported again (a test that reloads one)
                elif current is not value:
                    detail = f"rebound since its module was imported: {_describe(current)}"
                    out.append((f"{name}.{key}", detail))
                elif key == "__builtins__":
                    continue  # by identity: its contents are the builtins' own (below)
                elif _changed(_shape(current, name, [_WALK_BUDGET], _WALK_DEPTH, None), shape):
                    out.append((f"{name}.{key}", "changed in place since its module was imported"))
            for key in [k for k in list(now) if k not in values and not _dunder(k)]:
                if _submodule(now[key], name, key):
                    continue  # the import system binds a package's submodules to it
                detail = f"added since its module was imported: {_describe(now[key])}"
                out.append((f"{name}.{key}", detail))
        for name, (module, first, since) in list(self.read.items()):
            now = vars(module)
            builtins = name == "builtins"
            get = now.get
            for key, value in first.items():
                current = get(key, _MISSING)
                if current is value:
                    continue  # (nearly every name: looked at first)
                if key[:1] == "_" and not (builtins and key in _BUILTIN_HOOKS):
                    continue
                # (a submodule too: ``json.encoder = stand_in`` keeps ``json``)
                watched = _watchable(value) or type(value) is ModuleType
                if watched and f"{name}.{key}" not in _UNWATCHED_NAMES:
                    what = "removed" if current is _MISSING else "rebound"
                    detail = f"{what} since {since}"
                    if current is not _MISSING:
                        detail += f": {_describe(current)}"
                    out.append((f"{name}.{key}", detail))
            for key, (cls, entries) in self.classes.get(name, {}).items():
                out += _behaviour_changed(f"{name}.{key}", vars(cls), entries)
        return out


# The libraries whose functions' code is taken as the run begins (or as their
# import ends): those an assertion helper compares, computes or checks files
# through. Every function of every library (~1,450 at pytest's start, more as
# the run imports others) was ~14 M instructions a run; the assertion
# machinery's are taken with the rest of it.
_KEPT = frozenset(
    {
        "statistics",
        "fractions",
        "decimal",
        "cmath",
        "random",
        "datetime",
        "csv",
        "hashlib",
        "base64",
        "zlib",
        "tempfile",
        "io",
        "os",
        "posixpath",
        "ntpath",
        "genericpath",
        "pathlib",
        "shutil",
        "filecmp",
        "fnmatch",
        "glob",
        "re",
        "json",
        "json.decoder",
        "json.encoder",
        "textwrap",
        "difflib",
        "string",
        "pprint",
        "collections",
        "functools",
        "itertools",
        "operator",
        "math",
        "numbers",
        "copy",
        "inspect",
        "subprocess",
        "pytest",
    }
)

# Of those, the libraries whose classes are recorded too (their own entries and
# their functions' code): the ones whose classes an assertion helper compares or
# checks through (``Fraction(a) == Fraction(b)``, ``Counter``, ``Path.exists``,
# a JSON decoder, a diff). The classes of all of _KEPT were ~9 M instructions a
# run (1,583 entries: inspect's, pytest's, os's...); these ~4 M.
_CLASSES_KEPT = frozenset(
    {
        "fractions",
        "decimal",
        "statistics",
        "numbers",
        "collections",
        "pathlib",
        "json.decoder",
        "json.encoder",
        "difflib",
        "csv",
        "string",
        "textwrap",
        "datetime",
        "filecmp",
    }
)

# What a function does besides its identity: its code, defaults and keyword
# defaults, each compared by identity (``==`` would ask a default's own ``__eq__``).
_is_not = is_not
_function_state = attrgetter("__code__", "__defaults__", "__kwdefaults__")
_is_function = partial(_is, FunctionType)
_second = itemgetter(1)


def _ops() -> dict[str, int]:
    import opcode  # (loaded with pytest: inspect imports dis, dis opcode)

    return {k: v for k, v in opcode.opmap.items() if k.isupper()}


_OPS = _ops()
_IMPORT_NAME = _OPS["IMPORT_NAME"]
_IMPORT_FROM = _OPS["IMPORT_FROM"]
_EXTENDED_ARG = _OPS["EXTENDED_ARG"]
_CACHE = _OPS.get("CACHE", -1)  # (3.11 and later: inline caches, zeros in co_code)
_STORES = frozenset(
    _OPS[k] for k in ("STORE_NAME", "STORE_GLOBAL", "DELETE_NAME", "DELETE_GLOBAL") if k in _OPS
)
_SHUFFLES = frozenset(_OPS[k] for k in ("SWAP", "ROT_TWO", "POP_TOP") if k in _OPS)
_LOAD_CONST = _OPS["LOAD_CONST"]
_LOAD_SMALL_INT = _OPS.get("LOAD_SMALL_INT", -1)  # (3.14: an import's level)


def _imported_name(
    statement: tuple[str, int, tuple[str, ...] | None, str | None, str], package: str
) -> tuple[str, str | None] | None:
    """The module an import statement (:func:`_import_bindings`) reads and the
    attribute of it the name is bound to (None: the module itself), relative
    imports resolved against ``package``; None where it cannot be resolved."""
    target, level, fromlist, attribute, _ = statement
    if level:
        parts = package.rsplit(".", level - 1) if package else []
        if len(parts) < level:
            return None
        target = f"{parts[0]}.{target}" if target else parts[0]
    if fromlist is None:  # `import a.b` binds a; `import a.b as c`, a.b
        return (target if attribute else target.partition(".")[0]), None
    return target, attribute


def _import_bindings(
    code: CodeType,
) -> list[tuple[str, int, tuple[str, ...] | None, str | None, str]]:
    """The names a module's own import statements bind at its top level, each
    as (module, level, fromlist, attribute or None, bound name): ``from a import
    b as c`` is ("a", 0, ("b",), "b", "c"), ``import a.b as c`` ("a.b", 0, None,
    "b", "c"), ``import a.b`` ("a.b", 0, None, None, "a"). Only a name nothing
    else at the top level stores or deletes (an ``except ImportError`` fallback
    binds it twice), and none before a ``from m import *``. Read from the raw
    instructions (~10 microseconds a test module; :mod:`dis` takes ~90 for the
    smallest): an instruction this does not know ends the statement unread."""
    raw = code.co_code
    ops = raw[0::2]
    out: list[tuple[str, int, tuple[str, ...] | None, str | None, str]] = []
    at = ops.find(_IMPORT_NAME)
    if at < 0:
        return out
    args: Any = raw[1::2]
    if ops.find(_EXTENDED_ARG) >= 0:  # (past 255 names or constants: rarely)
        args = _wide_args(ops, args)
    names = code.co_names
    stores: dict[str, int] = {}
    for op in _STORES:
        i = ops.find(op)
        while i >= 0:
            key = names[args[i]]
            stores[key] = stores.get(key, 0) + 1
            i = ops.find(op, i + 1)
    consts = code.co_consts
    while at >= 0:
        # (what precedes an IMPORT_NAME: its level, then its fromlist, each a
        # constant; EXTENDED_ARG prefixes of its own or the fromlist's skipped)
        i = at - 1
        while i >= 0 and ops[i] == _EXTENDED_ARG:
            i -= 1
        j = i - 1
        while j >= 0 and ops[j] == _EXTENDED_ARG:
            j -= 1
        if j >= 0 and ops[i] == _LOAD_CONST:
            fromlist = consts[args[i]]
            op = ops[j]
            level = (
                consts[args[j]] if op == _LOAD_CONST else args[j] if op == _LOAD_SMALL_INT else None
            )
            if fromlist == ("*",):
                out.clear()  # it may bind any name again
            elif type(level) is int and (fromlist is None or type(fromlist) is tuple):
                statement = (names[args[at]], level, fromlist)
                _import_statement(ops, args, names, at, statement, stores, out)
        at = ops.find(_IMPORT_NAME, at + 1)
    return out


def _wide_args(ops: bytes, args: bytes) -> list[int]:
    """Each instruction's argument with its EXTENDED_ARG prefixes applied."""
    out = list(args)
    for i in range(1, len(ops)):
        if ops[i - 1] == _EXTENDED_ARG:
            out[i] |= out[i - 1] << 8
    return out


def _import_statement(
    ops: bytes,
    args: Any,
    names: tuple[str, ...],
    at: int,
    statement: tuple[str, int, tuple[str, ...] | None],
    stores: dict[str, int],
    out: list[tuple[str, int, tuple[str, ...] | None, str | None, str]],
) -> None:
    """The names one import statement (its IMPORT_NAME at ``at``) binds, into
    ``out``: what follows is IMPORT_FROM and a store per name (``from``), a store
    (``import a.b``) or IMPORT_FROMs with shuffles and a store (``import a.b.c as
    d``)."""
    target, level, fromlist = statement
    attribute: str | None = None
    end = len(ops)
    i = at + 1
    while i < end:
        op = ops[i]
        if op == _IMPORT_FROM:
            attribute = names[args[i]]
        elif op in _STORES:
            bound = names[args[i]]
            if stores.get(bound) == 1:
                out.append((target, level, fromlist, attribute, bound))
            if fromlist is None:
                return
            attribute = None
        elif op not in (_EXTENDED_ARG, _CACHE) and not (
            fromlist is None and attribute is not None and op in _SHUFFLES
        ):
            return
        i += 1


# The assertion machinery of the libraries a test's verdict goes through, beside
# pytest's own reports (watched by :class:`Identities`): unittest's TestCase and
# its contexts, unittest.mock's call assertions, doctest's checker and runner,
# pytest's approx and raises (their modules by the names of pytest's versions),
# pytest's outcomes (pytest.fail, skip, xfail: instances whose class decides),
# pytest's adapters between a test and its report (the unittest item that
# takes a TestCase's failures, warns' check, the doctest item and the checker
# and runner classes it makes on first use), and the comparisons behind
# numpy's, pandas' and torch's testing functions where a suite loads them. A
# tolerance class attribute widened, a method swapped for another of the
# standard library's, a private function the public one calls replaced: each
# passes a failing assertion, and none rebinds a name a protected module binds.
# Their own entries are compared by identity, data included (approx's default
# tolerances are data), from the run's start or the end of their import (~0.1
# ms a run).
_MACHINERY = frozenset(
    {
        "unittest.case",
        "unittest.mock",
        "doctest",
        "_pytest.approx",
        "_pytest.python_api",
        "_pytest.raises",
        "_pytest.outcomes",
        "_pytest.unittest",
        "_pytest.recwarn",
        "_pytest.doctest",
        "numpy.testing._private.utils",
        "pandas._testing.asserters",
        "torch.testing._comparison",
    }
)


def _entries_changed(
    subject: str,
    now: Any,
    first: dict[str, object],
    ignored: Callable[[str], bool],
    home: object = None,
) -> list[tuple[str, str]]:
    """Entries of ``now`` (a namespace or a class's own) not ``first``'s, by
    identity; ``ignored`` keys aside, and in a module whose file is ``home`` a
    name first None now bound to a class that module's own code made (pytest's
    doctest support makes its checker and runner classes on first use)."""
    out: list[tuple[str, str]] = []
    if len(now) == len(first) and all(map(_is, now.values(), first.values())):
        return out  # (every entry in place and in order: nearly every time)
    for key, value in first.items():
        current = now.get(key, _MISSING)
        if value is None and home is not None and _made_by(current, home):
            continue
        if current is not value and not ignored(key):
            what = "removed" if current is _MISSING else "rebound"
            detail = f"{what} since it was first seen"
            if current is not _MISSING:
                detail += f": {_describe(current)}"
            out.append((f"{subject}.{key}", detail))
    for key in [k for k in list(now) if k not in first and not ignored(k)]:
        out.append((f"{subject}.{key}", f"added since it was first seen: {_describe(now[key])}"))
    return out


if TYPE_CHECKING:  # (a type only: the plugin runs on Python 3.7 too)
    _Strength = tuple[int, frozenset[str]]  # hypothesis: (max_examples, phases)


def _hypothesis_strength() -> _Strength | None:
    """How hard hypothesis's default settings try, where hypothesis is loaded:
    its examples and its phases."""
    module = sys.modules.get("hypothesis._settings")
    if module is None:
        return None
    try:
        current = module.settings.default
        if current is _STRENGTH[0]:  # (asked after every import: settings never change)
            return cast("_Strength", _STRENGTH[1])
        strength = (int(current.max_examples), frozenset(str(p) for p in current.phases))
    except Exception:  # (another hypothesis: what it cannot tell is not judged)
        return None
    _STRENGTH[:] = [current, strength]
    return strength


_STRENGTH: list[object] = [_MISSING, None]  # the settings object last measured, its strength


def _weaker(now: _Strength, was: _Strength) -> bool:
    return now[0] < was[0] or now[1] < was[1]


def _strength_change(was: _Strength, now: _Strength) -> str:
    out = []
    if now[0] != was[0]:
        out.append(f"max_examples {was[0]} -> {now[0]}")
    dropped = sorted(was[1] - now[1])
    if dropped:
        out.append(f"phases without {', '.join(dropped)}")
    return "hypothesis made weaker: " + "; ".join(out)


def _environment_roots() -> tuple[str, ...]:
    prefixes = {sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix)}
    return tuple(sorted(_norm(p) for p in prefixes))


def _behaviour_changed(subject: str, now: Any, first: dict[str, object]) -> list[tuple[str, str]]:
    """A library class's own methods and descriptors (not its data: a library may
    keep caches on its classes) rebound, removed or added since first seen."""
    out: list[tuple[str, str]] = []
    if len(now) == len(first) and all(map(_is, now.values(), first.values())):
        return out  # (nearly every time)
    for key, value in first.items():
        current = now.get(key, _MISSING)
        if current is not value and _watchable(value) and key not in _CLASS_NOISE:
            what = "removed" if current is _MISSING else "rebound"
            detail = f"{what} since it was first seen"
            if current is not _MISSING:
                detail += f": {_describe(current)}"
            out.append((f"{subject}.{key}", detail))
    for key in [k for k in list(now) if k not in first and k not in _CLASS_NOISE]:
        if _watchable(now[key]):
            detail = f"added since it was first seen: {_describe(now[key])}"
            out.append((f"{subject}.{key}", detail))
    return out


def _made_by(value: object, home: object) -> bool:
    """Whether ``value`` is a class whose own functions (one at least) all come
    from the file ``home``."""
    if not isinstance(value, type) or not isinstance(home, str):
        return False
    files = {_code_file(v) for v in list(vars(value).values()) if callable(v)}
    files.discard(None)
    return bool(files) and files == {_abs(home)}


def _class_noise(key: str) -> bool:
    # (and the flags pytest sets on its node classes once it has warned)
    return key in _CLASS_NOISE or key.startswith("_pytest_")


def _property_module(name: str) -> bool:
    """A module of hypothesis (:meth:`Values.property_machine`)."""
    return name[:10] == "hypothesis" and (len(name) == 10 or name[10] == ".")


def _machinery_modules() -> set[str]:
    """:data:`_MACHINERY`, with the modules this pytest's approx and raises are
    defined in (wherever a version moved them)."""
    names = set(_MACHINERY)
    for value in (getattr(pytest, "approx", None), getattr(pytest, "raises", None)):
        where = getattr(value, "__module__", None)
        if isinstance(where, str):
            names.add(where)
    return names


def _stand_in(key: str, value: object) -> bool:
    """A builtin function, or a class of the builtins, bound under a name not its
    own: what a stand-in handed to a test module while it imports looks like
    (``assert_cents`` bound to ``max``, which returns without raising). A test
    module's own alias (``from math import isclose as close``) is the baseline's
    too."""
    if type(value) is BuiltinFunctionType or (
        isinstance(value, type) and value.__module__ == "builtins"
    ):
        return getattr(value, "__name__", key) != key
    return False


def _changed(now: object, before: object) -> bool:
    # (a scalar's shape is the value itself: a NaN is not equal to itself)
    return now is not before and now != before


def _submodule(value: object, package: str, key: str) -> bool:
    return isinstance(value, ModuleType) and value.__name__ == f"{package}.{key}"


def _shape(
    value: object, home: str, budget: list[int], depth: int, keep: list[object] | None
) -> object:
    """What ``value`` holds, as scalars and the ids of the objects it refers to
    (``keep`` holds those alive at the first look), walked into plain containers,
    functions (code, defaults, closure cells), partials, descriptors, classes
    defined in ``home`` and instances of them or ``SimpleNamespace``: equal
    shapes, an unchanged value. Beyond ``depth`` or ``budget``: identity only.
    Called for every value of every protected module twice a run: the common
    kinds (a test function, an imported module or class) return first."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is FunctionType:
        function = cast(FunctionType, value)
        defaults, keywords = function.__defaults__, function.__kwdefaults__
        closure = function.__closure__
        if defaults is None and keywords is None and closure is None:
            return (id(value), id(function.__code__))
    elif kind is ModuleType:
        return id(value)
    if keep is not None:
        keep.append(value)
    if depth <= 0 or budget[0] <= 0:
        return id(value)
    budget[0] -= 1
    depth -= 1
    try:
        if kind is FunctionType:
            cells: list[object] = []
            for cell in closure or ():
                try:
                    cells.append(_shape(cell.cell_contents, home, budget, depth, keep))
                except ValueError:  # a cell not yet filled
                    cells.append(_EMPTY_CELL)
            return (
                id(value),
                id(function.__code__),
                _shape(defaults, home, budget, depth, keep),
                _shape(keywords, home, budget, depth, keep),
                tuple(cells),
            )
        if kind is tuple or kind is list or kind is set or kind is frozenset or kind is dict:
            sized = cast("Collection[object]", value)
            if len(sized) > budget[0]:  # too large to walk: its identity only
                return id(value)
            budget[0] -= len(sized)
            if kind is dict:
                items = list(cast("dict[object, object]", value).items())
                return (
                    id(value),
                    tuple(
                        (
                            _shape(k, home, budget, depth, keep),
                            _shape(v, home, budget, depth, keep),
                        )
                        for k, v in items
                    ),
                )
            parts = [_shape(v, home, budget, depth, keep) for v in list(sized)]
            if kind is set or kind is frozenset:
                return (id(value), frozenset(parts))
            return (id(value), tuple(parts))
        if isinstance(value, type):
            if vars(value).get("__module__") != home:
                return id(value)
            entries = [(k, v) for k, v in list(vars(value).items()) if k not in _CLASS_NOISE]
            return (id(value), tuple((k, _shape(v, home, budget, depth, keep)) for k, v in entries))
        inner: tuple[object, ...] = ()
        if kind is partial:
            made = cast("partial[object]", value)
            inner = (made.func, made.args, made.keywords)
        elif kind is staticmethod or kind is classmethod:
            inner = (cast(Any, value).__func__,)
        elif kind is property:
            held = cast(property, value)
            inner = (held.fget, held.fset, held.fdel)
        elif kind is SimpleNamespace or vars(kind).get("__module__") == home:
            namespace = value.__dict__
            if type(namespace) is dict:
                inner = (namespace,)
            # (its class too: ``obj.__class__ = Other`` changes every method)
            return (id(value), id(kind), *(_shape(v, home, budget, depth, keep) for v in inner))
        if inner:
            return (id(value), *(_shape(v, home, budget, depth, keep) for v in inner))
    except Exception:  # an object that will not be looked into: its identity
        return id(value)
    return id(value)


_VALUES = Values()


class ImportWatch:
    """First on ``sys.meta_path``: sees where each import resolves. A module under
    the live root loads from the same place under the room instead (editable
    installs of both kinds end up here), and one under a forbidden root is noted."""

    def __init__(self, state: State) -> None:
        self.state = state
        redirect = state.settings.redirect
        self.live = _both(redirect[0]) if redirect else ()
        self.room = redirect[1] if redirect else ""
        self.busy: set[str] = set()
        self.asked: set[str] = set()  # every module name the import system looked for
        self.before = set(sys.modules)  # loaded before the watch: not its to judge
        self.home: tuple[str, ...] = ()  # where the session's code may come from
        self.outside: set[str] = set()  # modules already reported as from elsewhere
        # (name, origin) of every import, where the environment's files are judged:
        # a module taken out of sys.modules again still ran
        self.origins: list[tuple[str, str]] | None = (
            [] if state.settings.env_since is not None else None
        )

    def settle(self) -> None:
        """Where code may legitimately come from, fixed once ``sys.path`` is the
        room's and before any code of the project runs: the room, the test
        environment (its prefixes, the user's site folder) and every folder on the
        import path now (PYTHONPATH, ``.pth`` entries). A module found anywhere
        else — through a ``sys.path`` entry the code under test adds, say — runs
        code the commit does not hold."""
        import site

        roots = [self.room, _dirname(_abspath(__file__))]
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
            self.state.evidence("outside-module", top, f"{name}: code from {file}")

    def room_path(self, path: str) -> str | None:
        norm = _norm(path)
        for live in self.live:
            if norm == live or norm.startswith(live + os.sep):
                return _join(self.room, norm[len(live) :].lstrip(os.sep))
        return None

    def rewrite_sys_path(self) -> None:
        if self.live:
            sys.path[:] = [(self.room_path(p) or p) if p else p for p in sys.path]

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
            spec = _no_fresh_bytecode(spec)
            origin = getattr(spec, "origin", None)
            if isinstance(origin, str):
                _PROVENANCE.written(origin)
                if self.origins is not None:
                    self.origins.append((name, origin))
            loader = getattr(spec, "loader", None)
            if (
                loader is not None
                and type(loader) not in _KNOWN_LOADERS
                and _PROVENANCE.in_room(origin) is not None
            ):
                kind = type(loader)
                detail = f"{origin} by {kind.__module__}.{kind.__qualname__}"
                self.state.evidence("loader", name, detail)
            forbidden = self.state.settings.forbidden
            if isinstance(origin, str) and forbidden and _under(_norm(origin), forbidden):
                self.state.module(name, origin)
            else:
                self.from_elsewhere(name, origin)
        except Exception as exc:
            self.state.evidence("internal", "import watch", type(exc).__name__)
        return spec

    def redirected(self, name: str, spec: Any) -> Any:
        origin = getattr(spec, "origin", None)
        locations = getattr(spec, "submodule_search_locations", None)
        if isinstance(origin, str) and _isabs(origin):
            moved = self.room_path(origin)
            if moved is None:
                return spec
            if not _exists(moved):
                self.state.evidence("redirect-missing", name, origin)
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

    def __init__(self, state: State, since: int, watch: ImportWatch) -> None:
        self.state = state
        self.since = since
        site = state.settings.site
        # the run's own files (the plugin's entry point, written for this run)
        self.own = _both(_dirname(site)) if site else ()
        self.prefixes = tuple(f for p in _environment_roots() for f in _both(p))
        self.room = _PROVENANCE.room
        self.home = watch.home
        self.seen: set[str] = set()

    @classmethod
    def asked(cls, state: State) -> EnvironmentFiles | None:
        since, watch = state.settings.env_since, state.watch
        if since is None or watch is None or not watch.home:
            return None
        return cls(state, since, watch)

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
            self.state.evidence("environment-file", name, path)


# -- tamper evidence: identities -------------------------------------------------------

# (module, attribute): what pytest looks up by name each time it runs a test.
_WATCHED = (
    ("_pytest.runner", "call_and_report"),
    ("_pytest.runner", "runtestprotocol"),
    ("_pytest.runner", "check_interactive_exception"),
    ("_pytest.runner", "CallInfo"),
    ("_pytest.runner", "TestReport"),
    ("_pytest.reports", "BaseReport"),
    ("_pytest.reports", "TestReport"),
    ("_pytest.reports", "CollectReport"),
    ("_pytest.python", "Function"),
    ("_pytest.skipping", "evaluate_skip_marks"),
    ("_pytest.skipping", "evaluate_xfail_marks"),
    ("pytest", "TestReport"),
    ("pluggy._callers", "_multicall"),
    ("os", "write"),
)
# Classes with every attribute watched: methods, properties, class methods.
_WATCHED_CLASSES = (
    ("_pytest.reports", "BaseReport"),
    ("_pytest.reports", "TestReport"),
    ("_pytest.reports", "CollectReport"),
    ("_pytest.runner", "CallInfo"),
    ("_pytest.python", "Function"),
    ("_pytest.nodes", "Item"),
)
# Classes a test's verdict also goes through, often loaded after configure
# (doctest by pytest's doctest support, unittest by the first TestCase): judged
# at the end by where their code comes from, pytest's, pluggy's or the standard
# library's, with no identity taken at configure (~0.6 ms a run saved there).
_ORIGIN_CLASSES = (
    ("_pytest.raises", "RaisesExc"),
    ("_pytest.raises", "RaisesGroup"),
    ("_pytest.python_api", "RaisesContext"),
    ("doctest", "OutputChecker"),
    ("doctest", "DocTestRunner"),
    ("unittest.case", "TestCase"),
)
# Hooks whose registered implementations are watched, object and function.
_WATCHED_HOOKS = (
    *C.REPORT_HOOKS,
    "pytest_collectreport",
    "pytest_runtest_setup",
    "pytest_runtest_teardown",
)


def _code_file(value: object) -> str | None:
    """The file a function's code comes from; None for code generated at run time
    (``<string>``: a dataclass's methods) and for what has no code."""
    for attr in ("fget", "__func__"):
        inner = getattr(value, attr, None)
        if inner is not None and inner is not value:
            return _code_file(inner)
    code = getattr(value, "__code__", None)
    file = getattr(code, "co_filename", None)
    if not isinstance(file, str) or file.startswith("<"):
        return None
    return _abs(file)


def _watchable(value: object) -> bool:
    """Behaviour, not data: pytest keeps flags of its own on some classes."""
    return callable(value) or hasattr(value, "__get__")


def _describe(value: object) -> str:
    if isinstance(value, ModuleType):
        return f"the module {value.__name__} ({getattr(value, '__file__', None) or 'no file'})"
    file = _code_file(value)
    if file:
        return file
    module = getattr(value, "__module__", None)
    return f"{type(value).__name__} from {module}" if module else type(value).__name__


class Identities:
    """The identity of what decides a test's report, captured when the session is
    configured and compared at its end; plus, at capture, whether each watched
    function comes from pytest or pluggy at all (a replacement made earlier)."""

    def __init__(self, pm: Any, recorder: Recorder) -> None:
        import pluggy

        self.pm = pm
        self.recorder = recorder
        # Where pytest's own code comes from: pytest, pluggy, attrs (pytest before 8
        # generates methods with it) and the standard library (functools does too).
        homes = [sys.modules["_pytest"], pytest, pluggy, os]
        if "attr" in sys.modules:
            homes.append(sys.modules["attr"])
        self.homes = tuple(_normcase(_dirname(_abspath(str(m.__file__)))) for m in homes)
        self.snapshot = self.take()
        # Every hook's implementations, each with its function as first seen: when
        # this plugin registered (before any conftest's code ran) or, for a plugin
        # registered since, now. Any hook can run code after the last test and
        # before the end's checks (put back a value the tests read, say), so a
        # function swapped in a registered implementation is evidence.
        self.impls = dict(_EARLY_IMPLS)
        for name, impls in _hook_impls(pm):
            for impl in impls:
                self.impls.setdefault(id(impl), (name, impl, impl.function))

    def take(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for module_name, attr in _WATCHED:
            out[f"{module_name}.{attr}"] = getattr(sys.modules.get(module_name), attr, _MISSING)
        for module_name, attr in _WATCHED_CLASSES:
            cls = getattr(sys.modules.get(module_name), attr, None)
            if isinstance(cls, type):
                for key, value in list(vars(cls).items()):
                    if _watchable(value):
                        out[f"{module_name}.{attr}.{key}"] = value
        pm = self.pm
        out["pluggy PluginManager._inner_hookexec"] = getattr(pm, "_inner_hookexec", _MISSING)
        out["pluggy PluginManager._hookexec"] = getattr(type(pm), "_hookexec", _MISSING)
        for hook_name in (*_WATCHED_HOOKS, "pytest_runtest_logreport"):
            caller = getattr(pm.hook, hook_name, None)
            if caller is None:
                continue
            for key, value in vars(type(caller)).items():
                out[f"pluggy {type(caller).__name__}.{key}"] = value
            out[f"{hook_name}._hookexec"] = getattr(caller, "_hookexec", _MISSING)
            for impl in caller.get_hookimpls():
                label = f"{hook_name} of {_plugin_label(pm, impl.plugin)}"
                out[label] = impl.function
        for key, value in vars(Recorder).items():
            out[f"gtd_ratchet_report.Recorder.{key}"] = value
        return out

    def foreign(self) -> list[tuple[str, str]]:
        """Watched pytest and pluggy functions whose code lives elsewhere."""
        out = []
        for label, value in self.snapshot.items():
            if label.startswith(("gtd_ratchet_report.", "os.")) or " of " in label:
                continue
            file = _code_file(value)
            if file and not _under(_normcase(file), self.homes):
                out.append((label, file))
        return out

    def unregistered(self) -> list[tuple[str, str]]:
        """Implementations on pytest's hooks whose plugin is not registered: added
        to a hook by hand, never seen by ``pytest_plugin_registered``."""
        plugins = {id(plugin) for plugin in self.pm.get_plugins()}
        return [
            (name, f"{_describe(impl.function)} added to the hook, no plugin registered")
            for name, impls in _hook_impls(self.pm)
            for impl in impls
            if id(impl.plugin) not in plugins
        ]

    def changed(self) -> list[tuple[str, str]]:
        now = self.take()
        swapped = {
            f"{name} of {_plugin_label(self.pm, impl.plugin)}": _describe(impl.function)
            for name, impl, function in list(self.impls.values())
            if impl.function is not function
        }
        out = list(swapped.items())
        for label in sorted(set(self.snapshot) | set(now)):
            if " of " in label and label not in self.snapshot:
                continue  # a plugin registered later: reported as one
            before, after = self.snapshot.get(label, _MISSING), now.get(label, _MISSING)
            if before is not after and label not in swapped:
                out.append((label, "removed" if after is _MISSING else _describe(after)))
        for module_name, attr in _ORIGIN_CLASSES:
            cls = getattr(sys.modules.get(module_name), attr, None)
            if isinstance(cls, type):
                for key, value in list(vars(cls).items()):
                    file = _code_file(value) if _watchable(value) else None
                    if file and not _under(_normcase(file), self.homes):
                        out.append((f"{module_name}.{attr}.{key}", file))
        return out


def _plugin_label(pm: Any, plugin: object) -> str:
    name = pm.get_name(plugin)
    if name and name != str(id(plugin)):
        return str(name)
    # (pluggy names an unnamed plugin by its id, another in every run: the
    # baseline's evidence could never excuse the candidate's)
    kind = plugin if isinstance(plugin, ModuleType) else type(plugin)
    return f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', kind.__name__)}"


# id(implementation) -> (hook, implementation, its function), taken when this
# plugin registered: before any conftest is imported (see Identities).
_EARLY_IMPLS: dict[int, tuple[str, Any, object]] = {}


def _hook_impls(pm: Any) -> list[tuple[str, list[Any]]]:
    """Each of pytest's hooks by name, with its implementations."""
    out = []
    for name, caller in list(vars(pm.hook).items()):
        get = getattr(caller, "get_hookimpls", None)
        if get is not None:
            out.append((name, get()))
    return out


def _plugin_file(plugin: object) -> str | None:
    if isinstance(plugin, Recorder):
        return _PLUGIN_FILE
    file = getattr(plugin, "__file__", None)
    if file is None:
        module = sys.modules.get(getattr(type(plugin), "__module__", ""))
        file = getattr(module, "__file__", None)
    return _abs(file) if isinstance(file, str) else None


def _is_conftest(file: str | None) -> bool:
    return file is not None and _basename(file) == "conftest.py"


def _report_hooks(pm: Any, plugin: object) -> list[str]:
    """The report hooks the plugin implements, under any method name (``specname``).
    Asks only those hooks: pluggy's ``get_hookcallers`` walks every hook, and this
    runs once per plugin registered."""
    out = []
    for name in C.REPORT_HOOKS:
        caller = getattr(pm.hook, name, None)
        if caller is not None and any(i.plugin is plugin for i in caller.get_hookimpls()):
            out.append(name)
    return sorted(out)


def _environment() -> dict[str, object]:
    import site

    import pluggy

    sites: list[str] = []
    getsitepackages = getattr(site, "getsitepackages", None)  # an old virtualenv lacks it
    if getsitepackages is not None:
        sites.extend(getsitepackages())
    if getattr(site, "ENABLE_USER_SITE", False):
        sites.append(site.getusersitepackages())
    pth: list[str] = []
    for directory in sites:
        try:
            names = sorted(n for n in os.listdir(directory) if n.endswith(".pth"))
        except OSError:
            continue
        pth.extend(_join(directory, n) for n in names)
    return {
        C.ENV_EXECUTABLE: sys.executable,
        C.ENV_PREFIX: sys.prefix,
        C.ENV_BASE_PREFIX: getattr(sys, "base_prefix", sys.prefix),
        C.ENV_VERSION: sys.version.split()[0],
        C.ENV_PATH: list(sys.path),
        C.ENV_SITE: sites,
        C.ENV_PTH: pth,
        C.ENV_PYTEST: _abspath(str(pytest.__file__)),
        C.ENV_PLUGGY: _abspath(str(pluggy.__file__)),
    }


# -- the session -----------------------------------------------------------------------


class State:
    """What this pytest process's plugin knows; made at import."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.out = Output(settings)
        self.session = f"{os.getpid():x}-{os.urandom(3).hex()}"
        wants = settings.files is not None or settings.ids is not None
        self.selection = Selection(settings) if wants else None
        self.started = False  # the session began: a plugin registered from now on is late
        self.registered: dict[int, tuple[str, str | None, list[str], bool]] = {}
        self.conftests: dict[str, None] = {}  # files, in load order
        self.modules: set[str] = set()  # forbidden modules already reported
        self.evidence_count: dict[str, int] = {}
        self.early: list[str] | None = []  # lines made before the start line
        self.recorder: Recorder | None = None
        self.watch: ImportWatch | None = None

    def emit(self, kind: str, fields: dict[str, object]) -> None:
        record: dict[str, object] = {C.KIND: kind, C.SESSION: self.session}
        record.update(fields)
        line = _dumps(record) + "\n"
        if kind == C.START:
            self.out.line(line)
            early, self.early = self.early, None
            for held in early or ():
                self.out.line(held)
        elif self.early is not None:
            # before the session's start line (evidence of an import a conftest
            # made while pytest loaded it): a reader would count it as no
            # session's, so it waits for the start line
            self.early.append(line)
        else:
            self.out.line(line)

    def evidence(self, what: str, subject: str, detail: str = "") -> None:
        count = self.evidence_count.get(what, 0)
        self.evidence_count[what] = count + 1
        if count < _EVIDENCE_MAX_OF.get(what, _EVIDENCE_MAX):
            self.emit(C.EVIDENCE, {"what": what, "subject": subject, "detail": detail})

    def module(self, name: str, file: str) -> None:
        if name not in self.modules:
            self.modules.add(name)
            self.evidence("forbidden-module", name, file)


def _start() -> State | None:
    """At import, before the user's conftests, test modules and code under test:
    read the settings and put the import watch first."""
    settings = _read_settings()
    if settings is None:
        return None
    state = State(settings)
    _VALUES.start(settings)
    if settings.guarded is not None:
        _watch_rewritten_imports()
    _guard_bytecode(state)
    if settings.redirect or settings.forbidden:
        import importlib

        watch = state.watch = ImportWatch(state)
        watch.rewrite_sys_path()
        if watch.room:
            watch.settle()
            _PROVENANCE.room = _both(watch.room)
        sys.meta_path.insert(0, watch)  # type: ignore[arg-type]
        importlib.invalidate_caches()
    return state


_STATE: State | None
try:
    _STATE = _start()
except Exception:  # the run goes on without a report
    _STATE = None


class OutcomeWatch:
    """What each test raised, against the report every hook made of it: a
    failure reported as a pass is evidence. A plugin of the project's (a support
    module a conftest loads, whose code the change may edit) can turn a failing
    call's report into a pass, or swallow what the test raised in a wrapper of
    its call. The innermost wrapper of ``pytest_runtest_call`` sees the test's
    own exception; the outermost of ``pytest_runtest_makereport`` sees the call
    before any other wrapper and the report after all of them. Registered
    only where a plugin of the project's implements either hook (:meth:`needed`:
    four generator wrappers a test, ~30 M instructions on 500 tests)."""

    def __init__(self, state: State) -> None:
        from _pytest.outcomes import Skipped, XFailed

        self.state = state
        self.not_failures = (Skipped, XFailed)  # pytest.skip(), pytest.xfail()
        self.raised: set[str] = set()  # node ids whose call raised, until reported

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, None]:
        outcome = yield
        excinfo = outcome.excinfo
        if excinfo is not None and not isinstance(excinfo[1], self.not_failures):
            self.raised.add(item.nodeid)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Generator[None, Any, None]:
        excinfo = call.excinfo
        raised = excinfo is not None and not isinstance(excinfo.value, self.not_failures)
        if call.when == "call" and item.nodeid in self.raised:
            self.raised.discard(item.nodeid)
            raised = True
        outcome = yield
        if raised:
            try:
                report = outcome.get_result()
            except BaseException:
                return  # the hook failed: pytest reports that itself
            if getattr(report, "outcome", None) == "passed":
                self.state.evidence("passed-with-failure", item.nodeid, f"{call.when}, raised")

    @staticmethod
    def needed(pm: Any) -> bool:
        """Whether a plugin of the project's implements either hook: one from a
        file of the room (a conftest, a module of the package), or of no file.
        Installed plugins' code is the environment's, which cannot change
        unseen (hypothesis's and xdist's wrap the report in every run here: the
        watch would cost such a run ~30 M instructions on 500 tests). Where the
        room is not known, any plugin but pytest's own."""
        import _pytest

        home = _dirname(_abs(_pytest.__file__)) + os.sep
        room = _PROVENANCE.room
        for name in ("pytest_runtest_makereport", "pytest_runtest_call"):
            caller = getattr(pm.hook, name, None)
            for impl in caller.get_hookimpls() if caller is not None else ():
                file = _plugin_file(impl.plugin)
                if file is None:
                    return True
                if room:
                    if _PROVENANCE.in_room(file) is not None:
                        return True
                elif not file.startswith(home):
                    return True
        return False


class Recorder:
    """The session's hooks, registered at configure when the helper asked for a
    report. In an xdist worker it checks but writes no test lines: the controller
    receives every report and writes them."""

    # this module's own check (set once the module is made, at its end)
    _own_check: Callable[[], list[tuple[str, str]]]

    def __init__(self, state: State, config: pytest.Config, worker: str | None) -> None:
        from _pytest.reports import TestReport

        self.state = state
        self.config = config
        self.worker = worker
        self.root = str(config.rootpath)  # pytest >= 6.1
        self.tests: dict[str, str] = {}  # node id -> worst outcome written
        self.deselected: list[pytest.Item] = []
        # hypothesis's strength once collection imported every test module
        self.examples_at_collection: _Strength | None = None
        self.checked_modules: dict[str, object] = {}
        self.environment_files = EnvironmentFiles.asked(state)
        self.identities: Identities | None = None
        self.watch: OutcomeWatch | None = None
        # node id -> (the item, what it was collected to run, that one's function)
        self.runs: dict[str, tuple[pytest.Item, object, object]] = {}
        self.plain_runtest = _item_kinds()[0].__dict__.get("runtest")  # Function's
        self.report_class: type = TestReport
        self.classes_seen: set[type] = {TestReport}
        # What makes each report, looked at again with every report: the end of
        # the session compares everything watched, but code can patch these only
        # while the tests run and put them back before the end.
        from _pytest import runner

        self.runner = runner
        # the class's own namespace, live: a method set on the class shows in it
        self.report_dict = vars(TestReport)
        # CallInfo's namespace, live too: ``CallInfo.__dict__`` makes a new view on
        # every read (~2 M instructions over a 500-test run, read three times a
        # test); the class itself is compared by identity beside it.
        self.call_info = runner.CallInfo
        self.call_info_dict = vars(runner.CallInfo)
        self.makers = self.report_makers()
        self.makers_changed = False
        # A trace function the tests run under: coverage's, installed before
        # configure, is the baseline's too; one installed since is looked at.
        self.traced = sys.gettrace()
        # The line written for most tests, with the session id already in place.
        head = f'"{C.KIND}":"{C.TEST}","{C.SESSION}":"{state.session}"'
        self.template = "{" + head + ',"id":%s,"o":"%s","w":"%s"}\n'

    # -- per test: a dict write and one line -------------------------------------------

    # First: a plugin's logreport hook that runs earlier could edit the report
    # before it is read here.
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        outcome: str = report.outcome
        when: str = report.when
        if type(report) is not self.report_class:
            self.flag_class(report)
        # (report_makers() compared by identity, inline: this runs three times a
        # test, and a call and a tuple cost more than the reads themselves)
        makers, own, runner = self.makers, self.report_dict, self.runner
        if not self.makers_changed and (
            own.get("__init__") is not makers[0]
            or own.get("from_item_and_call") is not makers[1]
            or runner.call_and_report is not makers[2]
            or runner.runtestprotocol is not makers[3]
            or runner.CallInfo is not self.call_info
            or self.call_info_dict.get("from_call") is not makers[4]
        ):
            self.flag_makers()
        if sys.gettrace() is not self.traced:
            self.traced = sys.gettrace()
            if self.traced is not None:
                self.tracer("sys.settrace", self.traced)
        if outcome == "passed":
            if when != "call":
                # (a setup or teardown that passed says nothing more; xpass: a call's)
                if when == "setup" and report.nodeid in self.runs:
                    self.check_run(report.nodeid)
                return
            node_id = report.nodeid
            if hasattr(report, "wasxfail"):
                outcome = "xpassed"
            elif report.longrepr is not None:
                self.state.evidence("passed-with-failure", node_id, when)
            self.note(node_id, outcome, when)
        elif outcome == "skipped":
            if hasattr(report, "wasxfail"):
                self.note(report.nodeid, "xfailed", when, reason=_xfail_reason(report))
            else:
                self.note_skip(report.nodeid, when, report.longrepr)
        else:
            self.note(report.nodeid, "failed" if when == "call" else "error", when)

    def note(
        self,
        node_id: str,
        outcome: str,
        when: str,
        where: str | None = None,
        reason: str | None = None,
    ) -> None:
        if self.worker is not None:
            return
        previous = self.tests.get(node_id)
        if previous is None or _RANK[outcome] > _RANK[previous]:
            self.tests[node_id] = outcome
        if where is None and reason is None:
            line = self.template % (_quote(node_id), outcome, when)
            if outcome == "passed":
                self.state.out.later(line)
            else:
                self.state.out.line(line)
            return
        fields: dict[str, object] = {"id": node_id, "o": outcome, "w": when}
        if where is not None:
            fields["at"] = where
        if reason is not None:
            fields["r"] = reason[:_REASON_MAX]
        self.state.emit(C.TEST, fields)

    def note_skip(self, node_id: str, when: str, longrepr: object) -> None:
        where = None
        reason = ""
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            path, line, text = longrepr
            where = f"{path}:{line}"
            reason = str(text)
            if reason.startswith("Skipped: "):
                reason = reason[len("Skipped: ") :]
        elif longrepr is not None:
            reason = str(longrepr)
        self.note(node_id, "skipped", when, where, reason)

    def report_makers(self) -> tuple[object, ...]:
        own, runner = self.report_dict, self.runner
        return (
            own.get("__init__"),
            own.get("from_item_and_call"),
            runner.call_and_report,
            runner.runtestprotocol,
            runner.CallInfo.__dict__.get("from_call"),
        )

    def flag_makers(self) -> None:
        self.makers_changed = True
        labels = (
            "_pytest.reports.TestReport.__init__",
            "_pytest.reports.TestReport.from_item_and_call",
            "_pytest.runner.call_and_report",
            "_pytest.runner.runtestprotocol",
            "_pytest.runner.CallInfo.from_call",
        )
        # (zip's strict= is Python 3.10: this file runs on 3.7 too)
        for label, before, now in zip(labels, self.makers, self.report_makers()):  # noqa: B905
            if before is not now:
                self.state.evidence("patched", label, _describe(now))

    def flag_class(self, report: object) -> None:
        cls = type(report)
        if cls in self.classes_seen:
            return
        self.classes_seen.add(cls)
        module = sys.modules.get(cls.__module__)
        file = getattr(module, "__file__", None)
        homes = self.identities.homes if self.identities is not None else ()
        if isinstance(report, self.report_class) and file and _under(_norm(file), homes):
            return  # a report class of pytest's own (subtests)
        name = f"{cls.__module__}.{cls.__qualname__}"
        self.state.evidence("report-class", name, str(getattr(report, "nodeid", "")))

    # -- collection --------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectstart(self, collector: pytest.Collector) -> None:
        # One line per module, written at once: if importing it ends the process
        # (the code under test calls os._exit), the report says where.
        if isinstance(collector, pytest.Module):
            try:
                file = _abs(str(_item_path(collector)))
                self.state.emit(C.COLLECTING, {"file": file})
                if _VALUES.files is not None:
                    _VALUES.tests.add(_normcase(file))
            except Exception:  # never fail the run from here
                return

    # First: what each item was collected to run, before any other hook sees it.
    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.outcome == "passed":
            self.record_runs(report.result)
        elif report.outcome == "failed":
            lines = str(report.longrepr).strip().splitlines()
            self.note(report.nodeid, "error", "collect", reason=lines[-1] if lines else "")
        elif report.outcome == "skipped":
            self.note_skip(report.nodeid, "collect", report.longrepr)

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path: object) -> bool | None:
        selection = self.state.selection
        if selection is None or selection.allows_path(_norm(collection_path)):
            return None
        return True

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        selection = self.state.selection
        if selection is None:
            return
        kept = [item for item in items if selection.keeps(item)]
        if len(kept) == len(items):
            return
        dropped = [item for item in items if not selection.keeps(item)]
        outside = {_norm(_item_path(item)) for item in dropped} - selection.files
        for file in sorted(outside):
            self.state.evidence("unselected", file, "collected although not selected")
        items[:] = kept
        config.hook.pytest_deselected(items=dropped)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.extend(items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        try:
            self.write_items(session.items, deselected=False)
            self.write_items(self.deselected, deselected=True)
            self.watch_outcomes()
            self.check_modules()
            self.record_late()
            self.examples_at_collection = _hypothesis_strength()
        except Exception as exc:
            self.state.evidence("internal", "collection report", type(exc).__name__)

    def record_runs(self, nodes: list[Any]) -> None:
        """The function each test item of pytest's own kind was collected to run
        (its ``runtest`` is ``Function.runtest``, which calls it through
        ``pytest_pyfunc_call``), as its collector reported it: before the
        collection hooks run. The item itself is reachable from the code under
        test (``gc``) and from those hooks, which can hand it a function of their
        own or a ``runtest`` that calls nothing: :meth:`check_run` compares once
        the test is set up."""
        plain = self.plain_runtest
        runs = self.runs
        for item in nodes:
            if getattr(type(item), "runtest", None) is plain:  # (not a collector, nor
                # an item kind with a runtest of its own)
                obj = vars(item).get("_obj")
                if obj is None:  # a method: bound to each test's instance at its setup
                    obj = _member(getattr(item.parent, "obj", None), item.originalname)
                if obj is not None:
                    runs[item.nodeid] = (item, obj, _function_in(obj))

    def check_run(self, node_id: str) -> None:
        """After the test's setup, before its call: the item still runs the
        function it was collected to run (a method's, bound to each test's
        instance, compared by its function) with pytest's ``runtest``. Code of
        the project's that swaps them must do so before this point: the only code
        between here and the call is the hooks of the call."""
        item, raw, collected = self.runs[node_id]
        own = vars(item)
        if "runtest" in own:
            self.state.evidence("replaced-test", node_id, "its runtest replaced")
        obj = own.get("_obj")
        if obj is None or obj is raw or _function_in(obj) is collected:
            return
        file = _code_file(obj)
        if file is not None and _PROVENANCE.in_room(file) is None:
            return  # an installed plugin's wrapper (pytest-asyncio runs coroutines so)
        name = getattr(obj, "__qualname__", None)
        what = f"{name} from {file}" if file and name else _describe(obj)
        self.state.evidence("replaced-test", node_id, f"runs {what} instead")

    def watch_outcomes(self) -> None:
        """:class:`OutcomeWatch` registered once every conftest is loaded, where
        a plugin of the project's implements the hooks it checks (known to the
        registration hook first: it is not a late plugin)."""
        pm = self.config.pluginmanager
        if self.watch is not None or not OutcomeWatch.needed(pm):
            return
        self.watch = watch = OutcomeWatch(self.state)
        name = "gtd-ratchet-outcomes"
        self.state.registered[id(watch)] = (name, _PLUGIN_FILE, [], False)
        pm.register(watch, name)

    def record_late(self) -> None:
        """Test modules whose import was not seen ending (imported by a loader of
        neither the import system nor pytest's rewriter) recorded now: what the
        tests change of them from here on is still seen."""
        missing = _VALUES.missing()
        if not missing:
            return
        for module in list(sys.modules.values()):
            file = getattr(module, "__file__", None)
            if isinstance(file, str) and _norm(file) in missing:
                _VALUES.imported(module)

    def write_items(self, items: list[pytest.Item], deselected: bool) -> None:
        groups: dict[tuple[str, str], list[pytest.Item]] = {}
        files: dict[str, str] = {}  # a module's items share its path: one abspath each
        kinds = _item_kinds()
        function = kinds[0]
        # (_item_path and _item_kind inline: this runs once per item)
        for item in items:
            path = getattr(item, "path", None)  # pytest >= 7
            raw = str(path if path is not None else item.fspath)
            file = files.get(raw)
            if file is None:
                file = files[raw] = _abs(raw)
            kind = "function" if isinstance(item, function) else _item_kind(item, kinds)
            group = groups.get((file, kind))
            if group is None:
                group = groups[(file, kind)] = []
            group.append(item)
        for (file, kind), group in groups.items():
            ids = [item.nodeid for item in group]
            fields: dict[str, object] = {"file": file, "kind": kind, "ids": ids}
            if kind == "doctest-module":
                fields["dg"] = [_docstring_digest(item) for item in group]
            if deselected:
                fields["d"] = True
            self.state.emit(C.ITEMS, fields)

    # -- the end -----------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: object) -> None:
        state = self.state
        fields: dict[str, object] = {"exit": _int(exitstatus)}
        try:
            for label, detail in self._own_check():
                state.evidence("patched", f"gtd_ratchet_report.{label}", detail)
            self.check_identities()
            self.check_modules()
            self.check_planted()
            self.check_rebound()
            self.check_bound()
            self.check_tracers()
            self.check_conftests()
            self.check_values()
            fields["conftests"] = list(state.conftests)
            fields["plugins"] = self.report_plugins()
            fields["env"] = _environment()
        except Exception as exc:
            state.evidence("internal", "session checks", type(exc).__name__)
        counts: dict[str, int] = {}
        for outcome in self.tests.values():
            counts[outcome] = counts.get(outcome, 0) + 1
        fields["counts"] = counts
        state.emit(C.END, fields)
        _VALUES.stop()

    def check_identities(self) -> None:
        if self.identities is not None:
            for label, now in self.identities.changed():
                self.state.evidence("patched", label, now)
            for hook, detail in self.identities.unregistered():
                self.state.evidence("late-plugin", hook, detail)
        for label in _bytecode_guard_undone(self.state.settings):
            self.state.evidence("patched", label, "the guard against this run's bytecode undone")

    def check_modules(self) -> None:
        forbidden = self.state.settings.forbidden
        if not forbidden:
            return
        env = self.environment_files
        checked = self.checked_modules
        for name, module in list(sys.modules.items()):
            if checked.get(name) is module:
                continue  # seen at the end of collection, and not replaced since
            checked[name] = module
            file = getattr(module, "__file__", None)
            if isinstance(file, str):
                norm = _norm(file)
                if _under(norm, forbidden):
                    self.state.module(name, file)
                elif env is not None:
                    env.ran(name, norm)
        watch = self.state.watch
        if env is not None and watch is not None and watch.origins:
            origins, watch.origins = watch.origins, []
            for name, origin in origins:
                env.ran(name, _norm(origin))

    def check_planted(self) -> None:
        """Modules put into ``sys.modules`` by hand under the name of a file of the
        room: every import that reads the name gets that object, not the file
        (a stand-in for an assertion helper or for the code under test), and no
        finder is ever asked."""
        watch = self.state.watch
        if watch is None or not watch.room:
            return
        room = _both(watch.room)
        for name in sorted(set(sys.modules) - watch.before - watch.asked):
            watch.from_elsewhere(name, getattr(sys.modules.get(name), "__file__", None))
            try:
                origin = _file_of(name)
            except Exception:  # a name no finder can look up: not a file of the room
                continue
            if isinstance(origin, str) and _under(_norm(origin), room):
                self.state.evidence("planted-module", name, f"a stand-in for {origin}")

    def check_rebound(self) -> None:
        """Functions of the project's modules (those loaded from the room, its
        virtualenv aside) that are not what the module's code made: one whose code
        object comes from another file (``f.__code__ = ...``, no decorator), or a
        function of another of the project's modules that is not that module's
        own by name (a lambda put in the place of an assertion helper before the
        tests import it); and, for these and the functions of the classes the
        modules define, code that is not what was loaded (:meth:`foreign_code`)."""
        watch = self.state.watch
        if watch is None or not watch.room:
            return
        room = _both(watch.room)
        env = _environment_roots()
        project: dict[str, tuple[object, str, str]] = {}
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None)
            if isinstance(file, str):
                norm = _norm(file)
                if _under(norm, room) and not _under(norm, env):
                    project[name] = (module, norm, file)
        ids_of = _PROVENANCE.ids
        reached: dict[str, set[int] | None] = {}
        for name, (loaded, file, given) in project.items():
            for key, value in list(vars(loaded).items()):
                if type(value) is not FunctionType:
                    if isinstance(value, type) and vars(value).get("__module__") == name:
                        self.check_members(name, key, value, given, reached)
                    continue
                # Where its code comes from (inline, the common case: a function
                # of a loaded file, one of that file's own code objects).
                code = value.__code__
                ids = ids_of.get(code.co_filename)
                if ids is None or id(code) not in ids:
                    why = self.foreign_code(value, given, reached)
                    if why is not None:
                        self.state.evidence("rebound", f"{name}.{key}", why)
                home = getattr(value, "__module__", None)
                if home == name:
                    code_file = value.__code__.co_filename
                    # (the same string as the module's own file: the same file)
                    if (
                        code_file != given
                        and _norm(code_file) != file
                        and not hasattr(value, "__wrapped__")
                    ):
                        detail = f"its code comes from {code_file}"
                        self.state.evidence("rebound", f"{name}.{key}", detail)
                elif (
                    isinstance(home, str)
                    and home in project
                    and not _reloaded(_by_qualname(project[home][0], value.__qualname__), value)
                ):
                    detail = f"a function of {home} put in its place"
                    self.state.evidence("rebound", f"{name}.{key}", detail)
                elif isinstance(home, str) and home not in project:  # imported
                    watch.from_elsewhere(home, value.__code__.co_filename)

    def check_members(
        self, name: str, key: str, cls: type, given: str, reached: dict[str, set[int] | None]
    ) -> None:
        """:meth:`foreign_code` for the functions of a class a project module defines."""
        for member_key, member in list(vars(cls).items()):
            function = _function_of(member)
            if function is not None:
                why = self.foreign_code(function, given, reached)
                if why is not None:
                    self.state.evidence("rebound", f"{name}.{key}.{member_key}", why)

    def check_bound(self) -> None:
        """The functions of the room's modules rebound since their import ended;
        the room's files loaded as code that the run itself wrote."""
        for rel, how in sorted(_PROVENANCE.fresh.items()):
            self.state.evidence("written-module", rel, how)
        for module, name, functions in list(_PROVENANCE.bound.values()):
            now = vars(module)
            for key, function in functions.items():
                value = now.get(key, _MISSING)
                if value is not function and not _reloaded(value, function):
                    what = "removed" if value is _MISSING else _describe(value)
                    detail = f"rebound since its module was imported: {what}"
                    self.state.evidence("rebound", f"{name}.{key}", detail)

    def foreign_code(
        self, function: FunctionType, given: str, reached: dict[str, set[int] | None]
    ) -> str | None:
        """Why ``function`` (of a module whose file is ``given``) runs code that is
        not what was loaded (:class:`Provenance`): none of the code loaded from the
        file it names; for a decorator's wrapper (``__wrapped__``), whose code
        comes from another file, none of what that file's module reaches, or a
        file no module was loaded from."""
        code = function.__code__
        file = code.co_filename
        _PROVENANCE.written(file)
        ids = _PROVENANCE.ids.get(file)  # (nearly always already in the normal form)
        if ids is None and file != given and file[:1] != "<":
            ids = _PROVENANCE.ids.get(_norm(file))
        if ids is not None:
            if id(code) in ids:
                return None
            return f"its code was compiled during the run under the name of {file}"
        if file == given or file[:1] == "<" or not hasattr(function, "__wrapped__"):
            return None
        norm = _norm(file)
        if not _isabs(file):
            return None
        if norm not in reached:
            home = next(
                (
                    m
                    for m in list(sys.modules.values())
                    if isinstance(getattr(m, "__file__", None), str) and _norm(m.__file__) == norm
                ),
                None,
            )
            reached[norm] = None if home is None else _module_code(home)
        found = reached[norm]
        if found is None:
            return f"a wrapper whose code names {file}, from which no module was loaded"
        if id(code) not in found:
            return f"a wrapper whose code is none of {file}'s"
        return None

    def check_values(self) -> None:
        """Values protected code reads, changed since first seen (:class:`Values`)."""
        for subject, detail in _VALUES.changed():
            self.state.evidence("changed-value", subject, detail)
        for subject, detail in _VALUES.stand_ins:
            self.state.evidence("rebound", subject, detail)
        for subject, detail in _VALUES.bound_by_import:
            self.state.evidence("stand-in", subject, detail)
        for subject, detail in _VALUES.machinery_changed():
            self.state.evidence("machinery", subject, detail)
        for subject, detail in _VALUES.code_replaced():
            self.state.evidence("code-replaced", subject, detail)
        for name, now, was in _VALUES.weakened:
            detail = f"{_strength_change(was, now)} while {name} was imported"
            self.state.evidence("changed-value", "hypothesis.settings.default", detail)
        at_collection = self.examples_at_collection
        at_end = _hypothesis_strength()
        if at_collection is not None and at_end is not None and _weaker(at_end, at_collection):
            detail = f"{_strength_change(at_collection, at_end)} while the tests ran"
            self.state.evidence("changed-value", "hypothesis.settings.default", detail)
        wrapped = _GUARDED_EXEC.get("exec_module")
        if wrapped is not None:
            rewrite = sys.modules.get("_pytest.assertion.rewrite")
            hook = getattr(rewrite, "AssertionRewritingHook", None)
            if not isinstance(hook, type) or vars(hook).get("exec_module") is not wrapped:
                label = "_pytest.assertion.rewrite.AssertionRewritingHook.exec_module"
                self.state.evidence("patched", label, "the record of protected imports undone")

    def check_tracers(self) -> None:
        """A trace or profile function left installed can rewrite any frame's
        locals (an assertion's operands) or patch pytest between two reports."""
        threading = sys.modules.get("threading")
        for label, now in (
            ("sys.settrace", sys.gettrace()),
            ("sys.setprofile", sys.getprofile()),
            ("threading.settrace", getattr(threading, "_trace_hook", None)),
            ("threading.setprofile", getattr(threading, "_profile_hook", None)),
        ):
            if now is not None:
                self.tracer(label, now)

    def tracer(self, label: str, value: object) -> None:
        file, homes = _code_file(value), self.identities.homes if self.identities else ()
        if file is not None and _under(_normcase(file), homes):
            return  # the standard library's own, pytest's or pluggy's
        self.state.evidence("tracer", f"{label} {_tracer_name(value)}", _describe(value))

    def check_conftests(self) -> None:
        for plugin in self.config.pluginmanager.get_plugins():
            file = _plugin_file(plugin)
            if file is not None and _is_conftest(file):
                self.state.conftests.setdefault(file, None)
        selection = self.state.selection
        if selection is not None:
            for file in self.state.conftests:
                if _norm(_dirname(file)) not in selection.dirs:
                    self.state.evidence("conftest-outside", file)

    def report_plugins(self) -> list[list[object]]:
        """Every plugin that implements a hook, and every one registered and
        removed again; its report hooks named, and every hook it implements. Any
        hook can change what a test does (a collection hook can swap each item's
        ``runtest``): the helper compares the whole list with the baseline's, and
        each plugin's hooks with those it implemented there."""
        pm = self.config.pluginmanager
        acting = _acting_plugins(pm)
        site = self.state.settings.site
        own = (_norm(site),) if site else ()
        out: list[list[object]] = []
        listed = set()
        for name, plugin in pm.list_name_plugin():
            if plugin is None:
                continue
            listed.add(id(plugin))
            impls = acting.get(id(plugin))
            if impls is None:
                continue
            file = _plugin_file(plugin)
            if file is not None and own and _under(_norm(file), own):
                continue  # the loader the helper wrote for this run, in a fresh folder
            if plugin is self.watch:
                continue  # this plugin's own, registered only where it is needed
            late = self.state.registered.get(id(plugin), ("", None, [], False))[3]
            # a hook of a plugin of the room whose function another file defines
            # (a conftest's star import) is named with that file: the one changed
            if _PROVENANCE.in_room(file) is None:
                implements = sorted(h for h, _ in impls)
            else:
                implements = sorted(
                    h if f is None or f == file else f"{h}\t{f}"
                    for h, f in ((h, _code_file(impl.function)) for h, impl in impls)
                )
            out.append([str(name), file, _report_hooks(pm, plugin), late, implements])
        for key, (name, file, hooks, late) in self.state.registered.items():
            if key not in listed and key != id(self.watch):  # registered, then removed again
                out.append([name, file, hooks, late, hooks])
        return out


def _function_in(obj: object) -> object:
    """A method's function; any other callable itself. (A plain function, nearly
    every test's, is asked nothing: ``getattr`` with a default makes and clears
    an AttributeError inside.)"""
    if type(obj) is FunctionType:
        return obj
    return getattr(obj, "__func__", obj)


def _member(owner: object, name: str) -> object:
    """What a class (or a module) holds under ``name``, as its body made it: no
    descriptor run, no instance made (a staticmethod's function)."""
    if not isinstance(owner, (type, ModuleType)):
        return None
    value = vars(owner).get(name)
    if value is None and isinstance(owner, type):
        from inspect import getattr_static  # an inherited test: rare

        value = getattr_static(owner, name, None)
    return _function_in(value)


def _acting_plugins(pm: Any) -> dict[int, list[tuple[str, Any]]]:
    """The plugins (by id) with at least one hook implementation, each with the
    hooks it implements (by the hook's name, whatever its function's) and the
    implementations: one pass over pluggy's hook callers, at the end of the
    session."""
    out: dict[int, list[tuple[str, Any]]] = {}
    for name, caller in vars(pm.hook).items():
        get = getattr(caller, "get_hookimpls", None)
        if get is not None:
            for impl in get():
                out.setdefault(id(impl.plugin), []).append((name, impl))
    return out


def _reloaded(now: object, before: FunctionType) -> bool:
    """Whether ``now`` is ``before``, or what reloading its module made of it: the
    same code (compiled again from the same text), globals, defaults and cells.
    A module reloaded in a test leaves its old functions wherever they were
    imported to."""
    if now is before:
        return True
    return (
        type(now) is FunctionType
        and now.__code__ == before.__code__
        and now.__globals__ is before.__globals__
        and now.__defaults__ == before.__defaults__
        and now.__kwdefaults__ == before.__kwdefaults__
        and now.__closure__ is None
        and before.__closure__ is None
    )


def _function_of(member: object) -> FunctionType | None:
    """The plain function a module or class attribute runs: itself, a static or
    class method's, a property's getter. By type alone: an attribute lookup on
    any other object could run code of its own (and costs a raised error)."""
    kind = type(member)
    if kind is FunctionType:
        return cast(FunctionType, member)
    if kind is staticmethod or kind is classmethod:
        inner = cast(Any, member).__func__
    elif issubclass(kind, property):
        inner = cast(property, member).fget
    else:
        return None
    return inner if type(inner) is FunctionType else None


def _file_of(name: str) -> str | None:
    """The file the path finder would load module ``name`` from, its packages
    looked up the same way where they are not loaded (a stand-in may be planted
    without its package)."""
    from importlib.machinery import PathFinder

    path: list[str] | None = None
    parts = name.split(".")
    for depth in range(1, len(parts) + 1):
        prefix = ".".join(parts[:depth])
        loaded = sys.modules.get(prefix) if depth < len(parts) else None
        locations = getattr(loaded, "__path__", None)
        if locations is None:
            spec = PathFinder.find_spec(prefix, path)
            if spec is None:
                return None
            if depth == len(parts):
                origin = spec.origin
                return origin if isinstance(origin, str) else None
            locations = spec.submodule_search_locations
            if locations is None:
                return None
        path = [str(p) for p in locations]
    return None


def _by_qualname(module: object, qualname: str) -> object:
    """What ``module`` holds under a function's qualified name (None for one
    defined in a function, a lambda, or one no longer there)."""
    found: object = module
    for part in qualname.split("."):
        if part.startswith("<"):
            return None
        found = getattr(found, part, None)
    return found


def _tracer_name(value: object) -> str:
    """What a trace function is, the same in every run (no address, no room)."""
    inner = getattr(value, "__func__", value)
    name = getattr(inner, "__qualname__", None) or type(value).__qualname__
    return f"{getattr(inner, '__module__', None) or type(value).__module__}.{name}"


def _int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[call-overload, no-any-return]
    except (TypeError, ValueError):
        return None


def _xfail_reason(report: object) -> str:
    reason = str(getattr(report, "wasxfail", ""))
    return reason[len("reason: ") :] if reason.startswith("reason: ") else reason


def _item_kinds() -> tuple[type, type, type]:
    from _pytest.doctest import DoctestItem, DoctestTextfile
    from _pytest.python import Function

    return Function, DoctestItem, DoctestTextfile


def _docstring_digest(item: pytest.Item) -> str | None:
    """sha256 of the examples a module doctest runs, as the process had them when
    collected: code can assign ``__doc__`` at import, which the source does not
    show. The JSON list of ``[source, want]`` pairs, as
    gtd.auto.ratchet.doctests.examples_digest digests the source's docstring."""
    import hashlib

    examples = getattr(getattr(item, "dtest", None), "examples", None)
    if not isinstance(examples, list):
        return None
    try:
        pairs = [[str(e.source), str(e.want)] for e in examples]
    except AttributeError:
        return None
    return hashlib.sha256(json.dumps(pairs).encode("ascii")).hexdigest()


def _item_kind(item: pytest.Item, kinds: tuple[type, type, type]) -> str:
    function, doctest_item, doctest_text = kinds
    if isinstance(item, function):
        return "function"
    if isinstance(item, doctest_item):
        parent = getattr(item, "parent", None)
        return "doctest-text" if isinstance(parent, doctest_text) else "doctest-module"
    return "other"


def _legacy_ignore_collect(
    modern: Callable[[Recorder, object], bool | None],
) -> Callable[[Recorder, object], bool | None]:
    """pytest before 7 names the argument ``path`` (a py.path); 9 knows only
    ``collection_path``."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self: Recorder, path: object) -> bool | None:
        return modern(self, path)

    return pytest_ignore_collect


if int(pytest.__version__.split(".")[0]) < 7:
    Recorder.pytest_ignore_collect = _legacy_ignore_collect(  # type: ignore[method-assign, assignment]
        Recorder.pytest_ignore_collect
    )


# -- hooks of the entry-point module -----------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    state = _STATE
    if state is None or state.selection is None:
        return
    try:
        _guard_conftests(state, early_config.pluginmanager)
    except Exception as exc:
        state.evidence("guard-missing", "conftest loading", type(exc).__name__)


@pytest.hookimpl(tryfirst=True)  # before junitxml's own pytest_configure reads the option
def pytest_configure(config: pytest.Config) -> None:
    state = _STATE
    if state is None:
        return
    settings = state.settings
    if settings.site:
        sys.path[:] = [entry for entry in sys.path if entry != settings.site]
    if state.out.fd < 0:
        return  # nowhere to write: the JUnit XML reports instead
    worker = getattr(config, "workerinput", {}).get("workerid")  # an xdist worker
    try:
        recorder = Recorder(state, config, worker)
        config.pluginmanager.register(recorder, "gtd-ratchet-recorder")
        recorder.identities = Identities(config.pluginmanager, recorder)
    except Exception:  # an older or unusual pytest: the JUnit XML reports instead
        return
    state.recorder = recorder
    xmlpath = getattr(config.option, "xmlpath", None)
    if settings.junit and xmlpath and _norm(xmlpath) == _norm(settings.junit):
        config.option.xmlpath = None  # this report replaces it
    inipath = getattr(config, "inipath", None)
    state.emit(
        C.START,
        {
            "v": C.VERSION,
            "pid": os.getpid(),
            "worker": worker,
            "root": recorder.root,
            "ini": None if inipath is None else str(inipath),
            "plugin": _PLUGIN_FILE,
            "via": state.out.via,
            "sel": None if state.selection is None else True,
        },
    )
    for label, file in recorder.identities.foreign():
        state.evidence("foreign", label, file)


def pytest_plugin_registered(plugin: object, manager: Any) -> None:
    state = _STATE
    if state is None or id(plugin) in state.registered:
        return
    try:
        if not _EARLY_IMPLS:  # (the first call: this module's own registration)
            for name, impls in _hook_impls(manager):
                for impl in impls:
                    _EARLY_IMPLS[id(impl)] = (name, impl, impl.function)
        file = _plugin_file(plugin)
        if _is_conftest(file):
            state.conftests.setdefault(str(file), None)
        hooks = _report_hooks(manager, plugin)
        name = _plugin_label(manager, plugin)
        state.registered[id(plugin)] = (name, file, hooks, state.started)
        if state.started and hooks and not _is_conftest(file):
            state.evidence("late-plugin", name, f"{file} ({', '.join(hooks)})")
    except Exception as exc:
        state.evidence("internal", "plugin registration", type(exc).__name__)


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionstart() -> Generator[None, None, None]:
    state = _STATE
    if state is not None:
        state.started = True
    yield
    # After every plugin's sessionstart: xdist has started its workers, which
    # inherited the environment and so load this plugin too. From now on nothing
    # should: a pytest that a test starts is the user's, not the ratchet's.
    if state is not None:
        _restore_environment(state.settings)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    state = _STATE
    if state is None or state.recorder is None:
        return
    pm = session.config.pluginmanager
    if not pm.is_registered(state.recorder):
        state.evidence("unregistered", "gtd-ratchet-recorder", "removed during the session")
    watch = state.recorder.watch
    if watch is not None and not pm.is_registered(watch):
        state.evidence("unregistered", "gtd-ratchet-outcomes", "removed during the session")


def pytest_unconfigure() -> None:
    # The session is over and its end line written: the watch has nothing left to
    # see. Left on sys.meta_path it keeps pytest's objects reachable until the
    # interpreter's shutdown clears every module by hand (~19 M instructions, ~4 ms
    # of each run, counted with valgrind); taken off, they are freed as usual.
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, ImportWatch)]
    _VALUES.release()


def _restore_environment(settings: Settings) -> None:
    os.environ.pop(C.ENV_SETTINGS, None)
    os.environ.pop(C.ENV_FD, None)
    site = settings.site
    if site:
        entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        kept = [entry for entry in entries if entry != site]
        if any(kept):
            os.environ["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            os.environ.pop("PYTHONPATH", None)
    junit = settings.junit
    if junit:
        import shlex

        addopts = os.environ.get("PYTEST_ADDOPTS")
        if addopts is not None:
            rest = addopts.replace("--junitxml=" + shlex.quote(junit), "").strip()
            if rest:
                os.environ["PYTEST_ADDOPTS"] = rest
            else:
                del os.environ["PYTEST_ADDOPTS"]


# -- the plugin's own code ------------------------------------------------------------
# The code under test runs in this process and can find this module (it holds
# the records) and take its checks apart before it changes what the tests read:
# a method of a record class replaced, a function of the module rebound, the
# code of one of its functions swapped. The module's names, its classes' own
# entries and its functions' code and defaults are taken once the module is
# made, and compared first thing at the session's end; the check's own helpers
# are bound in its closure, and it is reached through a name of Recorder's,
# which Identities watches. Code that takes this check apart too, and
# Identities with it, is beyond it (docs/threat-model.md, "What it cannot guarantee").


def _own_check_made() -> Callable[[], list[tuple[str, str]]]:
    here = globals()
    name = __name__
    missing = _MISSING
    same = _is
    state_of = _function_state

    def _own_check() -> list[tuple[str, str]]:
        out = [(k, "rebound") for k, v in first.items() if here.get(k, missing) is not v]
        out += [(k, "added") for k in list(here) if k not in first]
        for label, (cls, entries) in classes.items():
            now = vars(cls)
            out += [
                (f"{label}.{k}", "rebound")
                for k, v in entries.items()
                if now.get(k, missing) is not v
            ]
            out += [(f"{label}.{k}", "added") for k in list(now) if k not in entries]
        for function, state in zip(functions, states):  # noqa: B905 (3.7's zip)
            if not all(map(same, state_of(function), state)):
                out.append((function.__qualname__, "its code or defaults replaced"))
        return out

    Recorder._own_check = staticmethod(_own_check)
    first = dict(here)
    classes = {
        k: (v, dict(vars(v)))
        for k, v in first.items()
        if isinstance(v, type) and v.__module__ == name
    }
    functions: list[Any] = [
        v for v in first.values() if type(v) is FunctionType and v.__module__ == name
    ]
    for _, entries in classes.values():
        for value in entries.values():
            inner = getattr(value, "__func__", None) or getattr(value, "fget", None) or value
            if type(inner) is FunctionType:
                functions.append(inner)
    functions.append(_own_check)
    states = [state_of(function) for function in functions]
    return _own_check


_own_check_made()
