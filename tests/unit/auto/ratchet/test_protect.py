"""Protected paths and their digests: parsed the way the tools parse them, one key
per governing section, whole files line-ending blind, task runners only when a
command may run one."""

from __future__ import annotations

import pytest

from gtd.auto.ratchet.protect import (
    Protection,
    declared,
    digest,
    digests,
    enclosing_test_folder,
    governs,
    is_protected_path,
    is_runner_file,
    protection,
    split_key,
)

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

TOX_INI = """\
[tox]
envlist = py311, py312

[testenv]
deps = pytest
commands = pytest {posargs}

[testenv:lint]
commands = ruff check .

[pytest]
addopts = -q

[flake8]
max-line-length = 100
"""

PLAIN = ["pytest -q"]
TOX = ["tox -e py311"]


def keys(path: str, text: str, *, plain: bool = False) -> dict[str, str]:
    return digests(path, text.encode(), plain=plain)


def changed(path: str, before: str, after: str, *, plain: bool = False) -> list[str]:
    """The keys whose digest differs (or that appear or vanish)."""
    old, new = keys(path, before, plain=plain), keys(path, after, plain=plain)
    return sorted(k for k in {*old, *new} if old.get(k) != new.get(k))


# -- which section changed ------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "before", "after", "plain", "expected"),
    [
        pytest.param(
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace('"requests"', '"requests", "rich"'),
            True,
            [],
            id="pyproject-dependency-edit-passes",
        ),
        pytest.param(
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace("line-length = 100", "line-length = 80"),
            True,
            [],
            id="pyproject-other-tool-edit-passes",
        ),
        pytest.param(
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace('addopts = "-q"', "addopts = '-q'  # quiet\n\n# a comment"),
            True,
            [],
            id="pyproject-quoting-and-comments-pass",
        ),
        pytest.param(
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace('addopts = "-q"', 'addopts = "-q --deselect tests/test_a.py"'),
            True,
            ["pyproject.toml [tool.pytest.ini_options]"],
            id="pyproject-addopts-edit-caught",
        ),
        pytest.param(
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace('  "slow: slow tests",', '  "slow: slow tests",\n  "x: y",'),
            True,
            ["pyproject.toml [tool.pytest.ini_options]"],
            id="pyproject-multiline-array-caught",
        ),
        pytest.param(
            "pyproject.toml",
            '[project]\nname = "x"\n',
            '[project]\nname = "x"\n[tool]\npytest.ini_options = { addopts = "-k not_slow" }\n',
            True,
            ["pyproject.toml [tool.pytest.ini_options]"],
            id="pyproject-dotted-key-caught",
        ),
        pytest.param(
            "pyproject.toml",
            '[project]\nname = "x"\n',
            '[project]\nname = "x"\n[tool.pytest]\naddopts = ["-x"]\n',
            True,
            ["pyproject.toml [tool.pytest]"],
            id="pyproject-native-table-added-caught",
        ),
        pytest.param(
            "pyproject.toml",
            PYPROJECT,
            # The attack a line-based reader missed: U+2028 is a line break to
            # str.splitlines, so "[tool.ruff]" looked like a new table; to TOML it
            # is the rest of a comment, and addopts is still pytest's.
            PYPROJECT.replace(
                'addopts = "-q"', '# note\u2028[tool.ruff]\naddopts = "-q -k nothing"'
            ),
            True,
            ["pyproject.toml [tool.pytest.ini_options]"],
            id="pyproject-u2028-in-comment-caught",
        ),
        pytest.param(
            "pyproject.toml",
            PYPROJECT + '\n[tool.tox]\nenv_list = ["py311"]\n',
            PYPROJECT + '\n[tool.tox]\nenv_list = ["py311", "py312"]\n',
            True,
            [],
            id="pyproject-tool-tox-free-under-plain-pytest",
        ),
        pytest.param(
            "pyproject.toml",
            PYPROJECT + '\n[tool.tox]\nenv_list = ["py311"]\n',
            PYPROJECT + '\n[tool.tox]\nenv_list = ["py311", "py312"]\n',
            False,
            ["pyproject.toml [tool.tox]"],
            id="pyproject-tool-tox-caught-under-tox",
        ),
        pytest.param(
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace("[project]", "[project\n"),
            True,
            ["pyproject.toml (unparsable)", "pyproject.toml [tool.pytest.ini_options]"],
            id="pyproject-broken-is-unparsable",
        ),
        pytest.param(
            "tox.ini",
            TOX_INI,
            TOX_INI.replace("envlist = py311, py312", "envlist = py311"),
            True,
            [],
            id="tox-envlist-free-under-plain-pytest",
        ),
        pytest.param(
            "tox.ini",
            TOX_INI,
            TOX_INI.replace("envlist = py311, py312", "envlist = py311"),
            False,
            ["tox.ini [tox]"],
            id="tox-envlist-caught-under-tox",
        ),
        pytest.param(
            "tox.ini",
            TOX_INI,
            TOX_INI.replace("commands = ruff check .", "commands = true"),
            False,
            ["tox.ini [testenv:lint]"],
            id="tox-env-section-caught-under-tox",
        ),
        pytest.param(
            "tox.ini",
            TOX_INI,
            TOX_INI.replace("addopts = -q", "addopts = -q -k nothing"),
            True,
            ["tox.ini [pytest]"],
            id="tox-pytest-section-always-caught",
        ),
        pytest.param(
            "tox.ini",
            TOX_INI,
            TOX_INI.replace("max-line-length = 100", "max-line-length = 120"),
            False,
            [],
            id="tox-flake8-section-free-even-under-tox",
        ),
        pytest.param(
            "tox.ini",
            TOX_INI,
            # iniconfig (pytest) splits lines at U+2028: this is a new key to pytest.
            TOX_INI.replace("addopts = -q", "addopts = -q\n# note\u2028timeout = 1"),
            True,
            ["tox.ini [pytest]"],
            id="tox-u2028-new-key-to-pytest-caught",
        ),
        pytest.param(
            "tox.ini",
            TOX_INI + "[helpers]\nargs = -x\n",
            TOX_INI.replace("{posargs}", "{[helpers]args}") + "[helpers]\nargs = -k nothing\n",
            False,
            ["tox.ini [helpers]", "tox.ini [testenv]"],
            id="tox-substituted-section-followed",
        ),
        pytest.param(
            "setup.cfg",
            "[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n",
            "[metadata]\nname = y\n[tool:pytest]\naddopts = -q\n",
            True,
            [],
            id="setup-cfg-metadata-edit-passes",
        ),
        pytest.param(
            "setup.cfg",
            "[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n",
            "[metadata]\nname = x\n[tool:pytest]\naddopts = -q -k fast\n",
            True,
            ["setup.cfg [tool:pytest]"],
            id="setup-cfg-pytest-edit-caught",
        ),
        pytest.param(
            "setup.cfg",
            "[tool:pytest]\naddopts = -q\n[tox:tox]\nenvlist = py311\n",
            "[tool:pytest]\naddopts = -q\n[tox:tox]\nenvlist = py312\n",
            False,
            ["setup.cfg [tox:tox]"],
            id="setup-cfg-tox-caught-under-tox",
        ),
        pytest.param(
            "package.json",
            '{"name": "x", "dependencies": {"a": "1"}, "scripts": {"test": "jest"}}',
            '{"name": "x", "dependencies": {"a": "2"}, "scripts": {"test": "jest"}}',
            False,
            [],
            id="package-json-dependency-edit-passes",
        ),
        pytest.param(
            "package.json",
            '{"scripts": {"test": "jest"}}',
            '\ufeff{\n  "scripts": {\n    "test": "jest"\n  }\n}\n',
            False,
            [],
            id="package-json-reformat-and-bom-pass",
        ),
        pytest.param(
            "package.json",
            '{"scripts": {"test": "jest"}}',
            '{"scripts": {"test": "jest --passWithNoTests -t nothing"}}',
            False,
            ["package.json scripts"],
            id="package-json-test-script-caught",
        ),
        pytest.param(
            "package.json",
            '{"scripts": {"test": "jest"}}',
            '{"scripts": {"test": "jest --passWithNoTests -t nothing"}}',
            True,
            [],
            id="package-json-scripts-free-under-plain-pytest",
        ),
        pytest.param(
            "package.json",
            '{"scripts": {"test": "jest"}}',
            '{"scripts": {"test": "jest"}, "jest": {"testPathIgnorePatterns": ["api"]}}',
            True,
            ["package.json jest"],
            id="package-json-jest-key-always-caught",
        ),
        pytest.param(
            "package.json",
            '{"jest": {"bail": 1}}',
            '{"jest": {"bail": NaN}}',
            True,
            ["package.json (unparsable)", "package.json jest"],
            id="package-json-nan-is-not-json",
        ),
        pytest.param(
            "conftest.py", "import os\n", "import os\n\n", True, ["conftest.py"], id="conftest"
        ),
        pytest.param(
            "pkg/pytest.toml", "[pytest]\n", "[pytest]\n\n", True, ["pkg/pytest.toml"], id="toml"
        ),
        pytest.param("PLAN.md", "# Plan\n", "# Plan!\n", True, ["PLAN.md"], id="plan-whole"),
        pytest.param("Makefile", "a:\n", "b:\n", True, [], id="makefile-free-under-plain"),
        pytest.param("Makefile", "a:\n", "b:\n", False, ["Makefile"], id="makefile-under-make"),
        pytest.param("noxfile.py", "1\n", "2\n", False, ["noxfile.py"], id="noxfile-under-nox"),
    ],
)
def test_the_changed_section_is_named(
    path: str, before: str, after: str, plain: bool, expected: list[str]
) -> None:
    assert changed(path, before, after, plain=plain) == expected


