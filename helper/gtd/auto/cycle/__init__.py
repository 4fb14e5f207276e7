"""One auto-mode cycle: the engine (begin, end, reset, recovery), its answers,
the verdict's guards (judging), finishing (commit or revert), keeping reverted
work, and the seals a cycle must leave as it found them."""

from __future__ import annotations

from gtd.auto.cycle.engine import Cycle

__all__ = ["Cycle"]
