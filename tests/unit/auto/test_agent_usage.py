"""A headless agent's own report of what it spent (gtd.auto.agent_usage): the
`gtd_usage` line, Claude Code's JSON result, and nothing (unknown)."""

from __future__ import annotations

import json

import pytest

from gtd.auto import agent_usage, prices

TABLE = prices.SHIPPED


def line(**fields: object) -> str:
    return json.dumps({"gtd_usage": fields})


def test_a_usage_line_for_a_priced_model_is_priced_from_the_table() -> None:
    out = "working\n" + line(
        input=1000, output=100, cache_read=5000, model="claude-opus-5-5", usd=99
    )
    used = agent_usage.from_output(out + "\nLearning: x\n", TABLE)
    assert used is not None
    assert used[:4] == (1000, 100, 0, 5000)
    assert used.usd == pytest.approx((1000 * 4 + 100 * 20 + 5000 * 0.2) / 1e6)


def test_an_unpriced_models_own_dollars_are_taken_else_unknown() -> None:
    given = agent_usage.from_output(line(input=10, model="local-llm", usd=0.5), TABLE)
    assert given is not None
    assert (given.tokens, given.usd, given.models) == (10, 0.5, ("local-llm",))
    unknown = agent_usage.from_output(line(input=10, output=5), TABLE)
    assert unknown is not None
    assert (unknown.tokens, unknown.usd) == (15, None)


def test_the_last_usage_line_wins_and_bad_counts_are_zero() -> None:
    out = "\n".join([line(input=1), line(input=7, output=-3, cache_write="x")])
    used = agent_usage.from_output(out, TABLE)
    assert used is not None
    assert used[:4] == (7, 0, 0, 0)


def test_claudes_result_is_priced_per_model() -> None:
    result = {
        "type": "result",
        "total_cost_usd": 123.0,  # Claude Code's own sum: the table decides here
        "usage": {"input_tokens": 1},
        "modelUsage": {
            "claude-opus-5-5": {
                "inputTokens": 2000,
                "outputTokens": 300,
                "cacheReadInputTokens": 10000,
                "cacheCreationInputTokens": 400,
                "costUSD": 1.0,
            },
            "claude-haiku-4-5-20251001": {"inputTokens": 500, "outputTokens": 20},
        },
    }
    used = agent_usage.from_output(json.dumps(result), TABLE)
    assert used is not None
    assert used[:4] == (2500, 320, 400, 10000)
    opus = (2000 * 4 + 300 * 20 + 400 * 5 + 10000 * 0.2) / 1e6
    haiku = (500 * 1 + 20 * 5) / 1e6
    assert used.usd == pytest.approx(opus + haiku)


def test_a_result_without_model_usage_keeps_claudes_own_cost() -> None:
    result = {
        "type": "result",
        "total_cost_usd": 0.25,
        "usage": {"input_tokens": 10, "output_tokens": 2, "cache_read_input_tokens": 30},
    }
    stream = "\n".join([json.dumps({"type": "assistant"}), json.dumps(result)])
    used = agent_usage.from_output(stream, TABLE)
    assert used is not None
    assert (used[:4], used.usd) == ((10, 2, 0, 30), 0.25)


def test_pretty_printed_result_is_read() -> None:
    text = json.dumps({"type": "result", "usage": {"input_tokens": 4}}, indent=2)
    used = agent_usage.from_output(text, TABLE)
    assert used is not None
    assert used.input == 4


@pytest.mark.parametrize("out", ["", "done\nLearning: x", '{"type": "assistant"}', "{not json"])
def test_an_agent_that_says_nothing_has_unknown_tokens(out: str) -> None:
    assert agent_usage.from_output(out, TABLE) is None