def test_unparsable_reads_as_its_own_key_with_the_whole_file_digest() -> None:
    broken = b"[tool.pytest.ini_options\naddopts = 1\n"
    assert digests("pyproject.toml", broken) == {
        "pyproject.toml (unparsable)": digest("pyproject.toml", broken)
    }
    assert "setup.cfg (unparsable)" in digests("setup.cfg", b"no section header = 1\n")
    assert "tox.ini (unparsable)" in digests("tox.ini", b"[pytest]\naddopts=1\naddopts=2\n")
    assert "package.json (unparsable)" in digests("package.json", b"\xff{}")


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("pyproject.toml", '[project]\nname = "x"\n'),
        ("setup.cfg", "[metadata]\nname = x\n"),
        ("tox.ini", "[flake8]\nmax-line-length = 1\n"),
        ("package.json", '{"name": "x"}'),
        ("src/app.py", "x = 1\n"),
    ],
)
def test_no_governing_part_has_no_key(path: str, text: str) -> None:
    assert keys(path, text, plain=False) == {}


def test_an_empty_ini_options_table_still_counts() -> None:
    # pytest takes a pyproject.toml with an empty [tool.pytest.ini_options] as its
    # configuration file (and its folder as rootdir): adding one is a change.
    assert list(keys("pyproject.toml", "[tool.pytest.ini_options]\n")) == [
        "pyproject.toml [tool.pytest.ini_options]"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "[tox]\nenvlist = a\n",
        "[tool:pytest]\naddopts = -q\n",
        '[tool.pytest.ini_options]\naddopts = "-q"\n',
        "import os\n\n\ndef f():\n    return 1\n",
    ],
)
@pytest.mark.parametrize("path", ["tox.ini", "setup.cfg", "pyproject.toml", "conftest.py"])
def test_crlf_and_lf_digest_alike(path: str, text: str) -> None:
    lf = digests(path, text.encode())
    assert digests(path, text.replace("\n", "\r\n").encode()) == lf
    assert digests(path, text.replace("\n", "\r").encode()) == lf


