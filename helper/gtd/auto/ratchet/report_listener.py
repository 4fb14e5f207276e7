"""Per-test reports of one test run: setting up how they are written, and reading
them back as one value.

How to use it::

    request = report_listener.Request(root)
    listener = report_listener.start(request)  # files, pipe, reader thread
    try:
        result = proc.run(argv, root, env=listener.env, pass_fds=listener.pass_fds)
    except BaseException:
        listener.abort()
        raise
    report = listener.finish()  # a results.Report

:class:`Request` says what the run asks of the plugin: the root the tests run in
(test ids are relative to it), ``ratchet.junit_xml`` for other runners, a
selection (``only_files``: nothing but these files is collected and no conftest
outside them is loaded; ``only_ids``: nothing but these tests runs), roots no
module may be imported from (``forbidden``), a :class:`Redirect` from the live
repository to the room the tests run in (imports from under ``live`` load from the
same place under ``room``: editable installs), and the protected Python files
whose modules' values the plugin guards (``guarded``).

:meth:`Listener.finish` returns a :class:`gtd.auto.ratchet.results.Report`:
``tests`` (test id → ``Result``: outcome, and for a skip its location and
reason), ``items`` (every item pytest collected: node id, file, kind),
``sessions`` (each pytest process: its rootdir, ini file, conftests, plugins that
can change reports, the interpreter's environment), ``evidence`` (tamper evidence)
and ``problems`` (why the report cannot be taken at its word). ``complete`` says
there are none; ``outcomes`` is ``{test id: outcome}``; ``junit_outcomes`` the
same in the four outcomes JUnit XML has, or None unless complete — what the
verdict compares.

Where they come from: any pytest the test command starts loads the plugin
gtd.auto.ratchet.pytest_report (its parts in gtd.auto.ratchet.plugin, the contract
gtd.auto.ratchet.contract) through
a per-run entry point on ``PYTHONPATH``, and streams its lines into a pipe this
module reads in a thread while the command runs (so a large suite never blocks on
a full pipe), or into a file where the pipe was not inherited. A pytest that does
not load it writes the ``--junitxml`` appended to ``PYTEST_ADDOPTS`` instead, and
other runners write the JUnit XML named by ``ratchet.junit_xml``. The run's files
live in ``.git/gtd-cache/ratchet-<pid>.<n>/`` (or a temporary directory where the git
directory is elsewhere or read-only, or where the caller says) and are removed
afterwards.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import paths
from gtd.auto.ratchet import contract, early
from gtd.fsio import read_bytes, remove_tree, walk
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from gtd.auto.ratchet import report_lines
    from gtd.auto.ratchet.results import Report, Result

PLUGIN_NAME = early.PLUGIN_NAME  # the entry point's name: `-p no:gtd_ratchet_report`
_PLUGIN_SOURCE = Path(early.PLUGIN_SOURCE)
_READ_CHUNK = 1 << 16
# After the command ends, a process it left behind may still hold the pipe open:
# read on until it is quiet this long, and never longer than the drain limit.
_QUIET_S = 0.1
_DRAIN_MAX_S = 2.0
# The report reader's nice value (see _behind_the_tests): measured, 10 takes the
# reader's wake-ups off the tests' core.
_READER_NICE = 10
# File times come from the kernel's coarse clock (a few milliseconds behind).
_CLOCK_SLACK_NS = 5_000_000


class Redirect(NamedTuple):
    """Imports that would load from under ``live`` load from under ``room``."""

    live: Path
    room: Path


class Request(NamedTuple):
    """What one test run asks of the plugin. Paths are absolute; ``only_files``
    and ``only_ids`` are relative to ``root``."""

    root: Path
    junit_xml: str | None = None
    only_files: tuple[str, ...] | None = None
    only_ids: tuple[str, ...] | None = None
    forbidden: tuple[Path, ...] = ()
    redirect: Redirect | None = None
    guarded: tuple[str, ...] | None = None  # root-relative protected Python files
    env_since_ns: int | None = None  # a cycle's end: when its agent began

    @property
    def selects(self) -> bool:
        return self.only_files is not None or self.only_ids is not None


class Listener:
    """One run's report files, pipe and reader. Give :attr:`env` and
    :attr:`pass_fds` to the test command; then :meth:`finish` (or :meth:`abort`)."""

    def __init__(
        self,
        request: Request,
        files: RunFiles,
        pipe: tuple[int, int] | None = None,
        since_ns: int | None = None,
    ) -> None:
        self.request = request
        self.files = files
        # Lines are parsed as they arrive (the tests still run); a line's start
        # waits in ``_partial`` for its newline.
        # The parsing side loads once the run is asked for (see ask): a held run's
        # process starts before (gtd.auto.ratchet.held), and writes nothing sooner.
        self._reading: report_lines.Reading | None = None
        self._partial: list[bytes] = []
        self._read_fd, self._write_fd = pipe or early.channel()
        self._stop = threading.Event()
        self._wake = os.pipe()  # written once the run is over: the reader's wake-up
        self._deadline = 0.0
        self._thread = threading.Thread(target=self._read, name="gtd-ratchet-reader", daemon=True)
        self._closed = False
        # Reports a configured ``junit_xml`` glob matches are read only when written
        # after this moment: an older one is stale (a run before this one), and
        # nothing the glob matches is ever deleted (it may be a person's file).
        self._since_ns = (time.time_ns() if since_ns is None else since_ns) - _CLOCK_SLACK_NS
        st = os.fstat(self._write_fd)
        self.pass_fds: tuple[int, ...] = (self._write_fd,)
        fd_spec = f"{self._write_fd}:{st.st_dev}:{st.st_ino}"
        self.env = early.run_env(str(files.folder), fd_spec, os.environ)

    @classmethod
    def adopt(cls, request: Request, folder: str, pipe: tuple[int, int], since_ns: int) -> Listener:
        """The listener of a run gtd.auto.ratchet.early set up and started: its
        files in ``folder``, its report pipe ``pipe`` (read end, write end)."""
        return cls(request, RunFiles.inside(Path(folder)), pipe, since_ns)

    def _read(self) -> None:
        import select

        _behind_the_tests()

        poll = select.poll()
        poll.register(self._read_fd, select.POLLIN)
        wake = self._wake[0]
        poll.register(wake, select.POLLIN)
        # No tick while the tests run: the thread wakes for lines and for the
        # run's end (the wake pipe), never to look at the clock. A tick of 0.1 s
        # cost ~40,000 instructions a wake-up, ~4 M a 10 s run, and under
        # valgrind (a run 25 times as long or more) hundreds of millions.
        timeout: float | None = None
        try:
            while True:
                ready = poll.poll(timeout)
                if any(fd == wake for fd, _ in ready):
                    poll.unregister(wake)
                    timeout = _QUIET_S * 1000  # the run is over: read on until quiet
                    continue
                if ready:
                    data = os.read(self._read_fd, _READ_CHUNK)
                    if not data:
                        return  # every writer is gone
                    try:
                        self._take(data)
                    except Exception:  # a reading bug must not stop the draining
                        self._parser().unreadable += 1  # (the tests would block on it)
                elif self._stop.is_set():
                    return
                if self._stop.is_set() and time.monotonic() > self._deadline:
                    return
        except OSError:
            return  # what was read stands; a session cut short shows as unfinished

    def _take(self, data: bytes) -> None:
        end = data.rfind(b"\n")
        if end < 0:
            self._partial.append(data)
            return
        block = b"".join([*self._partial, data[: end + 1]])
        self._partial = [data[end + 1 :]]
        # Cut at newlines, a block decodes and splits as the whole stream would.
        self._feed(block)

    def _feed(self, block: bytes) -> None:
        for line in block.decode("utf-8", "replace").splitlines():
            self._parser().feed(line)

    def _parser(self) -> report_lines.Reading:
        if self._reading is None:
            raise RuntimeError("the run's request was never given (Listener.ask)")
        return self._reading

    def ask(self, request: Request) -> None:
        """What the run asks of the plugin (its settings file): before it loads."""
        if request.root != self.request.root:
            raise ValueError("a run's tests stay under the root it was prepared for")
        from gtd.auto.ratchet import report_lines

        self.request = request
        early.create(str(self.files.settings), json.dumps(_settings(request, self.files)))
        self._reading = report_lines.Reading(str(request.root))
        self._thread.start()

    def finish(self) -> Report:
        """Everything the run reported; removes the run's files. Never raises for
        what the run wrote: unreadable reports are problems in the value."""
        try:
            self._close()
            self._feed(b"".join(self._partial))  # a last line without its newline
            self._partial = []
            filed = b""
            with contextlib.suppress(OSError):
                # fsio's: the code under test may have made the file a named pipe
                filed = read_bytes(self.files.lines)
            self._feed(filed)
            report = assemble(self.request, self._parser(), self._junit_files())
            lines = filed.decode("utf-8", "replace").splitlines()
            if self.request.only_ids is not None and any(_is_test_line(x) for x in lines):
                # Only some tests, run to excuse a result (flaky? skipped by the
                # environment?): there a forged "skipped" or "passed" would be the
                # excuse, and the file is one a process left running can append
                # to (its path is in the run's settings). Results only through the
                # pipe; xdist workers, which write to the file, send none.
                problem = "test lines came through the report file, not the pipe"
                report = report._replace(problems=(*report.problems, problem))
            return report
        finally:
            self._remove()

    def abort(self) -> None:
        """The command did not run to its end (the helper was interrupted)."""
        self._close()
        self._remove()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._closed:
            self.abort()

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            os.close(self._write_fd)
        self._deadline = time.monotonic() + _DRAIN_MAX_S
        self._stop.set()
        with contextlib.suppress(OSError):
            os.write(self._wake[1], b"\n")
        if self._thread.is_alive():
            self._thread.join()
        for fd in (self._read_fd, *self._wake):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _junit_files(self) -> list[Path]:
        fresh = [
            path
            for path in configured(self.request.root, self.request.junit_xml)
            if _mtime_ns(path) >= self._since_ns
        ]
        return [self.files.junit_xml, *fresh]

    def _remove(self) -> None:
        remove_tree(self.files.folder, ignore_errors=True)


def _behind_the_tests() -> None:
    """This thread below the test process in the scheduler's eyes. It wakes for
    every line the plugin writes (1,500 for 500 tests); at the tests' own
    priority each wake-up took the test process's core from it (the kernel
    wakes a reader where its writer runs): ~100 ms on the generated 500-test
    suite (docs/performance.md). Linux gives each thread a nice value of its
    own, set by its thread id; elsewhere that id could name a process, so
    nothing is changed there."""
    if sys.platform.startswith("linux"):
        me = threading.get_native_id()
        with contextlib.suppress(OSError):
            if os.getpriority(os.PRIO_PROCESS, me) < _READER_NICE:  # never raised
                os.setpriority(os.PRIO_PROCESS, me, _READER_NICE)


class RunFiles(NamedTuple):
    """One run's files, all inside ``folder``, which is removed afterwards."""

    folder: Path
    site: Path  # put on PYTHONPATH: the entry point and its dist-info
    settings: Path  # the plugin's settings (contract.ENV_SETTINGS)
    lines: Path  # the plugin's lines where the pipe is not inherited
    junit_xml: Path  # pytest's own report, where the plugin did not load

    @classmethod
    def inside(cls, folder: Path) -> RunFiles:
        return cls(
            folder,
            folder / early.SITE,
            folder / early.SETTINGS,
            folder / early.LINES,
            folder / early.JUNIT,
        )


