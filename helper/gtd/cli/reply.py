"""How a failed `gtd` command answers: ``gtd: <message>`` on stderr and, under
--json, the command's error envelope on stdout. Shared by the fast path
(gtd.cli) and typer's commands (gtd.cli.app), below both."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from gtd.names import for_terminal, readable
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import NoReturn


class Reply(NamedTuple):
    """How this invocation answers a failure: under --json (``json``) an envelope
    on stdout as well — step mode's (``step``) or auto mode's."""

    json: bool
    step: bool


def fail(message: str, reply: Reply, code: int, *, raw: bool = False) -> NoReturn:
    """Print ``gtd: <message>`` on stderr (``raw``: the message carries its own
    prefix) and, under --json, the command's error envelope on stdout; exit."""
    import json  # on use: `ratchet run` starts git before json would load

    message = for_terminal(readable(message))  # a file name that is not UTF-8, as \xNN
    print(message if raw else f"gtd: {message}", file=sys.stderr)
    if reply.json and reply.step:
        print(json.dumps({"state": "error", "prompt": message}, ensure_ascii=False))
    elif reply.json:
        print(json.dumps({"status": "error", "error": message}, ensure_ascii=False))
    sys.exit(code)