# -- which path is protected ----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("conftest.py", True),
        ("tests/unit/conftest.py", True),
        ("pytest.ini", True),
        (".pytest.ini", True),
        ("pytest.toml", True),
        ("sub/.pytest.toml", True),
        ("web/jest.config.ts", True),
        ("vitest.config.mjs", True),
        (".mocharc.json", True),
        ("karma.conf.js", True),
        ("pyproject.toml", True),
        ("tox.ini", True),
        ("PLAN.md", True),
        (".deepflow/config.yaml", True),
        ("docs/PLAN.md", False),
        (".deepflow/auto-memory.yaml", False),
        ("node_modules/pkg/package.json", False),
        ("src/app.py", False),
        ("Makefile", False),  # only when a command may run make: see is_runner_file
    ],
)
def test_is_protected_path(path: str, expected: bool) -> None:
    assert is_protected_path(path) is expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("Makefile", True),
        ("sub/GNUmakefile", True),
        ("build/rules.mk", True),
        ("noxfile.py", True),
        ("sub/noxfile.py", False),
        ("tox.toml", True),
        ("Justfile", True),
        (".JUSTFILE", True),
        ("Taskfile.yaml", True),
        ("taskfile.dist.yml", True),
        ("tasks.py", True),
        ("app/tasks.py", False),  # a Celery app's tasks, not invoke's
        ("hatch.toml", True),
        ("node_modules/x/Makefile", False),
        ("setup.py", False),
    ],
)
def test_is_runner_file(path: str, expected: bool) -> None:
    assert is_runner_file(path) is expected