def start(request: Request, where: Path | None = None) -> Listener:
    """Set up one run's reporting: its files in a new directory (under ``where``,
    else the repository's cache, else a temporary one), the pipe and its reader."""
    listener = prepare(request.root, where)
    try:
        listener.ask(request)
    except BaseException:
        listener.abort()
        raise
    return listener


def prepare(root: Path, where: Path | None = None, *, gate: str | None = None) -> Listener:
    """:func:`start` for a run of tests under ``root`` whose request is not known
    yet: :meth:`Listener.ask` says it, before the plugin loads. ``gate``: the
    source of a ``sitecustomize`` put beside the entry point
    (gtd.auto.ratchet.held)."""
    files = RunFiles.inside(_folder(root, where))
    try:
        early.write_site(str(files.site), str(_plugin_file(files.folder)), gate)
    except BaseException:
        remove_tree(files.folder, ignore_errors=True)
        raise
    return Listener(Request(root), files)


def assemble(
    request: Request, reading: report_lines.Reading, junit_files: Iterable[Path]
) -> Report:
    """The report from the plugin's lines and the JUnit XML files that exist."""
    from gtd.auto.ratchet.results import NO_REPORT, Report, worst

    root = request.root
    got = reading.result(selection=request.selects)
    problems = list(got.problems)
    parsed: list[tuple[str, Result]] = []
    resolver = ModuleResolver(root)
    read_any = False
    for path in junit_files:
        if not path.is_file():
            continue  # the usual case: the plugin reported, pytest wrote no XML
        from gtd.auto.ratchet import junit

        try:
            results = junit.parse(read_bytes(path), resolver)
        except (OSError, junit.JunitError):
            continue  # absent, or cut short by a timeout: judged by exit code
        read_any = True
        parsed.extend((test_id, _relative_where(r, root)) for test_id, r in results.items())
    if read_any and request.selects:
        problems.append("JUnit XML came from a pytest without the plugin: no selection applied")
    if not got.sessions and not read_any:
        return NO_REPORT._replace(problems=tuple(problems))
    tests = worst([*got.tests.items(), *parsed])
    return Report(
        source="plugin" if got.sessions else "junit",
        tests=tests,
        items=got.items,
        sessions=got.sessions,
        evidence=got.evidence,
        problems=tuple(problems),
    )


