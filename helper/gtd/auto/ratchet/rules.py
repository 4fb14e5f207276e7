"""The implementer's rules, in one place: what it must not touch and why.

Every brief renders these words (``$rules`` in the brief templates); the
implementer agent's definition points to the brief's Rules section instead of
repeating them; and each category of protected path that
:mod:`gtd.auto.ratchet.protect` decides is described here, once for the agent
(``WORDS``) and once for a reason or a listing (``WHY``). A test checks that every
file name and section the code protects appears in the words of its category.
Pure data and a small renderer: loaded on every ``cycle begin``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Literal

    Category = Literal[
        "plan",
        "snapshot-test",
        "test-folder",
        "conftest",
        "pytest-config",
        "js-config",
        "shared-config",
        "task-runner",
        "named",
        "declared",
    ]
else:
    Category = str

# Why each category is protected: one line, for listings and the clean room.
WHY: Mapping[Category, str] = {
    "plan": "the plan and the gtd config: only a person changes them",
    "snapshot-test": "a test in the ratchet's snapshot",
    "test-folder": "under a test folder: fixtures, helpers and data decide what tests check",
    "conftest": "conftest.py: pytest loads it into every test below its folder",
    "pytest-config": "pytest's own configuration file",
    "js-config": "a JavaScript test runner's configuration",
    "shared-config": "its sections that govern tests are protected, the rest is not",
    "task-runner": "a task runner's configuration, and a command may run that runner",
    "named": "a configured command names it (a script it runs or a config it reads)",
    "declared": "golden data the project declares (ratchet.protect): what tests compare with",
}

# What the agent is told, per category (markdown; one bullet each).
WORDS: Mapping[Category, str] = {
    "plan": "Never edit `PLAN.md` or anything under `.deepflow/` (its `config.yaml`, "
    "this brief): only a person changes them.",
    "snapshot-test": "Never modify, rename, delete or skip an existing test: a test file "
    "(`test_*.py`, `*_test.py`, `*.test.*`, `*.spec.*`...) or a doctest (an example in a "
    "docstring). Never rewrite a test or its expected output to match new behaviour: "
    "fix the code.",
    "test-folder": "Never change or delete a file that is already under a test folder "
    "(`tests/`, `test/`, `__tests__/`, `testdata/` or `__snapshots__/` at any depth, "
    "`testing/` at the top of the repository): fixtures, helpers, data and snapshots "
    "decide what the tests check. New files there are fine.",
    "conftest": "Never add, edit or delete a `conftest.py`, at any depth.",
    "pytest-config": "Never change pytest's configuration: `pytest.ini`, `.pytest.ini`, "
    "`pytest.toml`, `.pytest.toml`, the `[pytest]` section of `tox.ini`, the "
    "`[tool:pytest]` and `[pytest]` sections of `setup.cfg`, the `[tool.pytest]` and "
    "`[tool.pytest.ini_options]` tables of `pyproject.toml`.",
    "js-config": "Never change a JavaScript test runner's configuration: `jest.config.*`, "
    "`vitest.config.*`, `vitest.workspace.*`, `playwright.config.*`, `cypress.config.*`, "
    "`.mocharc.*`, `karma.conf.*`, or the `jest`, `mocha` and `ava` keys of "
    "`package.json`.",
    "task-runner": "Unless every configured command runs only plain tools (pytest, a "
    "linter, a type checker), never change a task runner's configuration: `tox.toml`, "
    "the `[tox]`, `[testenv]`, `[testenv:*]`, `[pkgenv]` and `[pkgenv:*]` sections of "
    "`tox.ini`, `[tox:tox]`, `[testenv]` and `[testenv:*]` in `setup.cfg`, `noxfile.py`, "
    "Makefiles (`Makefile`, `makefile`, `GNUmakefile`, `*.mk`), `justfile` or "
    "`.justfile` (any case), `Taskfile.yml` (or `.yaml`), `tasks.py`, `hatch.toml`, the "
    "`[tool.tox]`, `[tool.hatch.envs]`, `[tool.pdm.scripts]` and `[tool.poe]` tables of "
    "`pyproject.toml`, and the `scripts` of `package.json`.",
    "named": "Never change a script or file that a configured command names: the "
    "program it runs (`./run-tests.sh`), the script an interpreter runs, a config file "
    "given with `-c`, `-f`, `--config`, `--config-file`, `--rcfile`, `--file`, "
    "`--makefile`, `--noxfile`, `--justfile` or `--taskfile`.",
    # (told only where a project declares patterns: ``{patterns}`` is their list)
    "declared": "Never change or delete an existing file matching {patterns} (`ratchet.protect` "
    "in the gtd config, gitignore patterns): the project's golden data, what the tests "
    "compare with. New files there are fine.",
    "shared-config": "The other parts of `pyproject.toml`, `setup.cfg`, `tox.ini` and "
    "`package.json` (dependencies, other tools' settings) are yours to change when the "
    "task needs it.",
}

GIT = (
    "Leave your work uncommitted. Never run `git commit`, `git stash`, `git reset`, "
    "`git checkout`, `git switch`, `git restore`, `git clean`, `git rebase`, `git merge` "
    "or `git push`, nor `gtd` itself: the loop's helper commits or reverts after you "
    "finish."
)
_TESTS = (
    "Every existing test must still pass and none may be skipped. Add tests for the "
    "new behaviour in new test files, and make them pass."
)
_ENVIRONMENT = (
    "Never install, upgrade or remove packages in the test environment (`pip`, `uv`, "
    "`npm install`), nor edit files there: the cycle is reverted and the loop stops "
    "for a person. If the task needs a new dependency, declare it where the project "
    "does and say so when you finish."
)
_CONSEQUENCE = (
    "Breaking any of these rules reverts the whole cycle. If this brief lists "
    "earlier failures, take a different approach."
)

# The order the categories are told in a task brief ("declared" after them all,
# where a project declares any).
TASK_ORDER: tuple[Category, ...] = (
    "plan",
    "snapshot-test",
    "test-folder",
    "conftest",
    "pytest-config",
    "js-config",
    "task-runner",
    "named",
    "shared-config",
)


def task_rules(declared: tuple[str, ...] = ()) -> str:
    """The Rules bullets of a task brief; ``declared``: the config's
    ``ratchet.protect`` patterns, told where a project has any."""
    golden = (declared_words(declared),) if declared else ()
    return _bullets(
        (GIT, *(WORDS[c] for c in TASK_ORDER), *golden, _TESTS, _ENVIRONMENT, _CONSEQUENCE)
    )


def declared_words(patterns: tuple[str, ...]) -> str:
    """The rule for golden data a project declares (``ratchet.protect``)."""
    return WORDS["declared"].replace("{patterns}", ", ".join(f"`{p}`" for p in patterns))


def bootstrap_rules() -> str:
    """The rules every brief shares, for the bootstrap brief (whose own rule is
    that it adds test files only)."""
    return _bullets((GIT, WORDS["plan"]))


def _bullets(items: tuple[str, ...]) -> str:
    import re
    import textwrap

    def keep_whole(match: re.Match[str]) -> str:  # never wrap inside a `code span`
        return match.group(0).replace(" ", "\0")

    return "\n".join(
        textwrap.fill(
            re.sub(r"`[^`]*`", keep_whole, item),
            width=80,
            initial_indent="- ",
            subsequent_indent="  ",
            break_long_words=False,
            break_on_hyphens=False,
        ).replace("\0", " ")
        for item in items
    )