@pytest.mark.parametrize(
    ("path", "folder"),
    [
        ("tests/test_a.py", "tests"),
        ("tests/data/x.json", "tests"),
        ("pkg/tests/helpers.py", "pkg/tests"),
        ("src/__tests__/a.js", "src/__tests__"),
        ("go/pkg/testdata/golden.txt", "go/pkg/testdata"),
        ("src/ui/__snapshots__/a.snap", "src/ui/__snapshots__"),
        ("test/a/test/b.py", "test"),
        ("testing/test_x.py", "testing"),
        ("numpy/testing/utils.py", None),  # a nested `testing` package is product code
        ("tests", None),  # a file named tests
        ("src/latest/x.py", None),
        ("docs/testing.md", None),
    ],
)
def test_enclosing_test_folder(path: str, folder: str | None) -> None:
    assert enclosing_test_folder(path) == folder


PATHS = [
    "PLAN.md",
    ".deepflow/config.yaml",
    ".deepflow/auto-memory.yaml",
    "conftest.py",
    "src/pkg/conftest.py",
    "pytest.ini",
    "web/jest.config.js",
    "pyproject.toml",
    "tox.ini",
    "Makefile",
    "noxfile.py",
    "scripts/run-tests.sh",
    "tests/test_a.py",
    "tests/helpers.py",
    "src/pkg/mod_test.py",
    "src/pkg/mod.py",
    "tests/__pycache__/x.pyc",
    "README.md",
]


def test_protection_under_a_plain_pytest_command() -> None:
    got = protection(PATHS, PLAIN, snapshot_tests={"tests/test_a.py", "src/pkg/mod_test.py"})
    assert {p: (v.category, v.whole) for p, v in got.items()} == {
        "PLAN.md": ("plan", True),
        ".deepflow/config.yaml": ("plan", True),
        "conftest.py": ("conftest", True),
        "src/pkg/conftest.py": ("conftest", True),
        "pytest.ini": ("pytest-config", True),
        "web/jest.config.js": ("js-config", True),
        "pyproject.toml": ("shared-config", False),
        "tox.ini": ("shared-config", False),
        "tests/test_a.py": ("snapshot-test", True),
        "tests/helpers.py": ("test-folder", True),
        "src/pkg/mod_test.py": ("snapshot-test", True),
    }
    assert all(isinstance(v, Protection) and v.why for v in got.values())


def test_protection_under_commands_that_run_a_task_runner_or_a_script() -> None:
    got = protection(PATHS, ["make test", "./scripts/run-tests.sh --fast"])
    assert got["Makefile"].category == "task-runner"
    assert got["noxfile.py"].category == "task-runner"
    assert got["scripts/run-tests.sh"] == Protection(
        "named", True, "a configured command names it (a script it runs or a config it reads)"
    )
    assert "src/pkg/mod.py" not in got
    assert "README.md" not in got


def test_protection_without_known_commands_protects_the_most() -> None:
    assert protection(["Makefile", "src/a.py"], None) == protection(["Makefile", "src/a.py"], TOX)
    assert "Makefile" in protection(["Makefile"], None)


