"""Which paths are test files (the snapshot) and which are test paths (bootstrap)."""

from __future__ import annotations

import pytest

from gtd.auto.ratchet.files import is_test_file, is_test_path


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_api.py", True),
        ("tests/helpers.py", True),  # under tests/: fixtures and helpers count
        ("tests/data/sample.json", True),
        ("test_top.py", True),
        ("pkg/test_inner.py", True),  # deepflow anchors test_ at the top; we do not
        ("pkg/tests/test_x.py", True),
        ("test/unit.js", True),
        ("src/api.test.ts", True),
        ("src/api.spec.js", True),
        ("src/__tests__/api.js", True),
        ("pkg/server_test.go", True),
        ("pkg/testdata/golden.txt", True),
        ("src/components/__snapshots__/Button.test.js.snap", True),  # jest, beside the code
        ("pkg/__snapshots__/label.txt", True),
        ("spec/models/user_spec.rb", True),
        ("src/api.py", False),
        ("src/contest.py", False),
        ("src/latest.py", False),
        ("docs/testing.md", False),
        ("testing/helpers.py", True),  # pytest's own layout: the suite at the top
        ("numpy/testing/utils.py", False),  # a nested testing package is product code
        ("tests/conftest.py", False),  # protected config, not a test
        ("conftest.py", False),
        ("tests/pytest.ini", False),
        ("test/.mocharc.yml", False),
        ("tests/__pycache__/test_api.cpython-311.pyc", False),
        ("node_modules/x/tests/a.js", False),
        (".deepflow/tests/x", False),
        ("tests/.pytest_cache/v/cache", False),
    ],
)
def test_is_test_file(path: str, expected: bool) -> None:
    assert is_test_file(path) is expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_api.py", True),
        ("conftest.py", True),
        ("tests/conftest.py", True),
        ("pytest.ini", True),
        ("jest.config.js", True),
        ("pyproject.toml", False),
        ("package.json", False),
        ("PLAN.md", False),
        (".deepflow/config.yaml", False),
        ("src/app.py", False),
    ],
)
def test_is_test_path(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected
