"""Shared fixtures: real git repositories in temporary directories, a pinned git
identity and clock-free environment, and a guard that fails any test writing to HOME."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# The suite's property tests run beside real git and pytest subprocesses, on
# machines that other work loads: an example that takes 300 ms there is the
# machine, not the code. hypothesis's default deadline (200 ms an example) and its
# too_slow health check failed such runs with no fault in the code, so neither
# applies here. Loaded before any test module is imported, so every `@settings`
# of a test takes it as its parent and keeps its own max_examples. Under CI
# hypothesis loads its own `ci` profile, which already has both and is
# derandomized besides; that one stays. A profile rather than HYPOTHESIS_*
# variables: the tests' own subprocesses inherit the environment, and the
# ratchet judges those variables in the suites it runs.
settings.register_profile(
    "gtd", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
# (get_current_profile_name is hypothesis 6.131's; before it, the private field.)
_current = getattr(settings, "get_current_profile_name", lambda: settings._current_profile)()
if _current in (None, "default"):
    settings.load_profile("gtd")


# pytest keeps each test module with its asserts rewritten in `__pycache__`, but
# not where ``PYTHONDONTWRITEBYTECODE`` is set (a shell or CI that sets it): then
# every test process rewrites and compiles all ~290 test modules at each
# collection, 10.8 s of CPU a process against 3.9 s with the cache, and the quick
# loop has four (docs/performance.md). This process alone writes it again; the
# variable stays in the environment, so the helper and the test runs the tests
# start behave as the shell asked (what they are tested under). Set before any
# test module is imported (this file is loaded first).
sys.dont_write_bytecode = False


GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def pytest_sessionstart(session: pytest.Session) -> None:
    """Write the helper's bytecode once, before any test starts it.

    Most tests run the real `gtd` in subprocesses (thousands of them per run).
    Without ``__pycache__`` in the checkout each one compiles every module it
    imports again: a fresh clone, or any shell with ``PYTHONDONTWRITEBYTECODE``
    set, where no process ever writes it. That was ~0.13 s of CPU in each ~0.1 s
    `gtd cycle begin`, and -14% of the CPU of tests/integration/test_cycle.py
    (docs/performance.md). ``compileall`` writes it whatever that variable says; the
    bytecode is the same source's (checked against its mtime at each import), and
    ``__pycache__`` is git-ignored and left out of the installed pack
    (install.py). Only the first process (xdist's controller) compiles."""
    if hasattr(session.config, "workerinput"):
        return
    import compileall

    import gtd

    compileall.compile_dir(str(Path(gtd.__file__).parent), quiet=1)


# The variables `_isolated_home` gives each test a value of its own. Shared set-ups
# (tests/integration/calc_project.py's templates) leave them out of what tells one
# set-up from another: a variable here that reached that key would make every
# test set its project up anew (a real `gtd auto setup` and baseline run each,
# ~0.5 s of CPU), which is what happened when the last two were added.
PER_TEST_VARIABLES = frozenset(
    {"HOME", "GIT_CONFIG_GLOBAL", "XDG_CACHE_HOME", "XDG_STATE_HOME", "PYTEST_DEBUG_TEMPROOT"}
)


@contextlib.contextmanager
def isolated_home(
    factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Point HOME at an empty directory and fail if anything lands there (git
    config, caches...): the helper must never write outside the repository."""
    home = factory.mktemp("home")
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n")
    own = {
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        # The clean rooms auto mode checks candidates in (see gtd.auto.ratchet.room).
        "XDG_CACHE_HOME": str(factory.mktemp("cache")),
        # The repositories whose Claude Code settings carry the sandbox block, for
        # `install.py --uninstall` (gtd.auto.sandbox.registry_path).
        "XDG_STATE_HOME": str(factory.mktemp("state")),
        # The temporary folders of the pytest runs a test starts (a suite in a
        # room, a plugin run) under this test's own: pytest prunes the older runs'
        # folders of the same user when one starts, and in /tmp those were this
        # suite's, a whole earlier run of it at times (one such inner run took
        # 85 s of the quick loop).
        "PYTEST_DEBUG_TEMPROOT": str(factory.mktemp("pytest-tmp")),
    }
    assert set(own) == PER_TEST_VARIABLES  # a new one is named there too
    for key, value in {**own, **GIT_ENV}.items():
        monkeypatch.setenv(key, value)
    # The helper's commands look for no Claude Code session (gtd.session): a suite
    # run from inside one behaves as one run from a terminal. The tests of
    # sessions run their commands under a stand-in client without it.
    monkeypatch.setenv("GTD_NO_SESSION", "1")
    before = sorted(p.name for p in home.iterdir())
    yield
    after = sorted(p.name for p in home.iterdir())
    assert after == before, f"test wrote to HOME: {sorted(set(after) - set(before))}"


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    with isolated_home(tmp_path_factory, monkeypatch):
        yield


@contextlib.contextmanager
def shared_outcome_home(factory: pytest.TempPathFactory) -> Iterator[None]:
    """The environment each test gets (`isolated_home`), for a module- or
    class-scoped fixture: one that runs a cycle once for several tests, each
    asserting its part of the one outcome. Such a fixture is set up before any
    test's own environment, so without this its `gtd` commands would see the
    real HOME and caches, and its project would not be the tests' template."""
    with pytest.MonkeyPatch.context() as monkeypatch, isolated_home(factory, monkeypatch):
        yield


def run_wide_dir(factory: pytest.TempPathFactory, name: str) -> Path:
    """``name`` in a folder every test process of this run sees: under xdist each
    worker's base temporary folder is inside the run's own (pytest keeps the last
    few runs' and removes older ones); alone, the session's base itself."""
    base = factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class Repo:
    path: Path

    def git(self, *args: str, check: bool = True) -> str:
        res = subprocess.run(["git", *args], cwd=self.path, capture_output=True, text=True)
        if check and res.returncode != 0:
            raise AssertionError(f"git {args} failed: {res.stderr}")
        return res.stdout

    def write(self, rel: str, text: str) -> Path:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        return target

    def commit_all(self, message: str = "work") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def subjects(self) -> list[str]:
        return self.git("log", "--format=%s").splitlines()

    def status(self) -> str:
        return self.git("status", "--porcelain", "--untracked-files=all")


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    path = tmp_path / "repo"
    path.mkdir()
    r = Repo(path)
    r.git("init", "-q", "-b", "main")
    return r


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)


def run_gtd(
    cwd: Path, *args: str, timeout: float = 300, input_text: str | None = None
) -> CliResult:
    """Run the real `gtd` CLI in a subprocess, exactly as the slash commands do."""
    res = subprocess.run(
        [sys.executable, "-m", "gtd", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input_text,
        env={**os.environ},
    )
    return CliResult(res.returncode, res.stdout, res.stderr)


@pytest.fixture
def gtd() -> Any:
    return run_gtd


def indented_block(text: str) -> str:
    """The first indented (4-space) code block of markdown ``text``, unindented: how
    the docs show output (a fenced block is read as commands by the pack's linter)."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("    "))
    block: list[str] = []
    for line in lines[start:]:
        if line and not line.startswith("    "):
            break
        block.append(line[4:])
    return "\n".join(block).rstrip("\n")
