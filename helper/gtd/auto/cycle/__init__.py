"""One auto-mode cycle: the engine (begin, end, reset, recovery), its answers,
the verdict's guards (judging), finishing (commit or revert), keeping reverted
work, and the seals a cycle must leave as it found them.

The engine is loaded on first use of :class:`Cycle`, not with the package: the
pure ``answers`` module is imported on its own without git, processes or files."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gtd.auto.cycle.engine import Cycle

__all__ = ["Cycle"]


def __getattr__(name: str) -> object:
    if name == "Cycle":
        from gtd.auto.cycle.engine import Cycle

        return Cycle
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
