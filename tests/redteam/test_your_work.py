"""Class F: a person's work outside the branch survives the agent's own git
commands (docs/your-work-is-safe.md). The agent deletes branches, tags and the
stash, expires every reflog and prunes every unreachable object, cleans ignored
files, removes another worktree, moves or copies a person's ignored files to
names git does not ignore. After `gtd cycle end`: every ref and stash entry is
back at the same object, in the same order; small ignored files are back, the
others named; no kept ref and no commit holds a file that was ignored when the
cycle began."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.redteam.conftest import Project

SECRET = "API_TOKEN=a-persons-secret\n"
LARGE = b"\0large build output\n" * 8000  # 160 KB: over the copy bound


def _stash(project: Project, rel: str, text: str, message: str) -> None:
    project.write(rel, text)
    project.git("stash", "push", "-q", "-m", message)


def _exclude(project: Project, *patterns: str) -> None:
    """Ignored by the repository's own exclude file (not a committed `.gitignore`)."""
    exclude = project.path / ".git/info/exclude"
    exclude.write_text(exclude.read_text() + "".join(f"{p}\n" for p in patterns))


def _stash_list(project: Project) -> list[str]:
    return project.observe("stash", "list", "--format=%H %gs").splitlines()


def _person_has(project: Project) -> dict[str, Any]:
    """A person's refs, two stash entries, a tag, ignored files (one excluded in
    `.git/info/exclude`, not `.gitignore`)."""
    _stash(project, "README.md", "first stashed edit\n", "first")
    _stash(project, "NOTES.md", "second stashed edit\n", "second")
    project.git("tag", "-a", "-m", "release", "v1", "feature")
    project.git("tag", "light", "HEAD~1")
    _exclude(project, "scratch/", ".env")
    project.write(".env", SECRET)
    project.write("build/.env", SECRET.replace("API", "BUILD"))
    project.write("build/output.bin", LARGE)
    project.write("scratch/draft.txt", "a person's draft\n")
    return {
        "refs": {r: project.ref(r) for r in ("feature", "v1", "light", "refs/tags/v1^{}")},
        "stash": _stash_list(project),
    }


DESTROY = [
    ("branch", "-D", "feature"),
    ("tag", "-d", "v1", "light"),
    ("stash", "clear"),
    ("reflog", "expire", "--expire-unreachable=now", "--all"),
    ("gc", "-q", "--prune=now"),
]
# `git clean -fdX` also deletes the helper's own ignored files (its journal's
# mirror): written again from the seal, the cycle judged by its work alone
# (tests/integration/test_agent_cleans.py).
CLEAN = ("clean", "-fdX")


@pytest.mark.parametrize("outcome", ["revert", "pass"])
def test_refs_stash_and_ignored_files_survive_branch_d_stash_clear_and_gc(
    project: Project, outcome: str
) -> None:
    had = _person_has(project)
    project.begin()
    if outcome == "revert":
        project.break_total()
    else:
        project.do_t1()
    shutil.rmtree(project.path / "scratch")  # `rm -rf`, of a folder `.git/info/exclude` names
    project.agent_git(*CLEAN)
    for args in DESTROY:
        project.agent_git(*args)
    # The attack is real: the objects are gone from the repository.
    pruned = project.observe("cat-file", "-e", had["refs"]["feature"], check=False)
    assert project.ref(had["refs"]["feature"] + "^{commit}") is None, f"not pruned {pruned}"
    assert project.ref("refs/stash") is None
    answer = project.end()
    wanted = "reverted" if outcome == "revert" else "passed"
    assert answer["status"] == wanted, answer.get("reason")
    now = {r: project.ref(r) for r in had["refs"]}
    assert now == had["refs"], f"the person's refs were not put back: {now} ({answer})"
    assert _stash_list(project) == had["stash"], "the stash is not back, same entries, same order"
    assert project.observe("show", "stash@{1}:README.md") == "first stashed edit\n"
    assert project.read(".env") == SECRET
    assert project.read("build/.env") == SECRET.replace("API", "BUILD")
    said = " ".join(answer.get("your_work") or ())
    for named in ("branch feature", "tag v1", "stash", "build/output.bin", "scratch/draft.txt"):
        assert named in said, f"{named} is not named in what the cycle did: {answer}"
    assert "your work: " in project.read(".deepflow/auto-report.md")
    assert "your_work:" in project.read(".deepflow/auto-memory.yaml")
    status = project.observe("status", "--porcelain", "--untracked-files=all")
    assert status == "", status


