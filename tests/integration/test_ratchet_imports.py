"""What a protected module's own import statements bound, checked by the plugin
against what they import: a stand-in handed to a test module while it imports
is evidence; the import forms a real suite uses are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.auto.ratchet.results import Report
from tests.conftest import Repo
from tests.integration.plugin_runs import PYTEST, clean_env, in_room, run


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env(monkeypatch)


GUARDED = ("tests/__init__.py", "tests/helpers.py", "tests/test_imports.py")

HELPERS = """\
LIMIT = 3


def check(ok):
    assert ok, "not ok"
"""

# Every import form a protected test module may use: a star import (which may
# bind any name), plain and dotted imports with and without `as`, relative
# imports of a sibling and of its names, an optional import with a fallback
# (bound twice), a name a lazy module serves from its `__getattr__`, and a module
# that puts another object in its place in sys.modules while it imports.
TEST_IMPORTS = """\
from __future__ import annotations

from collections import *

import os.path
import os.path as osp
import json
import xml.etree.ElementTree as ET
from . import helpers
from .helpers import check as verify, LIMIT
try:
    from not_a_module_anywhere import nothing
except ImportError:
    nothing = None
from lazy_lib import lazy_name
from swapping_lib import thing
import pkg


def test_limit():
    verify(LIMIT == 3)
    verify(osp is os.path and helpers.LIMIT == 3)


def test_add():
    verify(pkg.add(2, 2) == 4)
"""

LAZY_LIB = """\
def __getattr__(name):
    if name == "lazy_name":
        return object()  # a new one each time
    raise AttributeError(name)
"""

SWAPPING_LIB = """\
import sys
import types

thing = object()
_replacement = types.ModuleType(__name__)
_replacement.thing = thing
sys.modules[__name__] = _replacement
"""

PACKAGE = """\
def add(a, b):
    return a + b
"""

# The code under test, broken, hands the protected test module stand-ins while it
# imports: a lenient `check` for the relative `from .helpers import check as
# verify`, and a module of its own for both imports of os.path; its hook on
# builtins.__import__ is taken off again at once.
BROKEN_WITH_STAND_INS = """\
import builtins
import os
import types


def add(a, b):
    return a - b


def _lenient(*args, **kwargs):
    return None


_plain = builtins.__import__


def _hook(name, globals=None, locals=None, fromlist=(), level=0):
    module = _plain(name, globals, locals, fromlist, level)
    if "test_imports" not in str((globals or {}).get("__file__")):
        return module
    if name == "helpers" and level == 1:
        return types.SimpleNamespace(check=_lenient, LIMIT=module.LIMIT)
    if name == "os.path" and fromlist is None:
        return types.SimpleNamespace(path=types.SimpleNamespace(), sep=os.sep)
    if name == "pkg":
        builtins.__import__ = _plain
    return module


builtins.__import__ = _hook
"""


def _project(repo: Repo, package: str) -> None:
    repo.write("pytest.ini", "[pytest]\ntestpaths = tests\n")
    repo.write("tests/__init__.py", "")
    repo.write("tests/helpers.py", HELPERS)
    repo.write("tests/test_imports.py", TEST_IMPORTS)
    repo.write("tests/conftest.py", "import pkg  # the code under test, imported first\n")
    repo.write("lazy_lib.py", LAZY_LIB)
    repo.write("swapping_lib.py", SWAPPING_LIB)
    repo.write("pkg/__init__.py", package)


def _run(root: Path) -> Report:
    return run(root, PYTEST, in_room(root, (*GUARDED, "tests/conftest.py")))


def _stand_ins(report: Report) -> dict[str, str]:
    return {e.subject: e.detail for e in report.evidence if e.kind == "stand-in"}


def test_the_import_forms_of_a_real_suite_leave_no_evidence(repo: Repo) -> None:
    _project(repo, PACKAGE)
    report = _run(repo.path)
    assert report.outcomes == {
        "tests/test_imports.py::test_limit": "passed",
        "tests/test_imports.py::test_add": "passed",
    }
    assert report.evidence == ()


def test_stand_ins_handed_to_a_test_module_while_it_imports_are_evidence(repo: Repo) -> None:
    _project(repo, BROKEN_WITH_STAND_INS)
    report = _run(repo.path)
    # The attack worked: the broken add passes, through the lenient check...
    assert report.outcomes is not None
    assert set(report.outcomes.values()) == {"passed"}
    # ...and each stand-in is named, by the name it was bound to.
    found = _stand_ins(report)
    assert set(found) == {
        "tests.test_imports.verify",
        "tests.test_imports.osp",
        "tests.test_imports.os",
    }
    assert found["tests.test_imports.verify"].endswith(", not tests.helpers.check")
    assert found["tests.test_imports.osp"].endswith(", not the module os.path")
    assert found["tests.test_imports.os"].endswith(", not the module os")
