"""gtd.auto.report: the deepflow auto-report skeleton, rendered from records."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gtd.auto import memory as m
from gtd.auto import report
from gtd.auto.memory import CycleRecord, Memory, ProbeLearning
from gtd.auto.report import Health, VerifyResult

NOW = "2025-01-15T10:20:00Z"


def history() -> Memory:
    records = [
        CycleRecord(1, "BOOTSTRAP", "baseline tests", "passed", "boo1234", None,
                    "2025-01-15T10:00:00Z", 10, 10, True),
        CycleRecord(2, "T1", "streaming probe", "passed", "abc1234", None,
                    "2025-01-15T10:05:00Z", 12, 12, True, spike=True,
                    learning="fs.watch | inotify both work"),
        CycleRecord(3, "T2", "upload", "failed", None, "tests failed: 2 of 24",
                    "2025-01-15T10:10:00Z", 22, 24, True),
        CycleRecord(4, "T1", "streaming probe", "skipped", None, None,
                    "2025-01-15T10:15:00Z", None, None, None),
    ]  # fmt: skip
    mem = Memory()
    for rec in records:
        mem = m.record_cycle(mem, rec)
    return mem


GOLDEN = """\
# Auto Mode Report — upload-spec

_Last updated: 2025-01-15T10:20:00Z_

## Summary

| Metric | Value |
|--------|-------|
| Total cycles run | 4 |
| Tasks committed | 2 |
| Tasks reverted | 1 |

## Cycle Log

| Cycle | Task | Status | Commit / Revert | Reason | Timestamp |
|-------|------|--------|-----------------|--------|-----------|
| 1 | BOOTSTRAP | passed | boo1234 | — | 2025-01-15T10:00:00Z |
| 2 | T1 | passed | abc1234 | — | 2025-01-15T10:05:00Z |
| 3 | T2 | failed | reverted | tests failed: 2 of 24 | 2025-01-15T10:10:00Z |
| 4 | T1 | skipped | — | — | 2025-01-15T10:15:00Z |

## Probe Results

| Probe | Metric | Winner | Loser | Notes |
|-------|--------|--------|-------|-------|
| T1: streaming probe | ratchet (tests 12 / 12) | spike (abc1234) | baseline \
| fs.watch \\| inotify both work |

## Health Score

| Check | Status |
|-------|--------|
| Tests passed | 22 / 24 |
| Build status | passing |
| Ratchet | red |
| Verify L0 (build) | ✓ passed |
| Verify L2 (coverage) | ⚠ warning (no coverage tool) |

## Reverted Tasks

| Task | Cycle | Reason |
|------|-------|--------|
| T2 | 3 | tests failed: 2 of 24 |
"""

EMPTY = """\
# Auto Mode Report — upload-spec

_Last updated: 2025-01-15T10:20:00Z_

## Summary

| Metric | Value |
|--------|-------|
| Total cycles run | 0 |
| Tasks committed | 0 |
| Tasks reverted | 0 |

## Cycle Log

| Cycle | Task | Status | Commit / Revert | Reason | Timestamp |
|-------|------|--------|-----------------|--------|-----------|

## Probe Results

_(empty until a probe/spike task runs)_

| Probe | Metric | Winner | Loser | Notes |
|-------|--------|--------|-------|-------|

## Health Score

| Check | Status |
|-------|--------|
| Tests passed | — |
| Build status | — |
| Ratchet | — |

## Reverted Tasks

_(tasks that were reverted with their failure reasons)_

