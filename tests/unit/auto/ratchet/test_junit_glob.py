"""`ratchet.junit_xml` globs (gtd.auto.ratchet.report_listener.configured): glob's own
answer, and the same answer where glob's `**` would recurse past Python's limit
(a chain of folders the code under test leaves in the clean room)."""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest

from gtd.auto.ratchet.report_listener import _deep_glob, configured

FILES = (
    "report.xml",
    ".hidden.xml",
    "reports/a.xml",
    "reports/b.txt",
    "reports/deep/c.xml",
    "reports/.cache/d.xml",
    "other/x1.xml",
    "other/xy.xml",
    "other/x-.xml",
)
PATTERNS = (
    "*.xml",
    "**/*.xml",
    "reports/*.xml",
    "reports/**/*.xml",
    "reports/**",
    "other/x?.xml",
    "other/x[0-9].xml",
    "other/x[!0-9].xml",
    "other/x[a-].xml",
    ".*.xml",
    "reports/.cache/*.xml",
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel in FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("<testsuite/>")
    return tmp_path


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_walk_matches_what_glob_matches(tree: Path, pattern: str) -> None:
    files = {p for p in glob.glob(os.path.join(tree, pattern), recursive=True) if os.path.isfile(p)}
    assert set(_deep_glob(tree, pattern)) == files


def test_a_chain_deeper_than_the_recursion_limit_stops_no_glob(tree: Path) -> None:
    path = str(tree / "reports")
    for _ in range(1100):
        path = os.path.join(path, "d")
        os.mkdir(path)
    Path(path, "bottom.xml").write_text("<testsuite/>")
    found = configured(tree, "reports/**/*.xml")
    assert Path(path, "bottom.xml") in found
    assert tree / "reports/a.xml" in found
    from gtd.fsio import remove_tree

    remove_tree(tree / "reports")  # pytest's own clean-up would recurse
