"""`gtd plan check` / `gtd plan next` through the real CLI in a real git repository."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import Repo, run_gtd

PLAN = """# Plan

## Spec Gaps

- [ ] `specs/upload.md`: retry policy unspecified

## Tasks

### doing-upload

- [x] **T1** [SPIKE]: Validate streaming ✓ (a1b2c3d)
  - Files: notes.md
  - Blocked by: none

- [ ] **T2**: Create upload endpoint
  - Files: src/api.py, src/index.py
  - Blocked by: T1

- [ ] **T3**: Add progress events
  - Blocked by: T2

- [~] **T4**: Dropped idea
"""

BLOCKED = """# Plan
- [ ] **T1**: First
  - Blocked by: T2
- [ ] **T2**: Second
  - Blocked by: T3
- [~] **T3**: Skipped
"""

COMPLETE = "# Plan\n- [x] **T1**: a ✓ (abc1234)\n- [x] **T2**: b\n- [~] **T3**: c\n"

BROKEN = """# Plan
- [ ] **T1**: First
  - Blocked by: T9
- [ ] **T2**:
- [ ] **T1**: Again
"""


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr


# -- next ------------------------------------------------------------------------------


def test_next_text(repo: Repo) -> None:
    repo.write("PLAN.md", PLAN)
    res = run_gtd(repo.path, "plan", "next")
    assert res.code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "Next ready task: T2 — Create upload endpoint"
    assert "  Files: src/api.py, src/index.py" in lines
    assert "  Blocked by: T1 (done)" in lines
    assert "  Spec: doing-upload" in lines
    assert lines[-1] == "2 tasks remaining"


def test_next_json(repo: Repo) -> None:
    repo.write("PLAN.md", PLAN)
    res = run_gtd(repo.path, "plan", "next", "--json")
    assert res.code == 0, res.stderr
    assert res.json == {
        "status": "task",
        "task": {
            "id": "T2",
            "title": "Create upload endpoint",
            "files": ["src/api.py", "src/index.py"],
            "blocked_by": ["T1"],
            "spike": False,
            "spec": "doing-upload",
            "line": 15,
        },
        "remaining": 2,
    }


def test_next_blocked(repo: Repo) -> None:
    repo.write("PLAN.md", BLOCKED)
    res = run_gtd(repo.path, "plan", "next")
    assert res.code == 0, res.stderr
    assert res.stdout.splitlines() == [
        "All remaining tasks are blocked.",
        "  [ ] T1 — blocked by: T2 (incomplete)",
        "  [ ] T2 — blocked by: T3 (skipped)",
    ]
    res = run_gtd(repo.path, "plan", "next", "--json")
    assert res.code == 0
    assert res.json == {
        "status": "blocked",
        "blocked": [
            {"id": "T1", "title": "First", "blocked_by": ["T2"]},
            {"id": "T2", "title": "Second", "blocked_by": ["T3"]},
        ],
    }


def test_next_complete(repo: Repo) -> None:
    repo.write("PLAN.md", COMPLETE)
    res = run_gtd(repo.path, "plan", "next")
    assert res.code == 0, res.stderr
    assert res.stdout == "All tasks complete: 2 done, 1 skipped.\n"
    res = run_gtd(repo.path, "plan", "next", "--json")
    assert res.json == {"status": "complete", "done": 2, "skipped": 1}


def test_next_crlf_and_bom(repo: Repo) -> None:
    (repo.path / "PLAN.md").write_bytes(("\ufeff" + PLAN).replace("\n", "\r\n").encode())
    res = run_gtd(repo.path, "plan", "next", "--json")
    assert res.code == 0, res.stderr
    assert res.json["task"]["id"] == "T2"
    assert res.json["task"]["title"] == "Create upload endpoint"


def test_next_on_invalid_plan_lists_every_problem(repo: Repo) -> None:
    repo.write("PLAN.md", BROKEN)
    res = run_gtd(repo.path, "plan", "next")
    assert res.code == 1
    assert res.stdout == ""
    assert "gtd: PLAN.md:3: T1: blocked by unknown task T9" in res.stderr
    assert "PLAN.md:4: T2: task has no title" in res.stderr
    assert "PLAN.md:5: duplicate task id T1 (first at line 2)" in res.stderr
    assert "hint:" in res.stderr
    no_traceback(res.stderr)
    res = run_gtd(repo.path, "plan", "next", "--json")
    assert res.code == 1
    assert res.json["status"] == "error"
    assert res.json["error"].startswith("PLAN.md:3: ")


def test_next_does_not_import_typer_or_yaml(repo: Repo) -> None:
    """`plan next` runs every minute of the loop: the typer-free fast path must hold."""
    repo.write("PLAN.md", PLAN)
    res = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gtd", "plan", "next", "--json"],
        cwd=repo.path,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines()}
    heavy = {m for m in imported if m.split(".")[0] in {"typer", "click", "yaml", "ruamel", "rich"}}
    assert heavy == set()


# -- check -----------------------------------------------------------------------------


def test_check_ok(repo: Repo) -> None:
    repo.write("PLAN.md", PLAN)
    res = run_gtd(repo.path, "plan", "check")
    assert res.code == 0, res.stderr
    assert res.stdout == "PLAN.md: ok, 4 tasks (1 done, 2 pending, 1 skipped)\n"
    res = run_gtd(repo.path, "plan", "check", "--json")
    assert res.code == 0
    assert res.json == {
        "status": "ok",
        "tasks": 4,
        "done": 1,
        "pending": 2,
        "skipped": 1,
        "problems": [],
    }


def test_check_one_task_reads_in_the_singular(repo: Repo) -> None:
    repo.write("PLAN.md", "# Plan\n\n- [ ] **T1**: Add it\n")
    res = run_gtd(repo.path, "plan", "check")
    assert res.code == 0, res.stderr
    assert res.stdout == "PLAN.md: ok, 1 task (0 done, 1 pending, 0 skipped)\n"


def test_check_invalid(repo: Repo) -> None:
    repo.write("PLAN.md", BROKEN)
    res = run_gtd(repo.path, "plan", "check")
    assert res.code == 1
    assert res.stdout.splitlines() == [
        "PLAN.md:3: T1: blocked by unknown task T9",
        "PLAN.md:4: T2: task has no title",
        "PLAN.md:5: duplicate task id T1 (first at line 2)",
        "PLAN.md: invalid, 3 problems",
    ]
    no_traceback(res.stderr)
    res = run_gtd(repo.path, "plan", "check", "--json")
    assert res.code == 1
    assert res.json == {
        "status": "invalid",
        "tasks": 3,
        "done": 0,
        "pending": 3,
        "skipped": 0,
        "problems": [
            {"line": 3, "message": "T1: blocked by unknown task T9"},
            {"line": 4, "message": "T2: task has no title"},
            {"line": 5, "message": "duplicate task id T1 (first at line 2)"},
        ],
    }


def test_check_reports_cycle(repo: Repo) -> None:
    repo.write(
        "PLAN.md",
        "- [ ] **T1**: a\n  - Blocked by: T2\n- [ ] **T2**: b\n  - Blocked by: T1\n",
    )
    res = run_gtd(repo.path, "plan", "check")
    assert res.code == 1
    assert "PLAN.md:2: dependency cycle: T1 → T2 → T1" in res.stdout


# -- failures that must be clear -------------------------------------------------------


@pytest.mark.parametrize("command", ["next", "check"])
def test_missing_plan(repo: Repo, command: str) -> None:
    res = run_gtd(repo.path, "plan", command)
    assert res.code == 1
    assert "gtd: PLAN.md: not found" in res.stderr
    assert "hint: write a plan first" in res.stderr
    no_traceback(res.stderr)
    res = run_gtd(repo.path, "plan", command, "--json")
    assert res.code == 1
    assert res.json == {"status": "error", "error": res.json["error"]}
    assert res.json["error"].startswith("PLAN.md: not found")


@pytest.mark.parametrize("command", ["next", "check"])
def test_undecodable_plan(repo: Repo, command: str) -> None:
    (repo.path / "PLAN.md").write_bytes(b"# Plan\n- [ ] **T1**: caf\xe9\n")
    res = run_gtd(repo.path, "plan", command)
    assert res.code == 1
    assert "gtd: PLAN.md:2: not valid UTF-8" in res.stderr
    no_traceback(res.stderr)


def test_plan_is_a_directory(repo: Repo) -> None:
    (repo.path / "PLAN.md").mkdir()
    res = run_gtd(repo.path, "plan", "next")
    assert res.code == 1
    assert "gtd: PLAN.md: is a directory" in res.stderr
    no_traceback(res.stderr)


# -- typos a new user makes: each one named, none dropped -------------------------------

TYPOS = """\
# Calculator

