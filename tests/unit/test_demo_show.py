"""The demo prints the parts of the report a terminal shows well."""

from gtd.demo.show import report_head

REPORT = """\
# Auto Mode Report — Cart

_Last updated: 2026-01-01T00:00:00Z_

## State

**Complete** — no cycle in flight.

## Summary

| Metric | Value |

## Run Chart

```mermaid
gitGraph
```

## Cycle Log

| Cycle | Task |
| 1 | T1 |

## Probe Results

none
"""


def test_the_demo_shows_title_state_summary_and_cycle_log_but_not_the_chart() -> None:
    shown = report_head(REPORT)
    assert shown[0] == "# Auto Mode Report — Cart"
    assert [line for line in shown if line.startswith("## ")] == [
        "## State",
        "## Summary",
        "## Cycle Log",
    ]
    assert "| 1 | T1 |" in shown
    assert not any("mermaid" in line or line == "none" for line in shown)
