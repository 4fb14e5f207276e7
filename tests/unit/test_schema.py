"""gtd.schema: each kind's check, and the one wording of every mistake (gtd's, and
gtd 2.x's for step mode)."""

from __future__ import annotations

import pytest

from gtd import schema
from gtd.schema import Choice, Each, Fields, Flag, Integer, Invalid, Number, Table, Text


def _invalid(kind: schema.Kind, value: object, path: schema.Path = ("a", "b")) -> Invalid:
    with pytest.raises(Invalid) as info:
        kind.check(value, path)
    return info.value


@pytest.mark.parametrize(
    ("kind", "value", "message"),
    [
        (Integer(1), True, "a.b must be an integer ≥ 1, not a boolean (true)"),
        (Integer(1), 0, "a.b must be an integer ≥ 1, not an integer (0)"),
        (Integer(0), "three", "a.b must be a non-negative integer, not a string ('three')"),
        (Integer(0, 100), 101, "a.b must be an integer from 0 to 100, not an integer (101)"),
        (Number(0, inclusive=False), 0, "a.b must be a number of seconds > 0, not an integer (0)"),
        (Number(0, inclusive=False), float("inf"), "a.b must be finite"),
        (Flag(), "yes", "a.b must be true or false, not a string ('yes')"),
        (Text(nonempty=True), " ", "a.b must be a string, not a string (' ')"),
        (Choice(("x", "y")), "z", "a.b must be one of x, y, not a string ('z')"),
        (Each(Integer(0)), {}, "a.b must be a list, not a mapping"),
        (Table(Integer(0), "a table"), [], "a.b must be a table, not a list"),
        (Fields({"c": Flag()}, required=("c",)), {}, "a.b lacks `c`"),
        (Fields({"c": Flag()}), {"d": 1}, "unknown key a.b.d"),
    ],
)  # fmt: skip
def test_each_mistake_is_worded_once(kind: schema.Kind, value: object, message: str) -> None:
    assert _invalid(kind, value).message() == message


def test_paths_name_list_positions_and_the_whole_file() -> None:
    exc = _invalid(Each(Fields({"n": Integer(1)})), [{"n": 1}, {"n": 0}], ("cycles",))
    assert exc.path == ("cycles", 1, "n")
    assert exc.message(quoted=True) == "`cycles[1].n` must be an integer ≥ 1, not an integer (0)"
    assert _invalid(Fields({}, expected="a mapping of sections"), [], ()).message() == (
        "the file must be a mapping of sections, not a list"
    )


def test_values_come_back_as_the_program_wants_them() -> None:
    fields = Fields(
        {"t": Text(clean=str.strip), "n": Number(0, inclusive=True, text=True)}, closed=False
    )
    assert fields.check({"t": " x ", "n": "1.5", "other": 1}, ()) == {"t": "x", "n": 1.5}
    assert Fields({"t": Flag()}).check({"t": None}, ()) == {}  # null: the default


def test_null_is_a_value_where_the_format_says_so() -> None:
    exc = _invalid(Fields({"t": Flag()}, null_default=False), {"t": None}, ())
    assert schema.gtd2_reason(exc) == "expected true or false, got null"


@pytest.mark.parametrize(
    ("kind", "value", "reason"),
    [
        (Integer(0), 1.5, "expected an integer, got 1.5"),
        (Integer(1), 0, "must be ≥ 1, got 0"),
        (Text(nonempty=True), "", 'expected a non-empty string, got ""'),
        (Choice(("inline", "scripted")), "x", 'expected "inline" or "scripted", got "x"'),
        (Fields({"a": Flag()}), 3, "expected an object, got 3"),
        (Fields({"a": Flag(), "b": Flag()}), {"c": 1}, "unknown key (allowed: a, b)"),
    ],
)
def test_gtd2_wording(kind: schema.Kind, value: object, reason: str) -> None:
    assert schema.gtd2_reason(_invalid(kind, value)) == reason
