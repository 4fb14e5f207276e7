"""File names that are not UTF-8: read from git byte for byte, kept exactly in
state, shown as \\xNN to people (gtd.names, proc.run(names=True))."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gtd.fsio import atomic_write
from gtd.names import for_terminal, json_bytes, one_line, readable, readable_json, unsafe_name
from gtd.proc import run

CAFE = os.fsdecode(b"tests/caf\xe9.txt")


def test_state_json_keeps_the_exact_name() -> None:
    data = json_bytes(json.dumps({CAFE: [CAFE]}, ensure_ascii=False))
    assert json.loads(data.decode("utf-8")) == {CAFE: [CAFE]}


def test_people_read_each_byte_as_an_escape() -> None:
    assert readable(CAFE) == "tests/caf\\xe9.txt"
    assert readable("café") == "café"
    text = readable_json(json.dumps({"reason": f"modified: {CAFE}"}, ensure_ascii=False))
    assert json.loads(text) == {"reason": "modified: tests/caf\\xe9.txt"}


def test_a_lone_surrogate_of_no_byte_is_escaped_too() -> None:
    assert readable("a\ud800b") == "a\\ud800b"
    assert json.loads(readable_json(json.dumps(["a\ud800"], ensure_ascii=False))) == ["a\ud800"]


def test_atomic_write_shows_the_name_rather_than_raising(tmp_path: Path) -> None:
    atomic_write(tmp_path / "report.md", f"| {CAFE} |\n")
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "| tests/caf\\xe9.txt |\n"


def test_git_names_round_trip_through_the_seam(tmp_path: Path) -> None:
    """A name read from git is handed back to git (stdin) and to the os."""
    env = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    assert run(["git", "init", "-q"], tmp_path, env=env).ok
    (tmp_path / CAFE).parent.mkdir()
    (tmp_path / CAFE).write_text("x\n")
    listed = run(["git", "ls-files", "-z", "--others"], tmp_path, env=env, names=True)
    assert listed.stdout.split("\0")[0] == CAFE
    hashed = run(
        ["git", "hash-object", "--stdin-paths"], tmp_path, env=env, names=True,
        input_text=CAFE + "\n",
    )  # fmt: skip
    assert hashed.ok, hashed.stderr
    assert (tmp_path / listed.stdout.split("\0")[0]).read_text() == "x\n"


@pytest.mark.parametrize(
    "rel",
    [
        "",
        "/etc/passwd",
        "inventory/../build",
        "../victim.txt",
        "a/./b",
        "a//b",
        "/",
        "a//",
        ".git/config",
        "vendor/.GIT/hooks/pre-commit",
        "x/.Git",
    ],
)
def test_a_name_no_tree_of_git_records_is_unsafe(rel: str) -> None:
    assert unsafe_name(rel) is not None


@pytest.mark.parametrize(
    "rel",
    ["inventory/core.py", "..data/x", "a/.gitignore", "a/...", ".github/ci.yml", "lib/", CAFE],
)
def test_an_ordinary_name_is_safe(rel: str) -> None:
    assert unsafe_name(rel) is None


def test_one_line_escapes_every_line_break_and_control() -> None:
    text = "a\nb\r\nc\td\x1b[31me\x85f\u2028g\u2029h\x00i\x7fj é \u00a0k"
    shown = one_line(text)
    assert shown.splitlines() == [shown]  # Python's every line boundary
    assert shown == ("a\\nb\\r\\nc\\td\\x1b[31me\\x85f\\u2028g\\u2029h\\x00i\\x7fj é \u00a0k")
    assert one_line("tests/test_total.py::test_x[1-2]") == "tests/test_total.py::test_x[1-2]"


def test_for_terminal_keeps_lines_and_tabs_and_escapes_the_rest() -> None:
    text = "status: reverted\nreason: x\x1b[2J\ry\x9b31m\x07\tz"
    assert for_terminal(text) == "status: reverted\nreason: x\\x1b[2J\\ry\\x9b31m\\x07\tz"
