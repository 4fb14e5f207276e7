"""The snapshot files: round trip, deepflow's .txt, corrupt sidecars, pending."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gtd.auto.ratchet import protect
from gtd.auto.ratchet.model import CommandRun, RunResult, Snapshot
from gtd.auto.ratchet.snapshot import (
    PENDING_JSON,
    SNAPSHOT_JSON,
    SNAPSHOT_TXT,
    commit_pending,
    describe_baseline,
    drop_pending,
    load_snapshot,
    resync_owned,
    save_pending,
    save_snapshot,
    sidecar_digest,
)
from gtd.errors import InputError

SNAP = Snapshot(
    files={"tests/test_b.py": "bb", "tests/test_a.py": "aa"},
    protected={"conftest.py": "cc", "pyproject.toml": ""},
    baseline=RunResult(
        (
            CommandRun("build", "make", 0, 1.5, 600.0),
            CommandRun("test", "pytest -q", 1, 2.25, 600.0, output_tail="1 failed"),
            CommandRun("lint", "ruff", 127, 0.0, 600.0, missing="ruff"),
        ),
        {"tests/test_a.py::test_x": "passed", "tests/test_b.py::test_y": "failed"},
    ),
)


def test_round_trip_and_deepflow_txt(tmp_path: Path) -> None:
    save_snapshot(tmp_path, SNAP)
    assert load_snapshot(tmp_path) == SNAP
    assert (tmp_path / SNAPSHOT_TXT).read_text() == "tests/test_a.py\ntests/test_b.py\n"


def test_exit_code_only_baseline_round_trips(tmp_path: Path) -> None:
    snap = Snapshot({}, {}, RunResult((CommandRun("test", "npm test", 0, 1.0, 60.0),), None))
    save_snapshot(tmp_path, snap)
    assert load_snapshot(tmp_path) == snap


def test_absent_is_none(tmp_path: Path) -> None:
    assert load_snapshot(tmp_path) is None


def test_txt_without_sidecar_is_an_error(tmp_path: Path) -> None:
    (tmp_path / ".deepflow").mkdir()
    (tmp_path / SNAPSHOT_TXT).write_text("tests/test_a.py\n")
    with pytest.raises(InputError) as info:
        load_snapshot(tmp_path)
    assert info.value.path == SNAPSHOT_JSON
    assert "gtd ratchet snapshot" in (info.value.hint or "")


def _doc() -> dict[str, object]:
    return {
        "format": 2,
        "files": {"t.py": "x"},
        "protected": {},
        "baseline": {
            "commands": [
                {
                    "kind": "test",
                    "command": "pytest",
                    "exit_code": 0,
                    "duration_s": 1,
                    "timeout_s": 600,
                    "timed_out": False,
                    "missing": None,
                    "output_tail": "",
                }
            ],
            "tests": {"t.py::a": "passed"},
        },
    }


def _with(path: list[str], value: object) -> str:
    doc = _doc()
    target: object = doc
    for key in path[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]  # type: ignore[index]
    target[path[-1] if not isinstance(target, list) else int(path[-1])] = value  # type: ignore[index]
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "not JSON"),
        ("{", "not JSON"),
        ("[]", "not a JSON object"),
        (_with(["format"], 9), "unknown format 9"),
        (_with(["format"], 1), "unknown format 1 (this gtd reads format 2)"),  # old keys
        (_with(["files"], ["t.py"]), "files is not a mapping"),
        (_with(["files"], {"t.py": 1}), "files is not a mapping"),
        (_with(["protected"], None), "protected is not a mapping"),
        (_with(["baseline"], None), "baseline is missing"),
        (_with(["baseline", "commands"], {}), "baseline.commands is not a list"),
        (_with(["baseline", "commands", "0", "kind"], "deploy"), "unknown kind 'deploy'"),
        (_with(["baseline", "commands", "0", "exit_code"], "0"), "exit_code is missing"),
        (_with(["baseline", "commands", "0", "timed_out"], 0), "timed_out is missing"),
        (_with(["baseline", "commands", "0", "exit_code"], True), "exit_code is missing"),
        (_with(["baseline", "commands", "0", "missing"], 1), "missing has the wrong type"),
        (_with(["baseline", "tests", "t.py::a"], "green"), "unknown outcome 'green'"),
    ],
)
def test_corrupt_sidecar_names_the_file(tmp_path: Path, text: str, fragment: str) -> None:
    (tmp_path / ".deepflow").mkdir()
    (tmp_path / SNAPSHOT_JSON).write_text(text)
    with pytest.raises(InputError) as info:
        load_snapshot(tmp_path)
    assert info.value.path == SNAPSHOT_JSON
    assert "corrupt ratchet snapshot" in info.value.message
    assert fragment in info.value.message
    assert (tmp_path / SNAPSHOT_JSON).read_text() == text  # never reset behind your back


def test_pending_is_promoted_with_the_plan_redigested(tmp_path: Path) -> None:
    (tmp_path / "PLAN.md").write_text("- [ ] **T1**: x\n")
    old = Snapshot(SNAP.files, {**SNAP.protected, "PLAN.md": "stale"}, SNAP.baseline)
    save_snapshot(tmp_path, Snapshot())
    save_pending(tmp_path, old)
    assert load_snapshot(tmp_path) == Snapshot()  # not promoted until the commit
    commit_pending(tmp_path)
    loaded = load_snapshot(tmp_path)
    assert loaded is not None
    assert loaded.files == SNAP.files
    assert loaded.protected["PLAN.md"] == protect.digest("PLAN.md", b"- [ ] **T1**: x\n")
    assert not (tmp_path / PENDING_JSON).exists()
    commit_pending(tmp_path)  # idempotent
    assert load_snapshot(tmp_path) == loaded


def test_drop_pending(tmp_path: Path) -> None:
    save_snapshot(tmp_path, SNAP)
    save_pending(tmp_path, Snapshot())
    drop_pending(tmp_path)
    drop_pending(tmp_path)
    assert not (tmp_path / PENDING_JSON).exists()
    assert load_snapshot(tmp_path) == SNAP


def test_describe_baseline() -> None:
    described = describe_baseline(SNAP)
    assert described["tests_passed"] == 1
    assert described["tests_total"] == 2
    assert described["tests_failing"] == ["tests/test_b.py::test_y"]
    assert described["red"] is True
    assert described["reason"] == "baseline lint command not found: ruff"
    assert described["bootstrap"] is False
    assert [c["ok"] for c in described["commands"]] == [True, False, False]
    json.dumps(described)


def test_resync_owned_adopts_the_humans_plan_edit(tmp_path: Path) -> None:
    assert resync_owned(tmp_path) is False  # no snapshot yet
    (tmp_path / "PLAN.md").write_text("# Plan\n")
    save_snapshot(tmp_path, SNAP)
    before = sidecar_digest(tmp_path)
    assert before is not None
    assert resync_owned(tmp_path) is True
    loaded = load_snapshot(tmp_path)
    assert loaded is not None
    assert loaded.protected["PLAN.md"] == protect.digest("PLAN.md", b"# Plan\n")
    assert sidecar_digest(tmp_path) != before
    assert resync_owned(tmp_path) is False
