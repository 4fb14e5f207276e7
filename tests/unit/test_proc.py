"""The subprocess seam's command splitting and executable lookup."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from gtd.proc import _which, command_argv, run


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest -q", (["pytest", "-q"], False)),
        ("pytest -k 'a and b'", (["pytest", "-k", "a and b"], False)),
        ("pytest -k a=b", (["pytest", "-k", "a=b"], False)),
        ("PYTHONPATH=src pytest", (["/bin/sh", "-c", "PYTHONPATH=src pytest"], True)),
        ("make test && make lint", (["/bin/sh", "-c", "make test && make lint"], True)),
        ("  npm test  ", (["npm", "test"], False)),
    ],
)
def test_command_argv(command: str, expected: tuple[list[str], bool]) -> None:
    assert command_argv(command) == expected


def test_which_agrees_with_shutil(tmp_path: Path) -> None:
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    (tmp_path / "plain").write_text("")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PATH", "")])
    for name in ("tool", "plain", "git", "sh", "no-such-tool-gtd", str(script), str(tmp_path)):
        assert _which(name, path) == shutil.which(name, path=path), name


def test_a_missing_executable_is_reported_not_raised(tmp_path: Path) -> None:
    result = run(["no-such-tool-gtd"], tmp_path)
    assert (result.returncode, result.not_found) == (127, True)
