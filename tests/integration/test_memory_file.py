"""gtd.auto.memory_file against real files: round-trip edits, corrupt files, atomic saves."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gtd.auto import memory as m
from gtd.auto import memory_file as mf
from gtd.auto.memory import CycleRecord, Memory, ProbeLearning, Revert, TaskResult
from gtd.errors import InputError
from gtd.paths import BOOTSTRAP

AT = "2026-01-15T10:00:00Z"

# The schema block of deepflow 0.1.73's auto-cycle.md, verbatim.
DEEPFLOW_SAMPLE = """\
task_results:
 T1: { status: success, commit: abc1234, cycle: 3 }
 T2: { status: reverted, reason: "tests failed: 2 of 24", cycle: 4 }
revert_history:
 - { task: T2, cycle: 4, reason: "tests failed" }
 - { task: T2, cycle: 5, reason: "build error" }
consecutive_reverts:   # written by circuit breaker (step 3.5)
 T1: 0
 T2: 2
probe_learnings:
 - { spike: T1, probe: "streaming", insight: "discovered hidden dependency on fs.watch" }
"""


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / ".deepflow" / "auto-memory.yaml"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def failed(cycle: int, task: str = "T2", reason: str = "tests failed: 1 of 24") -> CycleRecord:
    return CycleRecord(cycle, task, "upload", "reverted", None, reason, AT, 23, 24, True)


def passed(cycle: int, task: str = "T3", commit: str = "def5678") -> CycleRecord:
    return CycleRecord(cycle, task, "parser", "passed", commit, None, AT, 24, 24, True)


def both(path: Path) -> Memory:
    """Load the file (the round-trip loader is the only one)."""
    mem, _ = mf.load(path)
    return mem


def test_deepflow_sample_loads(path: Path) -> None:
    mem = both(write(path, DEEPFLOW_SAMPLE))
    assert dict(mem.task_results) == {
        "T1": TaskResult("success", 3, commit="abc1234"),
        "T2": TaskResult("reverted", 4, reason="tests failed: 2 of 24"),
    }
    assert mem.revert_history == (
        Revert("T2", 4, "tests failed"),
        Revert("T2", 5, "build error"),
    )
    assert dict(mem.consecutive_reverts) == {"T1": 0, "T2": 2}
    assert mem.probe_learnings == (
        ProbeLearning("T1", "streaming", "discovered hidden dependency on fs.watch"),
    )
    assert mem.cycles == ()
    assert m.next_cycle_number(mem) == 6


def test_missing_file_is_empty_memory_and_first_save_creates_it(path: Path) -> None:
    mem, doc = mf.load(path)
    assert mem == Memory() == mf.load(path)[0]
    assert not path.exists()
    mem = m.record_cycle(mem, passed(1, "T1", "abc1234"))
    mf.save(path, mem, doc)
    text = path.read_text()
    assert text.startswith("# gtd auto mode memory")
    assert "  T1: {status: success, commit: abc1234, cycle: 1}\n" in text
    assert "consecutive_reverts:\n  T1: 0\n" in text
    assert "revert_history: []\nconsecutive_reverts" in text
    assert "probe_learnings: []\n" in text
    assert "halts" not in text  # only once the breaker has tripped
    assert both(path) == mem


@pytest.mark.parametrize(
    "text",
    ["", "\n", "# only a comment\n", "task_results:\nrevert_history:\n", "{}\n"],
    ids=["empty", "blank", "comment", "null-sections", "empty-mapping"],
)
def test_empty_sections_are_empty_memory(path: Path, text: str) -> None:
    assert both(write(path, text)) == Memory()


def test_comments_key_order_and_extras_survive_a_save(path: Path) -> None:
    write(
        path,
        "# my notes about this loop\n"
        "owner: alice  # who to ask\n"
        + DEEPFLOW_SAMPLE.replace(
            " T1: { status: success, commit: abc1234, cycle: 3 }",
            " T1: { status: success, commit: abc1234, cycle: 3, note: keep me }  # by hand",
        )
        + "extra:\n  nested: [1, 2]\n",
    )
    mem, doc = mf.load(path)
    mem = m.record_cycle(mem, failed(6))
    mem = m.record_cycle(mem, passed(7))
    mf.save(path, mem, doc)
    text = path.read_text()

    assert text.startswith("# my notes about this loop\nowner: alice  # who to ask\n")
    assert re.search(
        r"  T1: \{status: success, commit: abc1234, cycle: 3, note: keep me\} +# by hand", text
    )
    assert "consecutive_reverts:   # written by circuit breaker (step 3.5)" in text
    assert 'reason: "tests failed"' in text  # the human's quoting is kept
    assert "extra:\n  nested: [1, 2]\n" in text
    keys = [line.split(":")[0] for line in text.splitlines() if line[:1].isalpha()]
    assert keys == [
        "owner",
        "task_results",
        "revert_history",
        "consecutive_reverts",
        "probe_learnings",
        "extra",
        "cycles",
    ]
    # Entries updated in place, new ones appended in deepflow's one-line flow style.
    assert '  T2: {status: reverted, reason: "tests failed: 1 of 24", cycle: 6}\n' in text
    assert "  T3: {status: success, commit: def5678, cycle: 7}\n" in text
    assert '  - {task: T2, cycle: 6, reason: "tests failed: 1 of 24"}\n' in text
    assert "  T2: 3\n  T3: 0\n" in text
    assert both(path) == mem


def test_saving_unchanged_memory_is_a_fixed_point(path: Path) -> None:
    mem, doc = mf.load(path)
    for rec in [failed(1), passed(2), failed(3, "T4", "a\nb | c")]:
        mem = m.record_cycle(mem, rec)
    mf.save(path, mem, doc)
    first = path.read_bytes()
    again, doc = mf.load(path)
    assert again == mem
    mf.save(path, again, doc)
    assert path.read_bytes() == first


def test_reset_and_removed_entries_are_written(path: Path) -> None:
    mem, doc = mf.load(write(path, DEEPFLOW_SAMPLE))
    mem, reset = m.reset_breaker(mem, "T2")
    assert reset == ["T2"]
    mf.save(path, mem, doc)
    assert both(path).consecutive_reverts == {"T1": 0, "T2": 0}
    # Dropping entries from the model drops them from the file too.
    mem, doc = mf.load(path)
    mf.save(path, Memory(consecutive_reverts={"T1": 0}), doc)
    text = path.read_text()
    assert "T2" not in text.split("consecutive_reverts")[1]
    assert "task_results: {}\n" in text
    assert both(path) == Memory(consecutive_reverts={"T1": 0})


def test_update_round_trips_and_skips_no_op_writes(path: Path) -> None:
    new = mf.update(path, lambda mem: m.record_cycle(mem, passed(1)))
    assert both(path) == new
    before = path.stat().st_mtime_ns
    os.utime(path, ns=(0, 0))
    mf.update(path, lambda mem: m.record_cycle(mem, passed(1)))  # replay: no change
    assert path.stat().st_mtime_ns == 0 != before


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        pytest.param("task_results: [1, 2\n", 2, "YAML syntax error", id="syntax"),
        pytest.param("a: 1\n\tb: 2\n", 2, "YAML syntax error", id="tab"),
        pytest.param("- 1\n- 2\n", 1, "mapping of sections, not a list", id="root-list"),
        pytest.param("just text\n", 1, "not a string", id="root-scalar"),
        pytest.param(
            "revert_history: []\ntask_results:\n  - T1\n",
            2,
            "`task_results` must be a mapping",
            id="task-results-list",
        ),
        pytest.param(
            "task_results:\n  T1: success\n", 2, "`task_results.T1` must be a mapping",
            id="task-result-scalar",
        ),
        pytest.param(
            "task_results:\n  T1: {commit: abc}\n", 2, "lacks `status`", id="missing-status"
        ),
        pytest.param(
            "task_results:\n  T1:\n    status: success\n    cycle: three\n",
            4,
            "`task_results.T1.cycle` must be a non-negative integer, not a string ('three')",
            id="cycle-text",
        ),
        pytest.param(
            "consecutive_reverts:\n  T1: 0\n  T2: two\n",
            3,
            "`consecutive_reverts.T2` must be a non-negative integer",
            id="counter-text",
        ),
        pytest.param(
            "consecutive_reverts:\n  T1: -1\n", 2, "non-negative integer", id="counter-negative"
        ),
        pytest.param("consecutive_reverts:\n  T1: true\n", 2, "a boolean", id="counter-bool"),
        pytest.param("consecutive_reverts:\n  T1: 1.5\n", 2, "'1.5'", id="counter-float"),
        pytest.param("consecutive_reverts:\n  T1:\n", 2, "not empty", id="counter-null"),
        pytest.param("consecutive_reverts: 3\n", 1, "must be a mapping", id="counters-scalar"),
        pytest.param(
            "revert_history:\n  - {task: T1, cycle: 1}\n  - oops\n",
            3,
            "`revert_history[1]` must be a mapping",
            id="history-item",
        ),
        pytest.param(
            "revert_history:\n  - {cycle: 1, reason: x}\n", 2, "lacks `task`", id="history-task"
        ),
        pytest.param(
            "revert_history: {T1: 1}\n", 1, "`revert_history` must be a list", id="history-map"
        ),
        pytest.param(
            "probe_learnings:\n  - {spike: T1, insight: [a]}\n",
            2,
            "`probe_learnings[0].insight` must be a string, not a list",
            id="learning-list",
        ),
        pytest.param(
            "cycles:\n  - {cycle: 1, task: T1, status: won, at: x}\n",
            2,
            "must be one of passed, reverted, skipped",
            id="cycle-status",
        ),
        pytest.param(
            "cycles:\n"
            "  - {cycle: 1, task: T1, status: passed, at: x}\n"
            "  - {cycle: 1, task: T2, status: passed, at: x}\n",
            3,
            "cycle 1 is logged twice",
            id="cycle-twice",
        ),
        pytest.param(
            "cycles:\n  - {cycle: 0, task: T1, status: passed, at: x}\n",
            2,
            "integer ≥ 1",
            id="cycle-zero",
        ),
        pytest.param(
            "cycles:\n  - {cycle: 1, task: T1, status: passed, at: x, build_ok: maybe}\n",
            2,
            "must be true or false",
            id="build-ok",
        ),
        pytest.param(
            "halts:\n  - {cycle: 1, task: T1, reason: r, at: x}\n", 2, "lacks `count`",
            id="halt",
        ),
        pytest.param(
            "task_results: {}\nconsecutive_reverts: {}\ntask_results: {}\n",
            3,
            "duplicate key",
            id="duplicate-key",
        ),
        pytest.param("a: 1\n---\nb: 2\n", 2, "expected a single document", id="two-docs"),
    ],
)  # fmt: skip
def test_corrupt_files_are_input_errors_with_lines(
    path: Path, text: str, line: int, fragment: str
) -> None:
    write(path, text)
    with pytest.raises(InputError) as info:
        mf.load(path)
    err = info.value
    assert err.path == ".deepflow/auto-memory.yaml"
    assert err.line == line, err.message
    assert fragment in err.message
    assert err.hint == "fix or move the file aside; gtd never resets it silently"
    assert path.read_text() == text  # never reset


def test_non_utf8_file_is_an_input_error(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b"task_results: {T1: \xff}\n")
    with pytest.raises(InputError, match="not UTF-8"):
        mf.load(path)


def test_other_paths_are_named_as_given(tmp_path: Path) -> None:
    other = write(tmp_path / "mem.yaml", "cycles: 1\n")
    with pytest.raises(InputError) as info:
        mf.load(other)
    assert info.value.path == str(other)


@pytest.mark.parametrize(
    ("text", "commit", "reason"),
    [
        # deepflow writes hashes bare: all-digit ones parse as numbers.
        ("T1: {status: success, commit: 1234567, cycle: 1}", "1234567", None),
        ("T1: {status: success, commit: 0123456, cycle: 1}", "0123456", None),
        ("T1: {status: success, commit: '0123456', cycle: 1}", "0123456", None),
        ("T1: {status: success, commit: 1234e56, cycle: 1}", "1234e56", None),
        ("T1: {status: success, commit: 1234E5, cycle: 1}", "1234E5", None),
        ("T1: {status: reverted, reason: 1.5, cycle: 1}", None, "1.5"),
        ("T1: {status: reverted, reason: yes, cycle: 1}", None, "yes"),
        ("T1: {status: reverted, reason: 1_000, cycle: 1}", None, "1000"),
    ],
)
def test_yaml_11_and_12_scalars_read_the_same_both_ways(
    path: Path, text: str, commit: str | None, reason: str | None
) -> None:
    write(path, f"task_results:\n  {text}\n")
    result = both(path).task_results["T1"]
    assert (result.commit, result.reason) == (commit, reason)


def test_a_number_where_a_count_belongs_is_still_an_error(path: Path) -> None:
    write(path, "consecutive_reverts:\n  T1: 1e3\n")
    with pytest.raises(InputError, match="must be a non-negative integer"):
        mf.load(path)


def test_unquoted_timestamps_read_back_as_text(path: Path) -> None:
    write(path, "cycles:\n  - {cycle: 1, task: T1, status: passed, at: 2026-01-15T10:00:00Z}\n")
    assert both(path).cycles[0].at == AT


def test_strings_that_look_like_other_things_are_quoted(path: Path) -> None:
    mem, doc = mf.load(path)
    for number, commit in enumerate(["0123456", "1234567", "1e10000", "yes", "null", "abc1234"]):
        mem = m.record_cycle(mem, passed(number + 1, f"T{number}", commit))
    mf.save(path, mem, doc)
    assert both(path) == mem
    # A YAML 1.1 reader (deepflow's, PyYAML) reads the same text back.
    text = path.read_text()
    assert yaml.safe_load(text)["task_results"]["T0"]["commit"] == "0123456"


def test_save_is_atomic(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(path, DEEPFLOW_SAMPLE)
    mem, doc = mf.load(path)
    mem = m.record_cycle(mem, failed(6))
    mf.save(path, mem, doc)
    assert sorted(p.name for p in path.parent.iterdir()) == ["auto-memory.yaml"]

    before = path.read_text()
    mem2, doc2 = mf.load(path)

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        mf.save(path, m.record_cycle(mem2, failed(7)), doc2)
    assert path.read_text() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["auto-memory.yaml"]


# -- property: any memory the model can produce survives the file -----------------

text = st.text(st.characters(codec="utf-8"), max_size=40)
ids = st.sampled_from(["T1", "T2", "T10", BOOTSTRAP])
cycle_records = st.lists(
    st.tuples(
        ids,
        st.sampled_from(m.CYCLE_STATUSES),
        text,
        st.none() | st.text("0123456789abcdef", min_size=7, max_size=7),
        st.none() | text,
        st.none() | st.integers(0, 10_000),
        st.none() | st.booleans(),
        st.booleans(),
        st.none() | text,
    ),
    max_size=8,
)


# Fuzzing (60 random histories), in the slow set; the quick loop keeps the round
# trip of every field and part in test_the_sealed_records_new_fields_and_parts_are_rendered.
@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cycle_records, st.booleans())
def test_any_memory_round_trips(rows: list[tuple[object, ...]], over_sample: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ".deepflow" / "auto-memory.yaml"
        if over_sample:
            write(path, DEEPFLOW_SAMPLE)
        mem, doc = mf.load(path)
        for number, row in enumerate(rows, start=m.next_cycle_number(mem)):
            task, status, title, commit, reason, tests, build_ok, spike, learning = row
            mem = m.record_cycle(
                mem,
                CycleRecord(
                    number, task, title, status, commit, reason,  # type: ignore[arg-type]
                    AT, tests, tests, build_ok, spike, learning,  # type: ignore[arg-type]
                ),
            )  # fmt: skip
        if rows:
            mem = m.record_halt(mem, m.Halt(len(rows), "T1", 3, "why\nnot", AT))
        mf.save(path, mem, doc)
        # The pause in force is folded from the sealed records alone, never read
        # from this file (an agent that writes `paused` into it pauses nothing):
        # the file keeps each paused cycle, not the pause.
        assert mf.load(path)[0] == mem._replace(pause=None)


def test_the_sealed_records_new_fields_and_parts_are_rendered(path: Path) -> None:
    """Every field of a cycle record and every part of the fold shows in the file,
    and reads back the same; a forced stop that is reset leaves the file."""
    rec = CycleRecord(
        1, "T1", "upload", "reverted", None, "tests failed: 1 of 3", AT, 2, 3, True,
        tests_failed=1, tests_skipped=0, duration_s=12.5, kept="refs/gtd/reverted/cycle-1",
        agent_exit=2, agent_tail="Traceback: boom", flaky=("tests/test_a.py::test_x",),
    )  # fmt: skip
    mem = m.record_cycle(Memory(), rec)
    mem = m.quarantine(mem, m.Quarantine("tests/test_a.py::test_x", 1, AT, "failed, then passed"))
    mem = m.record_refresh(mem, m.Refresh("abc1234", AT, "a person's commit"))
    mem = m.record_halt(mem, m.Halt(1, "T1", 1, "tampered with the snapshot", AT, forced=True))
    _, doc = mf.load(path)
    mf.save(path, mem, doc)
    text = path.read_text()
    for shown in (
        "tests_failed: 1",
        "tests_skipped: 0",
        "duration_s: 12.5",
        "kept: refs/gtd/reverted/cycle-1",
        "agent_exit: 2",
        'agent_tail: "Traceback: boom"',
        "flaky: [tests/test_a.py::test_x]",
        "quarantined:",
        'evidence: "failed, then passed"',
        "refreshes:",
        "stop: {",
        "forced: true",
    ):
        assert shown in text, (shown, text)
    loaded, doc = mf.load(path)
    assert loaded == mem
    cleared, _ = m.reset_breaker(loaded, "T1")
    mf.save(path, cleared, doc)
    assert "stop:" not in path.read_text()
    assert mf.load(path)[0] == cleared


def test_a_cycle_an_older_gtd_wrote_as_failed_reads_as_reverted(path: Path) -> None:
    # One word per outcome: today's files say `reverted`, as `gtd cycle end` answers.
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "cycles:\n"
        f'  - {{cycle: 1, task: T1, status: failed, reason: "tests failed: 1 of 3", at: "{AT}"}}\n'
        f'  - {{cycle: 2, task: T1, status: passed, commit: abc1234, at: "{AT}"}}\n'
    )
    mem, doc = mf.load(path)
    assert [(r.cycle, r.status) for r in mem.cycles] == [(1, "reverted"), (2, "passed")]
    mf.save(path, mem, doc)
    text = path.read_text()
    assert "status: reverted" in text
    assert "status: failed" not in text


def test_a_cycle_that_kept_nothing_says_so_in_the_file(path: Path) -> None:
    rec = CycleRecord(1, "T1", "t", "reverted", None, "no changes", AT, None, None, None, kept="")
    mf.save(path, m.record_cycle(Memory(), rec), mf.Doc())
    assert 'kept: ""' in path.read_text()
    assert mf.load(path)[0].cycles[0].kept == ""


def test_numbers_keep_their_type_when_the_file_is_written_again(path: Path) -> None:
    # A cycle's seconds and cost are numbers in the file the cycle first wrote;
    # every later save (the file read back, the next cycle added) keeps them so.
    mem, doc = mf.load(path)
    mem = m.record_cycle(mem, passed(1, "T1")._replace(duration_s=4.795))
    mf.save(path, mem, doc)
    for number in (2, 3):
        mem, doc = mf.load(path)
        mem = m.record_cycle(mem, passed(number, f"T{number}")._replace(duration_s=3.5))
        mf.save(path, mem, doc)
    cycles = yaml.safe_load(path.read_text())["cycles"]
    assert [c["duration_s"] for c in cycles] == [4.795, 3.5, 3.5]
    assert "'4.795'" not in path.read_text()
    assert both(path) == mem
