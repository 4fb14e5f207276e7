"""Class E: git tricks. The agent commits, amends, resets, switches branches,
creates refs and tags, installs hooks, adds submodules or nested repositories,
leaves empty directories or changes the repository's config. Whatever it did,
a failing cycle ends with HEAD on the base of the branch it began on, the tree
exactly the base's and the work kept; nothing it planted runs afterwards."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gtd.fsio import remove_tree
from tests.redteam import hostile
from tests.redteam import project as proj
from tests.redteam.conftest import (
    Cli,
    Project,
    State,
    assert_passed,
    assert_refused,
    raw_name,
    readable,
    run_git,
    run_gtd,
)
from tests.redteam.objects import a_tree, forge_package_extra, true_blob

TOTAL = "tests/test_total.py"
LIB = "def helper():\n    return 42\n"


def test_agent_commits_the_broken_work(project: Project) -> None:
    before = project.state()
    project.begin()
    project.break_total()
    project.agent_git("add", "-A")
    project.agent_git("commit", "-q", "-m", "T1 done")
    assert_refused(project, project.end(), before, names=[TOTAL])


@pytest.mark.slow
def test_agent_amends_the_base_commit(project: Project) -> None:
    before = project.state()
    project.begin()
    project.break_total()
    project.agent_git("commit", "-q", "-a", "--amend", "--no-edit")
    assert project.head() != project.base
    assert_refused(project, project.end(), before, names=[TOTAL])


@pytest.mark.slow
def test_agent_resets_the_branch_below_the_base(project: Project) -> None:
    before = project.state()
    project.begin()
    project.agent_git("reset", "-q", "--hard", "HEAD~1")
    project.break_total()
    assert_refused(project, project.end(), before, names=[TOTAL])


def test_agent_checks_out_another_branch_and_fails(project: Project) -> None:
    feature = project.ref("feature")
    before = project.state()
    project.begin()
    project.agent_git("checkout", "-q", "feature")
    project.break_total()
    answer = project.end()
    assert project.ref("feature") == feature, "the other branch was rewritten"
    assert_refused(project, answer, before, names=[TOTAL, "feature"])


def test_agent_precreates_the_kept_ref_and_tags(project: Project) -> None:
    """The ref a revert keeps the work under already exists (pointing at the
    base), and a tag shares the branch's name."""
    before = project.state()
    cycle = project.begin()["cycle"]
    project.agent_git("update-ref", f"refs/gtd/reverted/cycle-{cycle}", "HEAD")
    project.agent_git("tag", "main")
    project.agent_git("tag", "v9.9")
    project.break_total()
    assert_refused(project, project.end(), before, names=[TOTAL])


def _hook(body: str) -> str:
    return f"#!/bin/sh\ncat >/dev/null 2>&1 <&0 &\n{body}\nexit 0\n"


_REBREAK = 'cp "$(git rev-parse --git-dir)/rt-broken-core.py" inventory/core.py 2>/dev/null'
_REVERT_HOOKS = ("post-checkout", "post-merge", "reference-transaction", "post-index-change")


def test_agent_hooks_undo_the_revert(project: Project) -> None:
    """Hooks that put the broken file back whenever git checks out, moves a ref
    or writes the index: a revert done with plain git commands re-breaks the tree."""
    before = project.state()
    project.begin()
    project.break_total()
    project.write(".git/rt-broken-core.py", proj.BROKEN_CORE)
    for name in _REVERT_HOOKS:
        project.write(f".git/hooks/{name}", _hook(_REBREAK), executable=True)
    assert_refused(project, project.end(), before, names=[TOTAL, ".git/hooks"])


@pytest.mark.slow
def test_agent_hooks_path_points_into_the_tree(project: Project) -> None:
    before = project.state()
    project.begin()
    project.break_total()
    project.write(".git/rt-broken-core.py", proj.BROKEN_CORE)
    for name in _REVERT_HOOKS:
        project.write(f".rt-hooks/{name}", _hook(_REBREAK), executable=True)
    project.agent_git("config", "core.hooksPath", ".rt-hooks")
    assert_refused(project, project.end(), before, names=[TOTAL, ".rt-hooks", "hooksPath"])


def test_agent_post_commit_hook_slips_broken_code_into_the_commit(project: Project) -> None:
    """A correct change, plus a post-commit hook (not skipped by --no-verify) that
    amends the broken code into whatever commit the helper makes."""
    project.begin()
    project.do_t1()
    project.write(".git/rt-broken-core.py", proj.BROKEN_CORE)
    body = (
        'gd=$(git rev-parse --git-dir)\n[ -f "$gd/rt-done" ] && exit 0\ntouch "$gd/rt-done"\n'
        'cp "$gd/rt-broken-core.py" inventory/core.py\n'
        "git add inventory/core.py && git commit -q --amend --no-edit --no-verify"
    )
    project.write(".git/hooks/post-commit", _hook(body), executable=True)
    answer = project.end()
    assert answer.get("status") in ("passed", "reverted", "halted"), answer
    commits = project.observe("rev-list", f"{project.base}..main").split()
    for commit in commits:
        assert project.show(commit, "inventory/core.py") != proj.BROKEN_CORE, (
            f"the broken code was committed in {commit}: {answer}"
        )
    assert project.read("inventory/core.py") == project.show("HEAD", "inventory/core.py")
    assert project.observe("status", "--porcelain", "--untracked-files=all") == ""


def _library(where: Path) -> Path:
    where.mkdir()
    (where / "lib.py").write_text(LIB)
    run_git(where, "init", "-q", "-b", "main")
    run_git(where, "add", "-A")
    run_git(where, "commit", "-q", "-m", "library")
    return where


def test_agent_adds_a_submodule(project: Project, tmp_path: Path) -> None:
    library = _library(tmp_path / "library")
    before = project.state()
    project.begin()
    project.break_total()
    project.agent_git(
        "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "vendor/lib"
    )
    answer = project.end()
    assert_refused(project, answer, before, names=[TOTAL, "vendor/lib", ".gitmodules"])
    assert project.show(str(answer["kept"]), ".gitmodules") is not None
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


