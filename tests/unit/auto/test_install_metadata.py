"""Install metadata: which tracked folders an install regenerates, and the command."""

from __future__ import annotations

import shlex

from gtd.auto.install_metadata import advice, folders, untrack_command


def test_folders_holding_install_metadata() -> None:
    assert folders(
        [
            "src/pkg.egg-info/PKG-INFO",
            "src/pkg.egg-info/SOURCES.txt",
            "pkg-1.0.dist-info/METADATA",
            "docs/PKG-INFO",  # a file of that name outside such a folder: a person's
            "notes.egg-info",  # a file, not a folder
            "src/pkg/mod.py",
        ]
    ) == ["pkg-1.0.dist-info", "src/pkg.egg-info"]
    assert folders(["a.py", "tests/test_a.py"]) == []


def test_the_command_quotes_every_name() -> None:
    command = untrack_command(["src/my pkg.egg-info"])
    assert command == (
        "git rm -r -q --cached -- 'src/my pkg.egg-info' && printf '\\n%s\\n'"
        " 'my pkg.egg-info/' >> .gitignore && git add .gitignore"
        " && git commit -q -m 'Stop tracking my pkg.egg-info'"
    )
    assert shlex.split(command)[6] == "src/my pkg.egg-info"
    assert advice(["a.egg-info"]).startswith(
        "a.egg-info/: tracked, and rewritten by the project's install (pip install -e .)"
    )