def test_a_branch_the_agent_moves_is_put_back_and_its_new_tip_kept(project: Project) -> None:
    feature = project.ref("feature")
    project.begin()
    project.break_total()
    project.agent_git("branch", "-f", "feature", "main")
    answer = project.end()
    assert project.ref("feature") == feature, answer
    aside = project.ref("refs/gtd/moved/cycle-1/heads/feature")
    assert aside == project.base, f"where the agent moved it is not kept: {answer}"


def test_stash_entries_the_agent_pops_come_back_under_its_own(project: Project) -> None:
    _stash(project, "README.md", "a person's stashed edit\n", "theirs")
    before = _stash_list(project)
    project.begin()
    project.break_total()
    project.agent_git("stash", "drop", "-q")
    _stash_agent = project.path / "NOTES.md"
    _stash_agent.write_text("agent's stash\n")
    project.agent_git("stash", "push", "-q", "-m", "agent's")
    project.end()
    after = _stash_list(project)
    assert after[-1:] == before, f"the person's entry is not back under the agent's: {after}"


def _kept_paths(project: Project, ref: str) -> list[str]:
    return project.observe("ls-tree", "-r", "--name-only", ref).splitlines()


@pytest.mark.parametrize(
    ("move", "new"),
    [
        (lambda p: (p.path / "build").rename(p.path / "out"), "out/.env"),
        (lambda p: (p.path / ".env").rename(p.path / "notes.txt"), "notes.txt"),
        (
            lambda p: (p.path / "build/.env").rename(p.path / "inventory/settings.txt"),
            "inventory/settings.txt",
        ),
        (lambda p: (p.path / "notes.txt").write_text((p.path / ".env").read_text()), "notes.txt"),
        (
            lambda p: (p.agent_git("add", "-f", ".env"), p.agent_git("mv", ".env", "notes.txt")),
            "notes.txt",
        ),
        (
            lambda p: ((p.path / "build").rename(p.path / "out"), p.write("out/new.txt", "x\n")),
            "out/.env",
        ),
    ],
    ids=[
        "mv-build-out",
        "mv-env",
        "mv-file-out-of-ignored-folder",
        "cp-env",
        "git-mv",
        "mv-build-out-then-write-in-it",
    ],
)
def test_a_kept_ref_never_holds_a_file_ignored_at_begin(
    project: Project, move: Any, new: str
) -> None:
    _exclude(project, ".env")
    project.write(".env", SECRET)
    project.write("build/.env", SECRET)
    project.begin()
    project.break_total()
    move(project)
    answer = project.end()
    assert answer["status"] == "reverted", answer
    kept = answer["kept"]
    paths = _kept_paths(project, kept)
    assert new not in paths, f"{new} (a person's ignored file) is in {kept}: {answer}"
    for ref in project.observe("for-each-ref", "--format=%(refname)", "refs/").split():
        for rel in _kept_paths(project, ref):
            text = project.show(ref, rel)
            assert text is None or "a-persons-secret" not in text, f"the secret is in {ref}:{rel}"
    assert project.show(kept, "inventory/core.py") is not None, "the agent's work is not kept"
    assert project.read(".env") == SECRET
    assert project.read("build/.env") == SECRET
    status = project.observe("status", "--porcelain", "--untracked-files=all")
    assert status == "", f"the tree is not clean: {status}"


@pytest.mark.parametrize("how", ["mv", "cp"])
def test_a_passing_cycle_never_commits_an_ignored_file_under_another_name(
    project: Project, how: str
) -> None:
    _exclude(project, ".env")
    project.write(".env", SECRET)
    project.begin()
    project.do_t1()
    if how == "mv":
        (project.path / ".env").rename(project.path / "config.txt")
    else:
        project.write("config.txt", SECRET)
    answer = project.end()
    assert answer["status"] == "reverted", f"a person's secret was committed: {answer}"
    assert "config.txt" in answer["reason"], answer
    assert project.read(".env") == SECRET
    assert not (project.path / "config.txt").exists()


