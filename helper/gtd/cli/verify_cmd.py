"""`gtd verify`: print the final verification (gtd.auto.verify). Exit 0 for either
verdict; operational errors (not a repository, an invalid plan) exit 1 via GtdError."""

from __future__ import annotations

from typing import Any

from gtd.cli.output import emit, root
from gtd.names import one_line


def verify(as_json: bool) -> int:
    from gtd.auto import verify as verify_mod
    from gtd.clock import now

    answer = verify_mod.verify(root(), now())
    emit(answer, render(answer), as_json)
    return 0


def render(answer: dict[str, Any]) -> str:
    """One line per level: a detail that names files (which the agent chose) keeps
    to its line (gtd.names.one_line), since the loop reads these lines."""
    lines = [f"status: {answer['status']}"]
    for level in answer["levels"]:
        detail = f" ({one_line(level['detail'])})" if level["detail"] else ""
        lines.append(f"{level['level']} {level['name']}: {level['status']}{detail}")
    lines.append(f"message: {one_line(answer['message'])}")
    return "\n".join(lines)