# -- keys and what they govern --------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "parts"),
    [
        ("conftest.py", ("conftest.py", None)),
        (
            "pyproject.toml [tool.pytest.ini_options]",
            ("pyproject.toml", "[tool.pytest.ini_options]"),
        ),
        ("my dir/tox.ini [testenv:py 3]", ("my dir/tox.ini", "[testenv:py 3]")),
        ("package.json scripts", ("package.json", "scripts")),
        ("web/package.json jest", ("web/package.json", "jest")),
        ("setup.cfg (unparsable)", ("setup.cfg", "(unparsable)")),
        ("ci/run tests.sh (named in a command)", ("ci/run tests.sh", "(named in a command)")),
        ("docs/odd [name]", ("docs/odd [name]", None)),
    ],
)
def test_split_key(key: str, parts: tuple[str, str | None]) -> None:
    assert split_key(key) == parts


@pytest.mark.parametrize(
    ("key", "test", "expected"),
    [
        ("conftest.py", "tests/test_a.py", True),
        ("tests/conftest.py", "tests/test_a.py", True),
        ("tests/new/conftest.py", "tests/test_a.py", False),
        ("tests/new/conftest.py", "tests/new/test_b.py", True),
        ("tests/ne/conftest.py", "tests/new/test_b.py", False),
        ("sub/pyproject.toml [tool.pytest]", "tests/test_a.py", False),
        ("sub/pyproject.toml [tool.pytest]", "sub/tests/test_a.py", True),
        ("sub/tox.ini [testenv]", "tests/test_a.py", True),  # tox may run anything
        ("sub/Makefile", "tests/test_a.py", True),
        ("sub/pyproject.toml (unparsable)", "tests/test_a.py", True),
        ("ci/pytest.ini (named in a command)", "tests/test_a.py", True),  # pytest -c
        ("web/package.json jest", "tests/test_a.py", False),
        ("web/package.json scripts", "tests/test_a.py", True),
    ],
)
def test_governs(key: str, test: str, expected: bool) -> None:
    assert governs(key, test) is expected


def test_loading_protect_imports_no_parser() -> None:
    # `cycle begin` (every tick) loads this module and digests PLAN.md only.
    import subprocess
    import sys

    code = (
        "import sys, gtd.auto.ratchet.protect as p; p.digest('PLAN.md', b'x');"
        "print(sorted(m for m in ('tomllib', 'tomli', 'iniconfig', 'configparser', 'shlex',"
        " 'gtd.auto.ratchet.sections', 'gtd.auto.ratchet.invocation') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "path",
    [
        "tests/a.py",
        "pkg/test/data.bin",
        "web/__tests__/x.js",
        "go/testdata/in.txt",
        "src/__snapshots__/a.snap",
        "testing/util.py",
        "numpy/testing/util.py",
        "src/latest/x.py",
        "tests",
    ],
)
def test_the_snapshot_and_protection_agree_on_test_folders(path: str) -> None:
    from gtd.auto.ratchet.files import TEST_FILE_RE

    assert (enclosing_test_folder(path) is not None) is (TEST_FILE_RE.search(path) is not None)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("fixtures/report.txt", True),
        ("fixtures/deep/a.json", True),
        ("pkg/fixtures/b.json", True),  # no slash but the last: any depth, as gitignore
        ("data/x.golden", True),
        ("top.json", True),
        ("sub/top.json", False),  # anchored by its leading slash
        ("fixtures/scratch.txt", False),  # negated
        ("fixtures.py", False),
        ("src/report.py", False),
        ("PLAN.md", False),  # the helper's own, and protected already
        (".deepflow/config.yaml", False),
        ("fixtures/__pycache__/x.pyc", False),  # caches never
    ],
)
def test_declared_reads_gitignore_patterns(path: str, expected: bool) -> None:
    patterns = ["fixtures/", "*.golden", "/top.json", "!fixtures/scratch.txt", "PLAN.md"]
    patterns.append(".deepflow/")
    match = declared(patterns)
    assert match(path) is expected


def test_declared_without_patterns_matches_nothing_and_imports_nothing() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gtd.auto.ratchet.protect as p; m = p.declared(());"
        "print(m('fixtures/a'), 'pathspec' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_a_pattern_gitignore_cannot_read_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="Invalid git pattern"):
        declared(["a\\"])
