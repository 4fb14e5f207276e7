"""Protected paths: which files (or sections of files) decide which tests run and
how, why, and their digests. The categories and their words for the agent live in
:mod:`gtd.auto.ratchet.rules`; this module decides which path falls in which.

:func:`protection` answers for a set of repository paths which are protected and
why: every ``conftest.py``, pytest's configuration files, the JavaScript runner
configs, the shared files whose sections govern tests (``pyproject.toml``,
``setup.cfg``, ``tox.ini``, ``package.json``), task-runner files when a command
may run a task runner, files a configured command names, ``PLAN.md`` and
``.deepflow/config.yaml``, the snapshot's test files, and everything under a test
folder. A folder counts as a test folder when it is named ``tests``, ``test``,
``__tests__``, ``testdata`` or ``__snapshots__`` at any depth (the names
:mod:`files` treats as tests; jest, vitest and syrupy keep their snapshots in
``__snapshots__``, often beside the code), or ``testing`` at the top of the
repository only: pytest and other projects keep their suite there, while a
nested ``testing`` package (``numpy/testing``, ``pandas/_testing``...) is
usually product code shipped for users, which an agent must be free to change.

Golden data a project keeps elsewhere (``fixtures/expected.json`` at the top)
is declared with ``ratchet.protect``: gitignore-style patterns
(:func:`declared`), whose files join the snapshot's test files
(gtd.auto.ratchet.baseline_run.snapshot_of) and are held like them.

Digests (:func:`digests`) map a *key* to a sha256:

- a whole file — ``conftest.py``, ``pytest.ini``, ``.pytest.ini``, ``pytest.toml``,
  ``.pytest.toml``, jest/vitest/playwright/cypress configs, ``.mocharc.*``,
  ``karma.conf.*`` (any depth), ``PLAN.md`` and ``.deepflow/config.yaml`` (top
  level) — is keyed by its path. Its digest ignores only the line-ending style
  (CRLF, CR and LF read alike to Python, INI, YAML and JavaScript), so switching
  ``core.autocrlf`` is not a change;
- a shared file yields one key per governing section present, ``<path> <section>``
  (``pyproject.toml [tool.pytest.ini_options]``, ``tox.ini [pytest]``,
  ``package.json scripts``), each digest taken from the parsed value
  (:mod:`sections`), so a verdict says which section changed and an edit outside
  every governing section passes. A file the tool cannot parse is keyed
  ``<path> (unparsable)`` with the whole file's digest: it differs from every
  parsed form;
- task-runner files (``tox.toml``, ``noxfile.py``, ``justfile``/``.justfile``,
  ``Taskfile.yml``, ``tasks.py``, ``hatch.toml`` at the top; ``Makefile``, ``makefile``,
  ``GNUmakefile``, ``*.mk`` at any depth) are whole files, and with them the
  runner sections of shared files (tox's ``[tox]``/``[testenv*]``, ``[tool.tox]``,
  ``[tool.hatch.envs]``, ``[tool.pdm.scripts]``, ``[tool.poe]``, package.json
  ``scripts``), only when some configured command is not *plain*
  (:mod:`invocation` decides; under plain pytest a tox ``envlist`` edit passes);
- a file a configured command names is keyed ``<path> (named in a command)``.

Which snapshot tests a key governs (:func:`governs`): a conftest, a pytest or
JavaScript config file and the pytest or runner sections of a shared file apply
to their own folder and below; everything else (task runners, named files,
unparsable files, PLAN.md and the gtd config) to every test.

Parsers and the command reader are imported on first use: this module is loaded
on every ``cycle begin``, which only digests PLAN.md and the gtd config.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence

from gtd import digest as sha
from gtd.auto.ratchet.rules import WHY, Category
from gtd.paths import CONFIG, PLAN
from gtd.tuples import NamedTuple

OWNED = (PLAN, CONFIG)

CONFTEST = "conftest.py"
PYTEST_FILES = ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml")
JS_CONFIG_PREFIXES = (
    "jest.config.",
    "vitest.config.",
    "vitest.workspace.",
    "playwright.config.",
    "cypress.config.",
    ".mocharc.",
    "karma.conf.",
)
SHARED_FILES = ("pyproject.toml", "setup.cfg", "tox.ini", "package.json")
# Task runners' own files, read from the top of the repository (just reads its file
# in any letter case; Taskfile.yml also as .yaml and .dist.yml)...
RUNNER_FILES_TOP = (
    "tox.toml",
    "noxfile.py",
    "justfile",
    ".justfile",
    "Taskfile.yml",
    "tasks.py",
    "hatch.toml",
)
# ...and make's, at any depth (recursive make, included fragments).
MAKE_FILES = ("Makefile", "makefile", "GNUmakefile")
MAKE_SUFFIX = ".mk"
TEST_DIRS = ("tests", "test", "__tests__", "testdata", "__snapshots__")
TOP_TEST_DIRS = ("testing",)

UNPARSABLE = "(unparsable)"
NAMED = "(named in a command)"

# Caches, virtualenvs and dependencies: never protected, never tests.
CACHE_DIRS_RE = re.compile(
    r"(^|/)(__pycache__|node_modules|\.pytest_cache|\.mypy_cache|\.ruff_cache|\.tox|\.nox"
    r"|\.venv|\.git|\.hypothesis)/"
)

# Sections that apply to their file's folder and below (the rest apply everywhere).
_FOLDER_SECTIONS = frozenset(
    {
        "[pytest]",
        "[tool:pytest]",
        "[tool.pytest]",
        "[tool.pytest.ini_options]",
        "jest",
        "mocha",
        "ava",
    }
)
_PACKAGE_KEYS = frozenset({"jest", "mocha", "ava", "scripts"})


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


# -- paths ----------------------------------------------------------------------------


def is_test_only_config(path: str) -> bool:
    """conftest.py, pytest's configuration files and JS runner configs, at any depth:
    configuration that exists only for tests (a bootstrap cycle may create it)."""
    name = _basename(path)
    return name == CONFTEST or name in PYTEST_FILES or name.startswith(JS_CONFIG_PREFIXES)


def is_protected_path(path: str) -> bool:
    """Protected configuration whatever the commands are: test-only configuration,
    the shared files, PLAN.md and the gtd config. Never a snapshot test file."""
    if path in OWNED:
        return True
    if path.startswith(".deepflow/") or CACHE_DIRS_RE.search(path):
        return False
    return is_test_only_config(path) or _basename(path) in SHARED_FILES


def is_runner_file(path: str) -> bool:
    """A task runner's own file (protected when a command may run a task runner)."""
    if CACHE_DIRS_RE.search(path) or path.startswith(".deepflow/"):
        return False
    name = _basename(path)
    if name in MAKE_FILES or name.endswith(MAKE_SUFFIX):
        return True
    return "/" not in path and _runner_name(name) in RUNNER_FILES_TOP


