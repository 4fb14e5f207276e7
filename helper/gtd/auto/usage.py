"""Tokens and cost: what a cycle's model calls used, as the harness recorded it.

Pure. One value per cycle in the sealed records (gtd.auto.memory.CycleRecord's
``usage``): the sum over every model call the cycle made (the implementer, the
loop's own tick turns, the reviewer). Where the numbers come from (the headless
JSON result, Claude Code's transcripts, an agent's own usage line) and the price
table are other modules' work; this is the shape they agree on, and the
arithmetic the report and the budget ceiling fold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Any


class Usage(NamedTuple):
    """Token counts by kind, the models that spent them, and their cost in US
    dollars: None where a model's price is not known (the tokens still count)."""

    input: int = 0
    output: int = 0
    cache_write: int = 0  # the API's cache_creation_input_tokens
    cache_read: int = 0  # cache_read_input_tokens
    usd: float | None = 0.0
    models: tuple[str, ...] = ()

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read

    def plus(self, other: Usage) -> Usage:
        usd = None if self.usd is None or other.usd is None else self.usd + other.usd
        models = self.models + tuple(m for m in other.models if m not in self.models)
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_write + other.cache_write,
            self.cache_read + other.cache_read,
            usd,
            models,
        )


def to_json(usage: Usage) -> dict[str, Any]:
    out: dict[str, Any] = usage._asdict()
    out["models"] = list(usage.models)
    return out


def from_json(data: object) -> Usage:
    """The value :func:`to_json` wrote; ValueError naming the field otherwise."""
    if not isinstance(data, dict):
        raise ValueError("usage is not an object")
    unknown = set(data) - set(Usage._fields)
    if unknown:
        fields = "field" if len(unknown) == 1 else "fields"
        raise ValueError(f"usage has unknown {fields} {', '.join(sorted(unknown))}")
    counts: dict[str, Any] = {}
    for name in ("input", "output", "cache_write", "cache_read"):
        value = data.get(name, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"usage.{name} is not a count: {value!r}")
        counts[name] = value
    usd = data.get("usd", 0.0)
    if usd is not None and (not isinstance(usd, (int, float)) or isinstance(usd, bool) or usd < 0):
        raise ValueError(f"usage.usd is not an amount: {usd!r}")
    models = data.get("models", [])
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise ValueError(f"usage.models is not a list of names: {models!r}")
    return Usage(usd=None if usd is None else float(usd), models=tuple(models), **counts)


def total(usages: list[Usage | None]) -> Usage | None:
    """The sum of the known ones; None when none is known."""
    known = [u for u in usages if u is not None]
    if not known:
        return None
    out = known[0]
    for u in known[1:]:
        out = out.plus(u)
    return out
