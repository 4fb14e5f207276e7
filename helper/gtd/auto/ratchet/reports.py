"""Per-test reports of one test run: where they are written and reading them back.

Any pytest the test command starts reports through gtd.auto.ratchet.pytest_report,
an entry-point plugin put on ``PYTHONPATH`` (its settings travel in environment
variables); a pytest that does not load it writes the ``--junitxml`` appended to
``PYTEST_ADDOPTS`` instead, and other runners write the JUnit XML named by
``ratchet.junit_xml``. The files live in ``.git/gtd-cache/`` (the plugin's copy
persists there, so pytest compiles it once), or in a temporary directory where
the git directory is elsewhere (a worktree) or read-only.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path
from typing import NamedTuple

from gtd.auto.cache import directory
from gtd.auto.ratchet import junit, recorded
from gtd.auto.ratchet.model import Outcome, merge
from gtd.fsio import atomic_write

# The plugin's settings: gtd.auto.ratchet.pytest_report reads the same names (it cannot
# import gtd, which the user's test environment does not have).
REPORT_ENV = "GTD_RATCHET_REPORT"
JUNIT_ENV = "GTD_RATCHET_JUNITXML"
SITE_ENV = "GTD_RATCHET_SITE"
PLUGIN_MODULE = "gtd_ratchet_report"
_PLUGIN_SOURCE = Path(__file__).with_name("pytest_report.py")
_DIST_INFO = {
    "METADATA": f"Metadata-Version: 2.1\nName: {PLUGIN_MODULE}\nVersion: 1\n",
    "entry_points.txt": f"[pytest11]\n{PLUGIN_MODULE} = {PLUGIN_MODULE}\n",
}


class Reports(NamedTuple):
    """The files one test run reports into."""

    site: Path  # the directory put on PYTHONPATH: the plugin and its dist-info
    outcomes: Path  # the plugin's JSON lines
    junit_xml: Path  # pytest's own report, where the plugin did not load
    scratch: Path | None  # a temporary directory to remove afterwards, if one was made


def prepare(root: Path, folder: Path | None = None) -> Reports:
    """Report files for a run from ``root``, none of them left from an earlier run.
    ``folder`` (a clean room's slot): the plugin is written there afresh, so nothing
    else can sit beside it on the test run's import path."""
    if folder is not None:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        reports = Reports(folder / "site", folder / "outcomes.jsonl", folder / "pytest.xml", None)
        _install_plugin(reports.site)
        return reports
    cache = directory(root)
    if cache is not None:
        stem = f"ratchet-{os.getpid()}"  # concurrent runs never share a file
        reports = Reports(
            cache / "pytest-site", cache / f"{stem}.jsonl", cache / f"{stem}.xml", None
        )
        try:
            _install_plugin(reports.site)
            _remove(reports)
            _remove_orphans(cache)
            return reports
        except OSError:
            pass  # read-only: a temporary directory does
    import tempfile  # on use only: with shutil and random behind it, ~7 ms

    scratch = Path(tempfile.mkdtemp(prefix="gtd-ratchet-"))
    reports = Reports(scratch / "site", scratch / "outcomes.jsonl", scratch / "pytest.xml", scratch)
    _install_plugin(reports.site)
    return reports


def environment(reports: Reports) -> dict[str, str]:
    """What the test command's environment gains so any pytest in it reports."""
    addopts = f"--junitxml={shlex.quote(str(reports.junit_xml))}"
    existing = os.environ.get("PYTEST_ADDOPTS", "").strip()
    pythonpath = os.environ.get("PYTHONPATH")
    site = str(reports.site)
    return {
        "PYTEST_ADDOPTS": f"{existing} {addopts}" if existing else addopts,
        # Last on the path: the user's own modules win any name clash.
        "PYTHONPATH": f"{pythonpath}{os.pathsep}{site}" if pythonpath else site,
        REPORT_ENV: str(reports.outcomes),
        JUNIT_ENV: str(reports.junit_xml),
        SITE_ENV: site,
    }


def collect(root: Path, reports: Reports, pattern: str | None) -> dict[str, Outcome] | None:
    """Every per-test outcome the run reported (worst wins), or None when nothing
    did and the run is judged by its exit code. Removes the run's own files."""
    try:
        parsed: list[dict[str, Outcome]] = []
        from_plugin = _read_outcomes(reports.outcomes, root)
        if from_plugin is not None:
            parsed.append(from_plugin)
            xml_files = configured(root, pattern)
        else:
            xml_files = [reports.junit_xml, *configured(root, pattern)]
        resolver = ModuleResolver(root)
        for path in xml_files:
            try:
                parsed.append(junit.parse(path.read_bytes(), resolver))
            except (OSError, junit.JunitError):
                continue  # absent, or cut short by a timeout: judged by exit code
        return merge(parsed) if parsed else None
    finally:
        discard(reports)


def discard(reports: Reports) -> None:
    _remove(reports)
    if reports.scratch is not None:
        import shutil

        shutil.rmtree(reports.scratch, ignore_errors=True)


def configured(root: Path, pattern: str | None) -> list[Path]:
    """Files matching ``ratchet.junit_xml``, inside the repository only."""
    if not pattern:
        return []
    import glob  # only where a runner other than pytest is configured

    base = os.path.realpath(root)
    out: list[Path] = []
    for match in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
        real = os.path.realpath(match)
        if os.path.isfile(real) and (real == base or real.startswith(base + os.sep)):
            out.append(Path(match))
    return out


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


def _install_plugin(site: Path) -> None:
    """The plugin and its dist-info in ``site``, rewritten only when they differ
    from this helper's (an upgrade)."""
    wanted = {f"{PLUGIN_MODULE}.py": _PLUGIN_SOURCE.read_text(encoding="utf-8")}
    wanted.update({f"{PLUGIN_MODULE}-1.dist-info/{n}": text for n, text in _DIST_INFO.items()})
    for rel, text in wanted.items():
        path = site / rel
        try:
            if path.read_text(encoding="utf-8") == text:
                continue
        except (OSError, UnicodeDecodeError):
            pass
        atomic_write(path, text)


def _read_outcomes(path: Path, root: Path) -> dict[str, Outcome] | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None  # the plugin did not load, or the run was killed first
    return recorded.parse(text, str(root))


def _remove_orphans(cache: Path) -> None:
    """Report files of runs whose helper was killed (its process is gone)."""
    for entry in os.scandir(cache):
        stem, _, suffix = entry.name.partition(".")
        pid = stem.removeprefix("ratchet-")
        if pid == stem or suffix not in ("jsonl", "xml") or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
        except OSError:  # alive, but another user's: not ours to judge
            continue


def _remove(reports: Reports) -> None:
    for path in (reports.outcomes, reports.junit_xml):
        with contextlib.suppress(OSError):  # absent, the usual case
            path.unlink()
