"""`gtd validate [file] [--json]` against real repositories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import Repo

GOOD_TODO = "# Plan\n\n## Open Questions\n\n### DB?\n\nSuggested default: sqlite\n"
GOOD_REVIEW = "# Review: abc\n\n<!-- base: def -->\n\n## Chunk\n\n- [ ] ./a.py#1 — why\n"


def test_clean_steering_files_exit_0(repo: Repo, gtd: Any) -> None:
    repo.write(".gtd/TODO.md", GOOD_TODO)
    repo.write(".gtd/REVIEW.md", GOOD_REVIEW)
    res = gtd(repo.path, "validate")
    assert res.code == 0, res.stderr
    assert res.stdout == ".gtd/TODO.md: ok\n.gtd/REVIEW.md: ok\n"
    res = gtd(repo.path, "validate", "--json")
    assert res.code == 0
    assert res.json == {
        "status": "ok",
        "files": [
            {"path": ".gtd/TODO.md", "kind": "qa", "findings": []},
            {"path": ".gtd/REVIEW.md", "kind": "review", "findings": []},
        ],
    }


def test_findings_are_path_line_message_and_exit_1(repo: Repo, gtd: Any) -> None:
    repo.write(".gtd/TODO.md", "## Open Questions\r\n### A\r\nnope\r\n")
    repo.write(".gtd/REVIEW.md", "# Review: abc\n## Chunk\n- [ ] a.py\n")
    res = gtd(repo.path, "validate")
    assert res.code == 1
    lines = res.stdout.splitlines()
    assert lines[0].startswith(".gtd/TODO.md:3: question 'A': the first line must be")
    assert lines[1] == ".gtd/REVIEW.md:1: missing '<!-- base: <hash> -->' line"
    assert lines[2].startswith(".gtd/REVIEW.md:2: chunk 'Chunk' has no pointer")
    assert lines[3].startswith(".gtd/REVIEW.md:3: pointer path 'a.py' must start with './'")
    assert lines[-1] == "invalid: 4 findings"

    payload = gtd(repo.path, "validate", "--json").json
    assert payload["status"] == "invalid"
    todo, review = payload["files"]
    assert todo["kind"] == "qa"
    assert todo["findings"] == [
        {
            "line": 3,
            "column": 1,
            "end_column": 5,
            "message": todo["findings"][0]["message"],
            "severity": "error",
        }
    ]
    assert [f["line"] for f in review["findings"]] == [1, 2, 3]


def test_only_present_files_are_validated(repo: Repo, gtd: Any) -> None:
    res = gtd(repo.path, "validate", "--json")
    assert (res.code, res.json) == (0, {"status": "ok", "files": []})
    repo.write(".gtd/REVIEW.md", "")
    res = gtd(repo.path, "validate", "--json")
    assert res.code == 1
    assert [f["path"] for f in res.json["files"]] == [".gtd/REVIEW.md"]


def test_root_todo_is_the_projects_own_file(repo: Repo, gtd: Any) -> None:
    repo.write("TODO.md", "")
    assert gtd(repo.path, "validate").code == 0


def test_a_named_file_is_validated_by_its_name(repo: Repo, gtd: Any, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "REVIEW.md").write_text(GOOD_REVIEW)
    (outside / "TODO.md").write_text("")
    res = gtd(outside, "validate", "REVIEW.md", "--json")
    assert res.code == 0
    assert res.json["files"] == [{"path": "REVIEW.md", "kind": "review", "findings": []}]
    res = gtd(outside, "validate", "TODO.md")
    assert (res.code, res.stdout) == (1, "TODO.md:1: " + res.stdout.split(": ", 1)[1])
    assert "TODO.md is empty" in res.stdout


def test_bad_arguments_are_errors(repo: Repo, gtd: Any, tmp_path: Path) -> None:
    res = gtd(repo.path, "validate", "PLAN.md")
    assert res.code == 1
    assert "not a steering file" in res.stderr
    res = gtd(repo.path, "validate", ".gtd/TODO.md", "--json")
    assert res.code == 1
    assert res.json["status"] == "error"
    assert "no such file" in res.json["error"]
    repo.write(".gtd/TODO.md", "")
    (repo.path / ".gtd" / "TODO.md").write_bytes(b"\xff\xfe## Open")
    res = gtd(repo.path, "validate")
    assert res.code == 1
    assert "not UTF-8" in res.stderr


def test_the_repo_root_guard_applies_without_a_file(repo: Repo, gtd: Any) -> None:
    sub = repo.path / "sub"
    sub.mkdir()
    res = gtd(sub, "validate")
    assert res.code == 1
    assert "not the repository root" in res.stderr
