"""Counts in the answers a person reads, in words: one change is a change, two
are changes, never `change(s)` (gtd.auto.cycle.answers)."""

from __future__ import annotations

from gtd.auto.cycle.answers import dirty


def test_a_dirty_tree_counts_its_changes_in_the_singular_and_the_plural() -> None:
    assert dirty(["a.py"])["message"] == "1 uncommitted change not made by a cycle, untouched"
    assert dirty(["a.py", "b.py"])["message"] == (
        "2 uncommitted changes not made by a cycle, untouched"
    )
