"""gtd.auto.report: the deepflow auto-report skeleton, rendered from records."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gtd.auto import memory as m
from gtd.auto import report
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord, Halt, Memory, ProbeLearning, Quarantine, Refresh
from gtd.auto.plan import parse
from gtd.auto.report import Health, VerifyResult

NOW = "2025-01-15T10:20:00Z"


def history() -> Memory:
    records = [
        CycleRecord(1, "BOOTSTRAP", "baseline tests", "passed", "boo1234", None,
                    "2025-01-15T10:00:00Z", 10, 10, True),
        CycleRecord(2, "T1", "streaming probe", "passed", "abc1234", None,
                    "2025-01-15T10:05:00Z", 12, 12, True, spike=True,
                    learning="fs.watch | inotify both work"),
        CycleRecord(3, "T2", "upload", "reverted", None, "tests failed: 2 of 24",
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

## State

**In progress** — no cycle in flight.

## Summary

| Metric | Value |
|--------|-------|
| Total cycles run | 4 |
| Cycles committed | 2 |
| Cycles reverted | 1 |
| Cycles skipped | 1 |
| Tasks committed | 1 |
| Tasks with reverts | 1 (T2): not done yet |
| Tokens | unknown: the harness reported none (docs/cost.md) |

## Run Chart

Cycles in order: a plain commit was committed, a crossed-out one reverted (its work is kept\
 under the ref the Reverted section names, not on the branch), a highlighted one is a person's\
 commit the snapshot was refreshed from, or a cycle the harness stopped (labelled paused: its\
 work is kept, not judged).

```mermaid
gitGraph
  commit id: "start"
  commit id: "1 BOOTSTRAP boo1234"
  commit id: "2 T1 abc1234"
  commit id: "3 T2 reverted" type: REVERSE
```

## Cycle Log

| Cycle | Task | Title | Status | Commit / Revert | Reason | Tests | Test time | Timestamp |
|-------|------|-------|--------|-----------------|--------|-------|-----------|-----------|
| 1 | BOOTSTRAP | baseline tests | passed | boo1234 | — | 10 / 10 passed | — |\
 2025-01-15T10:00:00Z |
| 2 | T1 | streaming probe | passed | abc1234 | — | 12 / 12 passed | — | 2025-01-15T10:05:00Z |
| 3 | T2 | upload | reverted | work kept at `refs/gtd/reverted/cycle-3` | tests failed: 2\
 of 24 | 22 / 24 passed | — | 2025-01-15T10:10:00Z |
| 4 | T1 | streaming probe | skipped | — | — | — | — | 2025-01-15T10:15:00Z |

## Probe Results

| Probe | Metric | Winner | Loser | Notes |
|-------|--------|--------|-------|-------|
| T1: streaming probe | ratchet (tests 12 / 12 passed) | spike (abc1234) | baseline | fs.watch\
 \\| inotify both work |

## Health Score

| Check | Status |
|-------|--------|
| Tests | 12 / 12 passed |
| Measured on | cycle 2 (T1, abc1234) |
| Build status | passing |
| Ratchet | green |
| Last cycle | cycle 3 (T2) reverted; the branch is as cycle 2 left it |
| Verify L0 (build) | ✓ passed |
| Verify L2 (coverage) | ⚠ warning (no coverage tool) |

## Reverted Tasks

| Task | Title | Cycle | Reason | Kept work |
|------|-------|-------|--------|-----------|
| T2 | upload | 3 | tests failed: 2 of 24 | `git show refs/gtd/reverted/cycle-3 --stat` |

A reverted cycle's whole working tree is kept under `refs/gtd/reverted/cycle-N`: `git show\
 refs/gtd/reverted/cycle-N --stat` lists what it changed, `git checkout\
 refs/gtd/reverted/cycle-N -- <path>` brings a file back.
"""

