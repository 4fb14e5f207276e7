"""The first test run a project's own files start (its ``tox.ini`` or
``setup.cfg``'s tox sections, ``noxfile.py``, the ``test`` target of its
Makefile, a CI workflow), with its arguments made to run from the repository
root: tox's folders resolved, options that change how a run stops or reports
dropped (gtd.detect's docstring says why). The words are read by the pure
:mod:`gtd.command_words`; this module reads the files and the folders they name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from gtd.command_words import (
    after_pytest,
    after_unittest,
    ci_lines,
    make_target,
    simple_commands,
    split_words,
    tox_lines,
)
from gtd.tuples import NamedTuple


def read_text(path: Path) -> str:
    """A project file's text; empty when it cannot be read (a missing file is no sign)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


class Found(NamedTuple):
    """The first test run a project's own files start: its tool (``pytest`` or
    ``unittest``), its arguments made to run from the root, and where it is."""

    tool: str
    args: list[str]
    source: str


def project_runner(root: Path) -> Found | None:
    """The first pytest or ``python -m unittest`` command the project runs itself
    (tox, nox, make, CI), or None when none is found."""
    for source, lines in _project_commands(root):
        for line in lines:
            for words in simple_commands(split_words(line) or []):
                rest = after_pytest(words)
                if rest is not None:
                    return Found("pytest", clean_args(rest, root), source)
                rest = after_unittest(words)
                if rest is not None:
                    return Found("unittest", unittest_args(rest, root), source)
    return None


def pytest_args(root: Path) -> tuple[list[str], str | None]:
    """The arguments of the first pytest command the project runs itself (tox,
    nox, make, CI), made to run from the repository root, and where they came from.
    ``([], None)`` when none is found, or when the project runs unittest first."""
    found = project_runner(root)
    if found is None or found.tool != "pytest":
        return [], None
    return found.args, found.source


def _project_commands(root: Path) -> Iterable[tuple[str, list[str]]]:
    yield from _tox(root)
    nox = _nox(root)
    if nox:
        yield "noxfile.py", nox
    for name in ("Makefile", "makefile", "GNUmakefile"):
        lines = make_target(read_text(root / name), ("test", "tests", "check"))
        if lines:
            yield f"{name} (its test target)", lines
            break
    workflows = root / ".github" / "workflows"
    files = sorted([*workflows.glob("*.yml"), *workflows.glob("*.yaml")])
    files += [root / ".gitlab-ci.yml"]
    for path in files:
        lines = ci_lines(read_text(path))
        if lines:
            yield path.relative_to(root).as_posix(), lines


def _tox(root: Path) -> Iterable[tuple[str, list[str]]]:
    import configparser

    for name, sections in (("tox.ini", ("testenv",)), ("setup.cfg", ("testenv", "tox:tox"))):
        text = read_text(root / name)
        if "testenv" not in text:
            continue
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error:
            continue
        names = [s for s in sections if parser.has_section(s)]
        names += sorted(s for s in parser.sections() if s.startswith("testenv:"))
        for section in names:
            if parser.has_option(section, "commands"):
                value = parser.get(section, "commands")
                yield f"{name} [{section}] commands", tox_lines(value)


def _nox(root: Path) -> list[str]:
    """``session.run("pytest", ...)`` calls of noxfile.py with their literal arguments."""
    text = read_text(root / "noxfile.py")
    if "pytest" not in text and "unittest" not in text:
        return []
    import ast
    import shlex

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines: list[str] = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "run"
        ):
            continue
        words: list[str] = []
        for arg in node.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                words.append(arg.value)
            else:
                words.append("{dropped}")  # a computed argument: cleaned away below
        if words:
            lines.append(shlex.join(words))
    return lines


# unittest options that change how a run stops, not what it tests.
_UNITTEST_DROPPED = frozenset({"-f", "--failfast", "-c", "--catch"})


