"""Real projects' test suites for auto mode: each an sdist from the package index,
unpacked into a fresh git repository with its own virtualenv.

What is downloaded or built is cached in the checkout's git-ignored
``.cache/realsuites/`` (never HOME): the sdists, pip's cache, and one virtualenv
per project, requirements and interpreter, copied into each repository as its
``.venv`` (``GTD_REALSUITES_CACHE`` moves it, e.g. to a CI cache). Without the
package index the tests skip and say why (and fail instead when
``GTD_REALSUITES_REQUIRED`` is set, as CI should).

Each project is built once per test session (shared by the xdist workers through
a lock): *pristine* — the sdist, a PLAN.md and an injected flaky test, committed,
with its ``.venv`` — and *ready*, a copy on which `gtd auto setup` answered
``ready``. A scenario works on a copy of one of them, so the costly baseline run
happens once per project. (A copy's sealed snapshot still names the original's
virtualenv as the test environment to watch; nothing changes it.)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.conftest import run_wide_dir

CHECKOUT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("GTD_REALSUITES_CACHE") or CHECKOUT / ".cache" / "realsuites")
PIP_TIMEOUT_S = 600
FLAKY_ENV = "GTD_REALSUITE_FLAKY"
FLAKY_FILE = "tests/test_gtd_injected_flaky.py"
FLAKY_ID = f"{FLAKY_FILE}::test_injected_flaky"
FLAKY_TEST = f'''"""Injected by gtd's real-suite tests: fails once when ${FLAKY_ENV} names a
file that exists (and removes it), passes otherwise."""

import os


def test_injected_flaky():
    trigger = os.environ.get("{FLAKY_ENV}", "")
    if trigger and os.path.exists(trigger):
        os.remove(trigger)
        raise AssertionError("the injected flaky test failed once")
'''
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Real Suite",
    "GIT_AUTHOR_EMAIL": "real@example.com",
    "GIT_COMMITTER_NAME": "Real Suite",
    "GIT_COMMITTER_EMAIL": "real@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` (which must occur exactly once) by ``new`` in ``path``,
    or write ``new`` as the whole file when ``old`` is None."""

    path: str
    old: str | None
    new: str

    def apply(self, root: Path) -> None:
        target = root / self.path
        if self.old is None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(self.new, encoding="utf-8")
            return
        text = target.read_text(encoding="utf-8")
        assert text.count(self.old) == 1, f"{self.path}: the edit's anchor is not unique"
        target.write_text(text.replace(self.old, self.new), encoding="utf-8")


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    requirements: tuple[str, ...]  # the test environment (pytest pinned by the caller)
    broken: tuple[str, ...] | None  # a broken environment; None: a venv without pytest
    config: str  # .deepflow/config.yaml of the set-up repository
    detected: str  # the command detection chooses (no config)
    configured: str | None  # the command the set-up repository runs, when not detected
    plan: str
    legit: tuple[Edit, ...]
    legit_test: str  # the new test file of the legitimate cycle
    regression: tuple[Edit, ...]
    regressed: tuple[str, ...]  # test ids the revert must name
    rewrite: tuple[Edit, ...]  # the regression with the test rewritten to match
    rewrite_reason: str  # how the revert starts
    broken_problem: str  # what setup's diagnosis of the broken environment says
    broken_fix: str
    min_tests: int  # tests in the baseline, at least
    extra: dict[str, Any] = field(default_factory=dict)


def _plan(title: str, files: str) -> str:
    return (
        "# Real suite\n\n### spec-real\n\n"
        f"- [ ] **T1**: {title}\n  - Files: {files}\n  - Blocked by: none\n"
        "- [ ] **T2**: Tidy the changelog\n  - Files: CHANGES\n  - Blocked by: none\n"
    )


# A breaker that trips on the first revert: a flaky failure counted as a
# regression would halt the loop at once.
_THRESHOLD = "circuit_breaker_threshold: 1\n"

