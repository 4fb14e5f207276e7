"""Whether a baseline run really ran the suite. Pure: a run in, a diagnosis out.

A baseline that did not run (the wrong interpreter, a missing dependency, a
collection error, pytest's own usage or internal error) would make every later
cycle look like a pass or a failure for reasons that have nothing to do with the
agent's work, so setup refuses it and says what to fix. A person may accept a
baseline with problems deliberately (`gtd auto setup --accept-baseline`); the
choice is recorded in the snapshot and shown in the report.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gtd.auto.ratchet.model import RunResult
from gtd.tuples import NamedTuple

# pytest's exit codes that mean the tests did not (all) run.
_PYTEST_EXIT = {
    2: "the run was interrupted",
    3: "pytest hit an internal error",
    4: "pytest was called wrongly (a usage error)",
    5: "pytest collected no tests",
}
_MISSING_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([^']+)'")
# `python -m pytest` where pytest is not installed: "/usr/bin/python3: No module named pytest".
_NO_RUNNER = re.compile(r"^\S*python[\d.]*: No module named ([\w.]+)\s*$", re.MULTILINE)


class Diagnosis(NamedTuple):
    problem: str  # what is wrong, in a sentence
    fix: str  # what to do about it


def diagnose(
    run: RunResult,
    command: str | None,
    *,
    pytest: bool,
    has_tests: bool,
    ended: str | None = None,
) -> Diagnosis | None:
    """None when the baseline ran the suite; else what went wrong and the fix.
    ``pytest``: the per-test plugin reported, so the command runs pytest.
    ``has_tests``: the snapshot has test files (without any, the first cycle is a
    bootstrap, and a run that collects nothing is expected). ``ended``: how a
    signal ended the test process, and the likely cause (box.killed), which is
    the problem to name rather than the results it never wrote."""
    test = run.command("test")
    if test is None or test.timed_out:
        return None  # reported as a red baseline already (timeout, none)
    if test.missing is not None:
        runner = _NO_RUNNER.search(test.output_tail)
        if runner is not None:
            return _no_runner(runner.group(1))
        return Diagnosis(
            f"the test command's program was not found: {test.missing}",
            "install it, or point ratchet.test_command at the project's environment (e.g. "
            "`.venv/bin/python -m pytest`)",
        )
    if ended is not None:
        return Diagnosis(
            ended,
            "if nothing outside ended it (no person, memory to spare), run the test "
            "command by hand to see which test ends the process",
        )
    if not has_tests and not (run.tests or {}):
        return None
    tail = test.output_tail
    runner = _NO_RUNNER.search(tail) if run.tests is None else None
    if runner is not None:
        return _no_runner(runner.group(1))
    missing = _MISSING_MODULE.search(tail)
    if "INTERNALERROR" in tail:
        return Diagnosis(
            "pytest stopped with an internal error",
            _fix(missing, "run the test command by hand and fix what it reports"),
        )
    tests = run.tests
    if tests is not None:
        broken = uncollected(tests)
        if broken:
            return Diagnosis(
                not_collected(broken), _fix(missing, _unimportable(tail, broken, command))
            )
        if tests and not any(o == "passed" for o in tests.values()):
            return Diagnosis(
                f"no test passed ({len(tests)} ran)", _fix(missing, "make the suite pass first")
            )
    if pytest or _looks_like_pytest(command):
        reason = _PYTEST_EXIT.get(test.exit_code)
        if reason is not None:
            return Diagnosis(
                f"{reason} (exit {test.exit_code})",
                _fix(missing, "run the test command by hand and fix what it reports"),
            )
    return None


def uncollected(tests: Mapping[str, str]) -> list[str]:
    """The test files a run could not collect: pytest reports each as an error
    whose id is the file's path, with no ``::`` (a test's id has one)."""
    return sorted(t for t, o in tests.items() if o == "error" and "::" not in t)


def not_collected(broken: list[str]) -> str:
    """``1 test file could not be collected (tests/test_x.py)``: the words setup's
    diagnosis and its tests line share, so the two never tell different stories."""
    shown = ", ".join(broken[:3]) + (", …" if len(broken) > 3 else "")
    files = "test file" if len(broken) == 1 else "test files"
    return f"{len(broken)} {files} could not be collected ({shown})"


_COLLECT_ERROR = re.compile(r"^ERROR (?:collecting )?(\S+)", re.MULTILINE)


def collection(exit_code: int, output: str) -> Diagnosis | None:
    """Why a collect-only run of a pytest command failed (`gtd doctor` runs one);
    None when it collected tests."""
    if exit_code == 0:
        return None
    runner = _NO_RUNNER.search(output)
    if runner is not None:
        return _no_runner(runner.group(1))
    missing = _MISSING_MODULE.search(output)
    if "INTERNALERROR" in output:
        return Diagnosis(
            "pytest stopped with an internal error",
            _fix(missing, "run the test command by hand and fix what it reports"),
        )
    broken = sorted(set(_COLLECT_ERROR.findall(output)))
    if broken:
        return Diagnosis(not_collected(broken), _fix(missing, _unimportable(output, broken, None)))
    reason = _PYTEST_EXIT.get(exit_code, "the command failed")
    return Diagnosis(
        f"{reason} (exit {exit_code})",
        _fix(missing, "run the test command by hand and fix what it reports"),
    )


# pytest's report of a file Python cannot compile: the path (the clean room's, so
# absolute), the line, then the error's kind and message a few `E` lines later.
_SYNTAX = re.compile(
    r'^E\s+File "(?P<path>[^"\n]+)", line (?P<line>\d+)\n(?:E .*\n){0,6}?'
    r"E\s+(?P<kind>SyntaxError|IndentationError|TabError): (?P<message>[^\n]*)",
    re.MULTILINE,
)


def _unimportable(output: str, broken: list[str], command: str | None) -> str:
    """What to do about test files that could not be collected: the syntax error
    itself where the output shows one (file, line, what Python said), in a test
    file or in a module one imports, else the command that shows why the first
    file does not import."""
    found = list(_SYNTAX.finditer(output))
    for match in found:
        where = match.group("path").replace("\\", "/")
        rel = next((b for b in broken if where == b or where.endswith("/" + b)), None)
        if rel is not None:
            others = len(broken) - 1
            more = (
                f" ({others} more {'file' if others == 1 else 'files'} could not be collected)"
                if others
                else ""
            )
            return f"correct the {_said(match, rel)}{more}"
    if found:
        # A module the tests import (the code under test, a helper) does not compile:
        # the file to correct is that one, named as the repository's.
        match = found[0]
        module = _in_repository(match.group("path").replace("\\", "/"))
        headers = list(_COLLECTING.finditer(output, 0, match.start()))
        while_ = f" (found while collecting {headers[-1].group(1)})" if headers else ""
        return f"correct the {_said(match, module)}{while_}"
    run = f"`{command} {broken[0]}`" if command else f"the test command on {broken[0]}"
    files = "the file" if len(broken) == 1 else "the files"
    return f"make {files} importable: {run} shows why {broken[0]} is not"


_COLLECTING = re.compile(r"^_+ ERROR collecting (\S+) _+$", re.MULTILINE)
# Where the judge's clean room keeps its checkout (gtd.auto.ratchet.room): the
# part of a path after it is the repository's own path.
_ROOM_TREE = re.compile(r"^.*/gtd/rooms/[^/]+/[^/]+/tree/")


def syntax_error(output: str) -> str | None:
    """The first file Python could not compile while pytest collected the tests
    (``SyntaxError in calc.py at line 2: invalid syntax``), named as the
    repository's; None when collection met none."""
    if "ERROR collecting" not in output:
        return None
    match = _SYNTAX.search(output)
    if match is None:
        return None
    return _said(match, _in_repository(match.group("path").replace("\\", "/")))


