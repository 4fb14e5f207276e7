"""Class: files the revert cannot change. The agent makes a file immutable
(`chattr +i`, root only) where the revert must remove or write one: the work is
kept, and `end` and every later `begin` say which file and how to fix it, never
a traceback nor "a bug in gtd"; once a person clears the attribute the loop goes
on."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.redteam.conftest import Cli, Project, run_gtd


def _chattr(flag: str, path: Path) -> bool:
    try:
        res = subprocess.run(["chattr", flag, str(path)], capture_output=True, check=False)
    except FileNotFoundError:
        return False
    return res.returncode == 0


def _no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback (most recent call last)" not in text, text[-3000:]


def _says_which(project: Project, rel: str, first: Cli) -> None:
    """`end` and the next begins stop naming ``rel`` and the fix; never a wait."""
    for res in (first, run_gtd(project.path, "cycle", "begin", "--json", timeout=120)):
        _no_traceback(res.stdout, res.stderr)
        said = res.stdout + res.stderr
        assert "unexpected error" not in said, said
        assert "bug in gtd" not in said, said
        if res.code == 0 and '"busy"' in res.stdout:
            time.sleep(2)
            continue
        assert rel in said, said
        assert "chattr -i" in said, said


# "tracked" is a variant (slow); "new" keeps the mechanism in the quick loop.
@pytest.mark.parametrize("made", ["new", pytest.param("tracked", marks=pytest.mark.slow)])
def test_a_file_made_immutable_stops_the_revert_saying_which(project: Project, made: str) -> None:
    project.begin()
    project.break_total()
    rel = "inventory/stuck.py" if made == "new" else "inventory/core.py"
    stuck = project.path / rel
    if made == "new":
        project.write(rel, "X = 1\n")
    if not _chattr("+i", stuck):
        pytest.skip("chattr +i is not available here (root and a file system with attributes)")
    try:
        first = run_gtd(project.path, "cycle", "end", "--json", timeout=300)
        _says_which(project, rel, first)
    finally:
        _chattr("-i", stuck)
    again = project.gtd("cycle", "begin", "--json").json()  # the person's fix: it goes on
    assert again["status"] in ("task", "halted"), again
    if again["status"] == "halted":
        assert "gtd cycle reset" in str(again.get("next")), again
    assert not (made == "new" and stuck.exists()), "the revert did not finish"
