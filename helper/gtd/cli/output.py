"""How commands answer: exactly one JSON object on stdout under --json, else text."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gtd.names import for_terminal, readable, readable_json

if TYPE_CHECKING:
    from typing import Any

JSON_HELP = "Print one JSON object on stdout instead of text."


def emit(payload: Mapping[str, Any], text: str, as_json: bool) -> None:
    if as_json:
        import json  # on use: `ratchet run` starts git before json would load

        # A file name that is not UTF-8 is shown as \xNN, never a traceback.
        sys.stdout.write(readable_json(json.dumps(payload, ensure_ascii=False)) + "\n")
    else:
        sys.stdout.write(for_terminal(readable(text if text.endswith("\n") else text + "\n")))


def root() -> Path:
    """The repository root; gtd refuses to run anywhere else (see gtd.git.repo_root)."""
    from gtd.git import repo_root

    return repo_root(Path.cwd())