BOLTONS = Project(
    name="boltons",
    version="26.2.0",
    requirements=(),
    broken=None,
    config=_THRESHOLD,
    detected=".venv/bin/python -m pytest --doctest-modules boltons tests",
    configured=None,
    plan=_plan("Add kib() to strutils", "boltons/strutils.py, tests/test_strutils_kib.py"),
    legit=(
        Edit(
            "boltons/strutils.py",
            "\n\ndef bytes2human(nbytes, ndigits=0):\n",
            '\n\ndef kib(nbytes):\n    """Whole kibibytes in *nbytes*.\n\n'
            '    >>> kib(4096)\n    4\n    """\n    return nbytes // 1024\n'
            "\n\ndef bytes2human(nbytes, ndigits=0):\n",
        ),
        Edit(
            "tests/test_strutils_kib.py",
            None,
            "from boltons.strutils import kib\n\n\ndef test_kib():\n"
            "    assert kib(1023) == 0\n    assert kib(2048) == 2\n",
        ),
    ),
    legit_test="tests/test_strutils_kib.py",
    regression=(
        Edit(
            "boltons/strutils.py",
            "        if abs_bytes < next_size:\n",
            "        if abs_bytes <= next_size:\n",
        ),
    ),
    regressed=(
        "boltons/strutils.py::boltons.strutils.bytes2human",
        "tests/test_strutils.py::test_bytes2human",
    ),
    rewrite=(
        Edit(
            "boltons/strutils.py",
            "        if abs_bytes < next_size:\n",
            "        if abs_bytes <= next_size:\n",
        ),
        Edit(
            "boltons/strutils.py",
            "    >>> bytes2human(1024)\n    '1K'\n",
            "    >>> bytes2human(1024)\n    '1024B'\n",
        ),
    ),
    rewrite_reason="a protected test was changed: boltons/strutils.py::",
    broken_problem="the test command's interpreter has no pytest module",
    broken_fix="install pytest",
    min_tests=650,
)

# pyparsing's whole suite takes minutes; the ratchet runs its quick files (every
# new test file under tests/ is collected too).
_PYPARSING_SUBSET = (
    ".venv/bin/python -m pytest tests examples/tiny/tests --ignore=tests/test_unit.py "
    "--ignore=tests/test_util.py --ignore=tests/test_examples.py"
)
_CASELESS = "        if instring[loc : loc + self.matchLen].upper() == self.match:\n"
PYPARSING = Project(
    name="pyparsing",
    version="3.3.3",
    requirements=("railroad-diagrams==3.0.1", "jinja2==3.1.6"),
    broken=(),  # pytest alone: the diagram extra is missing
    config=f"ratchet:\n  test_command: {_PYPARSING_SUBSET}\n{_THRESHOLD}",
    detected=".venv/bin/python -m pytest tests examples/tiny/tests",
    configured=_PYPARSING_SUBSET,
    plan=_plan("Add comma_separated()", "pyparsing/helpers.py, tests/test_comma_separated.py"),
    legit=(
        Edit(
            "pyparsing/helpers.py",
            "\ndef counted_array(\n",
            '\ndef comma_separated(expr):\n    """*expr* repeated, separated by commas."""\n'
            '    return DelimitedList(expr, delim=",")\n\n\ndef counted_array(\n',
        ),
        Edit(
            "tests/test_comma_separated.py",
            None,
            "import pyparsing as pp\nfrom pyparsing.helpers import comma_separated\n\n\n"
            "def test_comma_separated():\n    numbers = comma_separated(pp.Word(pp.nums))\n"
            '    assert numbers.parse_string("1,2,3").as_list() == ["1", "2", "3"]\n',
        ),
    ),
    legit_test="tests/test_comma_separated.py",
    regression=(Edit("pyparsing/core.py", _CASELESS, _CASELESS.replace(".upper()", "")),),
    regressed=("tests/test_simple_unit.py::TestCaselessLiteral::runTest",),
    rewrite=(
        Edit("pyparsing/core.py", _CASELESS, _CASELESS.replace(".upper()", "")),
        Edit(
            "tests/test_simple_unit.py",
            'expected_list=["RED", "GREEN", "BLUE", "BLUE", "GREEN", "GREEN", "RED"],',
            'expected_list=["RED"],',
        ),
    ),
    rewrite_reason="a protected test was changed: tests/test_simple_unit.py::",
    broken_problem="1 test file could not be collected (tests/test_diagram.py)",
    broken_fix="the module 'railroad' cannot be imported",
    min_tests=120,
)

