"""What a headless agent's run spent, as its own output says (docs/cost.md).

Pure. `gtd loop --agent CMD` reads the agent's standard output for either:

- a usage line of its own, the last one winning (any agent CLI can print it)::

      {"gtd_usage": {"input": 1200, "output": 300, "cache_write": 0,
                     "cache_read": 5000, "model": "claude-sonnet-4-5", "usd": 0.01}}

  every field optional (counts default to 0); ``model`` (or ``models``, a list)
  is priced from the table, and ``usd`` is taken as given only for a model the
  table does not know;
- Claude Code's result (``claude -p --output-format json`` or ``stream-json``):
  ``modelUsage`` per model (every call of the run, subagents' included), priced
  from the table; without it, ``usage`` with ``total_cost_usd`` as the CLI
  reported it.

Neither: None, and the report says the tokens are unknown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from gtd.auto import prices
from gtd.auto.prices import Tokens
from gtd.auto.usage import Usage

_KEY = "gtd_usage"
_LAST_LINES = 200  # where the line or the result is: the end of the output


def from_output(stdout: str, table: prices.Table) -> Usage | None:
    objects = list(_objects(stdout))
    for data in reversed(objects):
        own = data.get(_KEY)
        if isinstance(own, dict):
            return _own_line(own, table)
    for data in reversed(objects):
        if data.get("type") == "result":
            return _claude_result(data, table)
    return None


def _objects(stdout: str) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    text = stdout.strip()
    lines = text.splitlines()[-_LAST_LINES:]
    if text.startswith("{") and len(lines) > 1:  # one object, pretty-printed
        lines = [*lines, text]
    for raw in lines:
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            out.append(data)
    return out


def _count(data: Mapping[str, object], *names: str) -> int:
    for name in names:
        value = data.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return 0


def _own_line(data: Mapping[str, object], table: prices.Table) -> Usage:
    tokens = Tokens(
        _count(data, "input"),
        _count(data, "output"),
        _count(data, "cache_write"),
        _count(data, "cache_read"),
    )
    named = data.get("models", [data.get("model")])
    models = [m for m in named if isinstance(m, str) and m] if isinstance(named, list) else []
    usd = data.get("usd")
    given = float(usd) if isinstance(usd, (int, float)) and not isinstance(usd, bool) else None
    if len(models) == 1 and prices.lookup(models[0], table) is not None:
        return prices.priced({models[0]: tokens}, table)
    return Usage(*tokens, usd=given, models=tuple(models))


def _claude_result(data: Mapping[str, object], table: prices.Table) -> Usage | None:
    per_model = data.get("modelUsage")
    if isinstance(per_model, dict) and per_model:
        counts = {
            str(model): Tokens(
                _count(m, "inputTokens"),
                _count(m, "outputTokens"),
                _count(m, "cacheCreationInputTokens"),
                _count(m, "cacheReadInputTokens"),
            )
            for model, m in per_model.items()
            if isinstance(m, dict)
        }
        return prices.priced(counts, table)
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    cost = data.get("total_cost_usd")
    return Usage(
        _count(usage, "input_tokens"),
        _count(usage, "output_tokens"),
        _count(usage, "cache_creation_input_tokens"),
        _count(usage, "cache_read_input_tokens"),
        usd=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
    )
