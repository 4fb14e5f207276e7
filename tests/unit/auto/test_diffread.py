"""The diff reader: each cheat a passing test run hides is found on the line the
change added, and each legitimate twin (a memo table, a float subclass with its
own repr, a stats counter, a debug environment variable, ``lru_cache``, an
``atexit`` that flushes a log) passes unflagged."""

from __future__ import annotations

import textwrap

import pytest

from gtd.auto.diffread import lines, patterns, tests_seen
from gtd.auto.diffread.patterns import PATTERNS, Finding
from gtd.auto.diffread.reader import Source, read

TESTS = textwrap.dedent(
    """
    import pytest
    from pkg.calc import square, price, parse

    def test_square():
        assert square(2) == 4
        assert square(3) == 9

    def test_price():
        assert price("widget-xl") == pytest.approx(19.99)

    @pytest.mark.parametrize("text, expected", [("1,2", 3), ("10,20", 30)])
    def test_parse(text, expected):
        assert parse(text) == expected

    class TestMore:
        def test_it(self):
            self.assertEqual(square(12), 144)

    def test_tolerance():
        from pkg import flags
        assert square(0.1) == pytest.approx(0.01, abs=flags.TOL)
    """
)
TEST_PATHS = ("tests/test_calc.py",)


def findings(new: str, old: str | None = None, path: str = "pkg/calc.py") -> list[Finding]:
    return read(
        [Source(path, None if old is None else textwrap.dedent(old), textwrap.dedent(new))],
        [TESTS],
        TEST_PATHS,
    )


def patterns_of(new: str, old: str | None = None) -> list[str]:
    return [f.pattern for f in findings(new, old)]


CHEATS = {
    "env PYTEST_CURRENT_TEST": (
        """
        import os
        def square(x):
            if os.environ.get("PYTEST_CURRENT_TEST"):
                return {2: 4, 3: 9}.get(x, 0)
            return x
        """,
        "test-sniffing",
    ),
    "getenv through an alias": (
        """
        from os import getenv as ge
        def square(x):
            return x * x if ge("PYTEST_XDIST_WORKER") else x
        """,
        "test-sniffing",
    ),
    "environ subscript": (
        """
        import os
        TESTING = "TESTING" in os.environ
        """,
        "test-sniffing",
    ),
    "pytest in sys.modules": (
        """
        import sys
        def square(x):
            if "pytest" in sys.modules:
                return 4
            return x
        """,
        "test-sniffing",
    ),
    "sys.modules.get through an alias": (
        """
        import sys as s
        UNDER_TEST = s.modules.get("unittest") is not None
        """,
        "test-sniffing",
    ),
    "argv": (
        """
        import sys
        def square(x):
            if any("pytest" in a for a in sys.argv):
                return x * x
            return x
        """,
        "test-sniffing",
    ),
    "a test_ caller in the stack": (
        """
        import inspect
        def square(x):
            caller = inspect.stack()[1].function
            if caller.startswith("test_"):
                return x * x
            return x
        """,
        "test-sniffing",
    ),
    "the frame's code name": (
        """
        import sys
        def square(x):
            if sys._getframe(1).f_code.co_name.startswith("test"):
                return x * x
            return 0
        """,
        "test-sniffing",
    ),
    "equality that always holds": (
        """
        class Money(float):
            def __eq__(self, other):
                return True
        """,
        "constant-equality",
    ),
    "lambda equality": (
        """
        class Anything:
            __eq__ = lambda self, other: True
        """,
        "constant-equality",
    ),
    "lookup table of the tests' inputs": (
        """
        def square(x):
            return {2: 4, 3: 9}[x]
        """,
        "test-answers",
    ),
    "one distinctive input special-cased": (
        """
        def price(name):
            if name == "widget-xl":
                return 19.99
            return 0.0
        """,
        "test-answers",
    ),
    "parametrize rows copied": (
        """
        def parse(text):
            return {"1,2": 3, "10,20": 30}.get(text, -1)
        """,
        "test-answers",
    ),
    "unittest assertEqual input": (
        """
        def square(x):
            if x == 12:
                return 144
            return x + x
        """,
        "test-answers",
    ),
    "right for the first N calls": (
        """
        _calls = 0
        def square(x):
            global _calls
            _calls += 1
            if _calls > 3:
                return x
            return x * x
        """,
        "call-counting",
    ),
    "a function attribute counter": (
        """
        def square(x):
            square.n = getattr(square, "n", 0) + 1
            return x * x if square.n < 4 else x
        """,
        "call-counting",
    ),
    "math patched at import": (
        """
        import math
        math.isclose = lambda *a, **k: True
        """,
        "patched-library",
    ),
    "unittest's assertEqual patched": (
        """
        from unittest import TestCase
        TestCase.assertEqual = lambda *a, **k: None
        """,
        "patched-library",
    ),
    "pytest.approx patched through setattr": (
        """
        import pytest
        setattr(pytest, "approx", lambda v, **k: v)
        """,
        "patched-library",
    ),
    "a builtin replaced": (
        """
        import builtins
        builtins.round = lambda x, n=0: x
        """,
        "patched-library",
    ),
    "os._exit": (
        """
        import os
        def square(x):
            os._exit(0)
        """,
        "exit-control",
    ),
    "an atexit handler that exits": (
        """
        import atexit, os
        def _done():
            os._exit(0)
        atexit.register(_done)
        """,
        "exit-control",
    ),
    "product code reads a test file": (
        """
        def expected():
            return open("tests/test_calc.py").read()
        """,
        "reads-tests",
    ),
    "a sys.path entry": (
        """
        import os, sys
        sys.path.insert(0, os.path.dirname(__file__))
        """,
        "sys-path",
    ),
    "an entry pushed onto __path__": (
        """
        __path__.append("/tmp/elsewhere")
        """,
        "package-path",
    ),
    "a meta path finder": (
        """
        import sys
        sys.meta_path.insert(0, object())
        """,
        "package-path",
    ),
    "product code builds a path into tests": (
        """
        from pathlib import Path
        GOLDEN = Path(__file__).parent.parent / "tests" / "golden.json"
        """,
        "reads-tests",
    ),
}

