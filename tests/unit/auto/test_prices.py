"""The price table and its arithmetic (gtd.auto.prices): names as the API and
the clouds spell them, the dollars of each token kind, an unknown model's tokens
counted with no cost, and the config's rows over the shipped ones."""

from __future__ import annotations

import pytest

from gtd.auto import prices
from gtd.auto.prices import Price, Tokens


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("claude-opus-5-5", "claude-opus-5-5"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-opus-4-6[1m]", "claude-opus-4-6"),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
        ("claude-3-5-haiku@20241022", "claude-3-5-haiku"),
        ("Claude-Opus-5", "claude-opus-5"),
    ],
)
def test_a_model_is_found_under_the_names_it_goes_by(name: str, row: str) -> None:
    assert prices.lookup(name, prices.SHIPPED) == prices.SHIPPED[row]


def test_an_unknown_model_has_no_price() -> None:
    assert prices.lookup("gpt-9", prices.SHIPPED) is None
    assert prices.lookup("claude-opus-5-5-turbo", prices.SHIPPED) is None


def test_the_catalogs_tiers() -> None:
    # Claude Code 2.1.332's tiers, written out: input, output, 5-minute write, read
    assert prices.SHIPPED["claude-opus-5-5"] == Price(4, 20, 5, 0.2)
    assert prices.SHIPPED["claude-sonnet-4-5"] == Price(3, 15, 3.75, 0.3)
    assert prices.SHIPPED["claude-haiku-4-5"] == Price(1, 5, 1.25, 0.1)
    assert prices.SHIPPED["claude-opus-4-1"] == Price(15, 75, 18.75, 1.5)
    assert prices.SHIPPED["claude-sonnet-5-5"] == Price(2, 10, 2.5, 0.1)


def test_dollars_are_each_kind_times_its_price() -> None:
    tokens = Tokens(input=1_000_000, output=200_000, cache_write=40_000, cache_read=3_000_000)
    # 1 M × $3 + 0.2 M × $15 + 0.04 M × $3.75 + 3 M × $0.3
    assert prices.dollars(tokens, Price(3, 15, 3.75, 0.3)) == pytest.approx(3 + 3 + 0.15 + 0.9)


def test_priced_sums_models_and_costs_each_at_its_own_price() -> None:
    used = prices.priced(
        {"claude-opus-5-5": Tokens(1000, 100, 10, 5000), "claude-haiku-4-5": Tokens(2000, 50)},
        prices.SHIPPED,
    )
    assert used[:4] == (3000, 150, 10, 5000)
    assert used.models == ("claude-opus-5-5", "claude-haiku-4-5")
    opus = (1000 * 4 + 100 * 20 + 10 * 5 + 5000 * 0.2) / 1e6
    haiku = (2000 * 1 + 50 * 5) / 1e6
    assert used.usd == pytest.approx(opus + haiku, abs=1e-9)


def test_an_unknown_model_leaves_the_cost_unknown_and_the_tokens_counted() -> None:
    used = prices.priced(
        {"claude-opus-5-5": Tokens(1000), "mystery": Tokens(500, 20)}, prices.SHIPPED
    )
    assert used.usd is None
    assert used.tokens == 1520
    assert prices.unpriced(used, prices.SHIPPED) == ["mystery"]


def test_a_model_with_no_tokens_costs_nothing_even_unpriced() -> None:
    assert prices.priced({"mystery": Tokens()}, prices.SHIPPED).usd == 0.0


def test_the_configs_rows_add_and_replace() -> None:
    table = prices.table([("mystery", Price(1, 2, 3, 4)), ("Claude-Opus-5-5", Price(0, 0, 0, 0))])
    assert prices.lookup("mystery", table) == Price(1, 2, 3, 4)
    assert prices.priced({"claude-opus-5-5": Tokens(10**6)}, table).usd == 0.0
    assert prices.SHIPPED["claude-opus-5-5"] == Price(4, 20, 5, 0.2)  # the shipped one untouched
