"""Editable installs resolve to the room, not the live repository.

A project installed with ``pip install -e`` points the environment at the live
tree, either by a ``.pth`` that adds a path (a ``src`` layout) or by setuptools'
import finder with a mapping (a flat layout). When the tests run in a copy of the
repository (the room), the plugin loads such modules from the same place in the
room. Real editable installs, made by pip in a fresh virtual environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gtd import proc
from gtd.auto.ratchet import report_listener
from gtd.auto.ratchet.results import Report
from tests.conftest import run_wide_dir

pytestmark = pytest.mark.slow

_OFFLINE = ("Could not find a version", "No matching distribution", "Network is unreachable")

PYPROJECT_SRC = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "pathpkg"
version = "0.1"

[tool.setuptools.packages.find]
where = ["src"]
"""

PYPROJECT_FLAT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "finderpkg"
version = "0.1"

[tool.setuptools]
packages = ["finderpkg"]
"""

PYPROJECT_SIBLING = PYPROJECT_FLAT.replace("finderpkg", "siblingpkg")

TESTS = """\
import pathpkg
import finderpkg
import finderpkg.sub


def test_path_kind():
    assert pathpkg.WHERE == "room"


def test_finder_kind():
    assert (finderpkg.WHERE, finderpkg.sub.WHERE) == ("room", "room")
"""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


class Installed:
    def __init__(self, python: Path, live: Path) -> None:
        self.python = python
        self.live = live


# An ignored, generated module: in the live tree, never in the room.
GENERATED = "finderproj/finderpkg/generated.py"


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """A virtual environment with pytest and, editable from the live repository,
    one project of each kind: built once per run by the first test process that
    needs it, under a lock, and reused by the others (pip took ~190 s a build on
    a loaded machine, and xdist spread the three tests over as many processes).
    No test writes to it: each works in its own copy of the live tree."""
    from filelock import FileLock

    base = run_wide_dir(tmp_path_factory, "editable")
    live, python = base / "live", base / "venv" / "bin" / "python"
    done, failed = base / "built", base / "failed"
    with FileLock(str(base.parent / "editable.lock"), timeout=1800):
        if failed.is_file():  # the process that built it was offline: say the same
            pytest.skip(failed.read_text())
        if not done.is_file():
            try:
                _build(base, live)
            except pytest.skip.Exception as exc:
                failed.write_text(str(exc))
                raise
            done.write_text("")
    return Installed(python, live)


def _build(base: Path, live: Path) -> None:
    _write(live / "pathproj" / "pyproject.toml", PYPROJECT_SRC)
    _write(live / "pathproj" / "src" / "pathpkg" / "__init__.py", 'WHERE = "live"\n')
    _write(live / "finderproj" / "pyproject.toml", PYPROJECT_FLAT)
    _write(live / "finderproj" / "finderpkg" / "__init__.py", 'WHERE = "live"\n')
    _write(live / "finderproj" / "finderpkg" / "sub.py", 'WHERE = "live"\n')
    _write(live / GENERATED, "X = 1\n")
    _write(live / "tests" / "test_where.py", TESTS)
    # a library of the person's own, outside the repository, installed editable
    _write(base / "sibling" / "pyproject.toml", PYPROJECT_SIBLING)
    _write(base / "sibling" / "siblingpkg" / "__init__.py", "NAME = 'sibling'\n")
    venv = base / "venv"
    env = {**os.environ, "HOME": str(base), "PIP_NO_CACHE_DIR": "1"}
    env.pop("PYTHONPATH", None)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    python = venv / "bin" / "python"

    def pip(*args: str) -> None:
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *args],
            capture_output=True,
            text=True,
            env=env,
        )
        if done.returncode != 0 and any(mark in done.stderr for mark in _OFFLINE):
            pytest.skip(f"the package index is not reachable: {done.stderr.strip()[-300:]}")
        assert done.returncode == 0, done.stderr

    pip("pytest", "setuptools>=70.1")  # builds wheels by itself: no isolated build needed
    pip(
        "--no-build-isolation",
        *("-e", str(live / "pathproj"), "-e", str(live / "finderproj")),
        *("-e", str(base / "sibling")),
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    names = os.listdir(site)
    # Both kinds are really there: a path in a .pth, and setuptools' finder.
    pth = Path(site) / "__editable__.pathpkg-0.1.pth"
    assert pth.read_text().strip() == str(live / "pathproj" / "src")
    assert [n for n in names if n.startswith("__editable___finderpkg") and n.endswith("_finder.py")]


@pytest.fixture
def room(installed: Installed, tmp_path: Path) -> Path:
    """A copy of the live repository with the candidate's change in it."""
    room = tmp_path / "room"
    generated = installed.live / GENERATED  # ignored: the room, made from git, lacks it
    shutil.copytree(
        installed.live, room, ignore=lambda d, names: [n for n in names if Path(d, n) == generated]
    )
    for init in ("pathproj/src/pathpkg/__init__.py", "finderproj/finderpkg/__init__.py"):
        (room / init).write_text('WHERE = "room"\n')
    (room / "finderproj/finderpkg/sub.py").write_text('WHERE = "room"\n')
    return room


