"""gtd.auto.chart: the report's Mermaid gitGraph of the run."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from gtd.auto import chart
from gtd.auto import memory as m
from gtd.auto.memory import CycleRecord, Halt, Memory, Refresh


def cyc(number: int, task: str, status: str, at: str | None = None) -> CycleRecord:
    return CycleRecord(
        number, task, "", status,  # type: ignore[arg-type]
        f"abc{number:04d}" if status == "passed" else None,
        "boom" if status == "reverted" else None,
        at or f"2025-01-15T10:{number:02d}:00Z", None, None, None,
    )  # fmt: skip


def fold(*recs: CycleRecord) -> Memory:
    mem = Memory()
    for rec in recs:
        mem = m.record_cycle(mem, rec)
    return mem


def block(lines: list[str]) -> list[str]:
    start = lines.index("```mermaid")
    return lines[start + 1 : lines.index("```", start)]


# What the chart may contain: gitGraph, then commits with a quoted id of safe
# characters, an optional type and an optional quoted tag. Nothing else can reach
# Mermaid's parser, so no label can break the chart.
_LINE = re.compile(
    r'  commit id: "[A-Za-z0-9 _.:/+-]+"'
    r"( type: (REVERSE|HIGHLIGHT))?"
    r'( tag: "[A-Za-z0-9 _.:/+()-]+")?'
)


def assert_well_formed(body: list[str]) -> None:
    assert body[0] == "gitGraph"
    for line in body[1:]:
        assert _LINE.fullmatch(line), line
    ids = [re.search(r'id: "([^"]*)"', line).group(1) for line in body[1:]]  # type: ignore[union-attr]
    assert len(ids) == len(set(ids)), ids
    tags = re.findall(r'tag: "([^"]*)"', "\n".join(body))
    assert len(tags) == len(set(tags)), tags


def test_no_chart_before_anything_happened() -> None:
    assert chart.mermaid(Memory()) == []
    assert chart.mermaid(fold(cyc(1, "T1", "skipped"))) == []


def test_cycles_in_order_by_outcome_with_a_persons_commit_and_a_trip() -> None:
    mem = fold(
        cyc(1, "T1", "passed"),
        cyc(2, "T2", "reverted"),
        cyc(3, "T2", "skipped"),
        cyc(4, "T2", "reverted"),
    )
    mem = m.record_refresh(
        mem, Refresh("f00ba12", "2025-01-15T10:01:30Z", "snapshot refreshed after f00ba12")
    )
    mem = m.record_halt(mem, Halt(4, "T2", 2, "boom", "2025-01-15T10:04:00Z"))
    lines = chart.mermaid(mem)
    assert lines[0].startswith("Cycles in order: a plain commit was committed, a crossed-out")
    assert block(lines) == [
        "gitGraph",
        '  commit id: "start"',
        '  commit id: "1 T1 abc0001"',
        '  commit id: "person f00ba12 r1" type: HIGHLIGHT',
        '  commit id: "2 T2 reverted" type: REVERSE',
        '  commit id: "4 T2 reverted" type: REVERSE tag: "breaker tripped at T2"',
    ]


def test_a_broken_baseline_tags_the_refresh_that_found_it() -> None:
    at = "2025-01-15T11:00:00Z"
    mem = m.record_refresh(
        fold(cyc(1, "T1", "passed")), Refresh("f00ba12", at, "snapshot refreshed")
    )
    mem = m.record_halt(mem, Halt(0, "baseline", 0, "broken", at, forced=True))
    assert block(chart.mermaid(mem))[-1] == (
        '  commit id: "person f00ba12 r1" type: HIGHLIGHT tag: "halted at baseline"'
    )


def test_a_long_run_shows_the_latest_cycles_and_says_so() -> None:
    mem = fold(
        *(cyc(n, f"T{n}", "passed", at=f"2025-01-15T{n // 60:02d}:{n % 60:02d}:00Z")
          for n in range(1, 76))
    )  # fmt: skip
    lines = chart.mermaid(mem)
    assert lines[0].endswith(f" The latest {chart.LIMIT} of 75 cycles.")
    body = block(lines)
    assert body[1] == f'  commit id: "{75 - chart.LIMIT} earlier cycles"'
    first = 75 - chart.LIMIT + 1
    assert body[2] == f'  commit id: "{first} T{first} abc{first:04d}"'
    assert len(body) == chart.LIMIT + 2


def test_repeated_trips_get_distinct_tags() -> None:
    mem = fold(*(cyc(n, "T2", "reverted") for n in (1, 2)))
    mem = m.record_halt(mem, Halt(1, "T2", 1, "boom", "2025-01-15T10:01:00Z"))
    mem = m.record_halt(mem, Halt(2, "T2", 1, "boom", "2025-01-15T10:02:00Z"))
    body = block(chart.mermaid(mem))
    assert body[-2].endswith('tag: "breaker tripped at T2"')
    assert body[-1].endswith('tag: "breaker tripped at T2 (2)"')


hostile = st.text(st.characters(codec="utf-8"), max_size=40)


@given(
    st.lists(
        st.tuples(hostile, st.sampled_from(m.CYCLE_STATUSES), hostile), min_size=1, max_size=50
    ),
    st.lists(hostile, max_size=3),
)
def test_any_memory_gives_a_well_formed_chart(
    rows: list[tuple[str, str, str]], people: list[str]
) -> None:
    recs = [
        cyc(n, task or "T", status)._replace(commit=commit if status == "passed" else None)
        for n, (task, status, commit) in enumerate(rows, 1)
    ]
    mem = fold(*recs)
    for n, commit in enumerate(people):
        mem = m.record_refresh(mem, Refresh(commit, f"2025-01-15T10:{n:02d}:30Z", "r"))
        mem = m.record_halt(mem, Halt(n + 1, '"T"\n', 3, "x", "t"))
    lines = chart.mermaid(mem)
    if not lines:
        assert all(r.status == "skipped" for r in recs)
        assert not people
        return
    assert_well_formed(block(lines))


# A wave's lines: a branch per task from the same commit, back to main, the
# landed ones merged with an id of their own.
_WAVE_LINE = re.compile(
    r"  branch wave[0-9]+-[A-Za-z0-9_-]+|  checkout main"
    r'|  merge wave[0-9]+-[A-Za-z0-9_-]+ id: "wave [0-9]+ landed [0-9]+( [A-Za-z0-9 _.:/+-]+)?"'
)


def test_a_wave_s_tasks_are_drawn_side_by_side_and_merged_in_plan_order() -> None:
    mem = fold(
        cyc(1, "T1", "passed"),
        cyc(2, "T2", "passed")._replace(wave=1),
        cyc(3, "T3", "reverted")._replace(wave=1),
        cyc(4, "T4", "passed")._replace(wave=1),
        cyc(5, "T3", "passed"),
    )
    lines = chart.mermaid(mem)
    assert block(lines) == [
        "gitGraph",
        '  commit id: "start"',
        '  commit id: "1 T1 abc0001"',
        # each task of the wave on its own branch, all from cycle 1's commit
        "  branch wave1-T2",
        '  commit id: "2 T2 abc0002"',
        "  checkout main",
        "  branch wave1-T3",
        '  commit id: "3 T3 reverted" type: REVERSE',
        "  checkout main",
        "  branch wave1-T4",
        '  commit id: "4 T4 abc0004"',
        "  checkout main",
        # landed in plan order; the reverted one stays off the line
        '  merge wave1-T2 id: "wave 1 landed 2 T2"',
        '  merge wave1-T4 id: "wave 1 landed 4 T4"',
        '  commit id: "5 T3 abc0005"',
    ]
    assert "The tasks of a wave ran together" in lines[0]


def test_a_night_with_no_wave_draws_no_branch() -> None:
    lines = chart.mermaid(fold(cyc(1, "T1", "passed"), cyc(2, "T2", "reverted")))
    assert "ran together" not in lines[0]
    assert_well_formed(block(lines))  # commits only


def test_two_waves_side_by_side_each_on_branches_of_its_own() -> None:
    mem = fold(
        cyc(1, "T1", "passed")._replace(wave=1),
        cyc(2, "T2", "paused")._replace(wave=1),
        cyc(3, "T2", "passed")._replace(wave=2),
        cyc(4, "T/3", "passed")._replace(wave=2),
    )
    body = block(chart.mermaid(mem))
    assert [line for line in body if line.startswith("  branch")] == [
        "  branch wave1-T1",
        "  branch wave1-T2",
        "  branch wave2-T2",
        "  branch wave2-T-3",
    ]
    merged = [line.split()[1] for line in body if line.startswith("  merge")]
    assert merged == ["wave1-T1", "wave2-T2", "wave2-T-3"]  # the paused one is not


@given(
    st.lists(
        st.tuples(hostile, st.sampled_from(m.CYCLE_STATUSES), st.sampled_from([None, 1, 2])),
        min_size=1,
        max_size=30,
    )
)
def test_any_night_of_waves_gives_a_well_formed_chart(
    rows: list[tuple[str, str, int | None]],
) -> None:
    recs = [
        cyc(n, task or "T", status)._replace(wave=wave)
        for n, (task, status, wave) in enumerate(rows, 1)
    ]
    lines = chart.mermaid(fold(*recs))
    if not lines:
        return
    body = block(lines)
    commits = [line for line in body[1:] if line.startswith("  commit")]
    assert_well_formed([body[0], *commits])
    rest = [line for line in body[1:] if not line.startswith("  commit")]
    assert all(_WAVE_LINE.fullmatch(line) for line in rest), rest
    branches = [line.split()[1] for line in rest if line.startswith("  branch")]
    assert len(branches) == len(set(branches)), branches  # Mermaid refuses a branch twice
    merged = [line.split()[1] for line in rest if line.startswith("  merge")]
    assert set(merged) <= set(branches)
    ids = re.findall(r'id: "([^"]*)"', "\n".join(body))
    assert len(ids) == len(set(ids)), ids
