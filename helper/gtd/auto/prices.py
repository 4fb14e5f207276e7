"""What a model's tokens cost: the price table and its arithmetic (docs/cost.md).

Pure. Dollars per million tokens of each kind the API counts: input, output,
cache write (the 5-minute cache, Claude Code's default) and cache read. The table
shipped here is Claude Code 2.1.332's own (its baked-in model catalog, the one its
``/cost`` and ``total_cost_usd`` use); ``prices:`` in ``.deepflow/config.yaml``
adds a model or replaces a row. A model the table does not know still has its
tokens counted; its cost is None (unknown), never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from gtd.auto.usage import Usage
from gtd.tuples import NamedTuple

SOURCE = "Claude Code 2.1.332's model catalog (the prices its /cost shows)"
AS_OF = "2026-12-07"


class Price(NamedTuple):
    """US dollars per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float


def _tier(inp: float, out: float, read: float | None = None) -> Price:
    # The API's rule: a 5-minute cache write costs 1.25 × input; a read 0.1 ×
    # input unless the catalog says otherwise.
    return Price(inp, out, inp * 1.25, inp / 10 if read is None else read)


SHIPPED: dict[str, Price] = {
    "claude-3-5-haiku": _tier(0.8, 4),
    "claude-haiku-4-5": _tier(1, 5),
    "claude-haiku-5-5": _tier(0.1, 0.5),
    "claude-3-5-sonnet": _tier(3, 15),
    "claude-3-7-sonnet": _tier(3, 15),
    "claude-sonnet-4-0": _tier(3, 15),
    "claude-sonnet-4": _tier(3, 15),
    "claude-sonnet-4-5": _tier(3, 15),
    "claude-sonnet-4-6": _tier(3, 15),
    "claude-sonnet-5": _tier(2, 10),
    "claude-sonnet-5-5": _tier(2, 10, 0.1),
    "claude-opus-4-0": _tier(15, 75),
    "claude-opus-4": _tier(15, 75),
    "claude-opus-4-1": _tier(15, 75),
    "claude-opus-4-5": _tier(5, 25),
    "claude-opus-4-6": _tier(5, 25),
    "claude-opus-4-7": _tier(5, 25),
    "claude-opus-4-8": _tier(5, 25),
    "claude-opus-5": _tier(5, 25),
    "claude-opus-5-5": _tier(4, 20, 0.2),
    "claude-fable-5": _tier(10, 50),
    "claude-fable-5-1": _tier(10, 50, 0.25),
    "claude-fable-5-2": _tier(8, 40, 0.2),
    "claude-mythos-5": _tier(10, 50),
    "claude-mythos-5-1": _tier(10, 50, 0.25),
    "claude-mythos-5-2": _tier(8, 40, 0.2),
}

# The API names a model by its dated id (claude-sonnet-4-5-20250929), Claude Code
# adds [1m] for the long-context variant, Bedrock and Vertex prefix or suffix it.
_DATED = re.compile(r"-\d{8}$")
_SUFFIX = re.compile(r"\[[^\]]*\]$|@.*$|-v\d+(:\d+)?$")
_PREFIX = re.compile(r"^(?:[a-z]{2}\.)?anthropic\.")


class Tokens(NamedTuple):
    """One model's token counts (a message's, or a sum)."""

    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0

    def plus(self, other: Tokens) -> Tokens:
        return Tokens(*(a + b for a, b in zip(self, other, strict=True)))


Table = Mapping[str, Price]


def table(overrides: Iterable[tuple[str, Price]] = ()) -> dict[str, Price]:
    """The shipped table with the config's rows over it."""
    out = dict(SHIPPED)
    out.update((name.lower(), price) for name, price in overrides)
    return out


def lookup(model: str, prices: Table) -> Price | None:
    """The row for ``model``: its own name first (an override may name a dated
    id), then the name without a date, a variant suffix or a cloud prefix."""
    name = model.strip().lower()
    if name in prices:
        return prices[name]
    bare = _DATED.sub("", _SUFFIX.sub("", _PREFIX.sub("", name)))
    return prices.get(bare)


def dollars(tokens: Tokens, price: Price) -> float:
    return (
        tokens.input * price.input
        + tokens.output * price.output
        + tokens.cache_write * price.cache_write
        + tokens.cache_read * price.cache_read
    ) / 1_000_000


def priced(by_model: Mapping[str, Tokens], prices: Table) -> Usage:
    """The Usage of these tokens: their sum, the models (in the order given) and
    the cost, None when any model with tokens has no price."""
    total = Tokens()
    usd: float | None = 0.0
    for model, tokens in by_model.items():
        total = total.plus(tokens)
        price = lookup(model, prices)
        if price is None:
            if any(tokens):
                usd = None
        elif usd is not None:
            usd += dollars(tokens, price)
    return Usage(*total, usd=None if usd is None else round(usd, 6), models=tuple(by_model))


def unpriced(usage: Usage, prices: Table) -> list[str]:
    """The models of ``usage`` the table has no price for."""
    return [m for m in usage.models if lookup(m, prices) is None]
