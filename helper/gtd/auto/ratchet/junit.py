"""JUnit XML → per-test results. Pure: text in, ``{test id: Result}`` out.

Accepts a ``<testsuites>`` root or a bare ``<testsuite>`` (nested suites too); every
``<testcase>`` counts. Outcome: an ``<error>`` child → error, ``<failure>`` →
failed, ``<skipped type="pytest.xfail">`` → xfailed (pytest's way of writing an
expected failure, its message the reason), any other ``<skipped>`` → skipped, none
→ passed. That is as far as JUnit goes: a non-strict xpass is written like a pass
and reads as passed; pytest writes a strict one as a failure. A pytest skip's
``message`` is its reason and its text ``path:line: reason``, from which the
location is taken.

Test ids: ``file::Class::name`` when the case says which file it is in (the
``file`` attribute, or ``resolve`` finding the module of a dotted ``classname``),
else ``classname::name``. pytest's default (xunit2) carries no file, so the runner
passes a ``resolve`` that looks for the module on disk: ids then read
``tests/test_api.py::test_x``, as people type them (and a collection error, which
pytest reports as a nameless class named after the module, reads
``tests/test_api.py``). A test listed twice (a pytest teardown error, two suites
with the same names) keeps its worst outcome.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from gtd.auto.ratchet.model import Outcome
from gtd.auto.ratchet.results import Result, worst

if TYPE_CHECKING:  # the XML parser loads on use: most pytest runs report through the plugin
    from xml.etree import ElementTree

# classname → (file, rest of the classname after the module, "" when none)
Resolver = Callable[[str], tuple[str, str] | None]

# pytest's skip text: "path:line: reason"
_SKIP_TEXT = re.compile(r"(?P<path>[^\n]+?):(?P<line>\d+): ")


class JunitError(ValueError):
    """The file is not JUnit XML we can read."""


def parse(text: str | bytes, resolve: Resolver | None = None) -> dict[str, Result]:
    from xml.etree import ElementTree

    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise JunitError(f"not well-formed XML: {exc}") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise JunitError(f"root element is <{root.tag}>, not <testsuites> or <testsuite>")
    cases = root.iter("testcase")
    return worst((_case_id(case, resolve), _result(case)) for case in cases)


def outcomes(text: str | bytes, resolve: Resolver | None = None) -> dict[str, Outcome]:
    """``{test id: outcome}``: :func:`parse` without the details."""
    return {test_id: result.outcome for test_id, result in parse(text, resolve).items()}


def _case_id(case: ElementTree.Element, resolve: Resolver | None) -> str:
    return _test_id(case.get("classname") or "", case.get("name") or "", case, resolve)


def _result(case: ElementTree.Element) -> Result:
    by_tag = {child.tag: child for child in reversed(list(case))}  # the first of each
    if "error" in by_tag:
        return Result("error")
    if "failure" in by_tag:
        return Result("failed")
    skipped = by_tag.get("skipped")
    if skipped is None:
        return Result("passed")
    message = skipped.get("message")
    if skipped.get("type") == "pytest.xfail":
        return Result("xfailed", None, message or "")
    text = skipped.text or ""
    found = _SKIP_TEXT.match(text)
    if found:
        return Result("skipped", f"{found['path']}:{found['line']}", message or "")
    collected = _collection_skip(text)  # pytest writes a module's skip as a tuple
    if collected is not None:
        return Result("skipped", *collected)
    return Result("skipped", None, message if message is not None else text)


def _collection_skip(text: str) -> tuple[str, str] | None:
    """``('path', line, 'Skipped: reason')`` → (``path:line``, ``reason``)."""
    if not text.startswith("(") or len(text) > 10_000:
        return None
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not (isinstance(value, tuple) and len(value) == 3):
        return None
    path, line, reason = value
    if not (isinstance(path, str) and isinstance(line, int) and isinstance(reason, str)):
        return None
    return f"{path}:{line}", reason.removeprefix("Skipped: ")


def _test_id(classname: str, name: str, case: ElementTree.Element, resolve: Resolver | None) -> str:
    file = case.get("file")
    located: tuple[str, str] | None = None
    if file:
        module = file.rsplit(".", 1)[0].replace("/", ".").replace("\\", ".")
        if classname == module:
            located = (file, "")
        elif classname.startswith(module + "."):
            located = (file, classname[len(module) + 1 :])
        else:
            located = (file, classname) if classname else (file, "")
    elif resolve is not None and classname:
        located = resolve(classname)
    elif resolve is not None and name:
        # pytest's collection error: no classname, the module as the name.
        found = resolve(name)
        if found is not None and not found[1]:
            return found[0]
    if located is not None:
        path, rest = located
        parts = [path, *rest.split(".")] if rest else [path]
        return "::".join([*parts, name])
    return f"{classname}::{name}" if classname else name
