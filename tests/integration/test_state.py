"""The sealed state in a real repository: one ref, compare-and-swap writes, mirrors
that are checked against the seal, and a rolled-back or forged ref refused."""

from __future__ import annotations

import pytest

from gtd.auto import state
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord
from gtd.errors import StateError
from gtd.git import Git
from tests.conftest import Repo

AT = "2026-11-30T10:00:00Z"


def journal(cycle: int = 1, phase: str = "agent") -> Journal:
    return Journal(
        cycle=cycle, task="T1", title="t", kind="task", spike=False, base="0" * 40,
        branch="main", started_at=AT, started_epoch=0.0, phase=phase,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.fixture
def git(repo: Repo) -> Git:
    repo.write("a.txt", "a\n")
    repo.commit_all("initial")
    return Git(repo.path, hardened=True)


def test_nothing_sealed_reads_as_empty(git: Git) -> None:
    assert state.read(git) == state.EMPTY
    assert not state.read(git).set_up


def test_a_write_is_read_back_whole_in_one_call(git: Git) -> None:
    st = state.write(git, state.EMPTY, "setup", summary={"head": "x"}, snapshot=b'{"a": 1}\n')
    st = state.write(git, st, "begin", journal=journal())
    rec = CycleRecord(1, "T1", "t", "reverted", None, "r", AT, None, None, None)
    st = state.write(git, st, "end", journal=None, append=[rec])
    again = state.read(git, snapshot=True)
    assert again.commit == st.commit
    assert again.journal is None
    assert again.summary == {"head": "x"}
    assert again.records == (rec,)
    assert again.raw[state.SNAPSHOT] == b'{"a": 1}\n'
    log = git.run("log", "--format=%s", state.ref(git)).split("\n")
    assert log[:3] == ["end", "begin", "setup"]  # an audit trail of the helper's writes


def test_head_is_read_in_the_same_call_when_asked(git: Git, repo: Repo) -> None:
    st = state.write(git, state.EMPTY, "setup", summary={"head": "x"}, snapshot=b"{}\n")
    assert state.read(git).head is None  # not asked
    read = state.read(git, snapshot=True, head=True)
    assert read.head == git.head_tree()
    assert read.raw == state.read(git, snapshot=True).raw  # the parts read are the same
    repo.write("b.txt", "b\n")
    repo.commit_all("second")
    assert state.read(git, head=True).head == git.head_tree()  # HEAD as it is now
    assert st.commit == state.read(git, head=True).commit


def test_no_head_on_an_unborn_branch(repo: Repo) -> None:
    git = Git(repo.path, hardened=True)
    state.write(git, state.EMPTY, "setup", summary={"head": "x"})
    assert state.read(git, head=True).head is None


def test_writes_are_compare_and_swap(git: Git) -> None:
    first = state.write(git, state.EMPTY, "one", summary={"n": 1})
    state.write(git, first, "two", summary={"n": 2})
    with pytest.raises(StateError) as info:
        state.write(git, first, "stale", summary={"n": 3})  # from a state that moved on
    assert "refs/gtd/state changed while gtd was writing it" in info.value.message
    assert state.read(git).summary == {"n": 2}


def test_a_pin_keeps_the_base_reachable(git: Git, repo: Repo) -> None:
    head = git.head()
    assert head is not None
    state.write(git, state.EMPTY, "begin", journal=journal(), pin=head)
    assert git.rev("refs/gtd/base") == head


def test_mirrors_match_the_seal_or_are_tampering(git: Git, repo: Repo) -> None:
    st = state.write(git, state.EMPTY, "setup", summary={}, snapshot=b"{}\n")
    st = state.write(git, st, "begin", journal=journal())
    state.write_mirrors(repo.path, st)
    assert state.tampered(repo.path, git, st, strict=True) == []
    mirror = repo.path / ".deepflow/cycle.json"
    mirror.write_text(mirror.read_text().replace('"agent"', '"committing"'))
    assert state.tampered(repo.path, git, st, strict=True) == [".deepflow/cycle.json"]


def test_a_mirror_a_crash_left_one_state_behind_is_not_tampering(git: Git, repo: Repo) -> None:
    st = state.write(git, state.EMPTY, "setup", summary={}, snapshot=b"{}\n")
    st = state.write(git, st, "begin", journal=journal())
    state.write_mirrors(repo.path, st)
    st = state.write(git, st, "check", journal=journal(phase="checking"))  # no mirror yet
    assert state.tampered(repo.path, git, st) == []  # recovery: lenient
    assert state.tampered(repo.path, git, st, strict=True) == [".deepflow/cycle.json"]


def test_an_unreadable_seal_is_an_error_not_a_guess(git: Git) -> None:
    st = state.write(git, state.EMPTY, "setup", summary={})
    blob = git.write_blob(b"{not json")
    tree = git.make_tree([("100644", "blob", blob, state.SUMMARY)])
    commit = git.run("commit-tree", tree, "-p", str(st.commit), input_text="forged\n").strip()
    git.update_refs([(state.ref(git), commit, st.commit)])
    with pytest.raises(StateError) as info:
        state.read(git)
    assert "unreadable sealed state" in info.value.message
