"""The outcomes gtd.auto.ratchet.pytest_report recorded → per-test outcomes. Pure.

The file holds one JSON line per pytest session: ``{"root": <pytest's rootdir>,
"tests": {<node id>: <outcome>}}``. Node ids are relative to pytest's rootdir;
they are rewritten relative to the repository (``tests/test_api.py::test_x``, the
ids JUnit reports resolve to), so a command that runs pytest from a
subdirectory names its tests the way people type them from the root. Sessions
merge with the worst outcome winning; a line cut short (a killed run) is skipped.
"""

from __future__ import annotations

import json
import os
from typing import cast

from gtd.auto.ratchet.model import OUTCOMES, Outcome, merge


def parse(text: str, repo_root: str) -> dict[str, Outcome] | None:
    """None when no session line is readable (the plugin never finished)."""
    sessions: list[dict[str, Outcome]] = []
    base = os.path.realpath(repo_root)
    for line in text.splitlines():
        try:
            record = json.loads(line)
            root = os.path.realpath(str(record["root"]))
            tests = record["tests"]
        except (ValueError, KeyError, TypeError):
            continue
        if not isinstance(tests, dict):
            continue
        sessions.append(
            {
                _from_repo_root(str(nodeid), root, base): cast(Outcome, outcome)
                for nodeid, outcome in tests.items()
                if outcome in OUTCOMES
            }
        )
    return merge(sessions) if sessions else None


def _from_repo_root(nodeid: str, root: str, base: str) -> str:
    if root == base or not nodeid:
        return nodeid
    file, sep, rest = nodeid.partition("::")
    rel = os.path.relpath(os.path.join(root, file), base)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return nodeid  # tests outside the repository keep pytest's id
    return rel.replace(os.sep, "/") + sep + rest
