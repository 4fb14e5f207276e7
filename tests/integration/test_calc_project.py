"""The calculator project's shared set-up: one real `gtd auto setup` per kind of
project and test run, whatever each test's own folders are."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gtd.auto import sandbox
from tests.conftest import PER_TEST_VARIABLES, Repo
from tests.integration import calc_project


def fresh(root: Path) -> Repo:
    root.mkdir()
    repo = Repo(root)
    repo.git("init", "-q", "-b", "main")
    return repo


def test_the_variables_each_test_owns_never_make_a_new_set_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test has its own HOME, cache and state folders (tests/conftest.py):
    were one of them part of what tells set-ups apart, every test would run its
    own set-up and baseline (it did, for two of them, and the quick loop paid
    ~0.5 s of CPU a project)."""
    first = calc_project.make_project(fresh(tmp_path / "a"))
    made = {path for path, _ in calc_project._TEMPLATES.values()}
    for name in sorted(PER_TEST_VARIABLES):
        other = tmp_path / f"other-{name.lower()}"
        if name == "GIT_CONFIG_GLOBAL":  # a file: the same settings, elsewhere
            other.write_bytes(Path(os.environ[name]).read_bytes())
        else:
            other.mkdir()
        monkeypatch.setenv(name, str(other))
    second = calc_project.make_project(fresh(tmp_path / "b"))
    assert {path for path, _ in calc_project._TEMPLATES.values()} == made
    assert second.git("rev-parse", "HEAD") == first.git("rev-parse", "HEAD")
    # What set-up leaves outside the repository comes with the copy: the list of
    # sandboxed repositories in this test's state folder names it when it is.
    here = os.path.realpath(second.path)
    assert (here in sandbox.registered()) == sandbox.recorded(second.path)


def test_a_copys_sandbox_block_names_the_copy_and_this_tests_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Set-up's block names absolute paths (the repository's .git, the home's
    git config). A copy of the template names its own, as a set-up run in its
    place would; the template's would leave the copy's .git writable."""
    if not sandbox.recorded(calc_project.make_project(fresh(tmp_path / "a")).path):
        pytest.skip(f"set-up wrote no sandbox block here: {sandbox.unavailable()}")
    home = tmp_path / "another-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    copy = calc_project.make_project(fresh(tmp_path / "b"))
    templates = {os.path.realpath(path) for path, _ in calc_project._TEMPLATES.values()}
    here = os.path.realpath(copy.path)
    text = (copy.path / sandbox.SETTINGS).read_text()
    denied = json.loads(text)["sandbox"]["filesystem"]["denyWrite"]
    assert f"{here}/.git" in denied, denied
    assert f"{home}/.gitconfig" in denied, denied
    assert templates
    assert not [t for t in templates if t in text]
    # taking the block out (the loop's end) still gives back exactly what was there
    from gtd.auto.sandbox import remove
    from gtd.git import Git

    assert remove(copy.path, Git(copy.path))
    assert not (copy.path / sandbox.SETTINGS).exists()
