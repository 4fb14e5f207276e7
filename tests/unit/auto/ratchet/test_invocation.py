"""Reading what the configured commands run from their text: plain or not, and the
files they name."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gtd.auto.ratchet.invocation import Invocation, read, repo_path


@pytest.mark.parametrize(
    "command",
    [
        "pytest",
        "pytest -q -x tests/",
        "py.test",
        "python -m pytest -q",
        "python3.12 -m pytest",
        ".venv/bin/python -I -W error -m pytest",
        ".venv/bin/pytest -q",
        "/usr/bin/python3 -mpytest",
        "PYTHONPATH=src pytest",
        "env -u CI PYTHONPATH=src pytest",
        "timeout -s KILL 600 pytest",
        "nice -n 10 time pytest",
        "uv run pytest",
        "uv run --with pytest-cov --python 3.12 pytest --cov",
        "poetry run pytest",
        "conda run -n dev python -m pytest",
        "coverage run -m pytest",
        "python -m coverage run -m pytest && coverage report",
        "cd sub && pytest",
        "pytest 2>&1 | tee log.txt",
        "pytest > out.txt",
        "sh -c 'pytest -q'",
        'bash -euo pipefail -c "pytest -q | tail -n 5"',
        "mypy --strict src",
        "ruff check . && ruff format --check .",
        "cargo test --all",
        "go test ./...",
        "npx jest",
        "true",
    ],
)
def test_plain_commands(command: str) -> None:
    assert read([command]).plain, command


@pytest.mark.parametrize(
    "command",
    [
        "tox",
        "tox -e py311",
        "python -m tox",
        "uvx tox",
        "nox -s tests",
        "make test",
        "gmake -C sub check",
        "just test",
        "npm test",
        "yarn test",
        "pnpm run test",
        "hatch test",
        "hatch run test:pytest",
        "pdm run pytest",  # pdm looks for a pdm script named pytest first
        "poe test",
        "invoke test",
        "./run-tests.sh",
        "bash ci/test.sh",
        "python scripts/test.py",
        "python -c 'import pytest; pytest.main()'",
        "cargo make test",
        "go run ./cmd/test",
        "node test.js",
        "my-own-runner --all",
        "pytest && make lint",
        "sh -c 'make test'",
        "env -S 'pytest -q'",
        "uv sync",
        "echo 'unclosed",
    ],
)
def test_commands_that_are_not_plain(command: str) -> None:
    assert not read([command]).plain, command


def test_every_command_must_be_plain() -> None:
    assert read(["pytest", "ruff check ."]).plain
    assert not read(["pytest", "tox -e lint"]).plain


@pytest.mark.parametrize("commands", [None, [], [""], ["   "]])
def test_no_command_known_is_not_plain(commands: list[str] | None) -> None:
    assert read(commands) == Invocation(False, frozenset())


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("./run-tests.sh --fast", {"./run-tests.sh"}),
        ("bash ci/test.sh", {"ci/test.sh"}),
        ("sh -e ci/test.sh", {"ci/test.sh"}),
        ("python -u scripts/test.py -v", {"scripts/test.py"}),
        ("coverage run tests/runner.py", {"tests/runner.py"}),
        ("pytest -c ci/pytest.ini", {"ci/pytest.ini"}),
        ("pytest --config-file=ci/pytest.toml", {"ci/pytest.toml"}),
        ("tox -c ci/tox.ini", {"ci/tox.ini"}),
        ("make -f ci.mk test", {"ci.mk"}),
        ("nox --noxfile ci/noxfile.py", {"ci/noxfile.py"}),
        ("sh -c 'bash ci/inner.sh'", {"ci/inner.sh", "bash ci/inner.sh"}),
        ("pytest -q", set()),
        ("rm -f coverage.xml && pytest", set()),  # -f is a file flag to runners only
        ("nox -f ci/noxfile.py", {"ci/noxfile.py"}),
    ],
)
def test_named_files(command: str, named: set[str]) -> None:
    assert read([command]).named == named


@pytest.mark.parametrize(
    ("word", "path"),
    [
        ("./run.sh", "run.sh"),
        ("ci/./a/../t.sh", "ci/t.sh"),
        ("ci/t.sh", "ci/t.sh"),
        ("/usr/bin/env", None),
        ("../outside.sh", None),
        ("~/x.sh", None),
        ("$HOME/x", None),
        (".", None),
        ("", None),
    ],
)
def test_repo_path(word: str, path: str | None) -> None:
    assert repo_path(word) == path


@settings(deadline=None)  # a loaded machine must not fail it
@given(st.lists(st.text(max_size=40), max_size=4))
def test_any_text_reads_without_error(commands: list[str]) -> None:
    got = read(commands)
    assert isinstance(got.plain, bool)
    assert all(isinstance(w, str) for w in got.named)


@settings(deadline=None)  # a loaded machine must not fail it
@given(st.sampled_from(["tox", "make", "nox", "just", "npm test", "./x.sh"]), st.text(max_size=20))
def test_a_runner_anywhere_makes_it_not_plain(runner: str, other: str) -> None:
    assert not read([f"pytest -q && {runner}", other]).plain
