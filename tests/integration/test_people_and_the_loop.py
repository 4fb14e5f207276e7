"""A person and the loop in one repository: the user's steps on a real repository.

- A person's commit between cycles (a fix to a protected test) is theirs: the next
  `begin` re-takes the snapshot and baseline from it, and the agent's next cycle is
  judged against that, never reverted for the person's edit.
- `gtd cycle reset T9` for a task PLAN.md does not have is an error naming the
  tasks it has.
- auto mode's private files are ignored on every branch (`.git/info/exclude`), so
  step mode on a new branch never commits them."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import CALC, MUL, MUL_TEST, TESTS, gtd_json, make_project


def test_a_persons_commit_between_cycles_refreshes_the_snapshot(repo: Repo) -> None:
    make_project(repo)
    # The person fixes a protected test and commits it while no cycle runs.
    fixed = TESTS.replace(
        "assert add(-1, 1) == 0", "assert add(-1, 1) == 0\n    assert add(0, 0) == 0"
    )
    repo.write("tests/test_calc.py", fixed)
    person = repo.commit_all("tests: one more case")
    answer = gtd_json(repo, "cycle", "begin")
    assert answer["status"] == "task", answer  # after the refresh, in the same tick
    log = repo.git("log", "--format=%s", "refs/gtd/state")
    assert f"refresh after {person[:7]}" in log
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    end = gtd_json(repo, "cycle", "end")
    assert end["status"] == "passed", end  # the person's edit is not the agent's
    state = json.loads(repo.git("show", "refs/gtd/state:records.jsonl").splitlines()[0])
    assert state == {
        "kind": "refresh",
        "commit": person[:7],
        "at": state["at"],
        "reason": f"snapshot refreshed after {person[:7]} by a person",
    }


def test_reset_of_an_unknown_task_names_the_known_ones(repo: Repo) -> None:
    make_project(repo)
    res = run_gtd(repo.path, "cycle", "reset", "T9")
    assert res.code == 1
    assert "unknown task T9" in res.stderr
    assert "T1, T2, T3" in res.stderr


def test_auto_modes_files_are_ignored_on_every_branch(repo: Repo) -> None:
    make_project(repo)
    gtd_json(repo, "cycle", "begin")
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    gtd_json(repo, "cycle", "end")
    repo.git("switch", "-q", "-c", "step-work", "HEAD~2")
    # The base of the branch has no trace of auto mode's set-up, yet its files stay
    # ignored: the rules live in .git/info/exclude, which no branch carries.
    assert repo.status() == ""
    repo.write("calc.py", CALC + "# step mode work\n")
    repo.commit_all("work")
    tracked = repo.git("ls-files", ".deepflow").split()
    assert tracked == [".deepflow/config.yaml"]


# One older summary's key missing is the same refresh whichever key it is: the
# quick loop keeps `evidence_kinds`; the other two keys run in the slow set.
_OLDER = "a variant of test_a_snapshot_an_older_gtd_took_is_taken_again_before_the_next_task"


@pytest.mark.parametrize(
    "recorded",
    [
        "evidence_kinds",
        pytest.param("plugin_hooks", marks=pytest.mark.slow(reason=f"{_OLDER}[evidence_kinds]")),
        pytest.param("doctest_digest", marks=pytest.mark.slow(reason=f"{_OLDER}[evidence_kinds]")),
    ],
)
def test_a_snapshot_an_older_gtd_took_is_taken_again_before_the_next_task(
    repo: Repo, recorded: str
) -> None:
    """A snapshot sealed by a gtd whose test plugin looked for fewer kinds of tamper
    evidence (its summary names none: before they were recorded), or did not
    record the hooks of the baseline's plugins, is taken again by the next
    `begin`: the project's own suite may show a new kind at its baseline (a
    conftest filling a cache), which must not be held against the agent, and a
    baseline without hooks would judge none."""
    from gtd.auto import state
    from gtd.fsio import locked, state_lock
    from gtd.git import Git

    make_project(repo)
    git = Git(repo.path, hardened=True)
    with locked(state_lock(repo.path)):
        st = state.read(git)
        assert st.summary is not None
        assert st.summary[recorded]
        older = {k: v for k, v in st.summary.items() if k != recorded}
        st = state.write(git, st, "sealed as an older gtd sealed it", summary=older)
        state.write_mirrors(repo.path, st)
    answer = gtd_json(repo, "cycle", "begin")
    assert answer["status"] == "task", answer  # after the refresh, in the same tick
    head = repo.git("rev-parse", "--short", "HEAD").strip()
    record = json.loads(repo.git("show", "refs/gtd/state:records.jsonl").splitlines()[0])
    assert record["kind"] == "refresh"
    assert record["reason"] == (
        f"snapshot refreshed at {head}: this gtd's test plugin looks for more than the one"
        " that took the baseline"
    )
    # Taken once: the new summary names this plugin's kinds, the next tick works.
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    assert gtd_json(repo, "cycle", "end")["status"] == "passed"
    again = gtd_json(repo, "cycle", "begin")
    assert again["status"] == "task", again
    assert len(repo.git("show", "refs/gtd/state:records.jsonl").splitlines()) == 2  # + the pass


def test_a_snapshot_mirror_a_crash_left_unwritten_is_written_again_by_the_next_begin(
    repo: Repo,
) -> None:
    """A helper killed between sealing a snapshot and writing its mirror (the
    kill harness found it in `setup`) leaves the mirror missing: the next `begin`
    writes it again from the seal, and the cycle is judged, not reverted as one
    whose agent edited the helper's state."""
    make_project(repo)
    (repo.path / ".deepflow/auto-snapshot.json").unlink()
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    assert (repo.path / ".deepflow/auto-snapshot.json").is_file()
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    end = gtd_json(repo, "cycle", "end")
    assert end["status"] == "passed", end


def test_a_snapshot_mirror_edited_between_cycles_is_not_mended(repo: Repo) -> None:
    """Only what a crash leaves is mended: a mirror that matches no sealed state
    is still named by `end`."""
    make_project(repo)
    (repo.path / ".deepflow/auto-snapshot.json").write_text('{"format": 2}\n')
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    end = gtd_json(repo, "cycle", "end")
    assert end["status"] == "reverted", end
    assert end["reason"] == "helper state modified: .deepflow/auto-snapshot.json"
