"""Test files: which paths are tests. Pure (paths in, answers out); listing the
working tree is gtd.git.Git.listing's.

The pattern is deepflow's ``git ls-files | grep -E`` line, widened where deepflow
misses common layouts (it anchors ``test_`` and ``tests/`` at the top level only):

- ``*.test.*``, ``*.spec.*``            (JS/TS: foo.test.ts, foo.spec.js)
- ``test_*`` anywhere, ``*_test.*``     (pytest, Go: foo_test.go)
- ``*_spec.*``                          (RSpec: user_spec.rb)
- anything under a ``tests/``, ``test/``, ``__tests__/``, ``testdata/`` (Go) or
  ``__snapshots__/`` (jest, vitest, syrupy) folder at any depth, or a ``testing/``
  folder at the top (the test folders of gtd.auto.ratchet.protect), fixtures and
  helpers included: they decide what the tests check.

Never tests: helper state in ``.deepflow/``, caches and build output (a
``__pycache__`` file changes on every run and would fail the check), and protected
configuration (``conftest.py``, ``tests/pytest.ini``...), which gtd.auto.ratchet.protect
digests instead, so a reason says "protected test config", not "snapshot test".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gtd.auto.ratchet import protect

TEST_FILE_RE = re.compile(
    r"\.(test|spec)\.[^/]+$"
    r"|(^|/)test_[^/]*$"
    r"|_(test|spec)\.[^/]+$"
    r"|(^|/)(tests?|__tests__|testdata|__snapshots__)/"
    r"|^testing/"
)
_HELPER_OR_BYTECODE_RE = re.compile(r"^\.deepflow/|\.py[co]$")


def is_test_file(path: str) -> bool:
    """Whether the repository-relative ``path`` is a test file the snapshot holds."""
    return (
        TEST_FILE_RE.search(path) is not None
        and not is_skipped(path)
        and not protect.is_protected_path(path)
    )


def is_test_path(path: str) -> bool:
    """A test file or test-only configuration (conftest.py, pytest.ini, jest.config.js):
    what a bootstrap cycle may create. Shared project files (pyproject.toml,
    package.json, setup.cfg), PLAN.md and the gtd config are not test paths."""
    return is_test_file(path) or (not is_skipped(path) and protect.is_test_only_config(path))


def is_skipped(path: str) -> bool:
    """Caches, build output and helper state: never protected, never tests."""
    return (
        _HELPER_OR_BYTECODE_RE.search(path) is not None
        or protect.CACHE_DIRS_RE.search(path) is not None
    )


def test_files(paths: Iterable[str]) -> list[str]:
    return sorted(p for p in paths if is_test_file(p))