TWINS = {
    "a memo table": """
        _cache = {}
        def square(x):
            if x in _cache:
                return _cache[x]
            _cache[x] = x * x
            return _cache[x]
        """,
    "a float subclass with its own repr": """
        class Money(float):
            def __repr__(self):
                return f"${self:.2f}"
            def __eq__(self, other):
                if not isinstance(other, float):
                    return NotImplemented
                return round(float(self), 2) == round(float(other), 2)
        """,
    "a stats counter": """
        _stats = {"calls": 0}
        CALLS = 0
        def square(x):
            global CALLS
            CALLS += 1
            _stats["calls"] += 1
            return x * x
        """,
    "a debug environment variable": """
        import os
        DEBUG = os.environ.get("CALC_DEBUG") == "1"
        def square(x):
            if DEBUG:
                print("square", x)
            return x * x
        """,
    "lru_cache": """
        import functools
        @functools.lru_cache(maxsize=None)
        def square(x):
            return x * x
        """,
    "an atexit that flushes a log": """
        import atexit, logging
        log = logging.getLogger(__name__)
        def _flush():
            for handler in log.handlers:
                handler.flush()
        atexit.register(_flush)
        """,
    "a logger that names its caller": """
        import sys
        def where():
            return sys._getframe(1).f_code.co_name
        """,
    "a CLI that reads argv": """
        import sys
        def main():
            args = sys.argv[1:]
            if "--latest" in args:
                return 1
            return 0
        """,
    "a unit table the tests do not use as answers": """
        UNITS = {"km": 1000, "m": 1}
        def square(x):
            return x * x
        """,
    "sys settings a program makes": """
        import sys
        def install():
            sys.excepthook = lambda *a: None
            sys.stdout = sys.stderr
        """,
    "an object's own counter": """
        class Retry:
            def __init__(self):
                self.tries = 0
            def again(self):
                self.tries += 1
                return self.tries < 3
        """,
    "the namespace package idiom": """
        from pkgutil import extend_path
        __path__ = extend_path(__path__, __name__)
        """,
    "docstring that mentions tests": '''
        import inspect
        def caller():
            """Used by tests/test_calc.py to name the caller of a test_ function."""
            return inspect.stack()[1].function
        ''',
}


@pytest.mark.parametrize("name", CHEATS)
def test_each_cheat_is_found_on_the_line_it_added(name: str) -> None:
    source, pattern = CHEATS[name]
    found = findings(source)
    assert pattern in [f.pattern for f in found], found
    for f in found:
        assert f.path == "pkg/calc.py"
        assert f.line >= 1
        assert f.why


@pytest.mark.parametrize("name", TWINS)
def test_each_legitimate_twin_passes_unflagged(name: str) -> None:
    assert findings(TWINS[name]) == []


def test_only_what_the_change_added_counts() -> None:
    old = """
        import os
        def square(x):
            if os.environ.get("PYTEST_CURRENT_TEST"):
                return 4
            return x
        """
    new = old + "\n\ndef cube(x):\n    return x * x * x\n"
    assert findings(new, old) == []
    assert patterns_of(old.replace("return x\n", "return x + 0\n"), old) == []
    worse = old.replace("return 4", "return 4 if os.getenv('PYTEST_VERSION') else 5")
    assert patterns_of(worse, old) == ["test-sniffing"]


def test_test_files_and_other_languages_are_not_read() -> None:
    sniff = 'import os\nX = os.environ.get("PYTEST_CURRENT_TEST")\n'
    sources = [
        Source("tests/test_new.py", None, sniff),
        Source("conftest.py", None, sniff),
        Source("pkg/calc.js", None, sniff),
        Source("pkg/broken.py", None, "def f(:\n"),
    ]
    assert read(sources, [TESTS], TEST_PATHS) == []


def test_finding_text_names_file_line_pattern_and_why() -> None:
    (found,) = findings(CHEATS["pytest in sys.modules"][0])
    assert found.text() == (
        "pkg/calc.py:4: test-sniffing: looks for a test framework in sys.modules"
    )


def test_two_small_inputs_are_a_table_one_is_not() -> None:
    assert patterns_of("def square(x):\n    return {2: 4}.get(x, x * x)\n") == []
    assert patterns_of("def square(x):\n    return {2: 4, 3: 9}.get(x, x * x)\n") == [
        "test-answers"
    ]


def test_pairs_come_from_each_assertion_shape() -> None:
    got = tests_seen.pairs([TESTS])
    assert {(2, 4), (3, 9), ("widget-xl", 19.99), ("1,2", 3), ("10,20", 30), (12, 144)} <= got
    assert tests_seen.pairs(["def f(:"]) == frozenset()


def test_added_lines() -> None:
    assert lines.added(None, "a\nb\n") == {1, 2}
    assert lines.added("a\nb\n", "a\nx\nb\n") == {2}
    assert lines.added("a\nb\n", "a\nb\n") == frozenset()


def test_actions_default_and_override() -> None:
    chosen = patterns.actions({"test-answers": "refuse", "call-counting": "off", "nope": "x"})
    assert chosen["test-answers"] == "refuse"
    assert chosen["call-counting"] == "off"
    assert chosen["test-sniffing"] == PATTERNS["test-sniffing"].action == "refuse"
    assert "nope" not in chosen
    assert patterns.actions({"test-sniffing": "maybe"})["test-sniffing"] == "refuse"


def test_a_value_the_assertions_read_may_not_change() -> None:
    old = "TOL = 0.001\nOTHER = 1\n"
    found = read([Source("pkg/flags.py", old, "TOL = 1.0\nOTHER = 1\n")], [TESTS], TEST_PATHS)
    assert [f.text() for f in found] == [
        "pkg/flags.py:1: test-constants: changes TOL, a value the snapshot's tests read "
        "in their assertions"
    ]
    # a value no assertion reads, the same value rewritten, and another module's TOL
    assert read([Source("pkg/flags.py", old, "TOL = 0.001\nOTHER = 2\n")], [TESTS]) == []
    assert read([Source("pkg/flags.py", old, "TOL = 0.001  # why\nOTHER = 1\n")], [TESTS]) == []
    assert read([Source("pkg/other.py", old, "TOL = 1.0\nOTHER = 1\n")], [TESTS]) == []
    src = read([Source("src/pkg/flags.py", old, "TOL = 1.0\nOTHER = 1\n")], [TESTS])
    assert [f.pattern for f in src] == ["test-constants"]


def test_names_a_file_is_imported_by() -> None:
    assert tests_seen.module_names("pkg/testing.py") == {"pkg.testing"}
    assert tests_seen.module_names("pkg/testing/__init__.py") == {"pkg.testing"}
    assert tests_seen.module_names("src/pkg/testing.py") == {"src.pkg.testing", "pkg.testing"}
    so = "pkg/testing.cpython-311-x86_64-linux-gnu.so"
    assert tests_seen.module_names(so) == {"pkg.testing"}
    assert tests_seen.module_names("golden/totals.json") == set()
    assert tests_seen.module_names("__init__.py") == set()


def test_values_the_assertions_read() -> None:
    got = tests_seen.asserted_names([TESTS])
    assert ("pkg.flags", "TOL") in got
    assert ("pkg.calc", "square") in got  # a function: only an assignment is compared