def _said(match: re.Match[str], path: str) -> str:
    return (
        f"{match.group('kind')} in {path} at line {match.group('line')}: "
        f"{match.group('message').strip()}"
    )


def _in_repository(path: str) -> str:
    """A path of the clean room as the repository's (``calc.py``); any other
    path (the live checkout's, an installed package's) as pytest printed it."""
    return _ROOM_TREE.sub("", path)


def _no_runner(name: str) -> Diagnosis:
    return Diagnosis(
        f"the test command's interpreter has no {name} module (`-m {name}` failed)",
        f"install {name} (and the project's test dependencies) in the environment the test "
        "command uses, or point ratchet.test_command at the project's environment (e.g. "
        "`.venv/bin/python -m pytest`)",
    )


def _fix(missing: re.Match[str] | None, default: str) -> str:
    if missing is None:
        return default
    return (
        f"the module {missing.group(1)!r} cannot be imported by the test run: install it "
        "in the environment the test command uses, or point ratchet.test_command at the "
        "project's environment (e.g. `.venv/bin/python -m pytest`, with `link: [.venv]`)"
    )


def _looks_like_pytest(command: str | None) -> bool:
    return bool(command) and "pytest" in (command or "")


def plugin_unheard(run: RunResult, command: str | None, *, plugin: bool) -> str | None:
    """The warning of a baseline whose test command runs pytest but whose pytest
    never loaded the helper's plugin (``plugin``: it reported); None otherwise.

    The plugin reaches pytest through the environment the helper gives the
    command (``PYTHONPATH``, an inherited report channel). A command that runs
    pytest without it — ``python -I``, ``env -i``, a task runner that starts pytest
    in a cleaned environment or closes inherited descriptors — still passes, but
    every cycle is then judged by pytest's JUnit XML or the exit code alone,
    without the plugin's tamper checks or the check that new tests ran: a
    downgrade nobody chose, so setup says it."""
    if plugin or not _looks_like_pytest(command):
        return None
    judged = "pytest's JUnit XML" if run.tests is not None else "the exit code"
    return (
        "pytest ran without gtd's plugin at the baseline (a command that runs it in a "
        "cleaned environment or a process of its own keeps the plugin out: `python -I`, "
        f"`env -i`, tox, nox): every cycle is judged by {judged} alone, without the "
        "plugin's tamper checks or the check that new tests ran; let the command pass its "
        "environment on to pytest (e.g. `.venv/bin/python -m pytest`)"
    )
