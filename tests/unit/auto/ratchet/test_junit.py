"""JUnit XML parsing: roots, outcomes, ids, duplicates, malformed input."""

from __future__ import annotations

import pytest

from gtd.auto.ratchet.junit import JunitError, parse
from gtd.auto.ratchet.model import merge

PYTEST_XUNIT2 = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests">
<testsuite name="pytest" errors="1" failures="1" skipped="2" tests="6">
<testcase classname="tests.test_api" name="test_ok" time="0.001" />
<testcase classname="tests.test_api" name="test_bad" time="0.001">
  <failure message="assert 0">x</failure></testcase>
<testcase classname="tests.test_api.TestThing" name="test_param[1-2]" time="0.001" />
<testcase classname="tests.test_api" name="test_skip" time="0">
  <skipped type="pytest.skip" message="no" /></testcase>
<testcase classname="tests.test_api" name="test_xfail" time="0">
  <skipped type="pytest.xfail" message="" /></testcase>
<testcase classname="tests.test_api" name="test_err" time="0">
  <error message="fixture failed">e</error></testcase>
</testsuite></testsuites>"""


def test_pytest_report_without_resolver_uses_classname() -> None:
    assert parse(PYTEST_XUNIT2) == {
        "tests.test_api::test_ok": "passed",
        "tests.test_api::test_bad": "failed",
        "tests.test_api.TestThing::test_param[1-2]": "passed",
        "tests.test_api::test_skip": "skipped",
        "tests.test_api::test_xfail": "skipped",
        "tests.test_api::test_err": "error",
    }


def test_resolver_turns_classnames_into_file_ids() -> None:
    def resolve(classname: str) -> tuple[str, str] | None:
        if classname.startswith("tests.test_api"):
            return "tests/test_api.py", classname[len("tests.test_api") + 1 :]
        return None

    out = parse(PYTEST_XUNIT2, resolve)
    assert out["tests/test_api.py::test_ok"] == "passed"
    assert out["tests/test_api.py::TestThing::test_param[1-2]"] == "passed"


def test_collection_error_resolves_to_the_file() -> None:
    text = (
        '<testsuite><testcase classname="" name="tests.test_api">'
        '<error message="collection failure"/></testcase></testsuite>'
    )
    assert parse(text, lambda c: ("tests/test_api.py", "") if c == "tests.test_api" else None) == {
        "tests/test_api.py": "error"
    }
    assert parse(text) == {"tests.test_api": "error"}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        pytest.param(
            '<testcase classname="tests.test_a" name="t" file="tests/test_a.py"/>',
            "tests/test_a.py::t",
            id="file-module",
        ),
        pytest.param(
            '<testcase classname="tests.test_a.TestX" name="t" file="tests/test_a.py"/>',
            "tests/test_a.py::TestX::t",
            id="file-class",
        ),
        pytest.param(
            '<testcase classname="Login page" name="shows errors" file="src/login.test.js"/>',
            "src/login.test.js::Login page::shows errors",
            id="file-other-runner",
        ),
        pytest.param('<testcase name="lonely"/>', "lonely", id="name-only"),
        pytest.param(
            '<testcase classname="Login page" name="shows errors"/>',
            "Login page::shows errors",
            id="jest-junit",
        ),
    ],
)
def test_ids(case: str, expected: str) -> None:
    assert parse(f"<testsuite>{case}</testsuite>") == {expected: "passed"}


def test_bare_testsuite_root_and_nested_suites() -> None:
    text = (
        "<testsuite><testsuite><testcase classname='a' name='x'/></testsuite>"
        "<testcase classname='b' name='y'><failure/></testcase></testsuite>"
    )
    assert parse(text) == {"a::x": "passed", "b::y": "failed"}


def test_duplicates_keep_the_worst_outcome() -> None:
    # pytest reports a teardown error as a second case with the same name.
    text = (
        "<testsuites><testsuite>"
        "<testcase classname='a' name='x'/>"
        "<testcase classname='a' name='x'><error message='teardown'/></testcase>"
        "<testcase classname='a' name='y'><skipped/></testcase>"
        "<testcase classname='a' name='y'/>"
        "</testsuite></testsuites>"
    )
    assert parse(text) == {"a::x": "error", "a::y": "skipped"}


def test_bytes_with_encoding_declaration() -> None:
    text = '<?xml version="1.0" encoding="utf-8"?><testsuite><testcase name="é"/></testsuite>'
    assert parse(text.encode()) == {"é": "passed"}


def test_empty_suite_is_zero_tests_not_missing() -> None:
    assert parse("<testsuites><testsuite tests='0'/></testsuites>") == {}


@pytest.mark.parametrize(
    "text",
    ["", "<testsuite>", "not xml", "<html><testcase name='x'/></html>"],
    ids=["empty", "truncated", "text", "wrong-root"],
)
def test_malformed_raises(text: str) -> None:
    with pytest.raises(JunitError):
        parse(text)


def test_merge_unions_reports_worst_wins() -> None:
    assert merge([{"a": "passed", "b": "passed"}, {"b": "failed", "c": "skipped"}]) == {
        "a": "passed",
        "b": "failed",
        "c": "skipped",
    }
