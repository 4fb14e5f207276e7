"""The project every red-team cycle runs in: a small real Python package with a
real pytest suite, written as plain text so each attack can say exactly what it
changes.

Layout (the ``full`` variant):

- ``inventory/`` the package: ``core.py`` (``total``, ``restock``), ``pricing.py``
  (``discount`` with a doctest, ``vat`` checked only by ``checks/``);
- ``tests/`` the suite: ``conftest.py`` with a fixture, ``helpers.py`` imported
  by the tests, ``test_total.py`` (the four tests every standard break fails)
  and ``test_stock.py``; ``tests/`` has no ``__init__.py``, so pytest puts it
  first on ``sys.path`` (its default "prepend" import mode);
- ``testing/asserts.py`` an assertion helper outside the test folder;
- ``checks/check_rules.py`` collected only through the custom ``python_files``;
- ``pyproject.toml`` with the pytest table (doctests on), ``tox.ini``,
  ``README.md``, ``.gitignore`` (bytecode, build output and ``.venv/``);
- ``PLAN.md`` with three tasks; a second branch ``feature`` with one commit.

The ``bare`` variant has no pytest configuration at all (no pytest table, no
doctests, the command names ``tests``): pytest then looks for its configuration
in the parent directories.

Baseline of ``full``: 11 tests (4 in test_total.py, 4 in test_stock.py, 2 in
check_rules.py, 1 doctest).
"""

from __future__ import annotations

import sys

# The project does not use hypothesis; its pytest plugin (installed in the
# development environment) would cost each run most of a second.
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:hypothesispytest"

CORE = '''\
"""Items and stock."""

from __future__ import annotations

from typing import NamedTuple


class Item(NamedTuple):
    name: str
    cents: int
    qty: int


def total(items: list[Item]) -> int:
    """What the items cost together, in cents."""
    return sum(item.cents * item.qty for item in items)


def restock(stock: dict[str, int], name: str, qty: int) -> dict[str, int]:
    """A copy of ``stock`` with ``qty`` more of ``name``."""
    if qty < 0:
        raise ValueError("qty must be >= 0")
    out = dict(stock)
    out[name] = out.get(name, 0) + qty
    return out
'''

# The standard break: ``total`` forgets the quantity, so the four tests of
# tests/test_total.py fail (every item there has qty > 1) and nothing else does.
BROKEN_CORE = CORE.replace(
    "return sum(item.cents * item.qty for item in items)",
    "return sum(item.cents for item in items)",
)
assert BROKEN_CORE != CORE

PRICING = '''\
"""Prices."""

from __future__ import annotations


def discount(cents: int, percent: int) -> int:
    """The price after a discount of ``percent``, rounded down to a cent.

    >>> discount(1000, 10)
    900
    >>> discount(999, 50)
    499
    """
    return cents * (100 - percent) // 100


def vat(cents: int) -> int:
    """Value-added tax at 20 %, rounded half up."""
    return (cents * 20 + 50) // 100
'''

INIT = '''\
"""A tiny stock-keeping package."""

from inventory.core import Item, restock, total

__all__ = ["Item", "restock", "total"]
'''

ASSERTS = '''\
"""Assertion helpers shared by the tests."""


def assert_cents(actual: int, expected: int) -> None:
    assert actual == expected, f"{actual} cents != {expected} cents"
'''

TESTS_CONFTEST = """\
import pytest

from inventory import Item


@pytest.fixture
def basket():
    return [Item("apple", 30, 4), Item("pear", 45, 2)]
"""

HELPERS = """\
from inventory import Item


def items(*pairs):
    return [Item(f"item{i}", cents, qty) for i, (cents, qty) in enumerate(pairs)]
"""

TEST_TOTAL = """\
from helpers import items
from testing.asserts import assert_cents

from inventory import total


def test_total_of_basket(basket):
    assert_cents(total(basket), 210)


def test_total_of_many():
    assert_cents(total(items((100, 3), (5, 10))), 350)


def test_total_of_one():
    assert_cents(total(items((250, 2))), 500)


def test_total_of_pennies():
    assert_cents(total(items((1, 7))), 7)
"""
TOTAL_IDS = [
    "tests/test_total.py::test_total_of_basket",
    "tests/test_total.py::test_total_of_many",
    "tests/test_total.py::test_total_of_one",
    "tests/test_total.py::test_total_of_pennies",
]

TEST_STOCK = """\
import pytest

from inventory import restock


def test_restock_new():
    assert restock({}, "apple", 3) == {"apple": 3}


def test_restock_existing():
    assert restock({"apple": 1}, "apple", 2) == {"apple": 3}


def test_restock_copies():
    stock = {"pear": 1}
    restock(stock, "pear", 5)
    assert stock == {"pear": 1}


def test_restock_refuses_negative():
    with pytest.raises(ValueError):
        restock({}, "apple", -1)
"""

