"""Choosing the test command (gtd.detect): the project's kind, its own environment
first, the arguments its tox.ini / noxfile / Makefile / CI run pytest with, and the
reason given for each choice."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from gtd import detect
from gtd.detect import Detection, implied_links
from gtd.project_runner import Found, clean_args, project_runner, pytest_args

NO_TOOLS = {"PATH": "/nonexistent"}  # no pytest, uv, poetry... on PATH


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def make_venv(folder: Path) -> None:
    (folder / "bin").mkdir(parents=True)
    (folder / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (folder / "bin" / "python").write_text("")


def tool(bin_dir: Path, name: str, prints: str = "") -> None:
    """An executable ``name`` on a PATH of its own that prints ``prints``."""
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\nprintf '%s\\n' '{prints}'\n")
    path.chmod(0o755)


# -- the project's kind ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({}, None),
        ({"pytest.ini": "[pytest]\n"}, "python3 -m pytest"),
        ({"conftest.py": ""}, "python3 -m pytest"),
        ({"test_app.py": ""}, "python3 -m pytest"),
        ({"tests/unit/test_app.py": ""}, "python3 -m pytest"),
        ({"pyproject.toml": "[tool.pytest.ini_options]\n"}, "python3 -m pytest"),
        ({"pyproject.toml": "[project]\n"}, "python3 -m pytest"),
        ({"package.json": json.dumps({"scripts": {"test": "vitest run"}})}, "npm test"),
        (
            {"package.json": json.dumps({"scripts": {"test": 'echo "Error: no test specified"'}})},
            None,
        ),
        ({"package.json": "{broken"}, None),
        ({"Cargo.toml": "[package]\n"}, "cargo test"),
        ({"go.mod": "module x\n"}, "go test ./..."),
        (
            {"package.json": json.dumps({"scripts": {"test": "jest"}}), "pyproject.toml": ""},
            "npm test",
        ),
        (
            {"package.json": json.dumps({"scripts": {"test": "jest"}}), "conftest.py": ""},
            "python3 -m pytest",
        ),
    ],
)
def test_the_kind_of_project(tmp_path: Path, files: dict[str, str], expected: str | None) -> None:
    write(tmp_path, files)
    found = detect.detect(tmp_path, NO_TOOLS)
    assert (found.command if found else None) == expected
    if found is not None:
        assert found.reason  # every choice says why


# -- the environment ------------------------------------------------------------------


def test_the_projects_virtualenv_comes_first_and_is_linked(tmp_path: Path) -> None:
    write(tmp_path, {"conftest.py": "", "uv.lock": ""})
    make_venv(tmp_path / "venv")
    make_venv(tmp_path / ".venv")
    bin_dir = tmp_path.parent / "bin"
    tool(bin_dir, "uv")
    active = tmp_path.parent / "active"
    make_venv(active)
    env = {"PATH": str(bin_dir), "VIRTUAL_ENV": str(active)}
    assert detect.detect(tmp_path, env) == Detection(
        ".venv/bin/python -m pytest",
        "the project's virtualenv .venv/ (linked into the clean room)",
        (".venv",),
    )
    (tmp_path / ".venv" / "pyvenv.cfg").unlink()  # no longer a virtualenv: venv/ is next
    found = detect.detect(tmp_path, env)
    assert found is not None
    assert (found.command, found.links) == ("venv/bin/python -m pytest", ("venv",))


def test_an_active_virtualenv_outside_the_repository_runs_by_its_path(tmp_path: Path) -> None:
    write(tmp_path, {"conftest.py": ""})
    active = tmp_path.parent / "my env"
    make_venv(active)
    found = detect.detect(tmp_path, {"PATH": "/nonexistent", "VIRTUAL_ENV": str(active)})
    assert found is not None
    assert found.command == f"'{active}/bin/python' -m pytest"
    assert found.links == ()
    assert f"$VIRTUAL_ENV={active}" in found.reason


def test_an_active_virtualenv_inside_the_repository_is_linked(tmp_path: Path) -> None:
    write(tmp_path, {"conftest.py": ""})
    make_venv(tmp_path / "envs" / "dev")
    found = detect.detect(
        tmp_path, {"PATH": "/nonexistent", "VIRTUAL_ENV": str(tmp_path / "envs" / "dev")}
    )
    assert found is not None
    assert (found.command, found.links) == ("envs/dev/bin/python -m pytest", ("envs/dev",))


def test_uv_runs_the_suite_where_the_project_uses_it(tmp_path: Path) -> None:
    write(tmp_path, {"conftest.py": "", "pyproject.toml": "[tool.uv]\ndev-dependencies = []\n"})
    bin_dir = tmp_path.parent / "bin"
    tool(bin_dir, "uv")
    found = detect.detect(tmp_path, {"PATH": str(bin_dir)})
    assert found is not None
    assert found.command == "uv run pytest"
    assert found.links == (".venv",)
    assert "uv (pyproject.toml [tool.uv])" in found.reason


def test_a_tool_that_is_not_installed_is_passed_over_and_said(tmp_path: Path) -> None:
    write(tmp_path, {"conftest.py": "", "poetry.lock": ""})
    bin_dir = tmp_path.parent / "bin"
    tool(bin_dir, "pytest")
    found = detect.detect(tmp_path, {"PATH": str(bin_dir)})
    assert found is not None
    assert found.command == "pytest"
    assert "poetry.lock names poetry, which is not on PATH" in found.reason
    assert f"the pytest on PATH ({bin_dir / 'pytest'})" in found.reason


def test_poetrys_virtualenv_is_asked_for_and_run_by_its_path(tmp_path: Path) -> None:
    write(tmp_path, {"conftest.py": "", "poetry.lock": ""})
    outside = tmp_path.parent / "poetry-envs" / "proj-abc-py3.11"
    make_venv(outside)
    bin_dir = tmp_path.parent / "bin"
    tool(bin_dir, "poetry", str(outside))
    env = {"PATH": f"{bin_dir}:{os.defpath}"}
    found = detect.detect(tmp_path, env, probe=detect.run_probe)  # runs the tool
    assert found is not None
    assert found.command == f"{outside}/bin/python -m pytest"
    assert "poetry's virtualenv of the project (poetry.lock" in found.reason
    # Without asking (step mode's per-tick path), poetry finds its environment itself.
    quick = detect.detect(tmp_path, env)
    assert quick is not None
    assert quick.command == "poetry run pytest"


def test_hatch_without_an_environment_yet_runs_through_hatch(tmp_path: Path) -> None:
    write(tmp_path, {"conftest.py": "", "hatch.toml": "[envs.default]\n"})
    bin_dir = tmp_path.parent / "bin"
    tool(bin_dir, "hatch", str(tmp_path.parent / "not-made-yet"))

    def probe(argv: Sequence[str], cwd: Path) -> str | None:
        assert list(argv) == [str(bin_dir / "hatch"), "env", "find"]
        assert cwd == tmp_path
        return str(tmp_path.parent / "not-made-yet")

    found = detect.detect(tmp_path, {"PATH": str(bin_dir)}, probe=probe)
    assert found is not None
    assert found.command == "hatch run pytest"


def test_without_any_environment_the_reason_says_what_was_looked_for(tmp_path: Path) -> None:
    write(tmp_path, {"conftest.py": ""})
    found = detect.detect(tmp_path, NO_TOOLS)
    assert found is not None
    assert found.command == "python3 -m pytest"
    assert "no virtualenv of the project found (.venv, venv, env, $VIRTUAL_ENV" in found.reason


# -- the arguments --------------------------------------------------------------------


def test_toxs_command_is_made_to_run_from_the_root(tmp_path: Path) -> None:
    # boltons 26.2.0's tox.ini, which tests the installed package and its doctests.
    write(
        tmp_path,
        {
            "tox.ini": "[tox]\nenvlist = py311\n\n[testenv]\nchangedir = .tox\n"
            "commands = pytest --doctest-modules {env_site_packages_dir}/boltons "
            "{tox_root}/tests {posargs}\n",
            "boltons/__init__.py": "",
            "tests/test_x.py": "",
        },
    )
    make_venv(tmp_path / ".venv")
    assert pytest_args(tmp_path) == (
        ["--doctest-modules", "boltons", "tests"],
        "tox.ini [testenv] commands",
    )
    found = detect.detect(tmp_path, NO_TOOLS)
    assert found is not None
    assert found.command == ".venv/bin/python -m pytest --doctest-modules boltons tests"
    assert found.reason.endswith("; pytest's arguments from tox.ini [testenv] commands")


def test_tox_factors_defaults_and_reporting_options(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            # pyparsing's factor-conditional line; dateutil's posargs default.
            "tox.ini": "[testenv]\ncommands =\n    doctest: sphinx-build -b doctest docs out\n"
            "    unit: pytest tests examples/tiny/tests {posargs}\n",
            "tests/test_a.py": "",
            "examples/tiny/tests/test_b.py": "",
        },
    )
    assert pytest_args(tmp_path)[0] == ["tests", "examples/tiny/tests"]
    write(
        tmp_path,
        {
            "tox.ini": '[testenv]\ncommands = python -m pytest {posargs: "{toxinidir}/tests" '
            '"{toxinidir}/docs" --cov-config="{toxinidir}/tox.ini" --cov=dateutil}\n',
            "docs/conf.py": "",
        },
    )
    assert pytest_args(tmp_path)[0] == ["tests", "docs"]


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["-x", "-n", "4", "--cov", "pkg", "-q", "tests"], ["-q", "tests"]),
        (["--maxfail=2", "--lf", "--junitxml", "out.xml", "-k", "not slow"], ["-k", "not slow"]),
        (["-m", "not network", "--doctest-modules"], ["-m", "not network", "--doctest-modules"]),
        (["missing_folder", "tests/test_a.py::test_one"], ["tests/test_a.py::test_one"]),
        (["/abs/tests", "$TESTS", "{envtmpdir}", "./tests"], ["tests"]),
        (["--rootdir={toxinidir}"], ["--rootdir=."]),
    ],
)
def test_arguments_that_change_how_a_run_stops_or_reports_are_dropped(
    tmp_path: Path, words: list[str], expected: list[str]
) -> None:
    write(tmp_path, {"tests/test_a.py": ""})
    assert clean_args(words, tmp_path) == expected


def test_nox_make_and_ci_are_read_when_there_is_no_tox(tmp_path: Path) -> None:
    write(tmp_path, {"tests/test_a.py": "", "src/pkg/__init__.py": ""})
    write(
        tmp_path,
        {
            ".github/workflows/ci.yml": "jobs:\n  test:\n    steps:\n"
            "      - run: pip install -e .\n      - run: python -m pytest -q tests\n"
        },
    )
    assert pytest_args(tmp_path) == (["-q", "tests"], ".github/workflows/ci.yml")
    make = "lint:\n\truff .\n\ntest:\n\t@cd . && $(PYTHON) -m pytest -v tests\n"
    write(tmp_path, {"Makefile": make})
    assert pytest_args(tmp_path) == (["-v", "tests"], "Makefile (its test target)")
    write(
        tmp_path,
        {
            "noxfile.py": "import nox\n\n@nox.session\ndef tests(session):\n"
            "    session.install('.')\n"
            "    session.run('pytest', '--doctest-modules', 'src', *session.posargs)\n"
        },
    )
    assert pytest_args(tmp_path) == (["--doctest-modules", "src"], "noxfile.py")


def test_a_line_that_does_not_run_pytest_gives_no_arguments(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "tox.ini": "[testenv]\ncommands = python setup.py test --pytest\n",
            "Makefile": "test:\n\ttox -e py311\n",
        },
    )
    assert pytest_args(tmp_path) == ([], None)


# -- links for configured commands ----------------------------------------------------


def test_implied_links(tmp_path: Path) -> None:
    make_venv(tmp_path / ".venv")
    make_venv(tmp_path / "tools" / "env")
    commands = [
        ".venv/bin/python -m pytest",
        "./tools/env/bin/mypy src",
        "scripts/test.sh",
        "/usr/bin/python3 -m pytest",
        None,
        ".venv/bin/ruff check",
    ]
    assert implied_links(tmp_path, commands) == (".venv", "tools/env")


# -- a project that runs unittest ------------------------------------------------------

# more-itertools' own files: tox and its Makefile run unittest, its tests are named
# like pytest's (test_*.py), and pytest would never run its load_tests doctests.
_MORE_ITERTOOLS = {
    "tox.ini": "[testenv]\ncommands = {envpython} -m unittest -v {posargs}\n",
    "Makefile": "test:\n\tpython3 -m unittest -v ${tests}\n",
    "tests/__init__.py": "",
    "tests/test_more.py": "",
    "more_itertools/__init__.py": "",
}


def test_tox_running_unittest_chooses_unittest_in_the_projects_virtualenv(tmp_path: Path) -> None:
    write(tmp_path, _MORE_ITERTOOLS)
    make_venv(tmp_path / ".venv")
    found = detect.detect(tmp_path, NO_TOOLS)
    assert found == Detection(
        ".venv/bin/python -m unittest -v",
        "tox.ini [testenv] commands runs python -m unittest -v: its own runner, judged per "
        "test; the project's virtualenv .venv/ (linked into the clean room)",
        (".venv",),
    )
    assert pytest_args(tmp_path) == ([], None)  # pytest's arguments: none, it runs unittest


def test_make_and_ci_running_unittest_are_found_without_tox(tmp_path: Path) -> None:
    files = {k: v for k, v in _MORE_ITERTOOLS.items() if k != "tox.ini"}
    write(tmp_path, files)
    found = detect.detect(tmp_path, NO_TOOLS)
    assert found is not None
    # `${tests}` is the Makefile's variable: left out; no environment: python3
    assert found.command == "python3 -m unittest -v"
    assert found.reason.startswith("Makefile (its test target) runs python -m unittest -v: ")
    assert found.reason.endswith(": python3")
    (tmp_path / "Makefile").unlink()
    write(
        tmp_path,
        {
            ".github/workflows/ci.yml": "jobs:\n  t:\n    steps:\n"
            "      - run: python -m unittest discover -s tests -f\n"
        },
    )
    found = detect.detect(tmp_path, NO_TOOLS)
    assert found is not None
    assert found.command == "python3 -m unittest discover -s tests"  # -f stops a run early
    assert found.reason.startswith(".github/workflows/ci.yml runs python -m unittest discover")


def test_the_first_runner_the_project_starts_wins(tmp_path: Path) -> None:
    """tox comes before make: tox's pytest is chosen over make's unittest, and the
    other way round."""
    write(tmp_path, {**_MORE_ITERTOOLS, "tox.ini": "[testenv]\ncommands = pytest -q tests\n"})
    found = detect.detect(tmp_path, NO_TOOLS)
    assert found is not None
    assert found.command == "python3 -m pytest -q tests"
    write(tmp_path, {"tox.ini": _MORE_ITERTOOLS["tox.ini"], "Makefile": "test:\n\tpytest\n"})
    found = detect.detect(tmp_path, NO_TOOLS)
    assert found is not None
    assert found.command == "python3 -m unittest -v"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("python -m unittest", []),
        ("python3.12 -W error -m unittest tests.test_a", ["tests.test_a"]),
        ("uv run python -m unittest -b", ["-b"]),
        ("{envpython} -m unittest --failfast --catch -k fast", ["-k", "fast"]),
        ("PYTHONPATH=src python -m unittest discover", ["discover"]),
    ],
)
def test_unittest_lines_and_their_arguments(tmp_path: Path, line: str, expected: list[str]) -> None:
    write(tmp_path, {"tox.ini": f"[testenv]\ncommands = {line}\n"})
    found = project_runner(tmp_path)
    assert found == Found("unittest", expected, "tox.ini [testenv] commands")


@pytest.mark.parametrize(
    "line", ["python -m unittest_parallel", "python run_unittest.py", "coverage run -m unittest"]
)
def test_lines_that_do_not_run_unittest_itself(tmp_path: Path, line: str) -> None:
    write(tmp_path, {"tox.ini": f"[testenv]\ncommands = {line}\n"})
    assert project_runner(tmp_path) is None


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        (".venv/bin/python -m pytest", ".venv/bin/python -m unittest"),
        ("uv run pytest", "uv run python -m unittest"),
        ("poetry run pytest", "poetry run python -m unittest"),
        ("pytest", "python3 -m unittest"),
    ],
)
def test_unittest_runs_in_the_environment_found_for_pytest(prefix: str, expected: str) -> None:
    assert detect._unittest_prefix(prefix) == expected
