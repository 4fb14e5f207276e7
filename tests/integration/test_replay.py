"""A task's change laid onto a moved tip (gtd.auto.cycle.replay), on real
repositories: a clean replay holds both sides' files, every kind of clash is a
conflict naming its paths, a combination the judge never saw is flagged, and
nothing but objects is written. Plus a hypothesis property of the conflict rule
over generated changes."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gtd.auto.cycle.replay import conflicts, replay
from gtd.git import Git
from gtd.git_parse import Change
from tests.conftest import Repo


def _tree(repo: Repo, rev: str = "HEAD") -> str:
    return repo.git("rev-parse", f"{rev}^{{tree}}").strip()


def _files(repo: Repo, tree: str) -> dict[str, str]:
    out = repo.git("ls-tree", "-r", "--name-only", "-z", tree).split("\0")
    return {p: repo.git("cat-file", "-p", f"{tree}:{p}") for p in out if p}


@pytest.fixture
def base(repo: Repo) -> Repo:
    repo.write("app.py", "x = 1\n")
    repo.write("lib/util.py", "def u():\n    return 1\n")
    repo.write("pkg/a.py", "a = 1\n")
    repo.write("PLAN.md", "- [ ] **T1**: one\n- [ ] **T2**: two\n")
    repo.commit_all("base")
    return repo


def _branch(repo: Repo, name: str, edits: Mapping[str, str | None]) -> str:
    """A commit on ``name`` from the base with ``edits`` (None: delete); its tree."""
    repo.git("switch", "-q", "-c", name, "main")
    for rel, text in edits.items():
        target = repo.path / rel
        if text is None:
            if target.is_dir():
                repo.git("rm", "-rq", rel)
            else:
                target.unlink()
        else:
            if target.is_dir():
                repo.git("rm", "-rq", rel)
            repo.write(rel, text)
    repo.commit_all(name)
    tree = _tree(repo)
    repo.git("switch", "-q", "main")
    return tree


def test_an_unmoved_tip_takes_the_candidate_as_judged(base: Repo) -> None:
    t = _tree(base)
    cand = _branch(base, "t2", {"lib/util.py": "def u():\n    return 2\n"})
    assert replay(Git(base.path, hardened=True), t, cand, t) == (cand, (), False)


def test_a_clean_replay_holds_both_and_is_flagged_for_judging(base: Repo) -> None:
    t = _tree(base)
    tip = _branch(base, "t1", {"app.py": "x = 2\n", "PLAN.md": "- [x] **T1**: one\n"})
    cand = _branch(base, "t2", {"lib/util.py": "def u():\n    return 2\n", "pkg/a.py": None})
    index_before = os.stat(base.path / ".git" / "index").st_mtime_ns
    refs_before = base.git("for-each-ref")
    got = replay(Git(base.path, hardened=True), t, cand, tip)
    assert got.conflicts == ()
    assert got.unseen
    assert got.tree is not None
    files = _files(base, got.tree)
    assert files["app.py"] == "x = 2\n"  # the tip's
    assert files["lib/util.py"] == "def u():\n    return 2\n"  # the task's
    assert "pkg/a.py" not in files  # the task's deletion
    assert files["PLAN.md"] == "- [x] **T1**: one\n"
    # Nothing but objects: no ref, no index, no file of the person's.
    assert base.git("for-each-ref") == refs_before
    assert os.stat(base.path / ".git" / "index").st_mtime_ns == index_before
    assert base.status() == ""
    assert not list((base.path / ".git" / "gtd").glob("replay-*"))


def test_the_same_change_on_both_sides_is_no_conflict(base: Repo) -> None:
    t = _tree(base)
    same = {"app.py": "x = 9\n"}
    tip = _branch(base, "t1", same)
    cand = _branch(base, "t2", same)
    assert replay(Git(base.path, hardened=True), t, cand, tip) == (cand, (), False)


@pytest.mark.parametrize(
    ("ours", "theirs", "clash"),
    [
        ({"app.py": "x = 2\n"}, {"app.py": "x = 3\n"}, ["app.py"]),
        ({"app.py": "x = 2\n"}, {"app.py": None}, ["app.py"]),
        ({"app.py": None}, {"app.py": "x = 3\n"}, ["app.py"]),
        ({"pkg": "pkg is a file now\n"}, {"pkg/a.py": "a = 2\n"}, ["pkg", "pkg/a.py"]),
        ({"pkg/a.py": "a = 2\n"}, {"pkg": "pkg is a file now\n"}, ["pkg", "pkg/a.py"]),
        (
            {"app.py": "x = 2\n", "lib/util.py": "u\n"},
            {"app.py": "y\n", "new.py": "n\n"},
            ["app.py"],
        ),
    ],
)
def test_clashes_are_conflicts_and_write_nothing(
    base: Repo, ours: Mapping[str, str | None], theirs: Mapping[str, str | None], clash: list[str]
) -> None:
    t = _tree(base)
    tip = _branch(base, "t1", ours)
    cand = _branch(base, "t2", theirs)
    objects = sorted(p.name for p in (base.path / ".git" / "objects").rglob("*") if p.is_file())
    got = replay(Git(base.path, hardened=True), t, cand, tip)
    assert got == (None, tuple(clash), False)
    after = sorted(p.name for p in (base.path / ".git" / "objects").rglob("*") if p.is_file())
    assert after == objects


def test_a_killed_replays_index_is_swept(base: Repo) -> None:
    scratch = base.path / ".git" / "gtd"
    scratch.mkdir(exist_ok=True)
    dead = subprocess_pid_that_exited()
    (scratch / f"replay-{dead}.index").write_bytes(b"junk")
    (scratch / "replay-notes.txt").write_bytes(b"not an index of ours")
    t = _tree(base)
    tip = _branch(base, "t1", {"app.py": "x = 2\n"})
    cand = _branch(base, "t2", {"new.py": "n\n"})
    assert replay(Git(base.path, hardened=True), t, cand, tip).tree is not None
    assert sorted(p.name for p in scratch.glob("replay-*")) == ["replay-notes.txt"]


def subprocess_pid_that_exited() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


# -- the rule, as a property -----------------------------------------------------------

_PATHS = ["a", "a/b", "a/c", "d", "d/e/f", "g"]


def _change(path: str, result: int) -> Change:
    """A change of ``path`` to result ``result`` (0: deleted)."""
    oid = f"{result:040x}"
    if result == 0:
        return Change("D", path, "100644", "000000", "1" * 40, "0" * 40)
    return Change("M", path, "100644", "100644", "1" * 40, oid)


changes = st.dictionaries(st.sampled_from(_PATHS), st.integers(0, 2), max_size=4).map(
    lambda d: [_change(p, r) for p, r in sorted(d.items())]
)


def _under(p: str, q: str) -> bool:
    return p.startswith(q + "/")


@settings(max_examples=300, deadline=None)
@given(changes, changes)
def test_a_path_conflicts_exactly_when_both_sides_touch_it_differently(
    ours: list[Change], theirs: list[Change]
) -> None:
    got = set(conflicts(ours, theirs))
    mine = {c.path: (c.new_mode, c.new_oid) for c in ours}
    yours = {c.path: (c.new_mode, c.new_oid) for c in theirs}
    agreed = {p for p in yours if mine.get(p) == yours[p]}
    expected: set[str] = set()
    for p in set(yours) - agreed:
        for q in set(mine) - agreed:
            if p == q or _under(p, q) or _under(q, p):
                expected |= {p, q}
    assert got == expected
    assert conflicts(ours, []) == []
    assert conflicts([], theirs) == []
    assert conflicts(theirs, theirs) == []  # the same change twice never clashes


def test_the_rule_reads_the_folder_of_a_file_change_too() -> None:
    ours = [_change("a", 1)]
    theirs = [_change("a/b", 2)]
    assert conflicts(ours, theirs) == ["a", "a/b"]
