"""New test files the test command never ran. Pure: paths, items and ini text in,
reasons out (the caller reads the ini file).

A test file the change adds where the command does not look (a top-level
``integration/`` beside ``testpaths = tests``, a command limited to the package
folder) is collected by no session: its tests neither pass nor fail, so a
change with a failing one would commit as passed, and no later baseline would
run them either (they protect nothing). Such a file is refused, with a reason
that says where the tests go: running it anyway would judge a test the project's
own command never runs. Only pytest's default test modules (``test_*.py``,
``*_test.py``) count, and only where the plugin reported the items it collected
(other runners say nothing of what they collected).
"""

from __future__ import annotations

import configparser
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence

from gtd.auto.ratchet import files
from gtd.auto.ratchet.results import Item

_TEST_MODULE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")


def added_test_modules(added: Iterable[str], old: Iterable[str]) -> list[str]:
    """The files among ``added`` that pytest's default ``python_files`` names as
    test modules, except those already among the snapshot's (``old``)."""
    known = set(old)
    return sorted(
        p for p in added if _TEST_MODULE.search(p) and p not in known and not files.is_skipped(p)
    )


def collected_files(items: Iterable[Item], test_ids: Iterable[str]) -> set[str]:
    """The files any session collected: each item's file, and the file of each
    test id (a module that failed to import reports its own path as the id)."""
    out = {i.file for i in items if i.file}
    out.update(t.partition("::")[0] for t in test_ids)
    return out


def configured_paths(ini_name: str, data: bytes) -> list[str]:
    """The ``testpaths`` of the pytest configuration file named ``ini_name``
    (pyproject.toml, pytest.ini, .pytest.ini, tox.ini, setup.cfg) holding ``data``;
    [] when it sets none or cannot be read."""
    if ini_name == "pyproject.toml":
        from gtd.auto.ratchet.sections import _toml

        doc = _toml(data) or {}
        tool = doc.get("tool")
        table = tool.get("pytest") if isinstance(tool, dict) else None
        options = table.get("ini_options") if isinstance(table, dict) else None
        value = options.get("testpaths") if isinstance(options, dict) else None
        if isinstance(value, str):
            return value.split()
        return [str(v) for v in value] if isinstance(value, list) else []
    section = "tool:pytest" if ini_name == "setup.cfg" else "pytest"
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(data.decode("utf-8", "replace"))
    except configparser.Error:
        return []
    if not parser.has_option(section, "testpaths"):
        return []
    return parser.get(section, "testpaths").split()


def reasons(unrun: Sequence[str], paths: Sequence[str], old_tests: Iterable[str]) -> list[str]:
    """One reason per new test file no session collected. ``paths``: the
    configuration's ``testpaths``; ``old_tests``: the snapshot's test files, whose
    most common top folder is where tests go when ``testpaths`` says nothing."""
    roots = [posixpath.normpath(p.strip("/")) for p in paths]
    home = roots[0] if roots else _usual_folder(old_tests)
    advice = f"put it under {home}/" if home and home != "." else "put it where the tests run"
    out = []
    for path in unrun:
        if roots and not any(_under(path, root) for root in roots):
            where = f"it is outside the test paths (testpaths = {' '.join(paths)})"
        else:
            where = "the test command does not collect it"
        out.append(f"new test file {path} did not run: {where}: {advice}")
    return out


def tally(before: Mapping[str, str] | None, after: Mapping[str, str] | None) -> str | None:
    """How the tests ``after`` holds and ``before`` (the baseline's) does not did:
    "3 ran, 3 passed" (", 1 skipped" where some were); None when there are none,
    or no per-test outcomes to tell."""
    if after is None:
        return None
    # A file of the baseline's failing as a whole (it no longer collects: a module
    # it imports does not compile) is old tests failing, not a new test.
    old_files = {test.partition("::")[0] for test in before or ()}
    new = [
        outcome
        for test, outcome in after.items()
        if (before is None or test not in before) and test not in old_files
    ]
    if not new:
        return None
    passed = sum(1 for o in new if o in ("passed", "xpassed"))
    skipped = sum(1 for o in new if o in ("skipped", "xfailed"))
    text = f"{len(new)} ran, {passed} passed"
    return text + (f", {skipped} skipped" if skipped else "")


def _under(path: str, root: str) -> bool:
    return root in (".", path) or path.startswith(root + "/")


def _usual_folder(old_tests: Iterable[str]) -> str:
    """Where the suite's test modules are: the folder all of them share, else the
    top folder holding most of them ("." for the root)."""
    folders = [posixpath.dirname(p) or "." for p in old_tests if _TEST_MODULE.search(p)]
    if not folders:
        return ""
    shared = posixpath.commonpath(folders) if "." not in folders else ""
    if shared:
        return shared
    counts: dict[str, int] = {}
    for folder in folders:
        top = folder.split("/", 1)[0]
        counts[top] = counts.get(top, 0) + 1
    return max(sorted(counts), key=lambda k: counts[k])


def ini_name(inipath: str | None) -> str:
    return posixpath.basename(inipath.replace("\\", "/")) if inipath else ""