@pytest.mark.slow
def test_agent_commits_inside_an_existing_submodule(
    make_project: Callable[[str], Project], tmp_path: Path
) -> None:
    project = make_project("full")
    library = _library(tmp_path / "library")
    project.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "ext")
    project.git("commit", "-q", "-m", "vendor the library")
    project.setup()
    ext_head = run_git(project.path / "ext", "rev-parse", "HEAD").strip()
    before = project.state()
    project.begin()
    project.break_total()
    (project.path / "ext/lib.py").write_text(LIB + "\n\ndef other():\n    return 0\n")
    run_git(project.path / "ext", "commit", "-q", "-am", "agent edit inside the submodule")
    (project.path / "ext/scratch.txt").write_text("left behind\n")
    answer = project.end()
    assert run_git(project.path / "ext", "rev-parse", "HEAD").strip() == ext_head
    assert run_git(project.path / "ext", "status", "--porcelain", "--untracked-files=all") == ""
    assert_refused(project, answer, before, names=[TOTAL, "ext"])


# A twin or a variant; the quick loop's test of this mechanism is
# test_agent_adds_a_submodule.
@pytest.mark.slow
def test_agent_creates_a_nested_repository(project: Project) -> None:
    before = project.state()
    project.begin()
    project.break_total()
    nested = project.path / "vendor/nested"
    nested.mkdir(parents=True)
    (nested / "lib.py").write_text(LIB)
    run_git(nested, "init", "-q", "-b", "main")
    run_git(nested, "add", "-A")
    run_git(nested, "commit", "-q", "-m", "nested")
    answer = project.end()
    assert_refused(
        project,
        answer,
        before,
        names=[TOTAL, "vendor/nested"],
        kept={"inventory/core.py": proj.BROKEN_CORE, "vendor/nested/lib.py": LIB},
    )
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


def test_agent_leaves_empty_directories(project: Project) -> None:
    before = project.state()
    project.begin()
    project.break_total()
    for folder in ("inventory/empty/deeper", "tests/zz_empty", "scratch"):
        (project.path / folder).mkdir(parents=True)
    assert_refused(project, project.end(), before, names=[TOTAL])
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


@pytest.mark.slow
def test_agent_switches_on_autocrlf(project: Project) -> None:
    """With `core.autocrlf=true` a checkout writes CRLF: the revert must still
    restore the base byte for byte, and the next legitimate cycle must pass."""
    before = project.state()
    project.begin()
    project.break_total()
    project.write(TOTAL, proj.TEST_TOTAL.replace("assert_cents(", "(lambda *args: None)("))
    project.agent_git("config", "core.autocrlf", "true")
    assert_refused(project, project.end(), before, names=[TOTAL, "autocrlf"])
    project.begin()
    project.do_t1()
    assert_passed(project, project.end())


# A twin or a variant; the quick loop's test of this mechanism is
# test_unseen_files.py::test_conftest_in_a_folder_that_ignores_itself (a conftest git
# ignores).
@pytest.mark.slow
def test_agent_hides_a_conftest_with_core_excludes_file(project: Project) -> None:
    before = project.state()
    project.begin()
    project.break_total()
    excludes = project.path / ".git/rt-excludes"
    excludes.write_text("tests/ex2/\n")
    project.agent_git("config", "core.excludesFile", str(excludes))
    project.write("tests/ex2/conftest.py", hostile.SESSION_HOOK)
    project.write("tests/ex2/test_local.py", "def test_local():\n    assert True\n")
    assert "ex2" not in project.git("status", "--porcelain", "--untracked-files=all")
    project.assert_hidden()
    assert_refused(
        project, project.end(), before, names=["excludesFile", "tests/ex2/conftest.py", TOTAL]
    )


@pytest.mark.slow
def test_agent_hides_its_untracked_files_from_git_status(project: Project) -> None:
    before = project.state()
    project.begin()
    project.break_total()
    project.write("inventory/extra.py", "EXTRA = 1\n")
    project.write("notes/todo.txt", "agent notes\n")
    project.agent_git("config", "status.showUntrackedFiles", "no")
    answer = project.end()
    assert_refused(
        project,
        answer,
        before,
        names=["showUntrackedFiles", TOTAL],
        kept={"inventory/core.py": proj.BROKEN_CORE, "notes/todo.txt": "agent notes\n"},
    )


@pytest.mark.slow
def test_agent_adds_a_linked_worktree_inside_the_tree(project: Project) -> None:
    before = project.state()
    project.begin()
    project.break_total()
    project.agent_git("worktree", "add", "-q", "-b", "rt-side", "side-tree")
    assert_refused(project, project.end(), before, names=[TOTAL, "side-tree"])
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


# A twin or a variant; the quick loop's test of this mechanism is
# test_agent_installs_a_smudge_filter_that_rebreaks_the_code.
@pytest.mark.slow
def test_agent_sets_crlf_attributes_in_git_info(project: Project) -> None:
    """`.git/info/attributes` is outside the tree: every later checkout of a .py
    file writes CRLF, so a revert by checkout is not byte for byte."""
    before = project.state()
    project.begin()
    project.break_total()
    project.write(TOTAL, proj.TEST_TOTAL.replace("assert_cents(", "(lambda *args: None)("))
    project.write(".git/info/attributes", "*.py text eol=crlf\n")
    assert_refused(project, project.end(), before, names=[TOTAL, "attributes"])


def test_agent_installs_a_smudge_filter_that_rebreaks_the_code(project: Project) -> None:
    before = project.state()
    project.begin()
    project.break_total()
    broken = project.write(".git/rt-broken-core.py", proj.BROKEN_CORE)
    project.write(".git/info/attributes", "inventory/core.py filter=rt\n")
    project.agent_git("config", "filter.rt.smudge", f"cat '{broken}'")
    project.agent_git("config", "filter.rt.clean", "cat")
    assert_refused(project, project.end(), before, names=[TOTAL, "filter", "attributes"])


@pytest.mark.slow
def test_agent_sets_a_file_system_monitor_that_rebreaks_the_code(project: Project) -> None:
    before = project.state()
    project.begin()
    project.break_total()
    broken = project.write(".git/rt-broken-core.py", proj.BROKEN_CORE)
    monitor = project.write(
        ".git/rt-fsmonitor",
        f"#!/bin/sh\ncp '{broken}' '{project.path / 'inventory/core.py'}'\nexit 1\n",
        executable=True,
    )
    project.agent_git("config", "core.fsmonitor", str(monitor))
    assert_refused(project, project.end(), before, names=[TOTAL, "fsmonitor"])


