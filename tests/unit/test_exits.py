"""docs/errors.md's table of exit codes is the one gtd.exits names: every code, its
name and no other, and 3 for a bug alone."""

from __future__ import annotations

import re
from pathlib import Path

from gtd import exits
from gtd.auto import headless
from gtd.cli import CRASH_EXIT

DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"


def _documented() -> dict[str, int]:
    rows = re.findall(r"^\| (\d+) \| `(EXIT_\w+)` \|", DOC.read_text(encoding="utf-8"), re.M)
    return {name: int(code) for code, name in rows}


def _named() -> dict[str, int]:
    return {k: v for k, v in vars(exits).items() if k.startswith("EXIT_")}


def test_the_documented_table_is_the_named_codes() -> None:
    assert _documented() == _named()


def test_each_code_means_one_thing() -> None:
    codes = list(_named().values())
    assert len(codes) == len(set(codes))


def test_three_is_for_bugs_only_and_the_loop_stops_have_their_own() -> None:
    assert CRASH_EXIT == exits.EXIT_BUG == 3
    loop = {headless.EXIT_DONE, headless.EXIT_STUCK, headless.EXIT_BLOCKED}
    loop |= {headless.EXIT_HALTED, headless.EXIT_INTERRUPTED}
    assert exits.EXIT_BUG not in loop
    assert (headless.EXIT_HALTED, headless.EXIT_BLOCKED) == (5, 4)


def test_the_readme_names_the_same_codes() -> None:
    readme = (DOC.parents[1] / "README.md").read_text(encoding="utf-8")
    found = re.search(r"Exit codes \(one table: ([^)]+)\)", readme)
    assert found, "README.md no longer sums up the exit codes"
    said = [int(n) for n in re.findall(r"(?:^|, )(\d+) ", " ".join(found.group(1).split()))]
    assert said == sorted(_named().values())


def test_the_loops_help_names_its_codes() -> None:
    """`gtd loop --help`, where a script's author looks: the loop's outcomes with
    the codes gtd.exits gives them."""
    from typer.testing import CliRunner

    from gtd.cli.app import app

    text = " ".join(CliRunner().invoke(app, ["loop", "--help"]).output.split())
    found = re.search(r"Exit status: (.+?) \(docs/errors\.md\)", text)
    assert found, text
    said = dict(re.findall(r"(\d+) ([^,;]+)", found.group(1)))
    assert {int(code) for code in said} == {
        exits.EXIT_DONE,
        exits.EXIT_STUCK,
        exits.EXIT_BUG,
        exits.EXIT_BLOCKED,
        exits.EXIT_HALTED,
        exits.EXIT_INTERRUPTED,
    }
    assert said[str(exits.EXIT_HALTED)] == "halted"
    assert said[str(exits.EXIT_BLOCKED)] == "blocked"
    assert said[str(exits.EXIT_BUG)].startswith("only for a bug")
