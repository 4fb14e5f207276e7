"""Which untracked folders are dependency folders a cycle must not commit
(gtd.auto.cycle.litter): pure, over `git status` entries."""

from __future__ import annotations

import pytest

from gtd.auto.cycle.litter import found, untracked_only
from gtd.git import Git
from gtd.git_parse import StatusEntry
from tests.conftest import Repo


def _untracked(*paths: str) -> list[StatusEntry]:
    return [StatusEntry("??", p) for p in paths]


@pytest.mark.parametrize(
    ("paths", "folders"),
    [
        (("node_modules/a/index.js", "node_modules/b.js"), [("node_modules", 2)]),
        (("web/node_modules/a.js", "web/app.js"), [("web/node_modules", 1)]),
        (("venv/pyvenv.cfg", "venv/lib/six.py"), [("venv", 2)]),
        (("tools/.env3/pyvenv.cfg", "tools/.env3/bin/python"), [("tools/.env3", 2)]),
        # the outermost: a virtualenv's own node_modules goes with it
        (("env/pyvenv.cfg", "env/node_modules/x.js"), [("env", 2)]),
        (("pyvenv.cfg", "app.py"), []),  # the repository itself is no dependency folder
        (("docs/node_modules.md", "src/pyvenv.cfg.example"), []),
        (("src/app.py", "tests/test_app.py"), []),
    ],
)
def test_found(paths: tuple[str, ...], folders: list[tuple[str, int]]) -> None:
    assert found(_untracked(*paths)) == folders


def test_tracked_changes_are_never_litter() -> None:
    """A change to a file git tracks (a vendored node_modules) is the project's."""
    entries = [StatusEntry(" M", "node_modules/left-pad/index.js")]
    assert found(entries) == []


def test_a_folder_the_project_tracks_is_its_own_and_names_are_literal(repo: Repo) -> None:
    """Real git: a tracked node_modules (vendored) is no litter; an untracked one
    whose parent's name is a glob (`a*b`) is, whatever `a*b` would match."""
    repo.write("aXb/node_modules/x.js", "1\n")
    repo.write("vendored/node_modules/y.js", "1\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "vendored")
    repo.write("vendored/node_modules/z.js", "1\n")
    repo.write("a*b/node_modules/w.js", "1\n")
    git = Git(repo.path)
    folders = found(git.changes())
    assert folders == [("a*b/node_modules", 1), ("vendored/node_modules", 1)]
    assert untracked_only(git, folders) == [("a*b/node_modules", 1)]
