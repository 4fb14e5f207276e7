"""Protected configuration against the real tools: what pytest actually reads
decides the digest (U+2028, sections), tox's sections count only when a command may
run tox, and a real ratchet check names the section that changed."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gtd.auto.config import AutoConfig, load_auto_config
from gtd.auto.ratchet import check as ratchet
from gtd.auto.ratchet.doctests import doctest_digests, module_name
from gtd.auto.ratchet.protect import digests
from gtd.auto.ratchet.verdict import Verdict
from gtd.auto.setup import ensure_excluded
from gtd.git import Git
from tests.conftest import Repo
from tests.integration.calc_project import MUL, MUL_TEST, gtd_json, make_project

pytestmark = pytest.mark.slow

PYTEST = f"{shlex.quote(sys.executable)} -m pytest -p no:cacheprovider"

CALC = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from calc import add\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_big():\n    assert add(20, 30) == 50\n"
)
PYPROJECT = """\
[project]
name = "calc"
version = "0"
dependencies = []

[tool.pytest.ini_options]
# Tests live in tests/.
testpaths = ["tests"]
pythonpath = ["."]
"""
TOX_INI = """\
[tox]
envlist = py311

[testenv]
commands = pytest {posargs}

[pytest]
pythonpath = .
"""


@pytest.fixture(autouse=True)
def _quick_inner_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    # The inner suites need no plugins; an outer PYTEST_ADDOPTS is not theirs.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


def collected(root: Path) -> list[str]:
    """The test ids a real pytest collects in ``root``."""
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return [line for line in res.stdout.splitlines() if "::" in line]


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))


# -- the digest reads what pytest reads -----------------------------------------------


def test_u2028_in_a_toml_comment_cannot_hide_an_addopts_change(tmp_path: Path) -> None:
    write(tmp_path, {"calc.py": CALC, "tests/test_calc.py": TESTS, "pyproject.toml": PYPROJECT})
    assert len(collected(tmp_path)) == 2
    before = digests("pyproject.toml", (tmp_path / "pyproject.toml").read_bytes(), plain=True)
    # To str.splitlines the U+2028 ends the comment and "[tool.ruff]" starts a table;
    # to TOML (and pytest) it is all one comment, and addopts is pytest's.
    attack = PYPROJECT.replace(
        "# Tests live in tests/.", '# Tests live in tests/.\u2028[tool.ruff]\naddopts = "-k big"'
    )
    write(tmp_path, {"pyproject.toml": attack})
    assert collected(tmp_path) == ["tests/test_calc.py::test_big"]  # pytest obeyed it
    after = digests("pyproject.toml", attack.encode(), plain=True)
    assert before.keys() == after.keys() == {"pyproject.toml [tool.pytest.ini_options]"}
    assert before != after


def test_u2028_in_an_ini_comment_is_a_line_break_to_pytest_and_to_the_digest(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"calc.py": CALC, "tests/test_calc.py": TESTS, "tox.ini": TOX_INI})
    assert len(collected(tmp_path)) == 2
    before = digests("tox.ini", TOX_INI.encode(), plain=True)
    attack = TOX_INI.replace("pythonpath = .", "pythonpath = .\n# note\u2028addopts = -k big")
    write(tmp_path, {"tox.ini": attack})
    assert collected(tmp_path) == ["tests/test_calc.py::test_big"]  # iniconfig split it
    after = digests("tox.ini", attack.encode(), plain=True)
    assert before["tox.ini [pytest]"] != after["tox.ini [pytest]"]


def test_a_comment_pytest_ignores_leaves_the_digest_alone(tmp_path: Path) -> None:
    write(tmp_path, {"calc.py": CALC, "tests/test_calc.py": TESTS, "pyproject.toml": PYPROJECT})
    edited = PYPROJECT.replace("# Tests live in tests/.", "# Tests\u2028live [here]\r\n# ok")
    before = collected(tmp_path)
    write(tmp_path, {"pyproject.toml": edited})
    assert collected(tmp_path) == before
    assert digests("pyproject.toml", edited.encode(), plain=True) == digests(
        "pyproject.toml", PYPROJECT.encode(), plain=True
    )


def test_doctest_names_are_the_items_pytest_collects(tmp_path: Path) -> None:
    from tests.unit.auto.ratchet.test_doctests import SOURCE

    write(tmp_path, {"src/pkg/__init__.py": "", "src/pkg/mod.py": SOURCE})
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--doctest-modules", "--collect-only", "-q",
         "-p", "no:cacheprovider", "src/pkg/mod.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    items = {line.split("::", 1)[1] for line in res.stdout.splitlines() if "::" in line}
    module = module_name("src/pkg/mod.py", {"src/pkg"})
    assert module == "pkg.mod"
    assert items == set(doctest_digests(SOURCE.encode(), module)), res.stdout + res.stderr


# -- a real ratchet check names the section -------------------------------------------


@pytest.fixture
def project(repo: Repo) -> Repo:
    repo.write("calc.py", CALC)
    repo.write("tests/test_calc.py", TESTS)
    repo.write("pyproject.toml", PYPROJECT)
    repo.write("tox.ini", TOX_INI)
    repo.write("run-tests.sh", f"exec {PYTEST} -q\n")
    repo.write("PLAN.md", "# Plan\n\n- [ ] **T1**: mul\n  - Files: calc.py\n")
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {json.dumps(PYTEST)}\n")
    repo.write(".gitignore", "__pycache__/\n")
    repo.commit_all("init")
    ensure_excluded(Git(repo.path))  # as `gtd auto setup` does
    return repo


PLAIN = AutoConfig(test_command=PYTEST)
SCRIPT = AutoConfig(test_command="sh run-tests.sh")


def verdict_after(repo: Repo, config: AutoConfig, edits: dict[str, str]) -> Verdict:
    snapshot = ratchet.snapshot_head(repo.path, config)
    assert not snapshot.baseline_red
    for rel, text in edits.items():
        repo.write(rel, text)
    verdict, _ = ratchet.check_worktree(repo.path, config, snapshot)
    return verdict


@pytest.mark.parametrize(
    ("config", "edits", "reason"),
    [
        pytest.param(
            PLAIN,
            {"tox.ini": TOX_INI.replace("envlist = py311", "envlist = py311, py312")},
            None,
            id="envlist-passes-under-plain-pytest",
        ),
        pytest.param(
            SCRIPT,
            {"tox.ini": TOX_INI.replace("envlist = py311", "envlist = py311, py312")},
            "protected test config modified: tox.ini [tox]",
            id="envlist-reverted-when-a-script-runs-the-tests",
        ),
        pytest.param(
            PLAIN,
            {"pyproject.toml": PYPROJECT.replace("dependencies = []", 'dependencies = ["a"]')},
            None,
            id="dependency-edit-passes",
        ),
        pytest.param(
            PLAIN,
            {"pyproject.toml": PYPROJECT.replace('["tests"]', '["tests"]\naddopts = "-k big"')},
            "protected test config modified: pyproject.toml [tool.pytest.ini_options]",
            id="addopts-reverted-naming-the-table",
        ),
        pytest.param(
            PLAIN,
            {"pyproject.toml": PYPROJECT.replace("[project]", "[project")},
            "protected test config added: pyproject.toml (unparsable)",
            id="broken-pyproject-is-unparsable",
        ),
        pytest.param(
            SCRIPT,
            {"run-tests.sh": f"exec {PYTEST} -q -k big\n"},
            "protected test config modified: run-tests.sh (named in a command)",
            id="the-script-a-command-runs",
        ),
        pytest.param(
            PLAIN,
            {"run-tests.sh": "exit 0\n"},
            None,
            id="a-script-no-command-runs-is-free",
        ),
    ],
)
def test_check_names_the_changed_section(
    project: Repo, config: AutoConfig, edits: dict[str, str], reason: str | None
) -> None:
    verdict = verdict_after(project, config, edits)
    assert verdict.reason == reason
    assert verdict.passed is (reason is None)


# -- whole cycles through the CLI -----------------------------------------------------


def test_cycles_let_an_envlist_edit_through_and_revert_a_pytest_section_edit(
    repo: Repo,
) -> None:
    repo.write("tox.ini", "[tox]\nenvlist = py311\n\n[pytest]\naddopts = -q\n")
    make_project(repo)
    assert load_auto_config(repo.path).test_command is not None

    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    repo.write("tox.ini", "[tox]\nenvlist = py311, py312\n\n[pytest]\naddopts = -q\n")
    assert gtd_json(repo, "cycle", "end")["status"] == "passed"

    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    repo.write("calc.py", MUL + "\n\ndef div(a, b):\n    return a / b\n")
    repo.write("tox.ini", "[tox]\nenvlist = py311, py312\n\n[pytest]\naddopts = -q -x\n")
    result = gtd_json(repo, "cycle", "end")
    assert result["status"] == "reverted"
    assert result["reason"] == "protected test config modified: tox.ini [pytest]"
