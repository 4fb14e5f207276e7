"""JUnit XML parsing: roots, outcomes and their details, ids, duplicates, malformed input."""

from __future__ import annotations

import pytest

from gtd.auto.ratchet.junit import JunitError, outcomes, parse
from gtd.auto.ratchet.model import as_junit, merge
from gtd.auto.ratchet.results import Result

PYTEST_XUNIT2 = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests">
<testsuite name="pytest" errors="1" failures="1" skipped="2" tests="6">
<testcase classname="tests.test_api" name="test_ok" time="0.001" />
<testcase classname="tests.test_api" name="test_bad" time="0.001">
  <failure message="assert 0">x</failure></testcase>
<testcase classname="tests.test_api.TestThing" name="test_param[1-2]" time="0.001" />
<testcase classname="tests.test_api" name="test_skip" time="0">
  <skipped type="pytest.skip" message="no network"
    >/repo/tests/test_api.py:12: no network</skipped></testcase>
<testcase classname="tests.test_api" name="test_xfail" time="0">
  <skipped type="pytest.xfail" message="known bug" /></testcase>
<testcase classname="tests.test_api" name="test_err" time="0">
  <error message="fixture failed">e</error></testcase>
</testsuite></testsuites>"""


def test_pytest_report_without_resolver_uses_classname() -> None:
    assert parse(PYTEST_XUNIT2) == {
        "tests.test_api::test_ok": Result("passed"),
        "tests.test_api::test_bad": Result("failed"),
        "tests.test_api.TestThing::test_param[1-2]": Result("passed"),
        "tests.test_api::test_skip": Result("skipped", "/repo/tests/test_api.py:12", "no network"),
        "tests.test_api::test_xfail": Result("xfailed", None, "known bug"),
        "tests.test_api::test_err": Result("error"),
    }


def test_a_module_skipped_at_collection_reads_its_location_and_reason() -> None:
    text = (
        '<testsuite><testcase classname="" name="tests.test_later">'
        '<skipped type="pytest.skip" message="collection skipped">'
        "('/repo/tests/test_later.py', 3, 'Skipped: later')</skipped></testcase></testsuite>"
    )
    assert parse(text) == {
        "tests.test_later": Result("skipped", "/repo/tests/test_later.py:3", "later")
    }


def test_a_skip_whose_text_says_nothing_keeps_its_message() -> None:
    text = "<testsuite><testcase name='x'><skipped message='why'>(1, 2</skipped></testcase>"
    text += "</testsuite>"
    assert parse(text) == {"x": Result("skipped", None, "why")}


def test_resolver_turns_classnames_into_file_ids() -> None:
    def resolve(classname: str) -> tuple[str, str] | None:
        if classname.startswith("tests.test_api"):
            return "tests/test_api.py", classname[len("tests.test_api") + 1 :]
        return None

    out = outcomes(PYTEST_XUNIT2, resolve)
    assert out["tests/test_api.py::test_ok"] == "passed"
    assert out["tests/test_api.py::TestThing::test_param[1-2]"] == "passed"


def test_collection_error_resolves_to_the_file() -> None:
    text = (
        '<testsuite><testcase classname="" name="tests.test_api">'
        '<error message="collection failure"/></testcase></testsuite>'
    )
    assert outcomes(
        text, lambda c: ("tests/test_api.py", "") if c == "tests.test_api" else None
    ) == {"tests/test_api.py": "error"}
    assert outcomes(text) == {"tests.test_api": "error"}


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
    assert outcomes(f"<testsuite>{case}</testsuite>") == {expected: "passed"}


def test_bare_testsuite_root_and_nested_suites() -> None:
    text = (
        "<testsuite><testsuite><testcase classname='a' name='x'/></testsuite>"
        "<testcase classname='b' name='y'><failure/></testcase></testsuite>"
    )
    assert outcomes(text) == {"a::x": "passed", "b::y": "failed"}


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
    assert outcomes(text) == {"a::x": "error", "a::y": "skipped"}


def test_bytes_with_encoding_declaration() -> None:
    text = '<?xml version="1.0" encoding="utf-8"?><testsuite><testcase name="é"/></testsuite>'
    assert outcomes(text.encode()) == {"é": "passed"}


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
    assert merge(
        [
            {"a": "passed", "b": "passed", "d": "xpassed", "e": "skipped"},
            {"b": "failed", "c": "skipped", "d": "passed", "e": "xfailed"},
        ]
    ) == {"a": "passed", "b": "failed", "c": "skipped", "d": "xpassed", "e": "xfailed"}


def test_the_richer_outcomes_read_as_junit_classifies_them() -> None:
    assert [
        as_junit(o) for o in ("passed", "xpassed", "skipped", "xfailed", "failed", "error")
    ] == [
        "passed",
        "passed",
        "skipped",
        "skipped",
        "failed",
        "error",
    ]
