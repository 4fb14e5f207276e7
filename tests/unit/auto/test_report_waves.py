"""The report's waves (gtd.auto.report_waves), read as a person reads the report:
the Cycle Log's Wave column and the Summary's Waves part."""

from __future__ import annotations

import re

from gtd.auto import report, report_waves, wave_journal
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord, Memory
from tests.unit.auto.test_report import fold, section

NOW = "2025-01-15T12:00:00Z"


def cyc(number: int, task: str, status: str, **fields: object) -> CycleRecord:
    base: dict[str, object] = {
        "title": f"Task {task}",
        "commit": f"c{number:06d}" if status == "passed" else None,
        "reason": {"reverted": "tests failed: 1 of 5 (tests/test_calc.py::test_div)"}.get(status),
        "at": f"2025-01-15T10:{number:02d}:00Z",
        "tests_passed": 5,
        "tests_total": 5,
        "build_ok": True,
        "duration_s": 2.5,
    }
    base.update(fields)
    return CycleRecord(cycle=number, task=task, status=status, **base)  # type: ignore[arg-type]


def cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]


def rows(text: str) -> list[dict[str, str]]:
    """A markdown table's rows as header → cell (an escaped pipe stays in its cell)."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    return [dict(zip(cells(lines[0]), cells(line), strict=True)) for line in lines[2:]]


def waves_part(text: str) -> str:
    return section(text, "Summary").split("### Waves\n\n", 1)[1]


QUEUED = "its change conflicts with T1 landed before it (calc.py); back to the queue"


def night() -> Memory:
    """Wave 1: T1 and T2 land; wave 2: T3 lands, T4 goes back to the queue, T5 is
    reverted; then T4 alone."""
    return fold(
        cyc(1, "T1", "passed", wave=1, wave_s=24.0, turn_s=4.0),
        cyc(2, "T2", "passed", wave=1, wave_s=28.5, turn_s=4.5),
        cyc(3, "T3", "passed", wave=2, wave_s=30.0, turn_s=5.0),
        cyc(4, "T4", "skipped", wave=2, reason=QUEUED, tests_passed=None, tests_total=None),
        cyc(5, "T5", "reverted", wave=2, wave_s=36.0, turn_s=6.0),
        cyc(6, "T4", "passed"),
    )


def test_the_cycle_log_names_each_cycle_s_wave() -> None:
    text = report.render("waves", night(), NOW)
    log = rows(section(text, "Cycle Log"))
    assert [(r["Cycle"], r["Wave"], r["Task"], r["Status"]) for r in log] == [
        ("1", "1", "T1", "passed"),
        ("2", "1", "T2", "passed"),
        ("3", "2", "T3", "passed"),
        ("4", "2", "T4", "skipped"),
        ("5", "2", "T5", "reverted"),
        ("6", "—", "T4", "passed"),
    ]
    # the column sits right after the cycle's number; the rest are as before
    header = section(text, "Cycle Log").splitlines()[0]
    assert header.startswith("| Cycle | Wave | Task | Title | Status |")


def test_the_summary_says_which_tasks_ran_together_and_what_it_saved() -> None:
    part = rows(waves_part(report.render("waves", night(), NOW)))
    # Wave 1: T2 waited for T1's 4 s turn: 28.5 - 4 = 24.5 s its own; one by one
    # 24 + 24.5 = 48.5 s against 28.5 s of wall time.
    assert part[0] == {
        "Wave": "1",
        "Ran together": "T1: passed, 24.0 s; T2: passed, 24.5 s",
        "Wall time": "28.5 s",
        "One by one": "48.5 s",
        "Saved": "20.0 s (41%)",
    }
    # Wave 2: T4 was never judged (no time); T5's own: 36 - 5 (T3's turn) = 31 s.
    assert part[1] == {
        "Wave": "2",
        "Ran together": "T3: passed, 30.0 s; T4: skipped (queued); T5: reverted, 31.0 s",
        "Wall time": "36.0 s",
        "One by one": "1 min 01 s",
        "Saved": "25.0 s (41%)",
    }
    assert len(part) == 2  # T4's later cycle ran alone: no wave


def test_a_night_with_no_wave_has_no_wave_parts() -> None:
    mem = fold(cyc(1, "T1", "passed"), cyc(2, "T2", "reverted"))
    text = report.render("serial", mem, NOW)
    assert "Wave" not in text
    assert rows(section(text, "Cycle Log"))[0]["Cycle"] == "1"
    assert report_waves.summary(list(mem.cycles)) == []


def test_a_wave_no_task_of_which_was_judged_shows_no_times() -> None:
    mem = fold(
        cyc(1, "T1", "skipped", wave=1, reason=QUEUED),
        cyc(2, "T2", "skipped", wave=1, reason="the branch main moved under the wave"),
    )
    (part,) = rows(waves_part(report.render("queued", mem, NOW)))
    assert part["Ran together"] == "T1: skipped (queued); T2: skipped"
    assert (part["Wall time"], part["One by one"], part["Saved"]) == ("—", "—", "—")


def test_nothing_saved_is_said_as_nothing() -> None:
    # A task paused by the harness at once: one by one is no longer than the wall.
    mem = fold(
        cyc(1, "T1", "passed", wave=1, wave_s=20.0, turn_s=20.0),
        cyc(2, "T2", "paused", wave=1, wave_s=20.0, until=NOW, reason="usage limit"),
    )
    (part,) = rows(waves_part(report.render("paused", mem, NOW)))
    assert part["Ran together"] == "T1: passed, 20.0 s; T2: paused, 0.0 s"
    assert (part["Wall time"], part["One by one"], part["Saved"]) == ("20.0 s", "20.0 s", "—")


def test_task_ids_cannot_break_the_waves_table() -> None:
    mem = fold(
        cyc(1, "T|1", "passed", wave=1, wave_s=5.0, turn_s=1.0),
        cyc(2, "T\n2", "passed", wave=1, wave_s=6.0, turn_s=1.0),
    )
    (part,) = rows(waves_part(report.render("odd", mem, NOW)))
    assert part["Ran together"] == r"T\|1: passed, 5.0 s; T<br>2: passed, 5.0 s"
    assert part["Wall time"] == "6.0 s"


def test_a_wave_task_s_times_survive_the_seal() -> None:
    from gtd.auto import records

    rec = cyc(3, "T3", "passed", wave=2, wave_s=30.125, turn_s=5.5)
    line = records.encode(rec)
    assert '"wave_s": 30.125' in line
    assert records.decode(line) == [rec]
    # a cycle run alone seals no such key: its record is as before
    assert "wave" not in records.encode(cyc(4, "T4", "passed"))


def flying(**phases: str) -> wave_journal.Wave:
    """Wave 2 in flight: T3 (cycle 3) and T4 (cycle 4), ready, in these phases."""
    tasks = tuple(
        wave_journal.WaveTask(task, f"Task {task}", n, False, f"/w/{task}", f"/b/{task}", phase)  # type: ignore[arg-type]
        for n, (task, phase) in enumerate(phases.items(), 3)
    )
    return wave_journal.Wave(2, "abc", "main", "2025-01-15T10:02:30Z", 0.0, tasks, ready=True)


def test_the_state_says_what_each_task_of_a_wave_in_flight_is_doing() -> None:
    mem = fold(cyc(1, "T1", "passed"), cyc(2, "T2", "passed"))
    text = report.render("waves", mem, NOW, wave=flying(T3="agent", T4="agent"))
    assert section(text, "State").startswith(
        "**Running** — wave 2 (since 2025-01-15T10:02:30Z): T3: Task T3, being implemented; "
        "T4: Task T4, being implemented.\n"
    )
    judging = Journal(3, "T3", "Task T3", "task", False, "abc", "main", NOW, 0.0, "checking")
    text = report.render("waves", mem, NOW, journal=judging, wave=flying(T3="ending", T4="agent"))
    assert section(text, "State").startswith(
        "**Running** — wave 2 (since 2025-01-15T10:02:30Z): T3: Task T3, the ratchet is "
        "checking its work; T4: Task T4, being implemented.\n"
    )


def test_a_wave_in_flight_names_its_tasks_not_recorded_yet() -> None:
    mem = fold(
        cyc(1, "T1", "passed"),
        cyc(3, "T3", "passed", wave=2, wave_s=30.0, turn_s=5.0),
    )
    text = report.render("waves", mem, NOW, wave=flying(T3="landed", T4="ending"))
    (part,) = rows(waves_part(text))
    assert part == {
        "Wave": "2",
        "Ran together": "T3: passed, 30.0 s; T4: in flight",
        "Wall time": "30.0 s so far",
        "One by one": "30.0 s so far",
        "Saved": "—",  # not said before the wave is over
    }
    # before any record: the wave is named, with no time yet
    text = report.render("waves", fold(cyc(1, "T1", "passed")), NOW, wave=flying(T3="agent"))
    (part,) = rows(waves_part(text))
    assert (part["Ran together"], part["Wall time"]) == ("T3: in flight", "—")


def test_a_wave_cut_short_as_it_began_is_not_in_flight() -> None:
    cut = flying(T3="agent")._replace(ready=False)
    text = report.render("waves", fold(cyc(1, "T1", "passed")), NOW, wave=cut)
    assert "Wave" not in text
    assert section(text, "State").startswith("**In progress**")


def test_the_report_reads_the_wave_journal_the_engine_seals() -> None:
    from gtd.auto import rendering
    from gtd.auto.cycle import waves

    assert rendering.WAVE_FILE == waves.WAVE


def test_the_docs_example_is_in_the_form_the_code_renders() -> None:
    """docs/report.md's night of waves was rendered by the code
    (scripts/wave_report_example.py): its table has the code's columns, each
    row the code's form, and its chart only lines the chart draws."""
    from pathlib import Path

    docs = (Path(__file__).parents[3] / "docs/report.md").read_text()
    part = docs.split("\n## Waves\n", 1)[1].split("\n## ", 1)[0]
    blocks = part.split("```text\n")[1:]
    table, log, chart = (block.split("```", 1)[0] for block in blocks)
    rendered = report_waves.summary([cyc(1, "T1", "passed", wave=1, wave_s=2.0, turn_s=1.0)])
    assert table.splitlines()[:2] == rendered[-3:-1]  # the header and its rule
    task = r"T\d: passed, \d+\.\d s"
    for line in table.splitlines()[2:]:
        assert re.fullmatch(
            rf"\| \d \| {task}(; {task})* \| \d+\.\d s \| \d+\.\d s \| \d+\.\d s \(\d+%\) \|", line
        ), line
    assert log.startswith("| Cycle | Wave | Task |")
    from tests.unit.auto.test_chart import _LINE, _WAVE_LINE

    lines = chart.rstrip("\n").splitlines()
    assert lines[0] == "gitGraph"
    assert all(_LINE.fullmatch(x) or _WAVE_LINE.fullmatch(x) for x in lines[1:]), lines