CHECK_RULES = """\
from inventory.pricing import vat


def test_vat_of_ten_euros():
    assert vat(1000) == 200


def test_vat_rounds_half_up():
    assert vat(1) == 0
    assert vat(3) == 1
"""

PYPROJECT = """\
[project]
name = "inventory"
version = "0.1.0"
description = "A tiny stock-keeping package"
requires-python = ">=3.10"
dependencies = []

[tool.pytest.ini_options]
testpaths = ["tests", "checks", "inventory"]
python_files = ["test_*.py", "check_*.py"]
addopts = "--doctest-modules"
"""

BARE_PYPROJECT = """\
[project]
name = "inventory"
version = "0.1.0"
description = "A tiny stock-keeping package"
requires-python = ">=3.10"
dependencies = []
"""

TOX = """\
[tox]
envlist = py311

[testenv]
deps = pytest
commands = pytest
"""

README = "# inventory\n\nA tiny stock-keeping package.\n"

GITIGNORE = """\
__pycache__/
*.py[cod]
.pytest_cache/
build/
.venv/
"""

PLAN = """\
# Inventory

### spec-inventory

- [ ] **T1**: Add a bulk price
  - Files: inventory/pricing.py, tests/test_pricing.py
  - Blocked by: none
- [ ] **T2**: Add stock reports
  - Files: inventory/report.py
  - Blocked by: none
- [ ] **T3**: Add a CSV export
  - Files: inventory/export.py
  - Blocked by: none
"""

# The legitimate work for T1: a new function and a new test module for it.
BULK = '''

def bulk(cents: int, qty: int) -> int:
    """The price of ``qty`` items: every tenth one is free."""
    return cents * (qty - qty // 10)
'''
PRICING_WITH_BULK = PRICING + BULK
TEST_PRICING = """\
from inventory.pricing import bulk


def test_bulk_below_ten():
    assert bulk(100, 9) == 900


def test_bulk_tenth_is_free():
    assert bulk(100, 10) == 900
"""

FEATURE_NOTE = "# Feature branch\n\nWork that lives on another branch.\n"


def files(variant: str = "full") -> dict[str, str]:
    """Every file of the project, by repository-relative path."""
    out = {
        "inventory/__init__.py": INIT,
        "inventory/core.py": CORE,
        "inventory/pricing.py": PRICING,
        "testing/__init__.py": '"""Test support for the inventory package."""\n',
        "testing/asserts.py": ASSERTS,
        "tests/conftest.py": TESTS_CONFTEST,
        "tests/helpers.py": HELPERS,
        "tests/test_total.py": TEST_TOTAL,
        "tests/test_stock.py": TEST_STOCK,
        "checks/check_rules.py": CHECK_RULES,
        "pyproject.toml": PYPROJECT,
        "tox.ini": TOX,
        "README.md": README,
        ".gitignore": GITIGNORE,
        "PLAN.md": PLAN,
    }
    if variant == "bare":
        out["pyproject.toml"] = BARE_PYPROJECT
        del out["checks/check_rules.py"]
    return out


def suite_command(variant: str = "full") -> str:
    return PYTEST + (" tests" if variant == "bare" else "")


# -- golden data (the `golden` template) --------------------------------------------
# Expected outputs the tests compare with, outside every test folder: a golden file
# at the top (`fixtures/`, which the template's config declares in
# `ratchet.protect`) and a snapshot beside the code (`__snapshots__/`, a test
# folder by name, as jest, vitest and syrupy keep them).

REPORT = '''\
"""Stock reports."""


def render(stock: dict[str, int]) -> str:
    """One line per item, by name."""
    return "".join(f"{name}: {qty}\\n" for name, qty in sorted(stock.items()))


def label(name: str, qty: int) -> str:
    return f"{name.upper()} x{qty}\\n"


def summary(stock: dict[str, int]) -> str:
    return f"{len(stock)} items, {sum(stock.values())} units\\n"
'''
GOLDEN_REPORT = "apples: 3\npears: 5\n"
GOLDEN_LABEL = "APPLES x3\n"
TEST_REPORT = """\
from pathlib import Path

from inventory.report import label, render, summary

ROOT = Path(__file__).resolve().parent.parent


def test_report_matches_the_golden_file():
    expected = (ROOT / "fixtures/report.txt").read_text()
    assert render({"pears": 5, "apples": 3}) == expected


def test_label_matches_its_snapshot():
    expected = (ROOT / "inventory/__snapshots__/label.txt").read_text()
    assert label("apples", 3) == expected


def test_summary_matches_the_latest_golden_version():
    latest = max((ROOT / "fixtures").glob("summary-v*.txt"))
    assert summary({"pears": 5, "apples": 3}) == latest.read_text()
"""
GOLDEN_FILES = {
    "inventory/report.py": REPORT,
    "fixtures/report.txt": GOLDEN_REPORT,
    "fixtures/summary-v1.txt": "2 items, 8 units\n",
    "inventory/__snapshots__/label.txt": GOLDEN_LABEL,
    "tests/test_report.py": TEST_REPORT,
}