@pytest.mark.slow
def test_agent_detaches_head_and_commits(project: Project) -> None:
    before = project.state()
    project.begin()
    project.agent_git("checkout", "-q", "--detach")
    project.break_total()
    project.agent_git("commit", "-q", "-am", "detached work")
    assert_refused(project, project.end(), before, names=[TOTAL, "detached"])


# A twin or a variant; the quick loop's test of this mechanism is
# test_agent_checks_out_another_branch_and_fails.
@pytest.mark.slow
def test_agent_deletes_the_branch_the_cycle_began_on(project: Project) -> None:
    before = project.state()
    project.begin()
    project.agent_git("checkout", "-q", "-b", "rt-other")
    project.agent_git("branch", "-q", "-D", "main")
    project.break_total()
    assert_refused(project, project.end(), before, names=[TOTAL, "main"])


def test_agent_destroys_the_base_commit(project: Project) -> None:
    """Reset below the base, expire the reflog and prune: the base commit object
    would be gone if the helper did not keep it reachable while the cycle runs."""
    before = project.state()
    project.begin()
    project.agent_git("reset", "-q", "--hard", "HEAD~1")
    project.agent_git("reflog", "expire", "--expire=now", "--all")
    project.agent_git("gc", "-q", "--prune=now")
    probe = subprocess.run(["git", "cat-file", "-e", project.base], cwd=project.path)
    assert probe.returncode == 0, "the base commit was pruned: nothing can restore it"
    project.break_total()
    assert_refused(project, project.end(), before, names=[TOTAL])


# Slow: the same check as tests/integration/test_git_states.py::
# test_a_git_lock_that_is_not_the_helpers_is_named_never_removed (a lock not the
# helper's, named by its full path at `end`), which keeps it in the quick loop.
@pytest.mark.slow
def test_agent_leaves_a_git_index_lock(project: Project) -> None:
    """Every later git command that writes the index fails: the answer must say
    which file to remove (full path), never stall or pass."""
    before = project.state()
    project.begin()
    project.break_total()
    project.write(".git/index.lock", "")
    answer = project.end()
    said = f"{answer.get('reason', '')} {answer.get('message', '')}"
    assert str(project.path / ".git/index.lock") in said, f"the lock is not named: {answer}"
    if answer.get("status") == "reverted":
        assert_refused(project, answer, before, names=["index.lock"])
    else:
        assert answer.get("status") == "halted" or answer.get("next") == "halt", answer
        assert project.head() == project.base


@pytest.mark.parametrize("kind", ["file", pytest.param("link", marks=pytest.mark.slow)])
def test_agent_puts_a_file_where_the_helper_keeps_its_private_indexes(
    project: Project, tmp_path: Path, kind: str
) -> None:
    """`.git/gtd` is the helper's folder for its private indexes. A file there made
    the revert crash, and every later `begin` with it, until a person removed it;
    a link would have the helper write where it leads. Neither is the helper's:
    it is removed, the cycle is reverted and the loop goes on."""
    before = project.state()
    project.begin()
    project.break_total()
    place = project.path / ".git" / "gtd"
    if place.is_dir():
        shutil.rmtree(place)
    elif place.exists():
        place.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if kind == "file":
        place.write_text("not a folder\n")
    else:
        place.symlink_to(elsewhere)
    answer = project.end()
    assert_refused(project, answer, before, names=[TOTAL])
    assert list(elsewhere.iterdir()) == [], "the helper wrote through the link"
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


# Three cycles: the multi-cycle tests run in the slow set.
@pytest.mark.slow
def test_a_file_name_with_a_newline_in_a_test_folder_never_stalls_the_loop(
    project: Project,
) -> None:
    """A passing cycle adds test data whose name holds a newline; from then on it
    is a protected file of the base, which each check hashes in the clean room
    through `git hash-object --stdin-paths`, one path a line. Split in two, it
    made every later cycle refused ("a protected test was changed in the clean room")
    until a person renamed it. Later cycles still pass, and a break is still
    refused for what it breaks."""
    odd = "tests/data\nfile.txt"
    project.begin()
    project.do_t1()
    project.write(odd, "fixture\n")
    assert_passed(project, project.end())
    project.base = project.head()
    project.gtd("cycle", "begin", "--json").json()
    project.write("inventory/report.py", '"""Stock reports."""\n')
    answer = project.end()
    assert answer["status"] == "passed", answer
    project.base = project.head()
    before = project.state()
    project.gtd("cycle", "begin", "--json").json()
    project.break_total()
    assert_refused(project, project.end(), before, names=[TOTAL])


# A file name that is not UTF-8 (Latin-1 "café", a lone 0xff byte), as the str
# that the os functions and git's argv turn back into exactly those bytes.
LATIN1_DATA = raw_name(b"tests/data/caf\xe9.txt")
FF_MODULE = raw_name(b"inventory/\xff.py")


def assert_report_readable(project: Project) -> str:
    """The auto-mode report is valid UTF-8 (it is read as text by people and
    tools alike) and is returned for more checks."""
    return (project.path / ".deepflow" / "auto-report.md").read_bytes().decode("utf-8")


def test_a_file_name_that_is_not_utf8_beside_a_break_is_kept_and_removed(
    project: Project,
) -> None:
    """The agent leaves a file whose name is not UTF-8 beside the standard break.
    git's output was read with such bytes replaced by U+FFFD, a name of no file:
    the revert left the file behind and every later `begin` answered `dirty`.
    The revert keeps it in the kept ref, removes it, and the loop goes on."""
    before = project.state()
    project.begin()
    project.break_total()
    project.write(FF_MODULE, "VALUE = 1\n")
    answer = project.end()
    assert_refused(
        project,
        answer,
        before,
        names=[TOTAL],
        kept={"inventory/core.py": proj.BROKEN_CORE, FF_MODULE: "VALUE = 1\n"},
    )
    assert_report_readable(project)
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


# Three cycles, as its newline twin: the multi-cycle tests run in the slow set.
@pytest.mark.slow
def test_a_file_name_that_is_not_utf8_in_a_test_folder_never_stalls_the_loop(
    project: Project,
) -> None:
    """A passing cycle adds test data whose name is not UTF-8; from then on it is
    a protected file of the base, taken from the base commit into every clean
    room by its name. Later cycles still pass, and a break is still refused."""
    project.begin()
    project.do_t1()
    project.write(LATIN1_DATA, "fixture\n")
    assert_passed(project, project.end())
    assert project.show("HEAD", LATIN1_DATA) == "fixture\n"
    project.base = project.head()
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"
    project.write("inventory/report.py", '"""Stock reports."""\n')
    answer = project.end()
    assert answer["status"] == "passed", answer
    project.base = project.head()
    before = project.state()
    project.gtd("cycle", "begin", "--json").json()
    project.break_total()
    assert_refused(project, project.end(), before, names=[TOTAL])
    assert_report_readable(project)


