"""Protected configuration digests: only the part that governs tests counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.auto.ratchet.protect import digest, discover, governs, is_protected_path

PYPROJECT = """\
[project]
name = "demo"
dependencies = ["requests"]

[tool.pytest.ini_options]
addopts = "-q"
markers = [
  "slow: slow tests",
]

[tool.ruff]
line-length = 100
"""


def d(path: str, text: str) -> str:
    return digest(path, text.encode())


@pytest.mark.parametrize(
    ("path", "before", "after", "same"),
    [
        pytest.param(
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace('"requests"', '"requests", "rich"'),
            True,
            id="pyproject-dependency-edit-passes",
        ),
        pytest.param(
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace("line-length = 100", "line-length = 80"),
            True,
            id="pyproject-other-tool-edit-passes",
        ),
        pytest.param(
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace('addopts = "-q"', 'addopts = "-q"  \n# a comment\n'),
            True,
            id="pyproject-whitespace-and-comments-pass",
        ),
        pytest.param(
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace('addopts = "-q"', 'addopts = "-q --deselect tests/test_a.py"'),
            False,
            id="pyproject-addopts-edit-caught",
        ),
        pytest.param(
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace('  "slow: slow tests",', '  "slow: slow tests",\n  "x: y",'),
            False,
            id="pyproject-multiline-array-caught",
        ),
        pytest.param(
            "pyproject.toml",
            '[project]\nname = "x"\n',
            '[project]\nname = "x"\n[tool]\npytest.ini_options = { addopts = "-k not_slow" }\n',
            False,
            id="pyproject-dotted-key-caught",
        ),
        pytest.param(
            "pyproject.toml",
            '[project]\nname = "x"\n',
            '[project]\nname = "x"\n[tool.pytest]\naddopts = ["-x"]\n',
            False,
            id="pyproject-section-added-caught",
        ),
        pytest.param(
            "setup.cfg",
            "[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n",
            "[metadata]\nname = y\n[tool:pytest]\naddopts = -q\n",
            True,
            id="setup-cfg-metadata-edit-passes",
        ),
        pytest.param(
            "setup.cfg",
            "[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n",
            "[metadata]\nname = x\n[tool:pytest]\naddopts = -q -k fast\n",
            False,
            id="setup-cfg-pytest-edit-caught",
        ),
        pytest.param(
            "package.json",
            '{"name": "x", "dependencies": {"a": "1"}, "scripts": {"test": "jest"}}',
            '{"name": "x", "dependencies": {"a": "2"}, "scripts": {"test": "jest"}}',
            True,
            id="package-json-dependency-edit-passes",
        ),
        pytest.param(
            "package.json",
            '{"scripts": {"test": "jest"}}',
            '{\n  "scripts": {\n    "test": "jest"\n  }\n}\n',
            True,
            id="package-json-reformat-passes",
        ),
        pytest.param(
            "package.json",
            '{"scripts": {"test": "jest"}}',
            '{"scripts": {"test": "jest --passWithNoTests -t nothing"}}',
            False,
            id="package-json-test-script-caught",
        ),
        pytest.param(
            "package.json",
            '{"scripts": {"test": "jest"}}',
            '{"scripts": {"test": "jest"}, "jest": {"testPathIgnorePatterns": ["api"]}}',
            False,
            id="package-json-jest-key-caught",
        ),
        pytest.param(
            "package.json",
            '{"scripts": {"test": "jest"}}',
            '{"scripts": {"test": "jest"},',
            False,
            id="package-json-broken-caught",
        ),
        pytest.param("conftest.py", "import os\n", "import os\n\n", False, id="conftest-whole"),
        pytest.param("tox.ini", "[tox]\n", "[tox]\n\n", False, id="tox-whole"),
        pytest.param("PLAN.md", "# Plan\n", "# Plan!\n", False, id="plan-whole"),
    ],
)
def test_digest_changes_only_with_the_governing_part(
    path: str, before: str, after: str, same: bool
) -> None:
    assert (d(path, before) == d(path, after)) is same


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("pyproject.toml", '[project]\nname = "x"\n'),
        ("setup.cfg", "[metadata]\nname = x\n"),
        ("package.json", '{"name": "x"}'),
    ],
)
def test_no_governing_part_digests_to_empty(path: str, text: str) -> None:
    assert d(path, text) == ""


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("conftest.py", True),
        ("tests/unit/conftest.py", True),
        ("pytest.ini", True),
        ("web/jest.config.ts", True),
        ("vitest.config.mjs", True),
        (".mocharc.json", True),
        ("karma.conf.js", True),
        ("pyproject.toml", True),
        ("PLAN.md", True),
        (".deepflow/config.yaml", True),
        ("docs/PLAN.md", False),
        (".deepflow/auto-memory.yaml", False),
        ("node_modules/pkg/package.json", False),
        ("src/app.py", False),
    ],
)
def test_is_protected_path(path: str, expected: bool) -> None:
    assert is_protected_path(path) is expected


@pytest.mark.parametrize(
    ("config", "test", "expected"),
    [
        ("conftest.py", "tests/test_a.py", True),
        ("tests/conftest.py", "tests/test_a.py", True),
        ("tests/new/conftest.py", "tests/test_a.py", False),
        ("tests/new/conftest.py", "tests/new/test_b.py", True),
        ("tests/ne/conftest.py", "tests/new/test_b.py", False),
    ],
)
def test_governs(config: str, test: str, expected: bool) -> None:
    assert governs(config, test) is expected


def test_discover_reads_listed_and_top_level_files(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not listed: say git-ignored
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text("")
    (tmp_path / ".deepflow").mkdir()
    (tmp_path / ".deepflow" / "config.yaml").write_text("{}\n")
    found = discover(tmp_path, ["tests/conftest.py", "tests/gone/conftest.py", "src/app.py"])
    assert sorted(found) == [
        ".deepflow/config.yaml",
        "pyproject.toml",
        "pytest.ini",
        "tests/conftest.py",
    ]
    assert found["pyproject.toml"] == ""
    assert found["pytest.ini"] == d("pytest.ini", "[pytest]\n")