def _runner_name(name: str) -> str:
    low = name.lower()
    if low in ("justfile", ".justfile"):
        return low
    if _TASKFILE.fullmatch(low):
        return "Taskfile.yml"
    return name


_TASKFILE = re.compile(r"taskfile(\.dist)?\.ya?ml")


def declared(patterns: Sequence[str]) -> Callable[[str], bool]:
    """Whether a repository path is one ``ratchet.protect`` declares: gitignore's
    patterns (pathspec's implementation, imported only where a project declares
    any: ~35 ms of imports), the helper's own files and caches never. Raises
    ValueError for a pattern gitignore cannot read."""
    if not patterns:
        return lambda _: False
    from pathspec import GitIgnoreSpec

    try:
        spec = GitIgnoreSpec.from_lines(patterns)
    except Exception as exc:  # (pathspec's own error kinds differ between versions)
        raise ValueError(str(exc)) from None

    def match(path: str) -> bool:
        if path in OWNED or path.startswith(".deepflow/") or CACHE_DIRS_RE.search(path):
            return False
        return bool(spec.match_file(path))

    return match


def new_paths_declared(
    patterns: Sequence[str], base: Collection[str], now: Iterable[str]
) -> Sequence[str]:
    """The patterns a verdict needs for a candidate whose files are ``now`` over
    a base whose files are ``base``: the base's declared files are the
    snapshot's tests already, so only files the candidate adds are matched —
    none added (a `gtd ratchet run` of the tree as committed), no patterns and
    no pathspec import on the run's path."""
    if not patterns or all(p in base for p in now):
        return ()
    return patterns


def enclosing_test_folder(path: str) -> str | None:
    """The test folder ``path`` is under (the outermost), or None."""
    parts = path.split("/")[:-1]
    if parts and parts[0] in TOP_TEST_DIRS:
        return parts[0]
    for i, part in enumerate(parts):
        if part in TEST_DIRS:
            return "/".join(parts[: i + 1])
    return None


class Protection(NamedTuple):
    """Why one path is protected.

    ``whole``: the whole file is protected (the clean room takes it from the base
    commit); False for a shared file, of which only the governing sections are
    (checked by digest; the rest is the agent's to change).
    """

    category: Category
    whole: bool
    why: str


def protection(
    paths: Iterable[str],
    commands: Sequence[str] | None,
    snapshot_tests: Collection[str] = (),
    patterns: Sequence[str] = (),
) -> dict[str, Protection]:
    """The protected paths among ``paths`` (repository-relative), and why.

    ``commands`` are the configured commands (build, test, typecheck, lint; None
    when unknown, which protects the most); ``snapshot_tests`` the snapshot's test
    files (the existing files ``patterns`` declares among them); ``patterns``:
    ``ratchet.protect``'s, whose new files the snapshot's tests are judged
    without, as without new files under a test folder. The one answer to "which
    files must come from the base commit".
    """
    from gtd.auto.ratchet import invocation

    seen = invocation.read(commands)
    named = named_paths(seen.named)
    golden = declared(patterns)
    out: dict[str, Protection] = {}
    for path in paths:
        category = _category(path, seen.plain, named, snapshot_tests, golden)
        if category is not None:
            out[path] = Protection(category, category != "shared-config", WHY[category])
    return out


def _category(
    path: str,
    plain: bool,
    named: Collection[str],
    snapshot_tests: Collection[str],
    golden: Callable[[str], bool] = lambda _: False,
) -> Category | None:
    if path in OWNED:
        return "plan"
    if path.startswith(".deepflow/") or CACHE_DIRS_RE.search(path):
        return None
    name = _basename(path)
    if path in snapshot_tests:
        return "snapshot-test"
    if name == CONFTEST:
        return "conftest"
    if name in PYTEST_FILES:
        return "pytest-config"
    if name.startswith(JS_CONFIG_PREFIXES):
        return "js-config"
    if path in named:
        return "named"
    if enclosing_test_folder(path) is not None:
        return "test-folder"
    if golden(path):
        return "declared"
    if not plain and is_runner_file(path):
        return "task-runner"
    if name in SHARED_FILES:
        return "shared-config"
    return None


def named_paths(words: Iterable[str]) -> frozenset[str]:
    """The repository paths among the words a command names (``sh ci/run.sh``)."""
    from gtd.auto.ratchet.invocation import repo_path

    return frozenset(p for p in map(repo_path, words) if p is not None)


# -- digests --------------------------------------------------------------------------


def digest(path: str, data: bytes) -> str:
    """sha256 of a whole protected file, line endings read alike (``path`` is
    unused: every whole file digests the same way)."""
    del path
    return sha.sha256(data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")).hexdigest()


def digests(path: str, data: bytes, *, plain: bool = False) -> dict[str, str]:
    """Key → digest for the file at ``path`` with content ``data``: one key for a
    whole file, one per governing section of a shared file (none when it has
    none), ``<path> (unparsable)`` for a shared file its tool cannot read. ``plain``:
    every configured command is plain (task runners' parts are then not protected)."""
    if path in OWNED or is_test_only_config(path):
        return {path: digest(path, data)}
    if not plain and is_runner_file(path):
        return {path: digest(path, data)}
    from gtd.auto.ratchet import sections

    reader = sections.READERS.get(_basename(path))
    if reader is None:
        return {}
    parts = reader(data, not plain)
    if parts is None:
        return {f"{path} {UNPARSABLE}": digest(path, data)}
    return {
        f"{path} {section}": sha.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        for section, text in parts.items()
    }


# -- keys -----------------------------------------------------------------------------


def split_key(key: str) -> tuple[str, str | None]:
    """(path, section) of a digest key; section None for a whole file."""
    for suffix in (UNPARSABLE, NAMED):
        if key.endswith(" " + suffix):
            return key[: -len(suffix) - 1], suffix
    if key.endswith("]"):
        head, sep, tail = key.rpartition(" [")
        if sep and _basename(head) in SHARED_FILES:
            return head, "[" + tail
    head, sep, tail = key.rpartition(" ")
    if sep and tail in _PACKAGE_KEYS and _basename(head) == "package.json":
        return head, tail
    return key, None


def governs(key: str, test_path: str) -> bool:
    """Whether the protected part keyed ``key`` can affect ``test_path``: pytest,
    jest and friends apply a config to its own folder and everything below; task
    runners, files a command names and unparsable files may affect every test."""
    path, section = split_key(key)
    folder_scoped = (section is None and is_test_only_config(path)) or (section in _FOLDER_SECTIONS)
    if not folder_scoped:
        return True
    folder = path.rpartition("/")[0]
    return not folder or test_path.startswith(folder + "/")