def test_removed_worktree_is_named_with_its_uncommitted_files(
    project: Project, tmp_path: Path
) -> None:
    other = tmp_path / "wt"
    project.git("worktree", "add", "-q", "--detach", str(other), "feature")
    (other / "unsaved.txt").write_text("a person's work in the other worktree\n")
    head = project.ref("feature")
    project.begin()
    project.break_total()
    project.agent_git("worktree", "remove", "--force", str(other))
    answer = project.end()
    said = " ".join(answer.get("your_work") or ())
    assert str(other) in said, answer
    assert "unsaved.txt" in said, answer
    assert project.ref("refs/gtd/lost-worktree/cycle-1/wt") == head, answer


def test_pins_live_out_of_the_agents_reach(project: Project) -> None:
    """The side repository is not a remote, not in the work tree, and a
    `git gc --prune=now --aggressive` in the repository leaves its objects."""
    project.begin()
    side = project.path / ".git/gtd/pins.git"
    assert (side / "HEAD").is_file()
    assert project.observe("remote").strip() == ""
    pins = project.observe("--git-dir", str(side), "for-each-ref", "--format=%(refname)")
    assert pins.count("refs/pins/main/") >= 2, pins


def test_a_revert_killed_before_the_refs_are_put_back_is_finished_by_the_next_begin(
    project: Project,
) -> None:
    """The worker dies after keeping the cycle's work, before putting anything
    back: the next `begin` finishes the revert, the branch the agent deleted (and
    had pruned) comes back, and the record says so."""
    feature = project.ref("feature")
    project.begin()
    project.break_total()
    for args in (("branch", "-D", "feature"), *DESTROY[3:]):
        project.agent_git(*args)
    crashed = project.gtd("cycle", "end", "--json", env={"GTD_CRASH_AT": "reverted-kept"})
    assert crashed.code == 1, crashed.stdout
    assert project.ref("feature") is None, "nothing was put back before the crash"
    answer = project.gtd("cycle", "begin", "--json").json()
    assert "recovered" in answer, answer
    assert project.ref("feature") == feature
    memory = project.read(".deepflow/auto-memory.yaml")
    assert "branch feature put back" in memory, memory


def test_pins_that_cannot_be_taken_never_stop_the_loop_and_are_said(project: Project) -> None:
    """A file where the side repository goes (whoever put it there): the cycle
    runs as before pins, and its record says none were taken."""
    (project.path / ".git/gtd").mkdir(exist_ok=True)
    (project.path / ".git/gtd/pins.git").write_text("not a repository\n")
    project.begin()
    project.do_t1()
    answer = project.end()
    assert answer["status"] == "passed", answer
    said = " ".join(answer.get("your_work") or ())
    assert "could not be pinned" in said, answer


def test_deny_write_lists_the_pins_the_ignored_files_and_the_other_worktrees(
    project: Project, tmp_path: Path
) -> None:
    """What an OS sandbox is handed to keep the agent's writes off a person's
    files (the sandbox itself is set up elsewhere)."""
    from gtd.auto.cycle import yours
    from gtd.git import Git

    other = tmp_path / "wt"
    project.git("worktree", "add", "-q", "--detach", str(other), "feature")
    _exclude(project, ".env")
    project.write(".env", SECRET)
    git = Git(project.path, hardened=True)
    listed = yours.deny_write(git, git.ignored())
    root = Path(project.path).resolve()
    assert str(root / ".env") in listed
    assert str(other) in listed or str(other.resolve()) in listed
    assert any(p.endswith("pins.git") for p in listed)
    assert not any(p.endswith(".deepflow") or "/.deepflow/" in p for p in listed), listed


def test_an_ignored_file_the_agent_overwrites_is_named_with_its_earlier_version(
    project: Project,
) -> None:
    """`echo … > .env`: never written over again (a person may have saved it
    meanwhile), but named, with the command that gives the version from before."""
    _exclude(project, ".env")
    project.write(".env", SECRET)
    project.begin()
    project.break_total()
    time.sleep(0.01)  # (a file system's coarse clock)
    project.write(".env", "API_TOKEN=the-agents\n")
    answer = project.end()
    note = next((n for n in answer.get("your_work") or () if n.startswith("ignored .env")), None)
    assert note is not None, answer
    command = note.split("`")[1].split()
    earlier = subprocess.run(command, cwd=project.path, capture_output=True, text=True, check=True)
    assert earlier.stdout == SECRET
    assert project.read(".env") == "API_TOKEN=the-agents\n"