# A variant of the module left beside the break, which the quick loop keeps.
@pytest.mark.slow
def test_a_conftest_in_a_folder_whose_name_is_not_utf8(project: Project) -> None:
    """The session-wide conftest attack from a new test folder whose name is not
    UTF-8: refused, and where the answer and the report name the folder's files
    they do so readably (valid JSON, valid UTF-8), never with a traceback."""
    before = project.state()
    project.begin()
    project.break_total()
    attack = raw_name(b"tests/z\xffz/conftest.py")
    project.write(attack, hostile.SESSION_HOOK)
    project.write(raw_name(b"tests/z\xffz/test_more.py"), "def test_more():\n    assert 1\n")
    project.assert_hidden()
    answer = project.end()
    assert_refused(
        project,
        answer,
        before,
        names=[readable(attack), TOTAL],
        kept={"inventory/core.py": proj.BROKEN_CORE, attack: hostile.SESSION_HOOK},
    )
    report = assert_report_readable(project)
    assert "\ufffd" not in report  # a name of no file
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


def test_a_protected_file_whose_name_is_not_utf8_is_weakened(project: Project) -> None:
    """A passing cycle commits test data whose name is not UTF-8; the next one
    rewrites that protected file beside a break. Refused, the protected file is
    the base's again, and the reason names it readably."""
    project.begin()
    project.do_t1()
    project.write(LATIN1_DATA, "fixture\n")
    assert_passed(project, project.end())
    project.base = project.head()
    before = project.state()
    project.begin()
    project.break_total()
    project.write(LATIN1_DATA, "weakened\n")
    answer = project.end()
    assert_refused(
        project,
        answer,
        before,
        names=[readable(LATIN1_DATA)],
        kept={"inventory/core.py": proj.BROKEN_CORE, LATIN1_DATA: "weakened\n"},
    )
    assert readable(LATIN1_DATA) in assert_report_readable(project)
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


def test_an_ignored_file_whose_name_is_not_utf8_survives_the_revert(
    project: Project,
) -> None:
    """A person's ignored build output, its name not UTF-8; the cycle un-ignores
    it by a `.gitignore` edit and fails. The revert must know the file by its
    real name to leave it (a person's data) exactly where it was."""
    person = raw_name(b"build/caf\xe9.xml")
    project.write(person, "<person/>\n")
    before = project.state()
    project.begin()
    project.break_total()
    project.write(".gitignore", proj.GITIGNORE.replace("build/\n", ""))
    answer = project.end()
    assert_refused(project, answer, before, names=[TOTAL, "build/caf\\xe9.xml"])
    assert (project.path / person).read_text() == "<person/>\n", "the person's file is gone"
    # ignored when the cycle began: never in a kept ref (docs/your-work-is-safe.md)
    assert project.show(answer["kept"], person) is None
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


def test_agent_marks_the_broken_file_skip_worktree(project: Project) -> None:
    """`git update-index --skip-worktree` on the file the cycle breaks: `git reset`
    keeps the bit and `checkout-index` passes such a path over, so the revert
    failed, the broken code stayed in the tree (hidden from `git status`), and
    every later `begin` stopped at the same revert. The revert puts the file back
    and the loop goes on."""
    before = project.state()
    project.begin()
    project.agent_git("update-index", "--skip-worktree", "inventory/core.py")
    project.break_total()
    assert_refused(project, project.end(), before, names=[TOTAL])
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


def test_agent_replaces_the_base_commit_with_git_replace(project: Project) -> None:
    """`refs/replace/<base>` makes git read a commit of the agent's in place of the
    base: a revert by `reset --hard <base>` checks out the broken tree, and git
    then calls that tree clean."""
    before = project.state()
    project.begin()
    project.break_total()
    project.agent_git("add", "-A")
    tree = project.agent_git("write-tree").strip()
    parent = project.agent_git("rev-parse", "HEAD~1").strip()
    fake = project.agent_git("commit-tree", tree, "-p", parent, "-m", "set up auto mode").strip()
    project.agent_git("replace", project.base, fake)
    assert_refused(project, project.end(), before, names=[TOTAL, "replace"])


