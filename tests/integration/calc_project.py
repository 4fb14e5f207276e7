"""A small calculator project with a real pytest suite: the sample repository the
auto-mode integration tests run cycles in."""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from filelock import FileLock

from tests.conftest import PER_TEST_VARIABLES, CliResult, Repo, run_gtd

# The sample project's own suite needs no plugin: the development environment's
# (hypothesis, xdist) are kept out, as a project that does not use them has none.
# Loading them took four fifths of each of the many inner runs.
PYTEST = (
    f"{sys.executable} -m pytest -q -p no:cacheprovider"
    " -p no:hypothesispytest -p no:xdist -p no:xdist.looponfail"
)

CALC = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from calc import add\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_add_negative():\n    assert add(-1, 1) == 0\n"
)
PLAN = """\
# Calculator

### spec-calc

- [ ] **T1**: Add mul
  - Files: calc.py, tests/test_mul.py
  - Blocked by: none
- [ ] **T2**: Add div
  - Files: calc.py
  - Blocked by: T1
- [ ] **T3** [SPIKE]: Try a parser
  - Files: parse.py
  - Blocked by: none
"""
MUL = CALC + "\n\ndef mul(a, b):\n    return a * b\n"
MUL_TEST = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"


CONFTEST = "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n"

# A setup.py for the calculator, and the step of setuptools that `pip install -e .`
# runs: a project whose install writes (or rewrites) calc.egg-info/.
SETUP_PY = (
    "from setuptools import setup\n\nsetup(name='calc', version='0.1', py_modules=['calc'])\n"
)


def egg_info(repo: Repo) -> None:
    """setuptools' own step, the one `pip install -e .` runs: it writes calc.egg-info/."""
    done = subprocess.run(
        [sys.executable, "setup.py", "-q", "egg_info"], cwd=repo.path, capture_output=True
    )
    assert done.returncode == 0, done.stderr


def make_project(
    repo: Repo,
    *,
    plan: str = PLAN,
    tests: bool = True,
    conftest: bool = True,
    config_extra: str = "",
    rerun_failures: int | None = 0,
) -> Repo:
    """The project, committed and set up for auto mode (`gtd auto setup` must
    answer ready), in ``repo``.

    The real set-up (with its baseline run) happens once per test run for each
    kind of project, in a template repository that every test process of the run
    sees (see `share_templates`): the first process to need it builds it under a
    lock, the others wait for it; every test then gets a copy of it. The copy is
    the repository setup left, byte for byte: the sealed state lives in its refs,
    and the rooms in the test's own cache folder are built anew.

    ``rerun_failures`` is 0 unless a test asks for another count (None: the
    default users get, 2). A revert under the default runs each failing test
    again twice, alone, to tell a flake from a failure: two more inner pytest
    runs (~0.3 s of CPU each) in every reverted cycle of the suite, for a
    behaviour tests/integration/test_flaky.py (and the red team's
    test_reruns.py, on a project of its own) holds with the default count."""
    present = _files(repo.path)  # what the test wrote first is part of the project
    if rerun_failures is not None:
        config_extra = f"  rerun_failures: {rerun_failures}\n{config_extra}"
    key = (plan, tests, conftest, config_extra, present, _environment())
    built = _TEMPLATES.get(key)
    if built is None:
        # The same name in every test process: the key's text, hashed.
        folder = _template_root() / hashlib.sha256(repr(key).encode()).hexdigest()[:24]
        template = folder / "repo"
        with FileLock(f"{folder}.lock"):
            if not (folder / "built").exists():
                shutil.rmtree(folder, ignore_errors=True)  # a set-up that failed
                template.mkdir(parents=True)
                for rel, data in present:
                    (template / rel).parent.mkdir(parents=True, exist_ok=True)
                    (template / rel).write_bytes(data)
                _set_up(Repo(template), plan, tests, conftest, config_extra, folder / "state")
                (folder / "home").write_text(os.path.expanduser("~"))
                (folder / "built").touch()
        built = _TEMPLATES[key] = (template, _registered(template, folder / "state"))
    template, registered = built
    shutil.rmtree(repo.path)
    shutil.copytree(template, repo.path, symlinks=True)
    if registered:
        # What set-up leaves outside the repository too: the copy in this test's
        # list of repositories carrying the sandbox block (XDG_STATE_HOME).
        from gtd.auto import sandbox

        sandbox._register(repo.path, True)
        _relocate(repo.path, template, (template.parent / "home").read_text())
    return repo


