"""The demo's throwaway repository: the sample project (package data in
gtd/demo/sample) copied into a fresh directory, committed, with the test command
set to a Python that has pytest.

It is made outside any git repository, so `gtd demo` cannot touch the repository
it was started from.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from pathlib import Path

from gtd import proc
from gtd.errors import GtdError
from gtd.fsio import atomic_write
from gtd.git import Git
from gtd.paths import CONFIG, PLAN
from gtd.tuples import NamedTuple

SAMPLE_DIR = Path(__file__).resolve().parent / "sample"
# Files whose shipped name differs from their name in the repository: a dotfile in
# package data is easy to lose (build tools skip some), so it ships without the dot.
RENAMED = {"gitignore": ".gitignore"}
BRANCH = "main"
IDENTITY = {"user.name": "gtd demo", "user.email": "demo@gtd.invalid"}

# The variables by which git finds a repository other than the one in the working
# directory (git's own list, `git rev-parse --local-env-vars`): a demo started from
# a git hook or an alias must not inherit them.
LOCAL_REPO_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_CONFIG",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_DIR",
    "GIT_GRAFT_FILE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_OBJECT_DIRECTORY",
    "GIT_PREFIX",
    "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE",
    "GIT_WORK_TREE",
)


class Project(NamedTuple):
    root: Path
    python: str  # the interpreter the sample's tests run with


def sample_files() -> dict[str, str]:
    """The sample project: repository path -> text (PLAN.md included)."""
    out: dict[str, str] = {}
    for path in sorted(SAMPLE_DIR.rglob("*")):
        rel = path.relative_to(SAMPLE_DIR)
        if not path.is_file() or "__pycache__" in rel.parts:
            continue
        name = RENAMED.get(rel.name, rel.name)
        out[rel.with_name(name).as_posix()] = path.read_text(encoding="utf-8")
    if PLAN not in out:
        raise GtdError(
            f"the demo's sample project is missing from {SAMPLE_DIR}",
            "reinstall the gtd pack (python3 install.py)",
        )
    return out


def pytest_python() -> str:
    """An interpreter that can run pytest: this one, else `python3` (or `python`) on
    PATH, named by its real path — a version manager's shim costs seconds on every
    one of the night's test runs."""
    import importlib.util

    if importlib.util.find_spec("pytest") is not None:
        return sys.executable
    probe = "import sys, pytest; print(sys.executable)"
    for name in ("python3", "python"):
        res = proc.run([name, "-c", probe], Path.cwd(), timeout=60)
        found = res.stdout.strip()
        if res.ok and found:
            return found
    raise GtdError(
        "the demo runs the sample project's real pytest suite, and no Python here has pytest",
        f"install it (`{sys.executable} -m pip install pytest`, or `python3 -m pip install "
        "--user pytest`), then run `gtd demo` again",
    )


def choose_dir(keep: Path | None) -> Path:
    """``keep`` when it is new or empty, else a fresh temporary directory (made
    here). Refused inside a git repository: the demo makes a repository of its own."""
    if keep is not None:
        path = Path(os.path.abspath(keep))
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise GtdError(
                f"--keep {keep}: exists and is not an empty directory",
                "name a new directory (the demo makes its repository there)",
            )
        _outside_any_repository(path)
        return path
    base = Path(tempfile.mkdtemp(prefix="gtd-demo-"))
    try:
        _outside_any_repository(base)
    except GtdError:
        base.rmdir()
        raise
    return base / "cart"


def _outside_any_repository(path: Path) -> None:
    probe = path
    while not probe.exists():
        probe = probe.parent
    res = Git(probe).call("rev-parse", "--show-toplevel")  # no git: GitError says so
    if res.ok:
        raise GtdError(
            f"{path} is inside the git repository {res.stdout.strip()}",
            "choose a directory outside any repository with --keep DIR",
        )


def make(keep: Path | None) -> Project:
    """Write the sample into a new repository and commit it on ``main``; then write
    PLAN.md and the config (the test command), uncommitted, as a person would
    before `gtd auto setup`. Nothing is written before every check has passed."""
    python = pytest_python()
    sample = sample_files()
    plan = sample.pop(PLAN)
    root = choose_dir(keep)
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in sample.items():
        atomic_write(root / rel, text)
    git = Git(root)
    git.run("init", "-q")
    git.run("symbolic-ref", "HEAD", f"refs/heads/{BRANCH}")  # whatever init.defaultBranch says
    # The demo's commits carry the demo's name, and never ask for a signing key.
    for key, value in {**IDENTITY, "commit.gpgsign": "false"}.items():
        git.run("config", key, value)
    git.run("add", "-A")
    # --no-verify: a person's global hooks are for their own repositories.
    git.run("commit", "-q", "--no-verify", "-m", "cart: the sample project of gtd demo")
    atomic_write(root / PLAN, plan)
    command = f"{shlex.quote(python)} -m pytest -q -p no:cacheprovider"
    atomic_write(root / CONFIG, f"ratchet:\n  test_command: {command}\n")
    return Project(root, python)
