"""The values the check's wrapper script is rendered from (template
``templates/step/check.md``; docs/step-mode.md, "Scripted checks").

The script is deliberately tiny and boring — exit status and output capture, the
empty-output sentinel, the target file — and says nothing about budgets or labels
(those are decided when ``gtd step check`` captures, :mod:`gtd.step.checks`). The
one thing that must be exactly right is how the configured command gets into it:

- ``testCommand`` is split like a shell word list, as gtd 2.x's inline run splits it
  (:func:`shlex.split`), and every word is put back single-quoted — always, even a
  word with nothing special in it, so no word can be read as a keyword (``time``,
  ``if``), an assignment (``A=1``), a glob, an expansion or an operator. The script
  runs exactly the argv the inline mode runs; shell syntax in ``testCommand`` is
  plain arguments in both.
- The command's text also appears in a comment and in the sentinel written when a
  red run prints nothing. The comment is one JSON-escaped line (a newline in the
  command cannot end the comment), the sentinel a single-quoted ``printf``
  argument.

Pure: strings in, strings out.
"""

from __future__ import annotations

import json
import shlex

from gtd.errors import GtdError
from gtd.step.actions import silent_failure_parts
from gtd.step.settings import StepConfig

__all__ = ["argv_of", "quote", "script_context"]

_SOURCE = {
    "config": "from testCommand in the config",
    "detected": "detected from the project's files (no testCommand is configured)",
    "default": "gtd's default: no testCommand is configured and no test runner was detected",
}


def quote(word: str) -> str:
    """``word`` as one single-quoted bash word, whatever it holds (no NUL)."""
    if "\0" in word:
        raise GtdError("test command contains a NUL character")
    return "'" + word.replace("'", "'\"'\"'") + "'"


def argv_of(command: str) -> list[str]:
    """The argv gtd runs for ``command`` — split like a shell word list, no shell."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise GtdError(f"test command cannot be parsed: {command}: {exc}") from None
    if not argv:
        raise GtdError("test command is empty")
    return argv


def script_context(config: StepConfig, state: str) -> dict[str, str]:
    """The check template's names for a check at ``state``."""
    command = config.test_command
    before, after = silent_failure_parts(command)
    return {
        "state": state,
        "command_line": " ".join(quote(word) for word in argv_of(command)),
        "command_comment": json.dumps(command, ensure_ascii=False),
        "command_source": _SOURCE[config.test_command_source],
        "sentinel_before": quote(before),
        "sentinel_after": quote(after),
    }
