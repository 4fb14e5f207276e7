"""Tokens and cost summed over a cycle's model calls."""

from __future__ import annotations

import pytest

from gtd.auto import usage
from gtd.auto.usage import Usage


def test_sums_each_kind_and_keeps_models_in_first_seen_order() -> None:
    a = Usage(1, 2, 3, 4, 0.5, ("opus",))
    b = Usage(10, 20, 30, 40, 0.25, ("haiku", "opus"))
    assert a.plus(b) == Usage(11, 22, 33, 44, 0.75, ("opus", "haiku"))
    assert a.plus(b).tokens == 110


def test_an_unknown_price_makes_the_sum_unknown_but_keeps_the_tokens() -> None:
    s = Usage(1, 1, 0, 0, None).plus(Usage(2, 2, 0, 0, 1.0))
    assert s.usd is None
    assert s.tokens == 6
    assert usage.total([None, None]) is None
    assert usage.total([None, Usage(1), Usage(2)]) == Usage(3)


def test_json_round_trip_and_refusals() -> None:
    u = Usage(5, 6, 7, 8, 0.125, ("m",))
    assert usage.from_json(usage.to_json(u)) == u
    for bad, field in (
        ({"input": "5"}, "usage.input"),
        ({"output": True}, "usage.output"),
        ({"usd": -1}, "usage.usd"),
        ({"models": "m"}, "usage.models"),
        ({"cost": 1}, "unknown field cost$"),
        ({"cost": 1, "price": 2}, "unknown fields cost, price$"),
    ):
        with pytest.raises(ValueError, match=field):
            usage.from_json(bad)