| Task | Cycle | Reason |
|------|-------|--------|
"""


def test_golden_history() -> None:
    health = Health(
        verify=(
            VerifyResult("L0", "passed", name="build"),
            VerifyResult("L2", "warning", name="coverage", detail="no coverage tool"),
        )
    )
    assert report.render("upload-spec", history(), NOW, health) == GOLDEN


def test_golden_empty_skeleton() -> None:
    assert report.render("upload-spec", Memory(), NOW) == EMPTY
    assert report.render("upload-spec", Memory(), NOW, Health()) == EMPTY


def test_rows_follow_cycle_numbers_not_insertion_order() -> None:
    mem = Memory(cycles=tuple(reversed(history().cycles)))
    text = report.render("x", mem, NOW)
    cycles = re.findall(r"^\| (\d+) \| ", text, re.MULTILINE)
    assert cycles == ["1", "2", "3", "4"]


@pytest.mark.parametrize(
    ("raw", "cell"),
    [
        (None, "—"),
        ("", "—"),
        ("   ", "—"),
        ("plain", "plain"),
        ("a | b", "a \\| b"),
        ("line1\nline2", "line1<br>line2"),
        ("line1\r\n\r\nline2\r", "line1<br>line2"),
        ("  padded  ", "padded"),
        ("C:\\dir\\|x", "C:\\dir\\\\\\|x"),
    ],
)
def test_cell_escaping(raw: str | None, cell: str) -> None:
    assert report.cell(raw) == cell


def test_escaping_keeps_every_row_one_line_with_six_cells() -> None:
    nasty = "x | y\nz \\| w"
    rec = CycleRecord(1, "T|1", nasty, "failed", None, nasty, "2025-01-15\nT10", 1, 2, False)
    text = report.render("title\nwith | pipe", m.record_cycle(Memory(), rec), NOW)
    assert text.splitlines()[0] == "# Auto Mode Report — title with | pipe"
    row = next(line for line in text.splitlines() if line.startswith("| 1 |"))
    assert len(re.split(r"(?<!\\)\|", row)) == 6 + 2  # six cells between the outer pipes
    assert "| Build status | failing |" in text


def test_reverted_placeholder_goes_once_something_was_reverted() -> None:
    mem = m.record_cycle(
        Memory(),
        CycleRecord(1, "T2", "t", "failed", None, "boom", NOW, None, None, None),
    )
    text = report.render("x", mem, NOW)
    assert report.REVERT_PLACEHOLDER not in text
    assert text.endswith(
        "| Task | Cycle | Reason |\n|------|-------|--------|\n| T2 | 1 | boom |\n"
    )
    assert report.PROBE_PLACEHOLDER in text
    # Unknown test counts and build status say so rather than guessing.
    assert "| Tests passed | — |" in text
    assert "| Build status | — |" in text


def test_failed_spike_and_legacy_learnings() -> None:
    spike = CycleRecord(5, "T4", "", "failed", None, "timeout after 600 s", NOW, None, None, None,
                        spike=True)  # fmt: skip
    mem = m.record_cycle(
        Memory(probe_learnings=(ProbeLearning("T1", "streaming", "hidden fs.watch"),)), spike
    )
    text = report.render("x", mem, NOW)
    assert "| T4 | ratchet | baseline | spike (reverted) | timeout after 600 s |" in text
    assert "| T1: streaming | — | — | — | hidden fs.watch |" in text


def test_verify_marks() -> None:
    health = Health(
        verify=(VerifyResult("L1", "failed", detail="a|b"), VerifyResult("L4", "skipped"))
    )
    text = report.render("x", Memory(), NOW, health)
    assert "| Verify L1 | ✗ failed (a\\|b) |" in text
    assert "| Verify L4 | – skipped |" in text


# -- properties ----------------------------------------------------------------------

texts = st.text(st.characters(codec="utf-8"), max_size=30)
records = st.lists(
    st.builds(
        CycleRecord,
        cycle=st.just(0),
        task=st.sampled_from(["T1", "T2", "BOOTSTRAP", "T|3"]),
        title=texts,
        status=st.sampled_from(m.CYCLE_STATUSES),
        commit=st.none() | st.text("0123456789abcdef", min_size=7, max_size=7),
        reason=st.none() | texts,
        at=st.just(NOW),
        tests_passed=st.none() | st.integers(0, 50),
        tests_total=st.none() | st.integers(0, 50),
        build_ok=st.none() | st.booleans(),
        spike=st.booleans(),
        learning=st.none() | texts,
    ),
    max_size=20,
)


def _fold(recs: list[CycleRecord]) -> Memory:
    mem = Memory()
    for number, rec in enumerate(recs, start=1):
        mem = m.record_cycle(mem, rec._replace(cycle=number))
    return mem


def _section(text: str, title: str) -> list[str]:
    body = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in body.splitlines() if line.startswith("| ")][1:]


@given(records, texts)
def test_summary_counts_equal_the_rows(recs: list[CycleRecord], title: str) -> None:
    mem = _fold(recs)
    text = report.render(title, mem, NOW)
    rows = _section(text, "Cycle Log")
    assert len(rows) == len(recs)
    statuses = [re.split(r"(?<!\\)\|", row)[3].strip() for row in rows]
    assert f"| Total cycles run | {len(rows)} |" in text
    assert f"| Tasks committed | {statuses.count('passed')} |" in text
    assert f"| Tasks reverted | {statuses.count('failed')} |" in text
    assert len(_section(text, "Reverted Tasks")) == len(mem.revert_history)
    # Every table row is one line with the header's number of cells.
    for section, cells in [("Cycle Log", 6), ("Probe Results", 5), ("Reverted Tasks", 3)]:
        for row in _section(text, section):
            assert len(re.split(r"(?<!\\)\|", row)) == cells + 2, row
    assert report.render(title, mem, NOW) == text  # same input, same bytes


@pytest.mark.parametrize(
    ("raw", "cell"),
    [
        ("\x1b[31mFAILED\x1b[0m test_x", "FAILED test_x"),
        ("a\rb", "a<br>b"),
        ("a\fb\u2028c\x85d", "a<br>b<br>c<br>d"),
        ("tab\there\x07", "tab here"),
    ],
)
def test_control_characters_never_reach_the_report(raw: str, cell: str) -> None:
    assert report.cell(raw) == cell
