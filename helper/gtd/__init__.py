"""gtd: the deterministic half of the gtd pack (auto mode and step mode)."""

from __future__ import annotations

__version__ = "0.1.0"