def run(installed: Installed, room: Path, request: report_listener.Request) -> Report:
    listener = report_listener.start(request)
    argv = [str(installed.python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
    env = {**listener.env, "PYTEST_ADDOPTS": listener.env["PYTEST_ADDOPTS"]}
    result = proc.run(argv, room, env=env, pass_fds=listener.pass_fds)
    report = listener.finish()
    assert report.source == "plugin", result.output
    return report


def evidence(report: Report, kind: str) -> dict[str, str]:
    return {e.subject: e.detail for e in report.evidence if e.kind == kind}


def test_without_a_redirect_the_room_runs_the_live_code(
    installed: Installed, room: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    report = run(installed, room, report_listener.Request(room, forbidden=(installed.live,)))
    assert report.outcomes == {
        "tests/test_where.py::test_path_kind": "failed",
        "tests/test_where.py::test_finder_kind": "failed",
    }
    live = installed.live
    assert evidence(report, "forbidden-module") == {
        "pathpkg": str(live / "pathproj/src/pathpkg/__init__.py"),
        "finderpkg": str(live / "finderproj/finderpkg/__init__.py"),
        "finderpkg.sub": str(live / "finderproj/finderpkg/sub.py"),
    }


def test_both_kinds_of_editable_install_load_from_the_room(
    installed: Installed, room: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    # A module the live tree has and the room does not (an ignored, generated file).
    assert (installed.live / GENERATED).is_file()
    assert not (room / GENERATED).exists()
    (room / "tests/test_generated.py").write_text(
        "def test_generated():\n    import finderpkg.generated\n"
    )
    request = report_listener.Request(
        room, forbidden=(installed.live,), redirect=report_listener.Redirect(installed.live, room)
    )
    report = run(installed, room, request)
    assert report.outcomes == {
        "tests/test_where.py::test_path_kind": "passed",
        "tests/test_where.py::test_finder_kind": "passed",
        "tests/test_generated.py::test_generated": "passed",
    }
    generated = str(installed.live / GENERATED)
    # Only the module the room lacks came from the live tree, and it says so.
    assert evidence(report, "redirect-missing") == {"finderpkg.generated": generated}
    assert evidence(report, "forbidden-module") == {"finderpkg.generated": generated}
    (session,) = report.sessions
    assert session.environment is not None
    assert str(room / "pathproj" / "src") in session.environment.path
    assert str(installed.live / "pathproj" / "src") not in session.environment.path


def test_code_from_outside_the_room_and_the_environment_is_evidence(
    installed: Installed, room: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Where the session's code comes from: the room, the environment (an editable
    library of the person's own outside the repository, mapped by setuptools'
    finder, is the environment's), the import path it started with. A module
    found through a path the tests' code adds, or made from a file elsewhere, is
    evidence named by its top-level package."""
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    elsewhere = tmp_path / "elsewhere"
    _write(elsewhere / "stash_mod.py", "def value():\n    return 1\n")
    _write(elsewhere / "loose.py", "def value():\n    return 2\n")
    (room / "tests/test_outside.py").write_text(
        "import importlib.util\n"
        "import sys\n\n"
        "import siblingpkg\n\n"
        f"sys.path.insert(0, {str(elsewhere)!r})\n"
        "import stash_mod  # noqa: E402\n\n"
        f"spec = importlib.util.spec_from_file_location('made', {str(elsewhere / 'loose.py')!r})\n"
        "made = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(made)\n"
        "value = made.value\n\n\n"
        "def test_sibling():\n    assert siblingpkg.NAME == 'sibling'\n"
    )
    request = report_listener.Request(
        room, forbidden=(installed.live,), redirect=report_listener.Redirect(installed.live, room)
    )
    report = run(installed, room, request)
    assert report.outcomes is not None
    assert report.outcomes["tests/test_outside.py::test_sibling"] == "passed"
    found = evidence(report, "outside-module")
    assert set(found) == {"stash_mod", "made"}, found
    assert str(elsewhere / "stash_mod.py") in found["stash_mod"]
    assert str(elsewhere / "loose.py") in found["made"]