def _is_test_line(line: str) -> bool:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(record, dict) and record.get(contract.KIND) == contract.TEST


def _mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


def configured(root: Path, pattern: str | None) -> list[Path]:
    """Files matching ``ratchet.junit_xml``, inside the repository only."""
    if not pattern:
        return []
    import glob  # only where a runner other than pytest is configured

    base = os.path.realpath(root)
    out: list[Path] = []
    try:
        matches = glob.glob(os.path.join(root, pattern), recursive=True)
    except RecursionError:  # `**` recurses a frame a folder level: see fsio.walk
        matches = _deep_glob(root, pattern)
    for match in sorted(matches):
        real = os.path.realpath(match)
        if os.path.isfile(real) and (real == base or real.startswith(base + os.sep)):
            out.append(Path(match))
    return out


def _deep_glob(root: Path, pattern: str) -> list[str]:
    """``glob(pattern, recursive=True)`` under ``root`` by a walk that keeps its own
    stack, for a tree deeper than the recursion limit (the code under test can
    leave one in the clean room): ``**`` is any run of folders, ``*``, ``?`` and
    ``[...]`` match within one name, and none matches a name's leading dot unless
    the pattern's part starts with one, as with glob."""
    import re

    parts = [part for part in pattern.split("/") if part not in ("", ".")]
    regex = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":  # any run of folders; at the end, any file below too
            regex += _FOLDERS + (_NAME if last else "")
        else:
            regex += _glob_part(part) + ("" if last else "/")
    matcher = re.compile(regex)
    out: list[str] = []
    for folder, _dirs, files in walk(root):
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        out.extend(os.path.join(root, prefix + n) for n in files if matcher.fullmatch(prefix + n))
    return out


