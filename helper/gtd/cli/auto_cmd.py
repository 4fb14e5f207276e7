"""`gtd auto setup`."""

from __future__ import annotations

from gtd.cli.cycle_cmd import fence, render
from gtd.cli.output import emit, root


def setup(as_json: bool, accept: bool = False) -> int:
    from gtd.auto.setup import setup as run_setup
    from gtd.clock import now

    answer = run_setup(root(), now(), accept=accept)
    fence(answer)
    emit(answer, render(answer), as_json)
    return 0
