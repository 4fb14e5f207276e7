"""The reporting plugin run inside a real pytest, as the ratchet runs it: shared by
the tests of what it reports, what it collects and what it refuses."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from gtd import proc
from gtd.auto.ratchet import report_listener
from gtd.auto.ratchet.results import Report

PY = shlex.quote(sys.executable)
# xdist and hypothesis stay out of the inner runs (they triple their start-up);
# autoload stays on, which is how the plugin loads.
PYTEST = f"{PY} -m pytest -q -p no:cacheprovider -p no:xdist -p no:hypothesispytest"


def run(root: Path, command: str, request: report_listener.Request | None = None) -> Report:
    """``command`` run from ``root`` with the helper's listener: the plugin's report."""
    listener = report_listener.start(request or report_listener.Request(root))
    argv, _ = proc.command_argv(command)
    result = proc.run(argv, root, env=listener.env, pass_fds=listener.pass_fds)
    assert "INTERNALERROR" not in result.output, result.output
    return listener.finish()


def in_room(root: Path, guarded: tuple[str, ...]) -> report_listener.Request:
    """A run as the clean room's, with ``root`` the room (nothing is loaded from
    the live folder beside it) and ``guarded`` the protected Python files."""
    live = root.parent / "live"
    return report_listener.Request(
        root, forbidden=(live,), redirect=report_listener.Redirect(live, root), guarded=guarded
    )


def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No setting of the outer pytest run reaches the inner one."""
    for name in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH"):
        monkeypatch.delenv(name, raising=False)