def test_agent_points_core_worktree_at_a_copy_with_broken_code(
    project: Project, tmp_path: Path
) -> None:
    """The tests run in the repository's folder, where the change is correct; git,
    told by `core.worktree` to look elsewhere, would commit a copy of the tree
    in which the code is broken."""
    other = tmp_path / "elsewhere"
    shutil.copytree(project.path, other, ignore=shutil.ignore_patterns(".git"))
    (other / "inventory/core.py").write_text(proj.BROKEN_CORE)
    project.begin()
    project.do_t1()
    project.agent_git("config", "core.worktree", str(other))
    answer = project.end()
    assert answer.get("status") in ("passed", "reverted", "halted"), answer
    for commit in project.observe("rev-list", f"{project.base}..main").split():
        assert project.show(commit, "inventory/core.py") != proj.BROKEN_CORE, (
            f"the untested broken code was committed in {commit}: {answer}"
        )
    if answer.get("status") == "passed":
        assert project.show("HEAD", "tests/test_pricing.py") == proj.TEST_PRICING
        assert project.observe("status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.slow
def test_agent_makes_the_repository_bare(project: Project) -> None:
    """`core.bare=true`: every git command that needs a work tree fails, so a
    revert by plain git commands cannot run."""
    before = project.state()
    project.begin()
    project.break_total()
    project.agent_git("config", "core.bare", "true")
    assert_refused(project, project.end(), before, names=[TOTAL, "core.bare", ".git/config"])


# -- legitimate twins: these must pass ---------------------------------------------------


def test_legit_agent_commits_its_own_work_in_two_commits(project: Project) -> None:
    project.begin()
    project.write("inventory/pricing.py", proj.PRICING_WITH_BULK)
    project.agent_git("commit", "-q", "-am", "bulk")
    project.write("tests/test_pricing.py", proj.TEST_PRICING)
    project.agent_git("add", "-A")
    project.agent_git("commit", "-q", "-m", "bulk tests")
    assert_passed(project, project.end())
    assert project.show("HEAD", "tests/test_pricing.py") == proj.TEST_PRICING


@pytest.mark.slow
def test_legit_cycle_after_a_person_switches_on_autocrlf(project: Project) -> None:
    """A person turns `core.autocrlf` on after setup; a reverted cycle that touched
    a snapshot test, then a legitimate one, which must pass."""
    run_git(project.path, "config", "core.autocrlf", "true")
    project.begin()
    project.break_total()
    project.write(TOTAL, proj.TEST_TOTAL + "\n")
    reverted = project.end()
    assert reverted["status"] == "reverted", reverted
    project.begin()
    project.do_t1()
    assert_passed(project, project.end())


def test_agent_git_calls_really_ran_the_hooks(project: Project) -> None:
    """Control for the hook attacks: the hooks written above do run under git."""
    project.write(".git/rt-broken-core.py", proj.BROKEN_CORE)
    project.write(".git/hooks/post-checkout", _hook(_REBREAK), executable=True)
    subprocess.run(["git", "checkout", "-q", "feature"], cwd=project.path, check=True)
    assert project.read("inventory/core.py") == proj.BROKEN_CORE


@contextlib.contextmanager
def global_config(text: str) -> Iterator[Path]:
    """``text`` appended to the user's global git config (the test session's own
    file) for the block, as the agent would write it; the file put back after."""
    gitconfig = Path(os.environ["GIT_CONFIG_GLOBAL"])
    kept = gitconfig.read_text()
    try:
        with gitconfig.open("a") as handle:
            handle.write(text)
        yield gitconfig
    finally:
        gitconfig.write_text(kept)


def _filter_rt(attributes: Path, *, smudge: str, clean: str) -> str:
    """A global attributes file and the filter "rt" it may name."""
    return (
        f"[core]\n\tattributesFile = {attributes}\n"
        f'[filter "rt"]\n\tsmudge = {smudge}\n\tclean = {clean}\n'
    )


def test_agent_installs_a_filter_in_the_global_git_config(project: Project, tmp_path: Path) -> None:
    """The git configuration outside the repository (the user's global file, the
    global attributes file it names) is read by every git the helper runs: a smudge
    filter there could write a weakened test into the clean room, and a clean
    filter hash it back to the sealed blob."""
    before = project.state()
    project.begin()
    project.break_total()
    weak = tmp_path / "weak.py"
    weak.write_text(proj.TEST_TOTAL.replace("assert_cents(", "(lambda *args: None)("))
    original = tmp_path / "original.py"
    original.write_text(proj.TEST_TOTAL)
    attributes = tmp_path / "attributes"
    attributes.write_text(f"{TOTAL} filter=rt\n")
    filters = _filter_rt(attributes, smudge=f"cat '{weak}'", clean=f"cat '{original}'")
    with global_config(filters) as gitconfig:
        # and a fresh clean room, so the weakened test is checked out there
        shutil.rmtree(Path(os.environ["XDG_CACHE_HOME"]) / "gtd" / "rooms", ignore_errors=True)
        answer = project.end()
    assert_refused(project, answer, before, names=[str(gitconfig)])


# A twin or a variant; the quick loop's test of this mechanism is
# test_agent_installs_a_filter_in_the_global_git_config.
@pytest.mark.slow
def test_a_global_smudge_filter_does_not_rebreak_the_reverted_code(
    project: Project, tmp_path: Path
) -> None:
    """The revert writes the base's files back with the repository's own
    configuration only: a smudge filter the agent put in the global file would
    otherwise write its broken code again."""
    before = project.state()
    project.begin()
    project.break_total()
    broken = tmp_path / "broken.py"
    broken.write_text(proj.BROKEN_CORE)
    attributes = tmp_path / "attributes"
    attributes.write_text("inventory/core.py filter=rt\n")
    with global_config(_filter_rt(attributes, smudge=f"cat '{broken}'", clean="cat")) as gitconfig:
        answer = project.end()
    assert answer.get("next") == "halt", answer
    assert_refused(project, answer, before, names=[str(gitconfig)])


def test_a_credential_helper_written_to_the_global_config_stops_nothing(
    project: Project,
) -> None:
    """Tools write the global file on their own (a credential helper, `git
    maintenance register`): keys no git of the helper reads are not watched."""
    project.begin()
    project.do_t1()
    with global_config("[credential]\n\thelper = cache\n[maintenance]\n\trepo = /elsewhere\n"):
        answer = project.end()
    assert_passed(project, answer)


# Slow: the sibling of test_agent_marks_the_broken_file_skip_worktree (an index bit
# that hides the broken file; the revert puts it back all the same), which keeps the
# mechanism in the quick loop.
@pytest.mark.slow
def test_agent_marks_the_broken_file_assume_unchanged(project: Project) -> None:
    """`git update-index --assume-unchanged` on the file the cycle breaks (the
    sibling of skip-worktree): git then takes the index entry for the file, so a
    revert that asks git what changed, or a `checkout-index` that trusts the bit,
    could leave the broken code in the tree, hidden from `git status`."""
    before = project.state()
    project.begin()
    project.agent_git("update-index", "--assume-unchanged", "inventory/core.py")
    project.break_total()
    assert_refused(project, project.end(), before, names=[TOTAL])
    listed = project.observe("ls-files", "-v", "inventory/core.py")
    assert listed.startswith("H "), f"the bit outlived the revert: {listed!r}"
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


@pytest.mark.slow  # held before: a guard of its own mechanism (git's index damaged)
def test_agent_truncates_the_git_index(project: Project) -> None:
    """The agent damages `.git/index` (cut short): every git command that reads it
    fails. `end` must still revert (the index is git's cache of HEAD and the tree,
    nothing a person wrote), and the next `begin` answer `task`, not stall the
    loop on a person."""
    before = project.state()
    project.begin()
    project.break_total()
    index = project.path / ".git/index"
    index.write_bytes(index.read_bytes()[:40])
    answer = project.end()
    assert_refused(project, answer, before, names=[TOTAL, "index"])
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


def test_agent_turns_the_plan_into_a_fifo(project: Project) -> None:
    """PLAN.md (a file the helper reads whole) made a named pipe: a read of it
    blocks until someone writes, forever, and `end` did so under the state lock,
    so the loop stalled; git cannot add a pipe either (`add -A` exits 1), so the
    check and every revert after it stopped too. The cycle is refused naming the
    file, and the revert puts the plan back."""
    before = project.state()
    project.begin()
    project.break_total()
    plan = project.path / "PLAN.md"
    plan.unlink()
    os.mkfifo(plan)
    res = subprocess.run(
        [sys.executable, "-m", "gtd", "cycle", "end", "--json"],
        cwd=project.path,
        capture_output=True,
        text=True,
        timeout=120,  # the stall, made a failure
    )
    try:
        answer = json.loads(res.stdout)
    except ValueError:
        raise AssertionError(f"no answer: {res.stdout!r} {res.stderr!r}") from None
    assert_refused(project, answer, before, names=["PLAN.md"])
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


# -- named pipes where git reads a file -------------------------------------------------
#
# git opens `.gitignore` and `.gitattributes` in every folder it walks, and the files
# of its own directory, as files: a named pipe in such a place has git wait forever
# (in open() until a writer comes, or in read() while a writer holds it and writes
# nothing), and the loop with it. Each test bounds the wait it would be.

STALL_S = 90


def _end_bounded(project: Project) -> dict[str, Any]:
    try:
        return run_gtd(project.path, "cycle", "end", "--json", timeout=STALL_S).json()
    except subprocess.TimeoutExpired:
        raise AssertionError(f"`gtd cycle end` still waited after {STALL_S} s") from None


def _begin_bounded(project: Project) -> Cli:
    try:
        return run_gtd(project.path, "cycle", "begin", "--json", timeout=STALL_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"`gtd cycle begin` still waited after {STALL_S} s") from None


# `.gitattributes` is a variant of `inventory/.gitignore` (a file git opens in every
# folder it walks), which the quick loop keeps.
@pytest.mark.parametrize(
    "where", ["inventory/.gitignore", pytest.param(".gitattributes", marks=pytest.mark.slow)]
)
def test_agent_leaves_a_named_pipe_where_git_reads_a_file(project: Project, where: str) -> None:
    """No writer ever comes: git blocks opening it. The cycle is refused naming
    the pipe, the pipe (which holds no bytes) is removed, and the loop goes on."""
    before = project.state()
    project.begin()
    project.break_total()
    pipe = project.make_pipe(where)
    assert_refused(project, _end_bounded(project), before, names=[where])
    assert not os.path.lexists(pipe) or pipe.is_file()
    assert _begin_bounded(project).json()["status"] == "task"


@pytest.mark.slow  # a twin of the test above whose pipe has a writer
def test_agent_holds_the_named_pipe_open_without_writing(project: Project) -> None:
    """A process the agent leaves behind holds the pipe open for writing and never
    writes: git reads it as an empty file (it asks the size first), so nothing
    waits while it lives; the revert must still take the pipe away, or git waits
    on it the moment the writer is gone."""
    before = project.state()
    project.begin()
    project.break_total()
    pipe = project.path / "inventory/.gitignore"
    os.mkfifo(pipe)
    hold = f"import os, time; os.open({str(pipe)!r}, os.O_RDWR); time.sleep(300)"
    holder = subprocess.Popen([sys.executable, "-c", hold], start_new_session=True)
    try:
        assert_refused(project, _end_bounded(project), before, names=[TOTAL])
    finally:
        holder.kill()
        holder.wait()
    assert not os.path.lexists(pipe)
    assert _begin_bounded(project).json()["status"] == "task"


def test_agent_makes_the_repository_exclude_file_a_named_pipe(project: Project) -> None:
    """`.git/info/exclude` is git's as much as its config: sealed at `begin`, put
    back before git reads anything at `end`, and the cycle refused naming it."""
    before = project.state()
    project.begin()
    project.break_total()
    exclude = project.make_pipe(".git/info/exclude")
    assert_refused(project, _end_bounded(project), before, names=["exclude"])
    assert exclude.is_file()
    assert _begin_bounded(project).json()["status"] == "task"


def test_a_named_pipe_git_reads_in_its_own_directory_stops_the_loop_naming_it(
    project: Project,
) -> None:
    """`.git/packed-refs` made a pipe: not the helper's to remove (what git keeps
    there is a person's). `end` and `begin` stop at once naming the pipe, instead
    of waiting forever; once a person removes it, the cycle ends as any other."""
    before = project.state()
    project.begin()
    project.break_total()
    packed = project.path / ".git/packed-refs"
    saved = packed.read_bytes() if packed.exists() else None
    packed.unlink(missing_ok=True)
    os.mkfifo(packed)
    try:
        ended = run_gtd(project.path, "cycle", "end", "--json", timeout=STALL_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"`gtd cycle end` still waited after {STALL_S} s") from None
    assert "packed-refs" in ended.stdout + ended.stderr, ended
    begun = _begin_bounded(project)
    assert "packed-refs" in begun.stdout + begun.stderr, begun
    assert '"task"' not in begun.stdout, begun
    assert "Traceback" not in begun.stderr
    packed.unlink()
    if saved is not None:
        packed.write_bytes(saved)
    assert_refused(project, _end_bounded(project), before, names=[TOTAL])
    assert _begin_bounded(project).json()["status"] == "task"


# -- files too large to commit ----------------------------------------------------------


def _large(project: Project, rel: str, mb: int) -> Path:
    """A sparse file of ``mb`` MB: no disk taken until something copies it (git
    hashing it reads every byte; a checkout of it writes every byte)."""
    path = project.path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.truncate(mb << 20)
    return path


def test_a_file_over_the_size_limit_is_never_committed_nor_hashed(project: Project) -> None:
    """The tests pass, and the cycle would commit a 3 GB file (a dump the code
    under test wrote, say): into the branch's history for good, and through every
    clean room. Refused naming it, before anything hashes it; the file is set
    aside in the git directory (a move: no copy, nothing lost), not kept in the
    kept commit, and the loop goes on."""
    before = project.state()
    project.begin()
    project.do_t1()
    _large(project, "data/dump.bin", 3072)
    answer = project.end()
    kept = {"inventory/pricing.py": proj.PRICING_WITH_BULK}
    assert_refused(project, answer, before, names=["data/dump.bin"], kept=kept)
    assert "max_file_mb" in json.dumps(answer)
    aside = project.path / f".git/gtd/large/cycle-{answer['cycle']}/data/dump.bin"
    assert aside.stat().st_size == 3072 << 20
    listed = project.observe("ls-tree", "-r", "--name-only", answer["kept"])
    assert "data/dump.bin" not in listed.split("\n")
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


# -- dependency folders git does not ignore ------------------------------------------------

# What `npm install` or `python -m venv venv` leaves in a project whose
# .gitignore does not name it: thousands of files on a real install.
DEPENDENCIES = {
    "node_modules": {
        "node_modules/left-pad/package.json": '{"name": "left-pad"}\n',
        "node_modules/left-pad/index.js": "module.exports = (s) => s;\n",
    },
    "venv": {
        "venv/pyvenv.cfg": "home = /usr/bin\ninclude-system-site-packages = false\n",
        "venv/lib/python3.11/site-packages/six.py": "# six\n",
    },
}


@pytest.mark.parametrize("folder", list(DEPENDENCIES))
def test_a_dependency_folder_git_does_not_ignore_is_never_committed(
    project: Project, folder: str
) -> None:
    """The tests pass, and the cycle would commit a dependency folder or a
    virtualenv into the branch's history. Refused naming it and what to do (the
    brief of the next try shows it); the folder is set aside in the git
    directory whole (a rename: nothing copied, nothing lost), not kept in the
    kept commit, and the loop goes on."""
    before = project.state()
    project.begin()
    project.do_t1()
    for rel, text in DEPENDENCIES[folder].items():
        project.write(rel, text)
    answer = project.end()
    kept = {"inventory/pricing.py": proj.PRICING_WITH_BULK}
    assert_refused(project, answer, before, names=[f"{folder}/"], kept=kept)
    assert ".gitignore" in answer["reason"], answer
    aside = project.path / f".git/gtd/litter/cycle-{answer['cycle']}/{folder}"
    for rel, text in DEPENDENCIES[folder].items():
        assert (aside.parent / rel).read_text() == text
    listed = project.observe("ls-tree", "-r", "--name-only", answer["kept"]).split("\n")
    assert not [p for p in listed if p.startswith(f"{folder}/")], listed
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


@pytest.mark.slow
def test_a_dependency_folder_the_change_ignores_lands_without_it(project: Project) -> None:
    """The twin: the same install, with the folder added to .gitignore by the
    change itself: the work lands, the folder stays out of the commit."""
    project.begin()
    project.do_t1()
    for rel, text in DEPENDENCIES["node_modules"].items():
        project.write(rel, text)
    project.write(".gitignore", proj.GITIGNORE + "node_modules/\n")
    assert_passed(project, project.end())
    listed = project.observe("ls-tree", "-r", "--name-only", "HEAD").split("\n")
    assert ".gitignore" in listed
    assert not [p for p in listed if p.startswith("node_modules/")], listed


@pytest.mark.slow
def test_a_vendored_dependency_folder_is_the_projects_own(project: Project) -> None:
    """The twin: a project that commits its node_modules (vendored) may see a
    cycle add to it, judged like any other change."""
    for rel, text in DEPENDENCIES["node_modules"].items():
        project.write(rel, text)
    project.git("add", "-A")
    project.git("commit", "-q", "-m", "vendored dependencies")
    project.base = project.head()
    project.begin()
    project.do_t1()
    project.write("node_modules/right-pad/index.js", "module.exports = (s) => s;\n")
    assert_passed(project, project.end())
    assert "node_modules/right-pad/index.js" in project.observe("ls-tree", "-r", "HEAD")


# -- folders nested deeper than Python's recursion -----------------------------------------


def _deep_chain(root: Path, levels: int, leaf: str | None = None) -> Path:
    """``levels`` nested folders one letter long, made one at a time (os.makedirs
    and Path.mkdir recurse once a level, as Python 3.11's os.walk and
    shutil.rmtree do: a chain deeper than the recursion limit (1,000) makes each
    of them raise RecursionError)."""
    path = str(root)
    for _ in range(levels):
        path = os.path.join(path, "d")
        os.mkdir(path)
    if leaf is not None:
        Path(path, "leaf.txt").write_text(leaf)
    return Path(path)


# 1,100 levels: past the ~975 a worker's stack leaves os.walk (each level is one
# more frame); every git call and walk of such a tree is slow (a path lookup a
# level), so the variant with a file, which the clean room checks out too, is slow.
@pytest.mark.parametrize(
    "leaf",
    [None, pytest.param("a file at the bottom\n", marks=pytest.mark.slow)],
    ids=["empty", "with-a-file"],
)
def test_agent_leaves_folders_nested_deeper_than_pythons_recursion(
    project: Project, leaf: str | None
) -> None:
    """1,100 nested folders, empty or with a file at the bottom: every walk of the
    tree the helper makes (empty folders, named pipes, the clean room's cleaning)
    must still end, and the revert remove them."""
    before = project.state()
    project.begin()
    project.break_total()
    _deep_chain(project.path, 1100, leaf)
    try:
        answer = project.end()
        kept = {"inventory/core.py": proj.BROKEN_CORE}
        if leaf is not None:
            kept["/".join(["d"] * 1100) + "/leaf.txt"] = leaf
        assert_refused(project, answer, before, names=[TOTAL], kept=kept)
        assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"
    finally:
        # pytest's own clean-up of its temporary folders recurses too: the chain
        # goes, wherever it is left (the clean room keeps its checkout): the slots `end`
        # made, found without another run.
        for slot in project.room_slots_made():
            remove_tree(slot, ignore_errors=True)
        remove_tree(project.path / "d", ignore_errors=True)


# -- symbolic refs ------------------------------------------------------------------------
# git follows a symbolic ref wherever it writes through one: a ref of the helper's
# made a link to another branch would make the helper rewrite that branch.


def test_branch_made_a_symbolic_ref_to_another_branch(project: Project) -> None:
    """``refs/heads/main`` made a symbolic ref to ``feature`` (HEAD still names
    main): the revert puts main back on the base as a plain ref of its own, and
    ``feature`` is untouched."""
    feature = project.ref("refs/heads/feature")
    before = project.state()
    project.begin()
    project.break_total()
    project.agent_git("symbolic-ref", "refs/heads/main", "refs/heads/feature")
    answer = project.end()
    assert project.ref("refs/heads/feature") == feature, f"`feature` was moved: {answer}"
    link = project.observe("symbolic-ref", "-q", "refs/heads/main", check=False).strip()
    assert link == "", f"refs/heads/main is still a link to {link}"
    assert_refused(project, answer, before, names=[TOTAL, "feature"])
    assert project.gtd("cycle", "begin", "--json").json()["status"] == "task"


def test_kept_ref_precreated_as_a_symbolic_ref_to_another_branch(project: Project) -> None:
    """The ref a revert keeps the work under, made a symbolic ref to ``feature``
    before a failing cycle ends: the helper replaces the link itself (moving a
    foreign ref aside, deleting it and creating its own), never ``feature``."""
    feature = project.ref("refs/heads/feature")
    before = project.state()
    cycle = project.begin()["cycle"]
    project.break_total()
    project.agent_git("symbolic-ref", f"refs/gtd/reverted/cycle-{cycle}", "refs/heads/feature")
    answer = project.end()
    assert project.ref("refs/heads/feature") == feature, f"`feature` was moved: {answer}"
    assert_refused(project, answer, before, names=[TOTAL])


# A variant of test_kept_ref_precreated_as_a_symbolic_ref_to_another_branch.
@pytest.mark.slow
def test_kept_ref_precreated_as_the_cycles_own(project: Project) -> None:
    """The agent writes, at the ref the revert keeps the work under, a commit
    that reads like the helper's own (the cycle's trailers, the base's tree): a
    revert that took it for the kept work would put nothing back. It is moved
    aside as foreign; the work is kept and reverted."""
    before = project.state()
    cycle = project.begin()["cycle"]
    project.break_total()
    message = f"gtd: reverted work of cycle {cycle} (T1)\n\nGtd-Task: T1\nGtd-Cycle: {cycle}\n"
    tree = project.observe("rev-parse", "HEAD^{tree}").strip()
    fake = project.agent_git("commit-tree", tree, "-p", "HEAD", "-m", message).strip()
    project.agent_git("update-ref", f"refs/gtd/reverted/cycle-{cycle}", fake)
    answer = project.end()
    assert_refused(project, answer, before, names=[TOTAL])
    assert project.ref(f"refs/gtd/reverted/cycle-{cycle}-foreign-{fake[:12]}") == fake


# -- forged tree objects --------------------------------------------------------------------
# git never checks the hash of a loose object it reads, nor of a folder's tree it
# reaches from a root tree: an agent that writes a loose object under a tree's id
# makes git list whatever entries it likes there, a folder named `..` too.


def _forge_ahead(project: Project, extra: list[tuple[str, str, str]]) -> None:
    """_forge_package_tree for the broken code, done before the repository was
    handed to the loop (a first set-up takes git's object files as they are;
    every one written later is hashed again at the next `end`,
    test_git_objects.py), and the tree put back."""
    project.break_total()
    forge_package_extra(project, extra)
    project.git("checkout", "-q", "--", "inventory")
    time.sleep(0.05)  # the set-up lies clearly after the object's change time
    project.git("update-ref", "-d", "refs/gtd/state")  # a first set-up, from here
    project.setup()


def _weaken_total(project: Project) -> None:
    """A refusal before the clean room: a snapshot test edited."""
    project.write(TOTAL, proj.TEST_TOTAL.replace("210)", "90)"))


_PERSON = {"build/.env": "API_TOKEN=a-persons-secret\n", "build/out/report.html": "<p>hours</p>\n"}


def _assert_loop_goes_on(project: Project, answer: dict[str, Any], before: State, bad: str) -> None:
    """Refused naming the forged path, the tree the base's; the next begins either
    go on or halt saying what to do (never a wait, nor a failure without a word),
    and once a person resets the task the loop goes on."""
    assert_refused(project, answer, before, names=[bad])
    for _ in range(2):
        reply = _begin_bounded(project).json()
        if reply.get("status") == "task":
            return
        assert reply.get("status") == "halted", reply
        assert bad in json.dumps(reply), f"the halt does not name {bad}: {reply}"
        assert "gtd cycle reset" in str(reply.get("next")), f"no remedy named: {reply}"
    assert project.gtd("cycle", "reset", "T1", "--json").code == 0
    assert _begin_bounded(project).json()["status"] == "task"


def test_forged_folder_tree_makes_the_revert_delete_an_ignored_folder(
    project: Project,
) -> None:
    """A person keeps files in the ignored ``build/``; ``inventory/``'s tree, as
    the agent's broken code will hash it, was forged to list a folder ``..``
    holding a file ``build`` before the cycle began (by a process an earlier
    cycle left running, before the loop was set up: the check of objects
    written since, test_git_objects.py, cannot see it). The agent breaks the code and weakens
    a snapshot test: the kept tree holds ``inventory/../build`` as added. The
    revert refuses to act on such a path, naming it; ``build/`` stays."""
    for rel, text in _PERSON.items():
        project.write(rel, text)
    up = a_tree(project, [("100644", "build", true_blob(project, b"nothing\n"))])
    _forge_ahead(project, [("40000", "..", up)])
    before = project.state()
    project.begin()
    project.break_total()
    _weaken_total(project)
    answer = _end_bounded(project)
    assert answer.get("status") != "passed", answer
    for rel, text in _PERSON.items():
        assert (project.path / rel).exists(), f"the revert deleted {rel}: {answer}"
        assert project.read(rel) == text
    _assert_loop_goes_on(project, answer, before, "inventory/../build")


# A variant of test_forged_folder_tree_makes_the_revert_delete_an_ignored_folder.
@pytest.mark.slow
def test_forged_folder_tree_makes_the_revert_delete_outside_the_repository(
    project: Project,
) -> None:
    """The same, two levels up: ``inventory/../../victim.txt`` is the file beside
    the repository."""
    victim = project.path.parent / "victim.txt"
    victim.write_text("a person's file next to the repository\n")
    top = a_tree(project, [("100644", "victim.txt", true_blob(project, b"x\n"))])
    up = a_tree(project, [("40000", "..", top)])
    _forge_ahead(project, [("40000", "..", up)])
    before = project.state()
    project.begin()
    project.break_total()
    _weaken_total(project)
    answer = _end_bounded(project)
    assert answer.get("status") != "passed", answer
    assert victim.exists(), f"the revert deleted {victim}, outside the repository: {answer}"
    _assert_loop_goes_on(project, answer, before, "inventory/../../victim.txt")
