"""What the snapshot's tests lean on outside the test folders: the modules they
import that assert, the data files they open — and a new file that would shadow
a protected module."""

from __future__ import annotations

from gtd.auto.cycle.diff_reading import shadowing
from gtd.auto.ratchet import leaned

TEST = b"""
import json, pathlib, os
from pkg.testing import assert_money
import pkg.util as util
from pkg import flags

def test_it():
    data = json.loads((pathlib.Path(__file__).parent / "golden" / "totals.json").read_text())
    assert_money(1, data)
    with open(os.path.join("fixtures", "input.csv")) as f:
        assert f.read()
    assert "README.md"  # a string no opener is handed
"""
PATHS = [
    "pkg/__init__.py",
    "pkg/testing.py",
    "pkg/util.py",
    "pkg/flags.py",
    "pkg/money.py",
    "golden/totals.json",
    "fixtures/input.csv",
    "README.md",
    "other/totals.txt",
]


def test_imports_and_opened_files_are_found() -> None:
    found = leaned.leaned_on({"tests/test_money.py": TEST}, PATHS)
    assert found == {
        "pkg/__init__.py": "a module the tests import",
        "pkg/testing.py": "a module the tests import",
        "pkg/util.py": "a module the tests import",
        "pkg/flags.py": "a module the tests import",
        "golden/totals.json": "a file the tests open",
        "fixtures/input.csv": "a file the tests open",
    }
    assert leaned.leaned_on({"t.py": b"def f(:"}, PATHS) == {}


def test_only_modules_that_assert_are_held() -> None:
    assert leaned.asserts(b"def check(a, b):\n    assert a == b\n")
    assert leaned.asserts(b"def check(a, b):\n    if a != b:\n        raise AssertionError(a)\n")
    assert leaned.asserts(b"import pytest\nX = pytest.approx(1.0)\n")
    assert leaned.asserts(b"class T:\n    def check(self):\n        self.assertEqual(1, 1)\n")
    assert not leaned.asserts(b"TOL = 0.001\n")
    assert not leaned.asserts(b"def total(p):\n    return sum(p)\n")
    assert not leaned.asserts(b"def broken(:\n")


def test_a_new_module_that_would_shadow_a_protected_one() -> None:
    protected = {"pkg/testing.py", "tests/test_money.py", "golden/totals.json"}
    for added in (
        "pkg/testing/__init__.py",
        "pkg/testing.cpython-311-x86_64-linux-gnu.so",
        "src/pkg/testing.py",
    ):
        why = shadowing([added], protected)
        assert why is not None
        assert why.startswith(f"a new module would shadow a protected one: {added} ")
        assert "pkg/testing.py" in why
    assert shadowing(["pkg/testing_more.py", "pkg/other/__init__.py"], protected) is None
    assert shadowing([], protected) is None