PROJECTS = {p.name: p for p in (BOLTONS, PYPARSING)}


# -- the cache -------------------------------------------------------------------------


def unavailable(why: str) -> None:
    """Skip (with the reason), or fail where the suite must run."""
    if os.environ.get("GTD_REALSUITES_REQUIRED"):
        pytest.fail(f"real-suite tests cannot run: {why}")
    pytest.skip(f"real-suite tests need the package index: {why}")


@contextlib.contextmanager
def cache_lock(name: str) -> Iterator[None]:
    from filelock import FileLock

    CACHE.mkdir(parents=True, exist_ok=True)
    with FileLock(str(CACHE / f"{name}.lock"), timeout=1800):
        yield


def pip_env(base: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in base.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PIP_CACHE_DIR"] = str(CACHE / "pip")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _pip(args: list[str], env: Mapping[str, str], what: str) -> None:
    try:
        res = subprocess.run(
            args, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, env=dict(env)
        )
    except subprocess.TimeoutExpired:
        unavailable(f"{what}: pip did not finish in {PIP_TIMEOUT_S} s")
        return
    if res.returncode != 0:
        lines = [ln for ln in res.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
        unavailable(f"{what}: {(lines or ['pip failed'])[-1].strip()}")


def sdist(name: str, version: str, env: Mapping[str, str]) -> Path:
    """The source distribution of ``name`` ``version``, downloaded once."""
    folder = CACHE / "sdists"
    with cache_lock(f"sdist-{name}"):
        found = _sdist_in(folder, name, version)
        if found is not None:
            return found
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            _pip(
                [sys.executable, "-m", "pip", "download", "--retries", "1", "--no-deps",
                 "--no-binary", ":all:", f"{name}=={version}", "-d", tmp],
                pip_env(env), f"downloading {name} {version}",
            )  # fmt: skip
            for item in Path(tmp).iterdir():
                os.replace(item, folder / item.name)
        found = _sdist_in(folder, name, version)
        assert found is not None, f"pip downloaded no sdist of {name}"
        return found


def _sdist_in(folder: Path, name: str, version: str) -> Path | None:
    stem = name.replace("-", "_").lower()
    for path in sorted(folder.glob("*.tar.gz")) if folder.is_dir() else []:
        if path.name.lower().replace("-", "_") == f"{stem}_{version}.tar.gz":
            return path
    return None


def unpack(archive: Path, target: Path) -> Path:
    """The sdist's top folder, extracted beside ``target`` and moved to it."""
    unpacked = target.parent / "unpacked"
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(unpacked, filter="data")
        else:  # pragma: no cover - Pythons before the extraction filters
            tar.extractall(unpacked)
    (top,) = unpacked.iterdir()
    top.rename(target)
    return target


def venv(requirements: tuple[str, ...], env: Mapping[str, str]) -> Path:
    """A virtualenv with ``requirements`` and this session's pytest, built once per
    interpreter (one without even pytest: :func:`bare_venv`)."""
    full = (f"pytest=={pytest.__version__}", *requirements)
    key = hashlib.sha256("\n".join(full).encode()).hexdigest()[:12]
    folder = CACHE / "venvs" / f"py{sys.version_info[0]}{sys.version_info[1]}-{key}"
    with cache_lock(f"venv-{key}"):
        if (folder / ".complete").is_file():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "venv", str(folder)], check=True, timeout=300, env=pip_env(env)
        )
        _pip(
            [str(folder / "bin" / "python"), "-m", "pip", "install", "--retries", "1",
             "--quiet", *full],
            pip_env(env), f"installing {', '.join(full)}",
        )  # fmt: skip
        (folder / ".complete").write_text("\n".join(full) + "\n")
        return folder


