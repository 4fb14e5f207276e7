"""Section digests are functions of what the tool parses: invariants over generated
files (edits outside the governing section, comments, key order and line endings
change nothing; any change to a governing value changes the digest)."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gtd.auto.ratchet import sections
from gtd.auto.ratchet.protect import digests

# -- generators -----------------------------------------------------------------------

KEYS = st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=8)
# TOML basic strings take any character but controls; U+2028 and friends included.
TOML_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
TOML_VALUES = st.one_of(
    TOML_TEXT,
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.lists(TOML_TEXT, max_size=3),
)
TOML_TABLES = st.dictionaries(KEYS, TOML_VALUES, max_size=4)
# A comment: any text but controls (a TOML comment may hold U+2028).
COMMENTS = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=15)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def toml_table(name: str, table: dict[str, Any], comment: str, *, reverse: bool) -> str:
    items = sorted(table.items(), reverse=reverse)
    body = "".join(f"{k} = {toml_value(v)}  # {comment}\n" for k, v in items)
    return f"[{name}]\n# {comment}\n{body}\n"


def pyproject(
    pytest_table: dict[str, Any],
    other: dict[str, Any],
    comment: str = "",
    *,
    reverse: bool = False,
) -> str:
    return (
        toml_table("project", {"name": "x", **other}, comment, reverse=reverse)
        + toml_table("tool.pytest.ini_options", pytest_table, comment, reverse=reverse)
        + toml_table("tool.other", other, comment, reverse=reverse)
    )


def pytest_digest(text: str, path: str = "pyproject.toml") -> dict[str, str]:
    return digests(path, text.encode("utf-8"), plain=True)


# -- pyproject.toml -------------------------------------------------------------------


@settings(deadline=None)  # a loaded machine must not fail it
@given(
    table=TOML_TABLES,
    other_a=TOML_TABLES,
    other_b=TOML_TABLES,
    comment=COMMENTS,
    reverse=st.booleans(),
    crlf=st.booleans(),
)
def test_pyproject_edits_outside_pytest_tables_change_nothing(
    *,
    table: dict[str, Any],
    other_a: dict[str, Any],
    other_b: dict[str, Any],
    comment: str,
    reverse: bool,
    crlf: bool,
) -> None:
    a = pyproject(table, other_a)
    b = pyproject(table, other_b, comment, reverse=reverse)
    if crlf:
        b = b.replace("\n", "\r\n")
    assert pytest_digest(a) == pytest_digest(b)
    assert list(pytest_digest(a)) == ["pyproject.toml [tool.pytest.ini_options]"]


@settings(deadline=None)  # a loaded machine must not fail it
@given(TOML_TABLES, TOML_TABLES, TOML_TABLES)
def test_pyproject_any_pytest_value_change_changes_the_digest(
    table_a: dict[str, Any], table_b: dict[str, Any], other: dict[str, Any]
) -> None:
    assume(json.dumps(table_a, sort_keys=True) != json.dumps(table_b, sort_keys=True))
    assert pytest_digest(pyproject(table_a, other)) != pytest_digest(pyproject(table_b, other))


# -- INI: setup.cfg and tox.ini -------------------------------------------------------

# Values iniconfig keeps as written: no line breaks of any kind (str.splitlines's
# included), no leading or trailing space (it strips them).
INI_TEXT = st.text(alphabet=string.ascii_letters + string.digits + "-_./:=, *[]", max_size=12)
INI_SECTIONS = st.dictionaries(KEYS, INI_TEXT, max_size=4)


def ini_file(sections_: dict[str, dict[str, str]], comment: str, *, reverse: bool) -> str:
    out = []
    for name, values in sections_.items():
        out.append(f"[{name}]\n")
        for key, value in sorted(values.items(), reverse=reverse):
            out.append(f"# {comment}\n{key} = {value}\n")
        out.append("\n")
    return "".join(out)


@pytest.mark.parametrize(("path", "section"), [("setup.cfg", "tool:pytest"), ("tox.ini", "pytest")])
@settings(deadline=None)  # a loaded machine must not fail it
@given(
    pytest_values=INI_SECTIONS,
    other_a=INI_SECTIONS,
    other_b=INI_SECTIONS,
    comment=st.text(alphabet=string.printable.strip() + " ", max_size=10),
    reverse=st.booleans(),
    crlf=st.booleans(),
)
def test_ini_edits_outside_the_pytest_section_change_nothing(
    *,
    path: str,
    section: str,
    pytest_values: dict[str, str],
    other_a: dict[str, str],
    other_b: dict[str, str],
    comment: str,
    reverse: bool,
    crlf: bool,
) -> None:
    a = ini_file(
        {"metadata": other_a, section: pytest_values, "flake8": other_a}, "", reverse=False
    )
    b = ini_file(
        {section: pytest_values, "flake8": other_b, "metadata": other_b}, comment, reverse=reverse
    )
    if crlf:
        b = b.replace("\n", "\r\n")
    assert pytest_digest(a, path) == pytest_digest(b, path)
    assert list(pytest_digest(a, path)) == [f"{path} [{section}]"]


@pytest.mark.parametrize(("path", "section"), [("setup.cfg", "tool:pytest"), ("tox.ini", "pytest")])
@settings(deadline=None)  # a loaded machine must not fail it
@given(values_a=INI_SECTIONS, values_b=INI_SECTIONS)
def test_ini_any_pytest_value_change_changes_the_digest(
    path: str, section: str, values_a: dict[str, str], values_b: dict[str, str]
) -> None:
    stripped_a = {k: v.strip() for k, v in values_a.items()}
    stripped_b = {k: v.strip() for k, v in values_b.items()}
    assume(stripped_a != stripped_b)
    a = ini_file({section: values_a}, "", reverse=False)
    b = ini_file({section: values_b}, "", reverse=False)
    assert pytest_digest(a, path) != pytest_digest(b, path)


def test_u2028_in_an_ini_comment_starts_a_line_for_pytest_not_for_tox() -> None:
    # iniconfig (pytest) splits lines with str.splitlines; configparser (tox) does not.
    base = "[pytest]\naddopts = -q\n[testenv]\ncommands = pytest\n"
    hidden = base.replace("addopts = -q", "addopts = -q\n# x\u2028timeout = 5").replace(
        "commands = pytest", "commands = pytest\n# x\u2028deps = evil"
    )
    before = sections.ini("tox.ini", base.encode(), runners=True)
    after = sections.ini("tox.ini", hidden.encode(), runners=True)
    assert before is not None
    assert after is not None
    assert before["[pytest]"] != after["[pytest]"]  # pytest sees a new key
    assert before["[testenv]"] == after["[testenv]"]  # tox sees one comment


def test_tox_reads_default_section_values_into_every_env() -> None:
    base = "[DEFAULT]\nx = 1\n[testenv]\ncommands = pytest\n"
    before = sections.ini("tox.ini", base.encode(), runners=True)
    after = sections.ini("tox.ini", base.replace("x = 1", "x = 2").encode(), runners=True)
    assert before is not None
    assert after is not None
    assert before["[testenv]"] != after["[testenv]"]


def test_tox_base_sections_are_followed() -> None:
    text = "[testenv:a]\nbase = common\n[common]\ndeps = x\n"
    got = sections.ini("tox.ini", text.encode(), runners=True)
    assert got is not None
    assert set(got) == {"[testenv:a]", "[common]"}


@pytest.mark.parametrize(
    "text",
    [
        b"orphan = 1\n[pytest]\n",  # no section header
        b"[pytest]\nx = 1\nx = 2\n",  # duplicate key
        b"[pytest]\n  continuation first\n",
        b"[pytest]\naddopts = \xff\n",  # not UTF-8
    ],
)
def test_unparsable_ini(text: bytes) -> None:
    assert sections.ini("tox.ini", text, runners=False) is None


# -- package.json ---------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(deadline=None)  # a loaded machine must not fail it
@given(
    jest=JSON_VALUES,
    other_a=st.dictionaries(st.sampled_from(["name", "dependencies", "version"]), JSON_VALUES),
    other_b=st.dictionaries(st.sampled_from(["name", "dependencies", "version"]), JSON_VALUES),
    indent=st.sampled_from([None, 0, 2, 4, "\t"]),
    crlf=st.booleans(),
)
def test_package_json_edits_outside_test_keys_change_nothing(
    jest: Any, other_a: dict[str, Any], other_b: dict[str, Any], indent: Any, crlf: bool
) -> None:
    a = json.dumps({**other_a, "jest": jest})
    b = json.dumps({"jest": jest, **other_b}, indent=indent, ensure_ascii=False)
    if crlf:
        b = b.replace("\n", "\r\n")
    assert pytest_digest(a, "package.json") == pytest_digest(b, "package.json")


@settings(deadline=None)  # a loaded machine must not fail it
@given(jest_a=JSON_VALUES, jest_b=JSON_VALUES)
def test_package_json_any_jest_change_changes_the_digest(jest_a: Any, jest_b: Any) -> None:
    assume(sections.canonical(jest_a) != sections.canonical(jest_b))
    a = pytest_digest(json.dumps({"jest": jest_a}), "package.json")
    b = pytest_digest(json.dumps({"jest": jest_b}), "package.json")
    assert a != b


# -- whole files ----------------------------------------------------------------------


@settings(deadline=None)  # a loaded machine must not fail it
@given(st.binary(max_size=60))
def test_whole_files_read_crlf_cr_and_lf_alike(data: bytes) -> None:
    lf = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    assert digests("conftest.py", data) == digests("conftest.py", lf)
    assert digests("conftest.py", data) == digests("conftest.py", lf.replace(b"\n", b"\r\n"))


@settings(deadline=None)  # a loaded machine must not fail it
@given(st.binary(max_size=40), st.binary(max_size=40))
def test_whole_files_differ_when_their_lines_differ(a: bytes, b: bytes) -> None:
    def norm(x: bytes) -> bytes:
        return x.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

    assume(norm(a) != norm(b))
    assert digests("pytest.ini", a) != digests("pytest.ini", b)


def test_toml_dates_are_canonical() -> None:
    text = "[tool.pytest]\nwhen = 2024-01-02T03:04:05Z\nday = 2024-01-02\nat = 03:04:05\n"
    got = sections.pyproject(text.encode(), runners=False)
    assert got is not None
    assert json.loads(got["[tool.pytest]"]) == {
        "at": {"$time": "03:04:05"},
        "day": {"$date": "2024-01-02"},
        "when": {"$datetime": "2024-01-02T03:04:05+00:00"},
    }