_NAME = "(?!\\.)[^/]*"  # a name that does not start with a dot
_FOLDERS = f"(?:{_NAME}/)*"


def _glob_part(part: str) -> str:
    """One part of a glob pattern (no ``/``) as a regular expression."""
    import re

    out = [] if part.startswith(".") else ["(?!\\.)"]
    i = 0
    while i < len(part):
        c = part[i]
        close = part.find("]", i + 2) if c == "[" else -1
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif close != -1:
            inner = part[i + 1 : close]
            negate = inner.startswith("!")
            body = re.escape(inner[1:] if negate else inner).replace("\\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = close
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


class ModuleResolver:
    """Maps a JUnit ``classname`` (``tests.test_api.TestX``) to the test file it
    names (``tests/test_api.py``) and the rest (``TestX``) by looking on disk, with
    a cache: a suite of 500 tests in 40 files costs about 100 stat calls."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, tuple[str, str] | None] = {}

    def __call__(self, classname: str) -> tuple[str, str] | None:
        if classname in self._cache:
            return self._cache[classname]
        found: tuple[str, str] | None = None
        parts = classname.split(".")
        if all(p and " " not in p and "/" not in p for p in parts):
            for i in range(len(parts), 0, -1):
                candidate = "/".join(parts[:i]) + ".py"
                if (self.root / candidate).is_file():
                    found = (candidate, ".".join(parts[i:]))
                    break
        self._cache[classname] = found
        return found


# -- the run's files -------------------------------------------------------------------


def _folder(root: Path, where: Path | None) -> Path:
    # The process id lets a later run tell a killed run's files from a live one's;
    # the sequence number keeps two runs of one process (in parallel) apart.
    name = f"ratchet-{os.getpid()}.{next(_SEQUENCE)}"
    if where is not None:
        folder = where / name
        _fresh(folder)
        return folder
    cache = _cache_dir(root)
    if cache is not None:
        folder = cache / name
        try:
            cache.mkdir(parents=True, exist_ok=True)
            remove_orphans(cache)
            _fresh(folder)
            return folder
        except OSError:
            pass  # read-only: a temporary directory does
    import tempfile  # on use only: with shutil and random behind it, ~7 ms

    return Path(tempfile.mkdtemp(prefix="gtd-ratchet-"))


_SEQUENCE = itertools.count()


def _cache_dir(root: Path) -> Path | None:
    """The helper's scratch folder inside the git directory (never in `git status`);
    None in a worktree or submodule, where ``.git`` is a file."""
    return root / paths.CACHE_DIR if (root / ".git").is_dir() else None


def _fresh(folder: Path) -> None:
    """``folder`` new and empty: one left by a killed process that had the same id
    is removed first."""
    if folder.exists():
        remove_tree(folder)
    folder.mkdir(parents=True)


def _plugin_file(folder: Path) -> Path:
    """The plugin as installed; a copy among the run's files (with the contract
    and its parts, laid out as installed) where the helper is not installed as
    plain files (a zip)."""
    if _PLUGIN_SOURCE.is_file() and early.plugin_installed(early.PLUGIN_SOURCE):
        return _PLUGIN_SOURCE
    from importlib.resources import files

    package = files("gtd.auto.ratchet")
    copy = folder / "plugin"
    (copy / early.PARTS).mkdir(parents=True)
    names = ["pytest_report.py", "contract.py", "in_process.py"]
    names += sorted(
        f"{early.PARTS}/{entry.name}"
        for entry in package.joinpath(early.PARTS).iterdir()
        if entry.name.endswith(".py")
    )
    for name in names:
        early.create(str(copy / name), package.joinpath(name).read_text(encoding="utf-8"))
    return copy / "pytest_report.py"


def _settings(request: Request, files: RunFiles) -> dict[str, object]:
    c = contract
    redirect = request.redirect
    return {
        c.SETTING_VERSION: c.VERSION,
        c.SETTING_REPORT: str(files.lines),
        c.SETTING_JUNIT: str(files.junit_xml),
        c.SETTING_SITE: str(files.site),
        c.SETTING_ROOT: str(request.root),
        c.SETTING_FILES: None if request.only_files is None else list(request.only_files),
        c.SETTING_IDS: None if request.only_ids is None else list(request.only_ids),
        c.SETTING_FORBIDDEN: [str(p) for p in request.forbidden],
        c.SETTING_LIVE: None if redirect is None else str(redirect.live),
        c.SETTING_ROOM: None if redirect is None else str(redirect.room),
        c.SETTING_GUARDED: None if request.guarded is None else list(request.guarded),
        c.SETTING_ENV_SINCE: request.env_since_ns,
    }


def _relative_where(result: Result, root: Path) -> Result:
    if result.where is None:
        return result
    path, sep, line = result.where.rpartition(":")
    if not sep or not os.path.isabs(path):
        return result
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return result
    return result._replace(where=f"{rel.replace(os.sep, '/')}:{line}")


def remove_orphans(cache: str | Path) -> None:
    """Report files of runs whose helper was killed (its process is gone), and the
    plugin copy an older helper kept."""
    for entry in _entries(Path(cache)):
        if entry.name == "pytest-site":
            remove_tree(entry.path, ignore_errors=True)
            continue
        stem = entry.name.partition(".")[0]
        pid = stem.removeprefix("ratchet-")
        if pid == stem or not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        except OSError:  # alive, but another user's: not ours to judge
            continue


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []
