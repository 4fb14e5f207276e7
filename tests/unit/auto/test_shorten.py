"""Cutting reasons to a readable length (gtd.auto.shorten)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gtd.auto.shorten import REASON_MAX, WORD_MAX, shorten, shorten_word


def test_short_text_is_unchanged() -> None:
    text = "tests failed: 1 of 3 (tests/test_calc.py::test_add)"
    assert shorten(text) == text


def test_a_long_test_id_keeps_its_front_and_its_end() -> None:
    test_id = "tests/test_long.py::test_long[" + "x" * 3000 + "-end]"
    cut = shorten_word(test_id)
    assert len(cut) == WORD_MAX
    assert cut.startswith("tests/test_long.py::test_long[xxx")
    assert cut.endswith("x-end]")
    assert "…" in cut


def test_a_reason_with_a_long_id_still_names_the_others() -> None:
    long_id = "tests/test_a.py::test_a[" + "y" * 3000 + "]"
    text = f"tests failed: 2 of 9 ({long_id}, tests/test_b.py::test_b)"
    shown = shorten(text)
    assert len(shown) <= REASON_MAX
    assert shown.endswith("tests/test_b.py::test_b)")
    assert shown.startswith("tests failed: 2 of 9 (tests/test_a.py::test_a[yyy")


def test_a_long_text_is_cut_at_a_word() -> None:
    text = " ".join(["word"] * 200)
    shown = shorten(text, 50)
    assert len(shown) <= 50
    assert shown.endswith("word…")


@given(st.text(), st.integers(min_value=2, max_value=400))
def test_never_longer_than_the_limit_when_it_cuts(text: str, limit: int) -> None:
    shown = shorten(text, limit)
    assert shown == text or len(shown) <= limit
