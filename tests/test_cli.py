from __future__ import annotations

from pathlib import Path

from gtd import __version__
from tests.conftest import Repo, run_gtd


def test_version(tmp_path: Path) -> None:
    res = run_gtd(tmp_path, "--version")
    assert res.code == 0
    assert res.stdout.strip() == f"gtd {__version__}"


def test_unknown_option_is_a_clear_error(tmp_path: Path) -> None:
    res = run_gtd(tmp_path, "--bogus")
    assert res.code == 1
    assert "gtd: unknown option '--bogus'" in res.stderr
    assert "Traceback" not in res.stderr


def test_group_without_command_prints_usage_and_fails(tmp_path: Path) -> None:
    res = run_gtd(tmp_path, "plan")
    assert res.code == 1
    assert "Usage:" in res.stderr


def test_outside_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    res = run_gtd(tmp_path, "plan", "next", "--json")
    assert res.code == 1
    assert "not a git repository" in res.stderr
    assert res.json["status"] == "error"


def test_subdirectory_is_refused(repo: Repo) -> None:
    sub = repo.path / "pkg"
    sub.mkdir()
    res = run_gtd(sub, "plan", "next")
    assert res.code == 1
    assert "not the repository root" in res.stderr