EMPTY = """\
# Auto Mode Report — upload-spec

_Last updated: 2025-01-15T10:20:00Z_

## State

**Ready** — no cycle has run yet.

## Summary

| Metric | Value |
|--------|-------|
| Total cycles run | 0 |
| Cycles committed | 0 |
| Cycles reverted | 0 |
| Tasks committed | 0 |
| Tasks with reverts | 0 |

## Cycle Log

| Cycle | Task | Title | Status | Commit / Revert | Reason | Tests | Test time | Timestamp |
|-------|------|-------|--------|-----------------|--------|-------|-----------|-----------|

## Probe Results

_(empty until a probe/spike task runs)_

| Probe | Metric | Winner | Loser | Notes |
|-------|--------|--------|-------|-------|

## Health Score

| Check | Status |
|-------|--------|
| Tests | — |
| Measured on | — |
| Build status | — |
| Ratchet | — |

## Reverted Tasks

_(tasks that were reverted with their failure reasons)_

| Task | Title | Cycle | Reason | Kept work |
|------|-------|-------|--------|-----------|
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


def test_escaping_keeps_every_row_one_line_with_nine_cells() -> None:
    nasty = "x | y\nz \\| w"
    rec = CycleRecord(1, "T|1", nasty, "reverted", None, nasty, "2025-01-15\nT10", 1, 2, False)
    text = report.render("title\nwith | pipe", m.record_cycle(Memory(), rec), NOW)
    assert text.splitlines()[0] == "# Auto Mode Report — title with | pipe"
    row = next(line for line in text.splitlines() if line.startswith("| 1 |"))
    assert len(re.split(r"(?<!\\)\|", row)) == 9 + 2  # nine cells between the outer pipes
    # The build status is the branch's: no cycle passed, so it is not known.
    assert "| Build status | — |" in text


def test_reverted_placeholder_goes_once_something_was_reverted() -> None:
    mem = m.record_cycle(
        Memory(),
        CycleRecord(1, "T2", "t", "reverted", None, "boom", NOW, None, None, None),
    )
    text = report.render("x", mem, NOW)
    assert report.REVERT_PLACEHOLDER not in text
    assert (
        "| Task | Title | Cycle | Reason | Kept work |\n"
        "|------|-------|-------|--------|-----------|\n"
        "| T2 | t | 1 | boom | `git show refs/gtd/reverted/cycle-1 --stat` |\n"
    ) in text
    assert report.PROBE_PLACEHOLDER in text
    # Unknown test counts and build status say so rather than guessing.
    assert "| Tests | — |" in text
    assert "| Build status | — |" in text


def test_failed_spike_and_legacy_learnings() -> None:
    spike = CycleRecord(5, "T4", "", "reverted", None, "timeout after 600 s", NOW, None, None, None,
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
        tests_failed=st.none() | st.integers(0, 50),
        tests_skipped=st.none() | st.integers(0, 50),
        duration_s=st.none() | st.floats(allow_nan=True, allow_infinity=True),
        kept=st.none() | texts,
        agent_exit=st.none() | st.integers(-300, 300),
        agent_tail=st.none() | st.text(st.characters(codec="utf-8"), max_size=200),
        flaky=st.lists(texts, max_size=3).map(tuple),
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
    statuses = [re.split(r"(?<!\\)\|", row)[4].strip() for row in rows]
    assert f"| Total cycles run | {len(rows)} |" in text
    assert f"| Cycles committed | {statuses.count('passed')} |" in text
    assert f"| Cycles reverted | {statuses.count('reverted')} |" in text
    # one row per word a cycle ends with (skipped and paused when there are any):
    # the rows add up to the total
    counted = 0
    labels = ("committed", "reverted", "skipped", "paused")
    for status, label in zip(m.CYCLE_STATUSES, labels, strict=True):
        got = re.search(rf"^\| Cycles {label} \| (\d+) \|$", text, re.MULTILINE)
        assert (got is None and status in ("skipped", "paused")) or got is not None
        shown = int(got.group(1)) if got else 0
        assert shown == statuses.count(status)
        counted += shown
    assert counted == len(rows)
    # Tasks are counted once however many cycles they took (a bootstrap is no task).
    plan_tasks = [r for r in recs if r.task != "BOOTSTRAP"]
    committed = {r.task for r in plan_tasks if r.status == "passed"}
    reverted = {r.task for r in plan_tasks if r.status == "reverted"}
    assert f"| Tasks committed | {len(committed)} |" in text
    found = re.search(
        rf"^\| Tasks with reverts \| {len(reverted)}( \(.*\): (.*))? +\|", text, re.MULTILINE
    )
    assert found is not None
    # what became of each reverted task is said: done later, or not (yet)
    fate = found.group(2) or ""
    still_open = reverted - committed
    if not reverted:
        assert found.group(1) is None
    elif not still_open:
        assert fate.endswith("later done"), fate
    elif still_open == reverted:
        assert fate.endswith("done yet"), fate
        assert "later" not in fate
    else:
        assert re.fullmatch(r".+ later done; .+ not done yet", fate), fate
    assert len(_section(text, "Reverted Tasks")) == len(mem.revert_history)
    # Every table row is one line with the header's number of cells.
    for section, cells in [
        ("Summary", 2),
        ("Cycle Log", 9),
        ("Probe Results", 5),
        ("Health Score", 2),
        ("Reverted Tasks", 5),
        ("Flaky Tests", 5),
    ]:
        for row in _section(text, section) if f"## {section}\n" in text else []:
            assert len(re.split(r"(?<!\\)\|", row)) == cells + 2, row
    # Headings are the report's own: nothing in a record starts a section.
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert all(h in KNOWN_HEADINGS or h.startswith("# Auto Mode Report") for h in headings)
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


KNOWN_HEADINGS = {
    "## State",
    "## Summary",
    "## Run Chart",
    "## Cycle Log",
    "## Probe Results",
    "## Health Score",
    "## Reverted Tasks",
    "## Learnings",
    "## Flaky Tests",
    "## Agent Output",
    "## Events",
    "## Look at These",
    "## Reviews",
}


# -- the state of the run, tasks and cycles, health ---------------------------------

PLAN_TEXT = """\
# Calculator