def bare_venv(target: Path) -> None:
    """A virtualenv with nothing installed (its test dependencies never were)."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(target)], check=True, timeout=300
    )


def copy_venv(source: Path, target: Path) -> None:
    """A copy of a cached virtualenv: run through ``bin/python`` (a link to the base
    interpreter), which finds its ``pyvenv.cfg`` beside it wherever it is."""
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(".complete"))


# -- building a project's repositories -------------------------------------------------


@dataclass(frozen=True)
class Built:
    project: Project
    pristine: Path  # committed, with .venv, not set up
    ready: Path  # set up: `gtd auto setup` answered ready
    setup: dict[str, Any]  # that answer
    broken_venv: Path | None  # the cached broken environment, if it is one


def session_env(home: Path) -> dict[str, str]:
    """An environment for work done outside any one test: HOME and the clean
    rooms in the session's temporary directory, a pinned git identity."""
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(GIT_IDENTITY)
    env.update(
        {
            "HOME": str(home),
            "GIT_CONFIG_GLOBAL": str(gitconfig),
            "XDG_CACHE_HOME": str(home / "xdg-cache"),
        }
    )
    return env


def git(cwd: Path, env: Mapping[str, str], *args: str) -> str:
    res = subprocess.run(
        ["git", *args], cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, f"git {args}: {res.stderr}"
    return res.stdout


def gtd(cwd: Path, env: Mapping[str, str], *args: str, timeout: float = 900) -> Any:
    """`gtd ARGS --json` in ``cwd``: its exit code and JSON answer."""
    res = subprocess.run(
        [sys.executable, "-m", "gtd", *args, "--json"],
        cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert "Traceback" not in res.stderr, res.stderr
    try:
        answer = json.loads(res.stdout) if res.stdout.strip() else None
    except ValueError:
        answer = None
    return res.returncode, answer, res.stderr


def build(project: Project, where: Path) -> Built:
    """The pristine and the set-up repository of ``project`` under ``where``."""
    env = session_env(where / "home")
    archive = sdist(project.name, project.version, env)
    good = venv(project.requirements, env)
    broken = None if project.broken is None else venv(project.broken, env)
    pristine = unpack(archive, where / "pristine")
    (pristine / "PLAN.md").write_text(project.plan)
    (pristine / FLAKY_FILE).write_text(FLAKY_TEST)
    copy_venv(good, pristine / ".venv")
    git(pristine, env, "init", "-q", "-b", "main")
    git(pristine, env, "add", "-A", "--", ".", ":!.venv")
    git(pristine, env, "commit", "-q", "-m", f"{project.name} {project.version} from its sdist")
    ready = copy_of(pristine, where / "ready")
    (ready / ".deepflow").mkdir()
    (ready / ".deepflow" / "config.yaml").write_text(project.config)
    code, answer, stderr = gtd(ready, env, "auto", "setup")
    assert code == 0, stderr
    return Built(project, pristine, ready, answer, broken)


def copy_of(source: Path, target: Path) -> Path:
    """A copy of a built repository for one test, its ``.venv`` included (~40 MB,
    ~0.4 s). Not hard-linked: a new link changes the inode's change time in every
    copy that shares it, and the ratchet reads a file of the clean room (a linked
    ``.venv`` is one) changed since its run began as code the run wrote — a test
    copying the project beside one whose cycle runs would fail it. A copy keeps
    type, size and modification time, which the helper's fingerprint of the
    environment reads."""
    shutil.copytree(source, target, symlinks=True)
    return target


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a command run by a test (its HOME and clean rooms are
    the test's own, see tests/conftest.py), without an active virtualenv."""
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(extra)
    return env


def json_of(cwd: Path, *args: str, **env: str) -> dict[str, Any]:
    """`gtd ARGS --json` run by a test, which must exit 0: its answer."""
    code, answer, stderr = gtd(cwd, cli_env(**env), *args)
    assert code == 0, stderr
    assert isinstance(answer, dict), stderr
    return answer


_T = TypeVar("_T")


def built_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], _T]) -> _T:
    """``make(folder)``'s result, made by the first test process of the run to
    ask and read back by the others (the xdist workers share one build)."""
    from filelock import FileLock

    shared = run_wide_dir(factory, f"realsuites-{name}")
    record = shared / "built.pickle"
    with FileLock(str(shared / "build.lock"), timeout=1800):
        if not record.is_file():
            record.write_bytes(pickle.dumps(make(shared / name)))
        built: _T = pickle.loads(record.read_bytes())
    return built
