"""`gtd demo [--keep DIR] [--claude]`: a night of auto mode on a built-in sample
(gtd.demo)."""

from __future__ import annotations

import sys
from pathlib import Path


def demo(keep: str | None, claude: bool) -> int:
    from gtd.demo.show import demo as run

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    return run(Path(keep) if keep is not None else None, claude, say)
