"""`gtd loop --agent CMD [--max-cycles N] [--parallel N]`: the headless driver."""

from __future__ import annotations

import sys


def loop(agent: str, max_cycles: int | None, parallel: int | None = None) -> int:
    from gtd.auto import headless
    from gtd.cli.output import root
    from gtd.names import one_line

    def say(line: str) -> None:
        sys.stdout.write(one_line(line) + "\n")  # a name the agent chose stays on it
        sys.stdout.flush()

    return headless.run_loop(root(), agent, max_cycles, say, parallel)
