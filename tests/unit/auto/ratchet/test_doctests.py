"""Doctest digests: one per docstring with examples, named as pytest names the
item; code edits around a doctest change nothing, an edited example is caught."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gtd.auto.ratchet.doctests import (
    UNPARSABLE,
    changes,
    doctest_digests,
    has_examples,
    module_name,
)

SOURCE = textwrap.dedent(
    '''\
    """The module.

    >>> 1 + 1
    2
    """
    import sys

    __test__ = {"extra": """
    >>> sum([1, 2])
    3
    """, "plain": "no examples here"}


    def add(a, b):
        """Add.

        >>> add(2, 3)
        5
        """
        return a + b


    def no_example():
        """Just prose, with a >>> inside a line."""


    def outer():
        def inner():
            """>>> inner()  # nested functions are not collected"""


    class Calc:
        """A calculator.

        >>> Calc().value
        0
        """

        value = 0

        def mul(self, a, b):
            """>>> Calc().mul(2, 3)
            6
            """
            return a * b

        @property
        def double(self):
            """>>> Calc().double
            0
            """
            return self.value * 2

        @staticmethod
        def zero():
            """
                >>> Calc.zero()
                0
            """
            return 0

        class Inner:
            def deep(self):
                """>>> 3
                3
                """


    if sys.version_info >= (3, 8):
        def modern():
            """>>> modern()"""
    else:
        def modern():
            """>>> 'old'"""

    try:
        import json
    except ImportError:  # pragma: no cover
        pass
    else:
        async def fetch():
            """>>> 1
            1
            """
    '''
)


def test_names_follow_pytest_doctest_items() -> None:
    got = doctest_digests(SOURCE.encode(), "pkg.mod")
    assert sorted(got) == [
        "pkg.mod",
        "pkg.mod.Calc",
        "pkg.mod.Calc.Inner.deep",
        "pkg.mod.Calc.double",
        "pkg.mod.Calc.mul",
        "pkg.mod.Calc.zero",
        "pkg.mod.__test__.extra",
        "pkg.mod.add",
        "pkg.mod.fetch",
        "pkg.mod.modern",
    ]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param("return a + b\n", "return a - b\n", id="body"),
        pytest.param("import sys\n", "import sys\nimport os\n", id="imports"),
        pytest.param("    value = 0\n", "    value = 1  # changed\n", id="class-attr"),
        pytest.param("def no_example():", "def no_example(x=1):", id="signature"),
        pytest.param('"""Just prose', '"""Just other prose', id="docstring-without-examples"),
        pytest.param('"""Add.\n', '"""Add two numbers, reworded.\n', id="prose-line"),
        pytest.param('"""The module.\n', '"""The module.\n\nMore prose.\n', id="prose-added"),
        pytest.param('"""A calculator.\n', '"""A calculator.\n    Its prose.\n', id="prose-class"),
        pytest.param(
            '"""\n            >>> Calc.zero()\n            0\n',
            '"""Zero.\n\n        >>> Calc.zero()\n        0\n',
            id="re-indented",
        ),
    ],
)
def test_code_edits_around_doctests_change_nothing(old: str, new: str) -> None:
    assert old in SOURCE
    before = doctest_digests(SOURCE.encode(), "m")
    assert doctest_digests(SOURCE.replace(old, new, 1).encode(), "m") == before


@pytest.mark.parametrize(
    ("old", "new", "name"),
    [
        pytest.param(">>> add(2, 3)\n    5", ">>> add(2, 3)\n    -1", "m.add"),
        pytest.param("mul(2, 3)\n        6", "mul(2, 3)\n        -6", "m.Calc.mul"),
        pytest.param(">>> 1 + 1\n2", ">>> 1 + 1\n3", "m"),
        pytest.param(">>> sum([1, 2])\n3", ">>> sum([1, 2])\n4", "m.__test__.extra"),
        pytest.param(">>> modern()", ">>> modern()  # doctest: +SKIP", "m.modern"),
        pytest.param(">>> 'old'", ">>> 'new'", "m.modern"),  # either definition counts
        pytest.param(">>> add(2, 3)\n", ">>> add(2, 3)  # doctest: +ELLIPSIS\n", "m.add"),
        pytest.param(
            ">>> add(2, 3)\n", ">>> add(2, 3) # doctest: +NORMALIZE_WHITESPACE\n", "m.add"
        ),
        pytest.param(">>> add(2, 3)\n    5\n", ">>> add(2, 3)\n    5 \n", "m.add"),  # a space
        pytest.param(
            '>>> add(2, 3)\n    5\n    """',
            '>>> add(2, 3)\n    5\n    Prose right under it.\n    """',
            "m.add",
        ),
        pytest.param(">>> add(2, 3)\n    5\n", ">>> add(2, 3)\n    5\n    >>> 1\n    1\n", "m.add"),
    ],
)
def test_an_edited_example_changes_its_digest_only(old: str, new: str, name: str) -> None:
    assert old in SOURCE
    before = doctest_digests(SOURCE.encode(), "m")
    after = doctest_digests(SOURCE.replace(old, new, 1).encode(), "m")
    assert {k for k in before if before[k] != after.get(k)} == {name}
    assert changes("src/m.py", before, after) == [
        f"a protected test was changed: src/m.py::{name} (doctest)"
    ]


def test_removing_the_examples_deletes_the_doctest() -> None:
    before = doctest_digests(SOURCE.encode(), "m")
    after = doctest_digests(SOURCE.replace("    >>> add(2, 3)\n    5\n", "").encode(), "m")
    assert changes("m.py", before, after) == [
        "a protected test was deleted or renamed: m.py::m.add (doctest)"
    ]


def test_new_doctests_are_not_violations() -> None:
    before = doctest_digests(b"def f():\n    pass\n", "m")
    after = doctest_digests(b'def f():\n    """>>> f()"""\n', "m")
    assert before == {}
    assert changes("m.py", before, after) == []


def test_unparsable_source() -> None:
    before = doctest_digests(SOURCE.encode(), "m")
    broken = doctest_digests(b"def f(:\n", "m")
    assert list(broken) == [UNPARSABLE]
    assert changes("m.py", before, broken) == [
        "a protected test was changed: m.py (unparsable) (doctest)"
    ]
    assert list(doctest_digests(b"x = 1\0\n", "m")) == [UNPARSABLE]


def test_crlf_source_digests_alike() -> None:
    lf = doctest_digests(SOURCE.encode(), "m")
    assert doctest_digests(SOURCE.replace("\n", "\r\n").encode(), "m") == lf


def test_encoding_cookie_is_honoured() -> None:
    latin = '# -*- coding: latin-1 -*-\ndef f():\n    """>>> "é"\n    \'é\'\n    """\n'
    assert doctest_digests(latin.encode("latin-1"), "m") == doctest_digests(
        latin.replace("latin-1", "utf-8").encode("utf-8"), "m"
    )


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (">>> 1", True),
        ("text\n    >>> 1\n    1", True),
        ("text\n\t>>> 1", True),  # tabs expand to spaces, as doctest does
        ("a >>> b", False),
        ("no examples", False),
    ],
)
def test_has_examples(doc: str, expected: bool) -> None:
    assert has_examples(doc) is expected


@pytest.mark.parametrize(
    ("path", "packages", "name"),
    [
        ("mod.py", set(), "mod"),
        ("src/pkg/mod.py", {"src/pkg"}, "pkg.mod"),
        ("src/pkg/sub/mod.py", {"src/pkg", "src/pkg/sub"}, "pkg.sub.mod"),
        ("src/pkg/__init__.py", {"src/pkg"}, "pkg"),
        ("scripts/tool.py", set(), "tool"),
    ],
)
def test_module_name(path: str, packages: set[str], name: str) -> None:
    assert module_name(path, packages) == name


# Statements that can go between top-level definitions without touching a docstring.
STATEMENTS = st.lists(
    st.one_of(
        st.integers().map(lambda n: f"x = {n}\n"),
        st.sampled_from(["import os\n", "pass\n", "# comment\n", "def helper():\n    return 1\n"]),
        st.text(alphabet="abc xyz", max_size=10).map(lambda t: f"y = {t!r}\n"),
    ),
    max_size=4,
)


@settings(deadline=None)  # a loaded machine must not fail it
@given(STATEMENTS, STATEMENTS)
def test_any_code_between_definitions_changes_nothing(top: list[str], middle: list[str]) -> None:
    base = 'def f():\n    """>>> f()"""\n\n\ndef g():\n    """>>> g()\n    1\n    """\n'
    edited = "".join(top) + base.replace("\n\n\ndef g", "\n" + "".join(middle) + "\n\ndef g")
    assert doctest_digests(edited.encode(), "m") == doctest_digests(base.encode(), "m")


def _wants(source: str) -> list[str]:
    """The expected outputs doctest itself reads from the docstring of ``g``."""
    import ast
    import doctest

    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    text = ast.get_docstring(node, clean=False) or ""
    return [e.want for e in doctest.DocTestParser().get_examples(text)]


@settings(deadline=None)  # a loaded machine must not fail it
@given(st.text(alphabet="abc 123\n", min_size=1, max_size=20))
def test_any_change_to_an_expected_output_is_caught(output: str) -> None:
    base = 'def g():\n    """>>> g()\n    1\n    """\n'
    edited = base.replace("    1\n", "    " + output.replace("\n", "\n    ") + "\n")
    # Any change doctest compares (a blank line ends the output: what follows is
    # prose, and trailing blank lines are no output at all).
    assume(_wants(edited) != _wants(base))
    assert doctest_digests(edited.encode(), "m") != doctest_digests(base.encode(), "m")


@settings(deadline=None)  # a loaded machine must not fail it
@given(st.text(alphabet="abc xyz.,\n", max_size=40), st.text(alphabet="abc xyz.,\n", max_size=40))
def test_any_prose_around_an_example_changes_nothing(before: str, after: str) -> None:
    """Prose above an example and after the blank line that ends its output: a
    person rewording a docstring never touches the doctest."""
    lines = [line for line in (before + "\n" + after).split("\n") if ">>>" not in line]
    above = "".join(f"    {line.strip()}\n" for line in lines[:3])
    below = "".join(f"    {line.strip()}\n" for line in lines[3:])
    base = 'def g():\n    """Doc.\n\n    >>> g()\n    1\n\n    """\n'
    edited = f'def g():\n    """Doc.\n{above}\n    >>> g()\n    1\n\n{below}    """\n'
    assert doctest_digests(edited.encode(), "m") == doctest_digests(base.encode(), "m")


def test_a_docstring_doctest_refuses_is_held_as_written() -> None:
    """``>>>x`` (no space) makes doctest raise: the docstring's text is the digest."""
    base = doctest_digests(b'def g():\n    """Doc.\n\n    >>>g()\n    """\n', "m")
    edited = doctest_digests(b'def g():\n    """Doc!\n\n    >>>g()\n    """\n', "m")
    assert list(base) == ["m.g"]
    assert base != edited


def test_the_plugin_digests_a_parsed_doctest_as_the_source_is_digested() -> None:
    """The plugin reads the examples pytest parsed (after any ``__doc__`` written
    at import); the snapshot reads the source: for the same docstring they agree,
    or every doctest would be run again at the base commit to be excused."""
    import doctest
    import types

    from gtd.auto.ratchet.pytest_report import _docstring_digest

    module = types.ModuleType("m")
    exec(compile(SOURCE, "m.py", "exec"), module.__dict__)  # our own text
    found = {
        t.name: _docstring_digest(types.SimpleNamespace(dtest=t))  # type: ignore[arg-type]
        for t in doctest.DocTestFinder().find(module, "m")
        if t.examples
    }
    digests = doctest_digests(SOURCE.encode(), "m")
    assert found["m.add"] == digests["m.add"]
    assert found["m.Calc.mul"] == digests["m.Calc.mul"]
    assert found["m"] == digests["m"]
    assert found["m.__test__.extra"] == digests["m.__test__.extra"]
