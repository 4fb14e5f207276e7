"""A ``python -m unittest`` test command, run so that it reports per test.

pytest reports through a plugin any pytest loads (gtd.auto.ratchet.report_listener);
unittest has no plugins. So a test command that is exactly ``<python> -m
unittest ARGS`` runs, in the clean room, as ``<python> -c <boot>
<unittest_report.py> ARGS``: the same interpreter and arguments, and the
helper's runner (gtd.auto.ratchet.unittest_report, standard library only)
in place of ``unittest.__main__``. It loads and runs the tests as unittest
does and writes the lines of gtd.auto.ratchet.contract, which the report
reader takes as it takes the plugin's.

Only that shape is rewritten: a Python found by name or path, no interpreter
option before ``-m``. Anything else that ends up in unittest (``make test``,
tox, ``uv run python -m unittest``, a shell line) is judged by its exit status,
as before."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from gtd.auto.ratchet import contract

RUNNER_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unittest_report.py")
GUARD_SOURCE = os.path.join(os.path.dirname(RUNNER_SOURCE), "unittest_guard.py")
SHARED_SOURCE = os.path.join(os.path.dirname(RUNNER_SOURCE), "in_process.py")
# Runs the runner file as __main__ without its folder on the import path (a
# script's folder goes first on sys.path; the helper's modules must not shadow
# the project's): `-c` puts the working directory there, as `-m` does.
BOOT = (
    "import runpy,sys;p=sys.argv[1];del sys.argv[1];sys.argv[0]=p;"
    "runpy.run_path(p,run_name='__main__')"
)


def is_python(name: str) -> bool:
    """``python``, ``python3``, ``python3.11``..."""
    return name.startswith("python") and all(c.isdigit() or c == "." for c in name[6:])


def runs_unittest(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is ``<python> -m unittest ...``."""
    return (
        len(argv) >= 3
        and is_python(os.path.basename(argv[0]))
        and list(argv[1:3]) == ["-m", "unittest"]
    )


def wrapped(argv: Sequence[str], env: Mapping[str, str] | None) -> list[str]:
    """``argv`` as the ratchet runs it: through the reporting runner when it is a
    unittest command and the run listens for reports (``env`` carries the
    run's settings), else unchanged."""
    if not runs_unittest(argv) or contract.ENV_SETTINGS not in (env or {}):
        return list(argv)
    if not all(map(os.path.isfile, (RUNNER_SOURCE, GUARD_SOURCE, SHARED_SOURCE))):  # a zip
        return list(argv)
    return [argv[0], "-c", BOOT, RUNNER_SOURCE, *argv[3:]]
