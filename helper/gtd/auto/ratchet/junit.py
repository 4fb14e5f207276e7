"""JUnit XML → per-test outcomes. Pure: text in, ``{test id: outcome}`` out.

Accepts a ``<testsuites>`` root or a bare ``<testsuite>`` (nested suites too); every
``<testcase>`` counts. Outcome: a ``<failure>`` child → failed, ``<error>`` →
error, ``<skipped>`` → skipped (pytest reports xfail this way), none → passed.

Test ids: ``file::Class::name`` when the case says which file it is in (the
``file`` attribute, or ``resolve`` finding the module of a dotted ``classname``),
else ``classname::name``. pytest's default (xunit2) carries no file, so the runner
passes a ``resolve`` that looks for the module on disk: ids then read
``tests/test_api.py::test_x``, as people type them (and a collection error, which
pytest reports as a nameless class named after the module, reads
``tests/test_api.py``). A test listed twice (a pytest
teardown error, two suites with the same names) keeps its worst outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gtd.auto.ratchet.model import Outcome, worst_by_test

if TYPE_CHECKING:  # the XML parser loads on use: most pytest runs report through the plugin
    from xml.etree import ElementTree

# classname → (file, rest of the classname after the module, "" when none)
Resolver = Callable[[str], tuple[str, str] | None]


class JunitError(ValueError):
    """The file is not JUnit XML we can read."""


def parse(text: str | bytes, resolve: Resolver | None = None) -> dict[str, Outcome]:
    from xml.etree import ElementTree

    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise JunitError(f"not well-formed XML: {exc}") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise JunitError(f"root element is <{root.tag}>, not <testsuites> or <testsuite>")
    cases = root.iter("testcase")
    return worst_by_test((_case_id(case, resolve), _outcome(case)) for case in cases)


def _case_id(case: ElementTree.Element, resolve: Resolver | None) -> str:
    return _test_id(case.get("classname") or "", case.get("name") or "", case, resolve)


def _outcome(case: ElementTree.Element) -> Outcome:
    tags = {child.tag for child in case}
    if "error" in tags:
        return "error"
    if "failure" in tags:
        return "failed"
    if "skipped" in tags:
        return "skipped"
    return "passed"


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