- [x] **T1**: Add mul ✓ (abc1234)
  - Files: calc.py
- [ ] **T2**: Add div
  - Files: calc.py
  - Blocked by: T1
- [ ] **T3**: Add pow
  - Files: calc.py
  - Blocked by: T2
"""


def cyc(number: int, task: str, status: str, **fields: object) -> CycleRecord:
    """A cycle record with the fields a test does not care about filled in."""
    base: dict[str, object] = {
        "title": {"T1": "Add mul", "T2": "Add div", "T3": "Add pow"}.get(task, ""),
        "commit": f"c{number:06d}" if status == "passed" else None,
        "reason": "tests failed: 1 of 5 (tests/test_calc.py::test_div)"
        if status == "reverted"
        else None,
        "at": f"2025-01-15T10:{number:02d}:00Z",
        "tests_passed": 4 if status == "reverted" else 5,
        "tests_total": 5,
        "build_ok": True,
        "tests_failed": 1 if status == "reverted" else 0,
        "tests_skipped": 0,
        "duration_s": 2.5,
    }
    base.update(fields)
    return CycleRecord(cycle=number, task=task, status=status, **base)  # type: ignore[arg-type]


def fold(*recs: CycleRecord) -> Memory:
    mem = Memory()
    for rec in recs:
        mem = m.record_cycle(mem, rec)
    return mem


def section(text: str, title: str) -> str:
    return text.split(f"## {title}\n\n", 1)[1].split("\n## ", 1)[0]


def tripped() -> Memory:
    mem = fold(cyc(1, "T1", "passed"), *(cyc(n, "T2", "reverted") for n in (2, 3, 4)))
    return m.record_halt(
        mem, Halt(4, "T2", 3, "tests failed: 1 of 5 (tests/test_calc.py::test_div)", NOW)
    )


def test_a_breaker_halt_says_where_and_the_exact_commands_that_resume() -> None:
    text = report.render("calc", tripped(), NOW, plan=parse(PLAN_TEXT))
    assert section(text, "State") == (
        "**Halted** at T2: Add div — Circuit breaker tripped: T2 failed 3 consecutive "
        "times. Reason: tests failed: 1 of 5 (tests/test_calc.py::test_div)\n"
        "\n"
        "To resume:\n"
        "\n"
        "1. See what the agent tried last: `git show refs/gtd/reverted/cycle-4 --stat` "
        "(every reverted cycle is listed under Reverted Tasks).\n"
        "2. Fix T2 by hand and commit, or rewrite or split the task in PLAN.md.\n"
        "3. Run `gtd cycle reset T2`.\n"
        "4. Start the loop again: `/gtd:auto` in Claude Code, or "
        '`gtd loop --agent "<your agent command>"`.\n'
        "\n"
        "Plan: 1 of 3 tasks done, 2 tasks remaining (T2, T3).\n"
    )
    # The state comes first, before any table.
    assert text.index("## State") < text.index("## Summary")


def test_the_halt_follows_the_threshold_as_begin_does() -> None:
    # With a higher threshold the same memory is not halted (begin would go on).
    text = report.render("calc", tripped(), NOW, plan=parse(PLAN_TEXT), threshold=5)
    assert section(text, "State").startswith(
        "**In progress** — no cycle in flight; the next task is T2: Add div."
    )


def test_a_forced_halt_and_a_broken_baseline() -> None:
    mem = m.record_halt(
        fold(cyc(1, "T2", "reverted", reason="helper state modified: .deepflow/cycle.json")),
        Halt(1, "T2", 0, "helper state modified: .deepflow/cycle.json", NOW, forced=True),
    )
    text = report.render("calc", mem, NOW, plan=parse(PLAN_TEXT), threshold=9)
    state = section(text, "State")
    assert state.startswith(
        "**Halted** at T2: Add div — Loop halted at T2: helper state modified: "
        ".deepflow/cycle.json\n"
    )
    assert "3. Run `gtd cycle reset T2`." in state
    assert "| Loop halted at T2: helper state modified: .deepflow/cycle.json |" in text

    refreshed = Refresh("abc1234", NOW, "snapshot refreshed after abc1234 by a person")
    reason = "the baseline after abc1234 is broken: no test passed"
    broken = m.record_halt(
        m.record_refresh(Memory(), refreshed), Halt(0, "baseline", 0, reason, NOW, forced=True)
    )
    text = report.render("calc", broken, NOW, plan=parse(PLAN_TEXT))
    state = section(text, "State")
    assert state.startswith(
        "**Halted** — Loop halted at baseline: the baseline after abc1234 is broken"
    )
    assert "1. Fix the test suite or its environment, and commit.\n2. Run `gtd cycle reset`." in (
        state
    )
    assert "| Ratchet | red (the baseline is broken; see State) |" in text


def test_running_names_the_cycle_in_flight_and_its_phase() -> None:
    journal = Journal(
        cycle=5, task="T2", title="Add div", kind="task", spike=False, base="abc",
        branch="auto", started_at="2025-01-15T11:00:00Z", started_epoch=0.0,
    )  # fmt: skip
    plan = parse(PLAN_TEXT)
    text = report.render("calc", tripped(), NOW, plan=plan, journal=journal, threshold=9)
    assert section(text, "State").startswith(
        "**Running** — cycle 5, T2: Add div: the agent is working on it "
        "(since 2025-01-15T11:00:00Z).\n"
    )
    checking = journal.evolve(phase="checking", pid=123)
    text = report.render("calc", Memory(), NOW, plan=plan, journal=checking)
    assert "the ratchet is checking its work" in section(text, "State")
    refresh = Journal(
        cycle=0, task="", title="snapshot refreshed after abc1234 by a person: taking a "
        "new baseline", kind="baseline", spike=False, base="abc", branch="auto",
        started_at=NOW, started_epoch=0.0, phase="checking",
    )  # fmt: skip
    text = report.render("calc", Memory(), NOW, plan=plan, journal=refresh)
    assert section(text, "State").startswith(
        "**Running** — snapshot refreshed after abc1234 by a person: taking a new baseline"
    )
    stuck = checking.evolve(blocked="git refused the commit: index.lock exists — remove it")
    state = section(report.render("calc", Memory(), NOW, plan=plan, journal=stuck), "State")
    assert state.startswith("**Halted** — cycle 5 (T2: Add div) could not finish: git refused")
    assert "2. Run `gtd cycle begin`: it finishes the cycle." in state


def test_complete_says_whether_it_was_verified() -> None:
    done = parse(PLAN_TEXT.replace("- [ ]", "- [x]"))
    mem = fold(cyc(1, "T1", "passed"), cyc(2, "T2", "passed"), cyc(3, "T3", "passed"))
    state = section(report.render("calc", mem, NOW, plan=done), "State")
    assert state == (
        "**Complete** — 3 tasks done, none remaining.\n\nNot verified yet: run `gtd verify`.\n"
    )
    good = Health(
        verify=(VerifyResult("L0", "skipped", "build"), VerifyResult("L4", "passed", "tests"))
    )
    state = section(report.render("calc", mem, NOW, good, plan=done), "State")
    assert (
        "Verified: `gtd verify` passed (L0 build skipped, L4 tests passed). The branch is "
        "ready for review; gtd never merges or pushes." in state
    )
    bad = Health(verify=(VerifyResult("L4", "failed", "tests", "1 failed"),))
    state = section(report.render("calc", mem, NOW, bad, plan=done), "State")
    assert "Verification failed (L4 tests): L4 tests failed. Fix it, then run `gtd verify`" in (
        state
    )


def test_blocked_ready_and_singular_plural() -> None:
    blocked = parse(PLAN_TEXT.replace("  - Blocked by: T1\n", "  - Blocked by: T3\n"))
    blocked = parse(
        "# P\n\n- [ ] **T2**: Add div\n  - Blocked by: T3\n"
        "- [x] **T1**: Add mul\n- [~] **T3**: Add pow\n"
    )
    state = section(report.render("calc", Memory(), NOW, plan=blocked), "State")
    assert state.startswith(
        "**Blocked** — every remaining task waits on a blocker that is not done: T2 by T3.\n"
    )
    assert state.endswith("Plan: 1 of 3 tasks done, 1 skipped, 1 task remaining (T2).\n")
    ready = section(report.render("calc", Memory(), NOW, plan=parse(PLAN_TEXT)), "State")
    assert ready.startswith("**Ready** — no cycle has run yet; the first task is T2: Add div.")
    one = parse("# P\n\n- [ ] **T1**: Only\n")
    state = section(report.render("calc", Memory(), NOW, plan=one), "State")
    assert "Plan: 0 of 1 task done, 1 task remaining (T1)." in state
    assert "1 tasks" not in report.render("calc", Memory(), NOW, plan=one)


def test_tasks_and_cycles_are_counted_apart() -> None:
    # Ten reverted cycles over four tasks, two of which later passed.
    recs = [
        *(cyc(n, "T2", "reverted") for n in range(1, 5)),
        cyc(5, "T2", "passed"),
        *(cyc(n, "T3", "reverted") for n in range(6, 9)),
        cyc(9, "T3", "passed"),
        cyc(10, "T4", "reverted"),
        cyc(11, "T5", "reverted"),
        cyc(12, "T5", "reverted"),
        cyc(13, "BOOTSTRAP", "reverted"),
    ]
    text = report.render("x", fold(*recs), NOW)
    summary = section(text, "Summary")
    assert "| Total cycles run | 13 |" in summary
    assert "| Cycles committed | 2 |" in summary
    assert "| Cycles reverted | 11 |" in summary
    assert "| Tasks committed | 2 |" in summary
    assert (
        "| Tasks with reverts | 4 (T2 ×4, T3 ×3, T4, T5 ×2): "
        "T2, T3 later done; T4, T5 not done yet |"
    ) in summary
    assert "| Test time | 32.5 s in 13 runs |" in summary
    with_plan = report.render("x", fold(*recs), NOW, plan=parse(PLAN_TEXT))
    assert "| Tasks remaining | 2 of 3 |" in with_plan


def test_health_describes_the_branch_after_a_revert() -> None:
    mem = fold(
        cyc(1, "T1", "passed", tests_passed=5063, tests_total=5344, tests_failed=0,
            tests_skipped=250, commit="abc1234"),
        cyc(2, "T2", "reverted", tests_passed=5, tests_total=6, tests_failed=1, build_ok=False),
    )  # fmt: skip
    health = section(report.render("x", mem, NOW), "Health Score")
    # 281 not passed = 0 failed + 250 skipped + 31 xfailed/xpassed: nothing reads as failing.
    assert "| Tests | 5063 passed, 0 failed, 281 skipped/xfail |" in health
    assert "| Measured on | cycle 1 (T1, abc1234) |" in health
    assert "| Build status | passing |" in health
    assert "| Ratchet | green |" in health
    assert "| Last cycle | cycle 2 (T2) reverted; the branch is as cycle 1 left it |" in health
    assert "| Ratchet | red" not in health
    only_reverts = section(report.render("x", fold(cyc(1, "T2", "reverted")), NOW), "Health Score")
    assert "| Tests | — |" in only_reverts
    assert "| Last cycle | cycle 1 (T2) reverted; the branch is as it was at setup |" in (
        only_reverts
    )


def test_reverted_rows_say_where_the_work_is_and_carry_the_title() -> None:
    text = report.render("x", tripped(), NOW)
    log = section(text, "Cycle Log")
    assert (
        "| 3 | T2 | Add div | reverted | work kept at `refs/gtd/reverted/cycle-3` | "
        "tests failed: 1 of 5 (tests/test_calc.py::test_div) | 4 passed, 1 failed, "
        "0 skipped/xfail | 2.5 s | 2025-01-15T10:03:00Z |"
    ) in log
    assert "| 1 | T1 | Add mul | passed | c000001 | — | 5 passed, 0 failed, 0 skipped/xfail |" in (
        log
    )
    reverted = section(text, "Reverted Tasks")
    assert (
        "| T2 | Add div | 4 | tests failed: 1 of 5 (tests/test_calc.py::test_div) | "
        "`git show refs/gtd/reverted/cycle-4 --stat` |"
    ) in reverted
    assert "`git checkout refs/gtd/reverted/cycle-N -- <path>` brings a file back" in reverted
    # A title missing from the record comes from the plan.
    untitled = fold(cyc(1, "T3", "reverted", title=""))
    row = section(report.render("x", untitled, NOW, plan=parse(PLAN_TEXT)), "Cycle Log")
    assert "| 1 | T3 | Add pow | reverted |" in row


def test_long_reasons_and_test_ids_are_cut_in_the_report() -> None:
    huge = "tests failed: 1 of 5 (tests/test_x.py::test_" + "p" * 3000 + ")"
    flaky = "tests/test_y.py::test_" + "q" * 3000
    mem = fold(cyc(1, "T2", "reverted", reason=huge, flaky=(flaky,)))
    mem = m.quarantine(mem, Quarantine(flaky, 1, NOW, "failed, then passed on 2 of 2 re-runs"))
    text = report.render("x", mem, NOW)
    assert max(len(line) for line in text.splitlines()) < 800
    assert "tests failed: 1 of 5 (tests/test_x.py::test_ppp" in text
    assert "…" in section(text, "Cycle Log")


def test_flaky_tests_are_shown_with_their_evidence() -> None:
    mem = fold(
        cyc(1, "T1", "passed", flaky=("tests/test_net.py::test_ping",)),
        cyc(2, "T2", "reverted", flaky=("tests/test_net.py::test_ping", "tests/test_io.py::t")),
    )
    mem = m.quarantine(
        mem, Quarantine("tests/test_net.py::test_ping", 1, NOW, "failed, then passed 2 of 2")
    )
    mem = m.quarantine(mem, Quarantine("tests/test_db.py::t", 0, NOW, "by hand", by="person"))
    text = report.render("x", mem, NOW)
    flaky = section(text, "Flaky Tests")
    assert flaky.startswith("A quarantined test still runs and is reported, but its failure")
    assert "| tests/test_db.py::t | quarantined | baseline (a person) | — | by hand |" in flaky
    assert (
        "| tests/test_net.py::test_ping | quarantined | cycle 1 (a re-run) | 1, 2 | "
        "failed, then passed 2 of 2 |"
    ) in flaky
    assert (
        "| tests/test_io.py::t | not quarantined | cycle 2 | 2 | failed, then passed when "
        "run again |"
    ) in flaky
    assert "flaky, tolerated: tests/test_net.py::test_ping" in section(text, "Cycle Log")
    assert "## Flaky Tests" not in report.render("x", fold(cyc(1, "T1", "passed")), NOW)


def test_a_failed_agent_is_shown_with_its_status_tail_and_log() -> None:
    tail = 'Traceback (most recent call last):\n  File "agent.py"\n```\n## not a heading\noops'
    mem = fold(
        cyc(1, "T1", "passed", agent_exit=0),
        cyc(2, "T2", "reverted", reason="no changes: the agent changed nothing",
            agent_exit=3, agent_tail=tail),
    )  # fmt: skip
    text = report.render("x", mem, NOW)
    assert section(text, "Agent Output") == (
        "- Cycle 2 (T2: Add div): the agent exited 3; full log "
        "`.deepflow/agent-logs/cycle-2.log`.\n"
        "\n"
        "      Traceback (most recent call last):\n"
        '        File "agent.py"\n'
        "      ```\n"
        "      ## not a heading\n"
        "      oops\n"
    )
    assert "no changes: the agent changed nothing; agent exited 3 (see Agent Output)" in text
    assert "## Agent Output" not in report.render("x", fold(cyc(1, "T1", "passed")), NOW)


def test_events_list_trips_halts_and_a_persons_commit() -> None:
    mem = m.record_refresh(
        tripped(),
        Refresh("abc1234", "2025-01-15T10:01:30Z", "snapshot refreshed after abc1234 by a person"),
    )
    events = section(report.render("x", mem, NOW), "Events")
    assert events.splitlines()[2:] == [
        "| 2025-01-15T10:01:30Z | snapshot refreshed after abc1234 by a person: its commit "
        "is the new baseline |",
        "| 2025-01-15T10:20:00Z | Circuit breaker tripped: T2 failed 3 consecutive times. "
        "Reason: tests failed: 1 of 5 (tests/test_calc.py::test_div) (after cycle 4) |",
    ]
    health = section(report.render("x", mem, NOW), "Health Score")
    assert "the snapshot was refreshed since, after abc1234 by a person" in health


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (0.04, "0.0 s"),
        (4.25, "4.2 s"),
        (59.9, "59.9 s"),
        (125, "2 min 05 s"),
        (3725, "1 h 02 min"),
        (float("nan"), "—"),
        (-1, "—"),
    ],
)
def test_durations(seconds: float | None, text: str) -> None:
    assert report.duration(seconds) == text


# -- one vocabulary, a title that names the work, learnings, tolerated failures -------


def test_the_report_says_reverted_where_the_answer_does() -> None:
    text = report.render("x", tripped(), NOW)
    statuses = {re.split(r"(?<!\\)\|", row)[4].strip() for row in _section(text, "Cycle Log")}
    assert statuses == {"passed", "reverted"}
    assert "| failed |" not in text


def test_a_cycle_that_kept_nothing_says_so() -> None:
    nothing = "no changes: the implementer left the tree as it was"
    mem = fold(cyc(1, "T2", "reverted", reason=nothing, kept=""))
    text = report.render("x", mem, NOW)
    assert "| 1 | T2 |" in text
    row = next(r for r in _section(text, "Cycle Log") if r.startswith("| 1 |"))
    assert "| reverted | nothing to keep | no changes: the implementer left the tree" in row
    assert "refs/gtd/reverted/cycle-1" not in text
    assert f"| T2 | Add div | 1 | {nothing} | nothing to keep |" in section(text, "Reverted Tasks")


@pytest.mark.parametrize(
    ("heading", "spec", "shown"),
    [
        ("Plan", None, "calc"),
        ("  plan  ", "specs/upload.md", "specs/upload.md"),
        ("TODO", "Tasks", "calc"),
        ("Upload service", None, "Upload service"),
        (None, None, "calc"),
    ],
)
def test_the_title_names_the_work_not_a_generic_heading(
    heading: str | None, spec: str | None, shown: str
) -> None:
    from gtd.auto.report_notes import title

    assert title(heading, spec, "calc") == shown
    text = report.render(title(heading, spec, "calc"), Memory(), NOW)
    assert text.splitlines()[0] == f"# Auto Mode Report — {shown}"


def test_learnings_are_shown_with_their_cycle() -> None:
    mem = fold(
        cyc(1, "T1", "passed", learning="the parser wants\nbytes, not str"),
        cyc(2, "T2", "reverted", learning="div by zero: raise, do not return inf"),
        cyc(3, "T2", "passed"),
    )
    text = report.render("x", mem, NOW, plan=parse(PLAN_TEXT))
    assert section(text, "Learnings").strip().splitlines() == [
        "- Cycle 1 (T1: Add mul, passed): the parser wants bytes, not str",
        "- Cycle 2 (T2: Add div, reverted): div by zero: raise, do not return inf",
    ]
    assert "## Learnings" not in report.render("x", fold(cyc(1, "T1", "passed")), NOW)


def test_tests_failing_at_the_baseline_are_named_and_said_tolerated() -> None:
    failing = [f"tests/test_old.py::test_{n}" for n in range(5)]
    text = report.render("x", Memory(), NOW, failing=(7, failing))
    state = section(text, "State")
    assert (
        "7 tests already failed at the baseline and are tolerated (no cycle is reverted for "
        "them while they keep failing): tests/test_old.py::test_0, tests/test_old.py::test_1, "
        "tests/test_old.py::test_2, tests/test_old.py::test_3, tests/test_old.py::test_4 "
        "and 2 more."
    ) in state
    one = section(report.render("x", Memory(), NOW, failing=(1, failing[:1])), "State")
    assert (
        "1 test already failed at the baseline and is tolerated (no cycle is reverted for it "
        "while it keeps failing): tests/test_old.py::test_0."
    ) in one
    assert "tolerated" not in report.render("x", Memory(), NOW)


def test_a_loop_on_the_main_line_is_said_in_the_state_and_only_then() -> None:
    text = report.render("calc", Memory(), NOW, plan=parse(PLAN_TEXT), main_line="main")
    assert section(text, "State").endswith(
        "\n\nBranch: the loop commits on `main`, the main line; `git switch -c gtd-auto` "
        "while no cycle is in flight puts the next cycles on a branch of their own.\n"
    )
    elsewhere = report.render("calc", Memory(), NOW, plan=parse(PLAN_TEXT))
    assert "Branch:" not in elsewhere
    assert "main line" not in elsewhere