### calc

- [ ] **T1**: Add pow
  - Files: calc.py
  - Blockd by: T2
- [ ] **T2**: Add mul
  - Files: calc.py
  - Blocked by: none
- [ ] **T3*: Add div
  - Blocked by: T2
- [ ] **T0**: Add sub
- [ ] **T4**: Add neg\x1e
  - Blocked by: none

## Spec Gaps

- [ ] Should div by zero raise? The spec does not say.

### later

- [ ] **T5**: Add sqrt
"""


def test_plan_typos_are_each_named_and_nothing_runs_out_of_order(repo: Repo) -> None:
    repo.write("PLAN.md", TYPOS)
    repo.commit_all("plan")
    res = run_gtd(repo.path, "plan", "check")
    assert res.code == 1
    assert res.stdout.splitlines() == [
        "PLAN.md:7: T1: unknown field 'Blockd by': did you mean 'Blocked by'?",
        "PLAN.md:11: checkbox names T3 but is not a task: write the id in bold, "
        "- [ ] **T3**: title",
        "PLAN.md:13: T0: task ids are positive: start at T1",
        "PLAN.md:14: T4: control character U+001E in the title "
        "(it would break the commit message): delete it",
        "PLAN.md:23: T5 is under Spec Gaps (line 17), where checkboxes are notes: it is not "
        "read as a task; put tasks under their own heading (## Tasks) outside Spec Gaps",
        "PLAN.md: invalid, 5 problems",
    ]
    no_traceback(res.stderr)
    # The loop's own read refuses too: T1 is never offered ahead of its blocker T2.
    nxt = run_gtd(repo.path, "plan", "next", "--json")
    assert nxt.code == 1
    assert nxt.json["error"].startswith("PLAN.md:7: T1: unknown field 'Blockd by'")
    assert repo.status() == ""  # refusing changed nothing

    # The user fixes each line the check named; now the order holds.
    fixed = (
        TYPOS.replace("Blockd by", "Blocked by")
        .replace("**T3*:", "**T3**:")
        .replace("**T0**", "**T6**")
        .replace("\x1e", "")
        .replace("## Spec Gaps", "## Tasks later\n\n### more")
    )
    repo.write("PLAN.md", fixed)
    res = run_gtd(repo.path, "plan", "check")
    assert res.code == 0, res.stdout
    assert res.stdout == "PLAN.md: ok, 6 tasks (0 done, 6 pending, 0 skipped)\n"
    nxt = run_gtd(repo.path, "plan", "next", "--json")
    assert nxt.json["task"]["id"] == "T2"