def _relocate(copy: Path, template: Path, home: str) -> None:
    """Set-up's sandbox block names absolute paths: the template's folder and
    the home of the test that built it. The copy's names its own, as a set-up
    in its place would."""
    from gtd import paths
    from gtd.auto import sandbox

    moves = [
        (os.path.realpath(template), os.path.realpath(copy)),
        (home, os.path.expanduser("~")),
    ]
    for path in (copy / sandbox.SETTINGS, copy / ".git" / paths.PRIVATE_DIR / sandbox.RECORD):
        if path.is_file():
            text = path.read_text()
            for old, new in moves:
                text = text.replace(old, new)
            path.write_text(text)


def _set_up(
    repo: Repo, plan: str, tests: bool, conftest: bool, config_extra: str, state: Path
) -> None:
    repo.git("init", "-q", "-b", "main")
    repo.write("calc.py", CALC)
    if tests:
        repo.write("tests/test_calc.py", TESTS)
    if conftest:
        repo.write("conftest.py", CONFTEST)
    repo.write("PLAN.md", plan)
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {PYTEST}\n{config_extra}")
    repo.commit_all("initial")
    # The template's own state folder: the test that happens to build it keeps
    # its own list of sandboxed repositories (each copy is added to its test's).
    env = {"XDG_STATE_HOME": str(state)}
    res = run_cli(repo, "auto", "setup", "--json", env=env)
    while res.code == 0 and res.json["status"] == "checking":  # a baseline longer than the wait
        time.sleep(0.3)
        res = run_cli(repo, "auto", "setup", "--json", env=env)
    assert res.code == 0, res.stderr
    assert res.json["status"] == "ready", res.json


def _registered(template: Path, state: Path) -> bool:
    """Whether set-up put ``template`` on the user's list of sandboxed repositories."""
    try:
        listed = json.loads((state / "gtd" / "sandboxed.json").read_text())
    except (OSError, ValueError):
        return False
    return os.path.realpath(template) in listed


# Template repositories this test process has used, by what they were made from,
# and whether set-up listed them as sandboxed.
_TEMPLATES: dict[tuple[object, ...], tuple[Path, bool]] = {}
# What differs from one test (or test process) to the next and never reaches a
# project's set-up: the variables tests/conftest.py gives each test (HOME, git
# config, the rooms' cache folder, the state folder, inner pytest runs' temporary
# folders) and pytest's and xdist's bookkeeping.
_PER_TEST = PER_TEST_VARIABLES | {"PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER"}


def _files(root: Path) -> tuple[tuple[str, bytes], ...]:
    return tuple(
        (p.relative_to(root).as_posix(), p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    )


def _environment() -> tuple[tuple[str, str], ...]:
    """The environment a set-up runs in: a test that changes it gets its own template."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if k not in _PER_TEST))


_SHARED: list[Path] = []


def share_templates(folder: Path) -> None:
    """Keep the templates in ``folder``, which every test process of the run sees
    (tests/integration/conftest.py passes the run's own temporary folder)."""
    _SHARED[:] = [folder]


@functools.cache
def _own_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="gtd-calc-templates-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


def _template_root() -> Path:
    return _SHARED[0] if _SHARED else _own_root()


def gtd_json(repo: Repo, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    res = run_cli(repo, *args, "--json", env=env)
    assert res.code == 0, res.stderr
    data = res.json
    assert isinstance(data, dict)
    return data


def run_cli(repo: Repo, *args: str, env: dict[str, str] | None = None) -> CliResult:
    if env is None:
        return run_gtd(repo.path, *args)
    proc = subprocess.run(
        [sys.executable, "-m", "gtd", *args],
        cwd=repo.path,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)
