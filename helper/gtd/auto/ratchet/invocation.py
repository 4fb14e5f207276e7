"""What the configured commands run, read from their text alone. Pure: no IO.

The ratchet protects a task runner's configuration (tox's environments, a Makefile,
a noxfile, npm scripts...) only when a command may run that runner. Deciding it
from the command text is conservative by construction:

- A command is split like shell words; ``&&``, ``||``, ``;``, ``|``, ``&``,
  parentheses and newlines separate simple commands, and each is read alone.
- In a simple command, leading ``NAME=value`` assignments are skipped and known
  wrappers are looked through to the program they start: ``env``, ``time``,
  ``nice``, ``nohup``, ``timeout``, ``xvfb-run``, ``uv run``, ``uvx``, ``poetry
  run``, ``pipenv run``, ``rye run``, ``conda run``, ``pipx run``, ``npx``,
  ``coverage run``; ``python -m MODULE`` runs MODULE; ``sh -c 'STRING'`` is read
  as a command of its own.
- The command is **plain** when every program it starts is one the helper knows
  runs no project-defined recipe: pytest, unittest, type checkers and linters
  (mypy, ruff, flake8, pylint, pyright, black, isort...), ``cargo test``, ``go
  test``, jest, vitest, mocha, shell built-ins. Anything else makes it not plain:
  a task runner (tox, nox, make, just, invoke, hatch, pdm, poe, npm/yarn/pnpm/bun
  scripts), a script file, ``python -c``, a program the helper does not know, or
  text it cannot split. Such a command may run anything, so every task runner's
  configuration is protected: a ``make test`` whose Makefile calls tox is covered
  without reading the Makefile.
- Files a command **names** are protected whole whatever the command: a program
  given as a path (``./run-tests.sh``), the script an interpreter runs (``python
  scripts/test.py``, ``bash ci/test.sh``) and the value of a configuration option
  (``-c``, ``--config``, ``--config-file``, ``--rcfile``, ``--makefile``,
  ``--noxfile``, ``--justfile``, ``--taskfile``; ``-f`` and ``--file`` beside
  make, nox, just or task). Paths are read from the repository root, where every
  command runs. Which of these words are repository files is for the caller to
  tell; here they are only candidates.

No command at all (no test command known) is not plain: nothing is known.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence

from gtd.tuples import NamedTuple


class Invocation(NamedTuple):
    """What a set of commands runs, as far as their text shows."""

    plain: bool  # only programs that run no project-defined recipe
    named: frozenset[str]  # repository-relative candidates the commands name as files


_OPERATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", ";;", "|&", "\n"})
_PUNCTUATION = frozenset("&|;()<>")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)?)?$|^py$")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_INTERPRETERS = frozenset({"node", "ruby", "perl", "deno", "Rscript", "php"})

# Programs (and python -m modules) that run no recipe of the project's own.
_PLAIN = frozenset(
    {
        "pytest", "py.test", "unittest", "doctest", "mypy", "dmypy", "pyright",
        "basedpyright", "ruff", "flake8", "pyflakes", "pycodestyle", "pydocstyle",
        "pylint", "black", "isort", "bandit", "codespell", "compileall", "py_compile",
        "jest", "vitest", "mocha", "ava", "tsc", "eslint", "prettier", "rspec",
        "phpunit", "ctest",
        # shell built-ins and utilities that start nothing
        "true", "false", ":", "echo", "printf", "cd", "pushd", "popd", "export",
        "set", "unset", "exit", "test", "[", "sleep", "mkdir", "rm", "cp", "mv",
        "touch", "cat", "ls", "pwd", "tee", "grep", "wc", "head", "tail",
    }
)  # fmt: skip
# Subcommands that keep these tools plain (`cargo make` runs a recipe, `cargo test` not).
_PLAIN_SUBCOMMANDS = {
    "cargo": frozenset({"test", "build", "check", "clippy", "fmt", "nextest", "bench"}),
    "go": frozenset({"test", "vet", "build"}),
}
# Wrappers: program → options that take a separate value. The first word after
# the wrapper's options is the program it starts; a value option the table does
# not know makes its value look like a program, which is unknown, so not plain.
_WRAPPERS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "nohup": frozenset(),
    "command": frozenset(),
    "exec": frozenset({"-a"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "xvfb-run": frozenset({"-n", "--server-num", "-s", "--server-args", "-e", "-f", "-w", "-p"}),
    "npx": frozenset({"-p", "--package"}),
    "bunx": frozenset({"-p", "--package"}),
    "uvx": frozenset({"--from", "--with", "--python", "-p", "--index", "--extra-index-url"}),
}
# `TOOL run ...` wrappers (the program follows `run`).
_RUN_WRAPPERS: dict[str, frozenset[str]] = {
    "uv": frozenset(
        {
            "--with",
            "--with-requirements",
            "--extra",
            "--group",
            "--only-group",
            "--python",
            "-p",
            "--package",
            "--directory",
            "--project",
            "--env-file",
            "--index",
            "--extra-index-url",
            "--no-group",
        }
    ),
    "poetry": frozenset({"-C", "--directory", "-P", "--project"}),
    "pipenv": frozenset(),
    "rye": frozenset(),
    "conda": frozenset({"-n", "--name", "-p", "--prefix"}),
    "mamba": frozenset({"-n", "--name", "-p", "--prefix"}),
    "micromamba": frozenset({"-n", "--name", "-p", "--prefix"}),
    "pipx": frozenset({"--spec", "--python"}),
}
# Options whose value is a file the program reads as configuration.
CONFIG_OPTIONS = frozenset(
    {
        "-c", "--config", "--config-file", "--rcfile", "-f", "--file", "--makefile",
        "--noxfile", "--justfile", "--taskfile",
    }
)  # fmt: skip
_PYTHON_VALUE_OPTIONS = frozenset({"-W", "-X", "--check-hash-based-pycs"})


def read(commands: Sequence[str] | None) -> Invocation:
    """What ``commands`` (every configured command: build, test, typecheck, lint)
    run. None or no command at all: nothing is known, so not plain."""
    listed = [c for c in (commands or ()) if c and c.strip()]
    plain = bool(listed)
    named: set[str] = set()
    for command in listed:
        one = _read_one(command, depth=0)
        plain = plain and one.plain
        named |= one.named
    return Invocation(plain, frozenset(named))


def _read_one(command: str, depth: int) -> Invocation:
    words = _split(command)
    if words is None or depth > 3:
        return Invocation(False, frozenset(_config_values(command.split())))
    plain = True
    named: set[str] = set()
    for simple in _simple_commands(words):
        ok, files = _program(simple, depth)
        plain = plain and ok
        named |= files | _config_values(simple)
    return Invocation(plain, frozenset(named))


def _split(command: str) -> list[str] | None:
    import shlex

    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.whitespace = " \t\r"  # newlines separate commands: keep them as words
    try:
        out: list[str] = []
        for word in lexer:
            out.extend(_newlines(word))
        return out
    except ValueError:  # an unclosed quote: the shell would not run it either
        return None


def _newlines(word: str) -> list[str]:
    if "\n" not in word:
        return [word]
    parts: list[str] = []
    for i, piece in enumerate(word.split("\n")):
        if i:
            parts.append("\n")
        if piece:
            parts.append(piece)
    return parts


def _simple_commands(words: Iterable[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    redirect = False
    for word in words:
        if redirect:  # the target of `>`, `2>`, `<`...: a file, not a word of the command
            redirect = False
        elif ("<" in word or ">" in word) and set(word) <= _PUNCTUATION:
            redirect = True
        elif word in _OPERATORS or set(word) <= _PUNCTUATION:
            out.append([])
        else:
            out[-1].append(word)
    return [c for c in out if c]


def _program(words: list[str], depth: int) -> tuple[bool, set[str]]:
    """(plain, named files) for one simple command."""
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        i += 1
    while i < len(words):
        word = words[i]
        base = posixpath.basename(word)
        if base in _WRAPPERS:
            if base == "env" and any(w in ("-S", "--split-string") for w in words[i + 1 :]):
                return False, set()  # env -S splits a string into a command: not read here
            i = _skip_options(words, i + 1, _WRAPPERS[base], assignments=base == "env")
            continue
        if base in _RUN_WRAPPERS and i + 1 < len(words):
            j = _skip_options(words, i + 1, _RUN_WRAPPERS[base])
            if j < len(words) and words[j] == "run":
                i = _skip_options(words, j + 1, _RUN_WRAPPERS[base])
                continue
            return False, set()
        if base == "timeout":
            i = _skip_options(words, i + 1, frozenset({"-s", "--signal", "-k", "--kill-after"}))
            i += 1  # the duration
            continue
        if base in ("coverage", "coverage3"):
            if i + 1 < len(words) and words[i + 1] == "run":
                return _python_args(words, i + 2, depth, coverage=True)
            return True, set()  # coverage report / combine / xml: starts nothing
        if _PYTHON.match(base):
            return _python_args(words, i + 1, depth)
        if base in _SHELLS:
            return _shell_args(words, i + 1, depth)
        if base in _INTERPRETERS:
            script = _first_operand(words, i + 1, frozenset())
            return False, {script} if script else set()
        return _plain_program(word, words[i + 1 :])
    return True, set()  # only assignments: sets a variable, starts nothing


def _plain_program(word: str, rest: list[str]) -> tuple[bool, set[str]]:
    base = posixpath.basename(word)
    if base in _PLAIN:
        return True, set()
    if base in _PLAIN_SUBCOMMANDS:
        sub = next((w for w in rest if not w.startswith("-")), None)
        return sub in _PLAIN_SUBCOMMANDS[base], set()
    if "/" in word:  # ./run-tests.sh, scripts/check: a file of the project
        return False, {word}
    return False, set()


def _python_args(
    words: list[str], i: int, depth: int, *, coverage: bool = False
) -> tuple[bool, set[str]]:
    while i < len(words):
        word = words[i]
        if word == "-m" and i + 1 < len(words):
            return _module(words[i + 1], words[i + 2 :], depth)
        if word.startswith("-m") and len(word) > 2 and not coverage:
            return _module(word[2:], words[i + 1 :], depth)
        if word == "-c" and not coverage:
            return False, set()  # code in a string: anything at all
        if word == "-":
            return False, set()  # code on stdin
        if word in _PYTHON_VALUE_OPTIONS or (coverage and word in _COVERAGE_VALUE_OPTIONS):
            i += 2
            continue
        if word.startswith("-"):
            i += 1
            continue
        return False, {word}  # a script file
    return True, set()  # the bare interpreter (a REPL on no input) runs nothing


_COVERAGE_VALUE_OPTIONS = frozenset(
    {"--source", "--rcfile", "--omit", "--include", "--context", "--data-file", "--concurrency"}
)


def _module(name: str, rest: list[str], depth: int) -> tuple[bool, set[str]]:
    top = name.split(".", 1)[0]
    if top in ("coverage",) and rest[:1] == ["run"]:
        return _python_args(rest, 1, depth, coverage=True)
    return _plain_program(top, rest)


def _shell_args(words: list[str], i: int, depth: int) -> tuple[bool, set[str]]:
    while i < len(words):
        word = words[i]
        if word == "-c" and i + 1 < len(words):
            inner = _read_one(words[i + 1], depth + 1)
            return inner.plain, set(inner.named)
        if word in ("-o", "+o") or (word[:1] in "-+" and word[1:2] != "-" and word.endswith("o")):
            i += 2  # -o pipefail, -euo pipefail
            continue
        if word.startswith(("-", "+")):
            i += 1
            continue
        return False, {word}  # a shell script
    return False, set()  # commands on stdin


def _skip_options(
    words: list[str], i: int, with_value: frozenset[str], *, assignments: bool = False
) -> int:
    while i < len(words):
        word = words[i]
        if word == "--":
            return i + 1
        if word in with_value:
            i += 2
        elif (word.startswith("-") and word != "-") or (assignments and _ASSIGNMENT.match(word)):
            i += 1
        else:
            return i
    return i


def _first_operand(words: list[str], i: int, with_value: frozenset[str]) -> str | None:
    j = _skip_options(words, i, with_value)
    return words[j] if j < len(words) else None


def _config_values(words: Sequence[str]) -> set[str]:
    """Words given as the value of a configuration-file option. ``-f``/``--file``
    count only beside a task runner that reads a file so (``rm -f x`` names none)."""
    runner = any(posixpath.basename(w) in _FILE_FLAG_RUNNERS for w in words)
    out: set[str] = set()
    for i, word in enumerate(words):
        option, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if option not in CONFIG_OPTIONS or (option in _FILE_FLAGS and not runner):
            continue
        if eq:
            out.add(value)
        elif i + 1 < len(words):
            out.add(words[i + 1])
    return out


_FILE_FLAGS = frozenset({"-f", "--file"})
_FILE_FLAG_RUNNERS = frozenset({"make", "gmake", "nox", "just", "task"})


def repo_path(word: str) -> str | None:
    """``word`` as a repository-relative path, or None when it cannot be one
    (absolute, leaving the repository, empty)."""
    if not word or word.startswith(("/", "~", "$")) or "\0" in word:
        return None
    norm = posixpath.normpath(word)
    if norm in (".", "") or norm == ".." or norm.startswith("../"):
        return None
    return norm
