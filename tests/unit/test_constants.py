"""Constants once: auto mode's file names and defaults are defined in gtd.paths and
gtd.auto.defaults, and nowhere else in the helper's code."""

from __future__ import annotations

import re
from pathlib import Path

from gtd import paths
from gtd.auto import defaults

HELPER = Path(paths.__file__).resolve().parent
NAMES = (paths.PLAN, paths.CONFIG, paths.MEMORY, paths.SNAPSHOT, paths.SNAPSHOT_JSON)


def _code(text: str) -> str:
    """``text`` without its docstrings and comments: prose may name the files."""
    text = re.sub(r'"""(?:.|\n)*?"""', "", text)
    return re.sub(r"#[^\n]*", "", text)


def test_file_names_are_defined_only_in_paths() -> None:
    found = []
    for module in HELPER.rglob("*.py"):
        if module.name == "paths.py" and module.parent == HELPER:
            continue
        code = _code(module.read_text(encoding="utf-8"))
        found += [(module.name, name) for name in NAMES if f'"{name}"' in code]
        if re.search(r'(?<![\w.])"BOOTSTRAP"', code):
            found.append((module.name, "BOOTSTRAP"))
    assert not found


def test_defaults_are_defined_only_in_defaults() -> None:
    config = (HELPER / "auto" / "config.py").read_text(encoding="utf-8")
    memory = (HELPER / "auto" / "memory.py").read_text(encoding="utf-8")
    assert not re.search(r"^_?DEFAULT_\w+ = ", config + memory, re.M)
    assert defaults.THRESHOLD == 3  # deepflow's default, which the template states
