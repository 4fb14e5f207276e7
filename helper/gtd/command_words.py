"""Reading a project's own commands as words: which simple commands a line runs,
and what follows the pytest or ``python -m unittest`` one starts.

Pure: text in, words out. :mod:`gtd.project_runner` reads the files (tox, nox,
make, CI) and hands their lines here; :mod:`gtd.detect` says why the chosen
command was chosen.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_OPERATORS = frozenset({"&&", "||", ";", "|", "&"})


def simple_commands(words: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for word in words:
        if word in _OPERATORS:
            out.append([])
        else:
            out[-1].append(word.rstrip(";"))
    return [c for c in out if c]


_FACTOR = re.compile(r"^[\w{},.!-]+:\s+")


def tox_lines(value: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in value.splitlines():
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if line and not line.startswith("#"):
            lines.append(_FACTOR.sub("", line))
    return lines


def make_target(text: str, targets: Sequence[str]) -> list[str]:
    lines = text.splitlines()
    for target in targets:
        head = re.compile(rf"^{re.escape(target)}\s*:(?!=)")
        for i, line in enumerate(lines):
            if head.match(line):
                recipe = []
                for body in lines[i + 1 :]:
                    if not body.startswith("\t"):
                        break
                    recipe.append(body.strip().lstrip("@-").strip())
                return recipe
    return []


def ci_lines(text: str) -> list[str]:
    """Lines of a CI file that may run pytest (the `run:` scripts), read as text."""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if "pytest" not in line and "unittest" not in line:
            continue
        line = re.sub(r"^(-\s*)?(run|script)\s*:\s*[|>]?-?\s*", "", line)
        line = line.removeprefix("- ").strip().strip("'\"")
        out.append(line)
    return out


def split_words(line: str) -> list[str] | None:
    import shlex

    try:
        return shlex.split(line, comments=True)
    except ValueError:
        return None


_PYTHONISH = re.compile(r"^(python|pypy)(\d+(\.\d+)?)?$|^py$|^\{env(python|bindir)\}|^\$\(?PYTHON")
_WRAPPERS = {
    ("uv", "run"),
    ("poetry", "run"),
    ("pdm", "run"),
    ("hatch", "run"),
    ("pipenv", "run"),
}


def _program_at(words: list[str]) -> int:
    """Where the program of a simple command stands: past ``NAME=value`` words and
    a ``uv run``-like wrapper."""
    i = 0
    while i < len(words) and re.match(r"^[A-Za-z_]\w*=", words[i]):
        i += 1
    if i + 1 < len(words) and (words[i], words[i + 1]) in _WRAPPERS:
        i += 2
    return i


def after_pytest(words: list[str]) -> list[str] | None:
    """The words after the pytest a simple command starts, or None if it starts
    none: ``pytest …``, ``py.test …``, ``python -m pytest …``, ``coverage run -m
    pytest …``, behind ``uv run`` / ``poetry run`` and ``NAME=value``."""
    i = _program_at(words)
    if i >= len(words):
        return None
    program = words[i].rsplit("/", 1)[-1]
    if program in ("pytest", "py.test"):
        return words[i + 1 :]
    if program == "coverage" and words[i + 1 : i + 2] == ["run"]:
        i += 2
        while i < len(words) and words[i] != "-m":
            i += 1
        return words[i + 2 :] if words[i + 1 : i + 2] == ["pytest"] else None
    if _PYTHONISH.match(program) or _PYTHONISH.match(words[i]):
        j = i + 1
        while j < len(words) - 1:
            if words[j] == "-m":
                return words[j + 2 :] if words[j + 1] == "pytest" else None
            if not words[j].startswith("-"):
                return None  # python runs a script, not pytest
            j += 2 if words[j] in ("-W", "-X") else 1
    return None


def after_unittest(words: list[str]) -> list[str] | None:
    """The words after ``-m unittest`` of a Python a simple command starts (behind
    ``NAME=value`` and ``uv run``-like wrappers), or None if it runs no unittest."""
    i = _program_at(words)
    if i >= len(words):
        return None
    program = words[i].rsplit("/", 1)[-1]
    if not (_PYTHONISH.match(program) or _PYTHONISH.match(words[i])):
        return None
    j = i + 1
    while j < len(words) - 1:
        if words[j] == "-m":
            return words[j + 2 :] if words[j + 1] == "unittest" else None
        if not words[j].startswith("-"):
            return None  # python runs a script
        j += 2 if words[j] in ("-W", "-X") else 1
    return None
