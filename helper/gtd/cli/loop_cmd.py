"""`gtd loop --agent CMD [--max-cycles N]`: the headless driver (gtd.auto.headless)."""

from __future__ import annotations

import sys


def loop(agent: str, max_cycles: int | None) -> int:
    from gtd.auto import headless
    from gtd.cli.output import root

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    return headless.run_loop(root(), agent, max_cycles, say)
