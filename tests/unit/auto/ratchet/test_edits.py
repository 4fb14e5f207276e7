"""The reason a person reads when a protected test file was edited: which test,
which line (gtd.auto.ratchet.edits)."""

from __future__ import annotations

import pytest

from gtd.auto.ratchet.edits import describe, first_changed_line

BEFORE = b"""\
import pytest

from app import api


class TestApi:
    def test_get(self):
        assert api.get(1) == {"id": 1}

    @pytest.mark.parametrize("n", [1, 2])
    def test_list(self, n):
        assert len(api.list(n)) == n


def test_health():
    assert api.health() == "ok"
"""


@pytest.mark.parametrize(
    ("after", "reason"),
    [
        pytest.param(
            BEFORE.replace(b'== {"id": 1}', b"is not None"),
            "a protected test was changed: tests/test_api.py::TestApi::test_get (line 8)",
            id="assertion-weakened",
        ),
        pytest.param(
            BEFORE.replace(
                b"    @pytest.mark.parametrize",
                b"    @pytest.mark.skip\n    @pytest.mark.parametrize",
            ),
            "a protected test was changed: tests/test_api.py::TestApi::test_list (line 10)",
            id="skip-marker-added-above-a-decorator",
        ),
        pytest.param(
            BEFORE.split(b"\n\ndef test_health")[0] + b"\n",
            "a protected test was deleted: tests/test_api.py::test_health",
            id="test-deleted",
        ),
        pytest.param(
            BEFORE.replace(
                b'    def test_get(self):\n        assert api.get(1) == {"id": 1}\n\n', b""
            ).split(b"\n\ndef test_health")[0]
            + b"\n",
            "a protected test was deleted: tests/test_api.py::TestApi::test_get (and 1 more)",
            id="two-tests-deleted",
        ),
        pytest.param(
            BEFORE.replace(b"def test_health", b"def check_health"),
            "a protected test was deleted: tests/test_api.py::test_health",
            id="renamed-out-of-collection",
        ),
        pytest.param(
            BEFORE.replace(b"from app import api", b"from app import api as api"),
            "a protected test was changed: tests/test_api.py (line 3)",
            id="module-level-line",
        ),
        pytest.param(
            b"import os\n"
            + BEFORE.replace(b"def test_health", b"@pytest.mark.skipif(os.sep)\ndef test_health"),
            # the import is the first change, the test it weakens is what to look at
            "a protected test was changed: tests/test_api.py::test_health (line 15)",
            id="import-then-a-test",
        ),
        pytest.param(
            BEFORE.replace(b"\n", b"\r\n"),
            "a protected test was changed: tests/test_api.py (its line endings or encoding)",
            id="line-endings",
        ),
        pytest.param(
            BEFORE + b"def broken(:\n",
            "a protected test was changed: tests/test_api.py (lines added after its last, line 16)",
            id="new-text-does-not-parse",
        ),
    ],
)
def test_the_reason_names_the_test_and_the_line(after: bytes, reason: str) -> None:
    assert describe("tests/test_api.py", BEFORE, after) == reason


def test_a_file_that_is_not_python_is_named_by_its_line() -> None:
    old = b"[case]\nexpect = 1\n"
    assert describe("tests/cases.toml", old, b"[case]\nexpect = 2\n") == (
        "a protected test was changed: tests/cases.toml (line 2)"
    )


def test_an_old_text_that_does_not_parse_is_named_by_its_line() -> None:
    old = b"def test_x(:\n    pass\n"
    assert describe("tests/test_x.py", old, b"def test_x(:\n    return\n") == (
        "a protected test was changed: tests/test_x.py (line 2)"
    )


def test_a_huge_file_is_named_without_a_diff() -> None:
    big = b"x = 1\n" * 300_000
    assert describe("tests/test_big.py", big, big + b"y = 2\n") == (
        "a protected test was changed: tests/test_big.py"
    )


def test_first_changed_line() -> None:
    assert first_changed_line("a\nb\nc\n", "a\nb\nc\n") is None
    assert first_changed_line("a\nb\nc\n", "a\nB\nc\n") == 2
    assert first_changed_line("a\nb\n", "a\nb\nc\n") == 2  # appended: the last old line
    assert first_changed_line("", "a\n") == 1
