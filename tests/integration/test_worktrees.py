"""Every worktree of a repository runs a loop of its own. git shares refs between
worktrees; the helper's state, kept work and pinned base are named per worktree
(`refs/gtd/` in the main one, `refs/gtd/worktrees/<id>/` in a linked one), so a
loop started in a second checkout can neither take over nor halt the first.
Real git worktrees, real cycles, a real pytest suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import MUL, MUL_TEST, gtd_json, make_project

BROKEN = "def add(a, b):\n    return a - b\n"


@pytest.fixture
def two(repo: Repo, tmp_path: Path) -> tuple[Repo, Repo]:
    """The calculator set up for auto mode, and a linked worktree of it on a
    branch of its own (`feature`), not set up."""
    make_project(repo)
    linked = Repo(tmp_path / "linked")
    repo.git("worktree", "add", "-q", "-b", "feature", str(linked.path))
    return repo, linked


def _refs(repo: Repo) -> dict[str, str]:
    out = repo.git("for-each-ref", "--format=%(objectname) %(refname)", "refs/gtd/")
    return {name: oid for oid, name in (line.split() for line in out.splitlines())}


def test_a_begin_in_a_new_worktree_leaves_the_main_loop_alone(two: tuple[Repo, Repo]) -> None:
    """Before: the second checkout found the first one's state, began a cycle in
    it, and its end halted the first loop ("helper state modified")."""
    main, linked = two
    before = _refs(main)
    res = run_gtd(linked.path, "cycle", "begin", "--json")
    assert res.code != 0
    assert "not set up in this work tree" in res.stderr, res.stderr
    assert "gtd auto setup" in res.stderr
    assert _refs(main) == before  # nothing of the main loop's was touched
    assert linked.status() == ""
    answer = gtd_json(main, "cycle", "begin")
    assert (answer["status"], answer["task"]) == ("task", "T1"), answer


@pytest.mark.slow  # two set-ups and four cycles (~15 s); the quick test above keeps the bug's
def test_two_worktrees_run_interleaved_loops(two: tuple[Repo, Repo]) -> None:
    main, linked = two
    ready = gtd_json(linked, "auto", "setup")
    assert ready["status"] == "ready", ready
    linked_id = Path(linked.git("rev-parse", "--absolute-git-dir").strip()).name
    own = f"refs/gtd/worktrees/{linked_id}/"
    assert f"{own}state" in _refs(main)

    # Both loops have a cycle in flight at once, each on its own branch.
    assert gtd_json(main, "cycle", "begin")["task"] == "T1"
    assert gtd_json(linked, "cycle", "begin")["task"] == "T1"
    for where in (main, linked):
        # Not the same bytes in both: two identical commits made in the same
        # second are one object, and the two lines of work would look like one.
        where.write("calc.py", MUL + f"# written in {where.path.name}\n")
        where.write("tests/test_mul.py", MUL_TEST)
    ended = gtd_json(linked, "cycle", "end")
    assert ended["status"] == "passed", ended
    ended = gtd_json(main, "cycle", "end")
    assert ended["status"] == "passed", ended
    assert main.git("log", "-1", "--format=%s", "main").startswith("T1")
    assert main.git("log", "-1", "--format=%s", "feature").startswith("T1")
    assert main.git("merge-base", "main", "feature").strip() not in (
        main.git("rev-parse", "main").strip(),
        main.git("rev-parse", "feature").strip(),
    )  # two lines of work, neither written over the other

    # A revert in the linked worktree is kept there, and the main loop neither
    # counts it nor reads it as its own state rolled back.
    assert gtd_json(linked, "cycle", "begin")["task"] == "T2"
    linked.write("calc.py", BROKEN)
    ended = gtd_json(linked, "cycle", "end")
    assert ended["status"] == "reverted", ended
    assert ended["kept"] == f"{own}reverted/cycle-2"
    assert (linked.path / "calc.py").read_text() == MUL + f"# written in {linked.path.name}\n"
    assert linked.git("show", f"{own}reverted/cycle-2:calc.py") == BROKEN
    assert "refs/gtd/reverted/cycle-2" not in _refs(main)
    report = (linked.path / ".deepflow/auto-report.md").read_text()
    assert f"`git checkout {own}reverted/cycle-N -- <path>`" in report

    answer = gtd_json(main, "cycle", "begin")
    assert (answer["status"], answer["task"]) == ("task", "T2"), answer
    main.write("calc.py", MUL + "\n\ndef div(a, b):\n    return a / b\n")
    ended = gtd_json(main, "cycle", "end")
    assert ended["status"] == "passed", ended
    memory = (main.path / ".deepflow/auto-memory.yaml").read_text()
    assert "revert_history: []" in memory, memory  # the linked loop's revert is not the main's
    assert "status: reverted" not in memory
    linked_memory = (linked.path / ".deepflow/auto-memory.yaml").read_text()
    assert f"kept: {own}reverted/cycle-2" in linked_memory


def test_a_loop_in_a_linked_worktree_puts_back_the_stash_and_tags_it_shares(
    two: tuple[Repo, Repo],
) -> None:
    """git shares the stash and tags between worktrees: a cycle in the linked one
    that clears the stash a person made in the main one, and deletes their tag,
    puts both back (the pins are the linked worktree's own namespace in the
    main repository's side repository)."""
    main, linked = two
    assert gtd_json(linked, "auto", "setup")["status"] == "ready"
    main.write("notes.txt", "a person's stashed note\n")
    main.git("add", "notes.txt")
    main.git("stash", "push", "-q", "-m", "a person's")
    main.git("tag", "release")
    stash = main.git("stash", "list", "--format=%H %gs")
    assert gtd_json(linked, "cycle", "begin")["task"] == "T1"
    linked.write("calc.py", BROKEN)
    linked.git("stash", "clear")
    linked.git("tag", "-d", "release")
    answer = gtd_json(linked, "cycle", "end")
    assert answer["status"] == "reverted", answer
    assert main.git("stash", "list", "--format=%H %gs") == stash
    assert main.git("rev-parse", "release").strip() == main.git("rev-parse", "HEAD").strip()
    linked_id = Path(linked.git("rev-parse", "--absolute-git-dir").strip()).name
    side = main.path / ".git/gtd/pins.git"
    assert (side / f"gtd-manifests/{linked_id}.json").is_file()
