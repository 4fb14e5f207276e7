"""The snapshot's JSON form: round trip, corrupt documents, presentation."""

from __future__ import annotations

import json

import pytest

from gtd.auto.ratchet.model import CommandRun, Environment, RunResult, Snapshot
from gtd.auto.ratchet.snapshot import FORMAT, describe_baseline, dumps, loads
from gtd.errors import InputError

SNAP = Snapshot(
    head="a" * 40,
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
    doctests={"src/m.py": {"m.f": "dd"}},
    collected=True,
    environment=Environment(
        dirs=("/venv/site",),
        shadowable=("pytest",),
        plugin=True,
        plugins=("./tests/conftest.py",),
        hooks=("pytest_configure ./tests/conftest.py",),
    ),
    accepted="2 test files could not be collected (accepted at setup)",
)
NAME = "refs/gtd/state:snapshot.json"


def test_round_trip() -> None:
    assert loads(dumps(SNAP), NAME) == SNAP


def test_exit_code_only_baseline_round_trips() -> None:
    snap = Snapshot(baseline=RunResult((CommandRun("test", "npm test", 0, 1.0, 60.0),), None))
    assert loads(dumps(snap), NAME) == snap


@pytest.mark.parametrize("left", [None, (), ("redis-server --port 6379",)])
def test_what_the_baseline_left_round_trips_and_only_where_looked_at(
    left: tuple[str, ...] | None,
) -> None:
    """None (nobody looked: unboxed, or an older gtd) is no key at all, so such
    a snapshot's bytes are as before; () and a list are kept as they are."""
    run = CommandRun("test", "pytest", 0, 1.0, 60.0, left=left)
    snap = Snapshot(baseline=RunResult((run,), {}))
    assert loads(dumps(snap), NAME) == snap
    written = json.loads(dumps(snap))["baseline"]["commands"][0]
    assert ("left" in written) == (left is not None)


def _doc() -> dict[str, object]:
    return json.loads(dumps(Snapshot(files={"t.py": "x"}, baseline=SNAP.baseline)))  # type: ignore[no-any-return]


def _with(path: list[str], value: object) -> bytes:
    doc = _doc()
    target: object = doc
    for key in path[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]  # type: ignore[index]
    target[path[-1] if not isinstance(target, list) else int(path[-1])] = value  # type: ignore[index]
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "not JSON"),
        (b"{", "not JSON"),
        (b"[]", "not a JSON object"),
        (_with(["format"], 1), f"unknown format 1 (this gtd reads format {FORMAT})"),
        (_with(["files"], ["t.py"]), "files is not a mapping"),
        (_with(["files"], {"t.py": 1}), "files is not a mapping"),
        (_with(["protected"], None), "protected is not a mapping"),
        (_with(["doctests"], []), "doctests is not a mapping"),
        (_with(["baseline"], None), "baseline is missing"),
        (_with(["baseline", "commands"], {}), "baseline.commands is not a list"),
        (_with(["baseline", "commands", "0", "kind"], "deploy"), "unknown kind 'deploy'"),
        (_with(["baseline", "commands", "0", "exit_code"], "0"), "exit_code is missing"),
        (_with(["baseline", "commands", "0", "timed_out"], 0), "timed_out is missing"),
        (_with(["baseline", "commands", "0", "exit_code"], True), "exit_code is missing"),
        (_with(["baseline", "commands", "2", "missing"], 1), "missing has the wrong type"),
        (
            _with(["baseline", "tests", "tests/test_a.py::test_x"], "green"),
            "unknown outcome 'green'",
        ),
    ],
)
def test_corrupt_snapshot_names_where_it_came_from(data: bytes, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        loads(data, NAME)
    assert info.value.path == NAME
    assert "corrupt ratchet snapshot" in info.value.message
    assert fragment in info.value.message
    assert "gtd auto setup" in (info.value.hint or "")


def test_describe_baseline() -> None:
    described = describe_baseline(SNAP)
    assert described["tests_passed"] == 1
    assert described["tests_failed"] == 1
    assert described["tests_total"] == 2
    assert described["tests_failing"] == ["tests/test_b.py::test_y"]
    assert described["red"] is True
    assert described["reason"] == "baseline lint command not found: ruff"
    assert described["bootstrap"] is False
    assert described["accepted"] == SNAP.accepted
    assert [c["ok"] for c in described["commands"]] == [True, False, False]
    json.dumps(described)