def unittest_args(words: Sequence[str], root: Path) -> list[str]:
    """``python -m unittest``'s ``words`` made to run from the repository root:
    tox's ``{posargs}`` defaults expanded and its folders resolved, stopping
    options dropped, words that still name something outside (a variable, an
    absolute path) left out."""
    out: list[str] = []
    for word in words:
        if word.startswith("{posargs"):
            default = word[len("{posargs") :].removeprefix(":").removesuffix("}").strip()
            out.extend(unittest_args(split_words(default) or [], root))
            continue
        if word in _UNITTEST_DROPPED or word == "{dropped}":
            continue
        resolved = _resolve(word, root)
        if resolved is not None:
            out.append(resolved)
    return out


# Options that take a value as the next word (when not written `--opt=value`).
_VALUED = frozenset(
    {
        "-k", "-m", "-n", "-p", "-c", "-o", "-W", "-r",
        "--numprocesses", "--maxprocesses", "--dist", "--maxfail", "--cov",
        "--cov-config", "--cov-report", "--cov-fail-under", "--junitxml",
        "--junit-xml", "--junit-prefix", "--basetemp", "--rootdir", "--confcutdir",
        "--ignore", "--ignore-glob", "--deselect", "--durations", "--durations-min",
        "--tb", "--log-level", "--log-cli-level", "--log-file", "--html",
        "--import-mode", "--doctest-glob", "--override-ini", "--capture",
        "--pyargs", "--config-file", "--timeout", "--tx", "--rsyncdir",
    }
)  # fmt: skip
# Options dropped: they change how a run stops or reports, not what it tests, or
# need a plugin the environment may not have for that purpose alone.
_DROPPED = frozenset(
    {
        "-n", "--numprocesses", "--maxprocesses", "--dist", "--tx", "--rsyncdir",
        "-x", "--exitfirst", "--maxfail", "--lf", "--last-failed", "--ff",
        "--failed-first", "--nf", "--new-first", "--sw", "--stepwise",
        "--stepwise-skip", "--pdb", "--pdbcls", "--trace", "--junitxml",
        "--junit-xml", "--junit-prefix", "--html", "--self-contained-html",
        "--basetemp", "--looponfail", "-f", "--timeout", "--durations",
        "--durations-min",
    }
)  # fmt: skip
_SITE = re.compile(r"^\{(env_site_packages_dir|envsitepackagesdir)\}/")
_ROOT_DIR = re.compile(r"\{(toxinidir|tox_root)\}/")
_ROOT = re.compile(r"\{(toxinidir|tox_root)\}")


def clean_args(words: Sequence[str], root: Path) -> list[str]:
    """``words`` made to run from the repository root (see the module's doc)."""
    expanded: list[str] = []
    for word in words:
        if word.startswith("{posargs"):
            default = word[len("{posargs") :].removeprefix(":").removesuffix("}").strip()
            expanded.extend(split_words(default) or [])
        elif word != "{dropped}":
            expanded.append(word)
    out: list[str] = []
    i = 0
    while i < len(expanded):
        word = expanded[i]
        name = word.split("=", 1)[0]
        unit = [word]
        if word.startswith("-") and "=" not in word and name in _VALUED and i + 1 < len(expanded):
            unit.append(expanded[i + 1])
        i += len(unit)
        if name in _DROPPED or name.startswith(("--cov", "--no-cov")):
            continue
        resolved = [_resolve(w, root) for w in unit]
        if any(w is None for w in resolved):
            continue
        if not word.startswith("-"):
            path = resolved[0]
            assert path is not None
            if not (root / path.split("::", 1)[0]).exists():
                continue  # a folder this copy of the project does not have
        out.extend(w for w in resolved if w is not None)
    return out


def _resolve(word: str, root: Path) -> str | None:
    """One word with tox's folders made relative to the root; None when it still
    names something outside the repository (a substitution, a variable, an
    absolute path)."""
    site = _SITE.match(word)
    if site:
        rest = word[site.end() :]
        top = rest.split("/", 1)[0]
        if (root / top).exists():
            return rest
        if (root / "src" / top).exists():
            return f"src/{rest}"
        return None
    word = _ROOT_DIR.sub("", word)
    word = _ROOT.sub(".", word)
    if any(mark in word for mark in ("{", "$", "%")) or word.startswith(("/", "~")):
        return None
    if word.endswith("="):
        word += "."
    return word.removeprefix("./") or "."
