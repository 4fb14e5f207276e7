"""The memory file quotes a string exactly when PyYAML (YAML 1.1, as deepflow
reads the file) or a YAML 1.2 reader would read it bare as something else:
gtd.auto.memory_file holds the 1.1 types itself, held here to PyYAML's
resolver, answer for answer."""

from __future__ import annotations

import re
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gtd.auto import memory_file
from gtd.auto.memory_file import _NUMBER_12, _YAML11_TYPES, _needs_quotes


def pyyaml_needs_quotes(text: str) -> bool:
    """The rule as it was written with PyYAML's own resolver."""
    resolver: Any = yaml.resolver.Resolver()
    tag = resolver.resolve(yaml.ScalarNode, text, (True, False))
    return tag != "tag:yaml.org,2002:str" or bool(_NUMBER_12.fullmatch(text))


CASES = [
    "", " ", "~", "null", "Null", "NULL", "nULL", "yes", "Yes", "YES", "yEs", "no", "on",
    "Off", "y", "n", "true", "FALSE", "0", "00", "0123", "0128", "08", "1_0", "-1", "+1",
    "0b101", "0b", "0x1F", "0xg", "1:20", "1:20:30", "190:20:30.15", "1.5", "1.", ".5",
    "-.inf", ".Inf", ".NaN", ".nan", "+.INF", "1e5", "1.0e+5", "1.0e5", "1_000.5",
    "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5",
    "2001-12-14 21:59:43.10Z", "2001-1-4 1:59:43", "2001-12-1", "<<", "<", "=", "==",
    "!", "&", "*", "!x", "yes\n", "\n", "1\n", "no\n\n", "0o17", "0o", "1_", "_1",
    "T3", "passed", "tests failed: 2 of 24", "abc1234", "12:30", "3.3.3",
]  # fmt: skip


def test_the_quoting_agrees_with_pyyaml_on_the_tricky_cases() -> None:
    for text in CASES:
        assert _needs_quotes(text) == pyyaml_needs_quotes(text), repr(text)


def test_every_type_is_tried_from_every_character_pyyaml_tries_it_from() -> None:
    """The table's first characters are PyYAML's, type for type: a type tried
    from a character more or less reads some string differently."""
    ours: dict[str, int] = {}
    for firsts, _ in _YAML11_TYPES:
        for first in firsts:
            ours[first] = ours.get(first, 0) + 1
    ours[""] = 1  # null, for the empty string
    theirs = {k: len(v) for k, v in yaml.resolver.Resolver.yaml_implicit_resolvers.items()}
    assert ours == theirs


# Strings made of the characters YAML 1.1's types are written in, and strings
# that match each type's pattern (ours) with a character changed or added.
_ALPHABET = "0123456789-+._:eExXbBoOyYnNtTfFaAlLsSuUrRiIZ~<=!&* \t\n"


@settings(max_examples=3000)
@given(st.text(alphabet=_ALPHABET, max_size=30))
def test_the_quoting_agrees_with_pyyaml_on_any_string_of_those_characters(text: str) -> None:
    assert _needs_quotes(text) == pyyaml_needs_quotes(text)


@settings(max_examples=1500)
@given(
    st.sampled_from([p for _, p in _YAML11_TYPES]).flatmap(
        lambda p: st.from_regex(re.compile(f"(?:{p})"), fullmatch=True)
    ),
    st.text(alphabet=_ALPHABET, max_size=2),
    st.booleans(),
)
def test_the_quoting_agrees_with_pyyaml_near_each_type(
    typed: str, extra: str, before: bool
) -> None:
    for text in (typed, extra + typed if before else typed + extra):
        assert _needs_quotes(text) == pyyaml_needs_quotes(text), repr(text)


def test_writing_the_memory_file_does_not_import_pyyaml() -> None:
    """The reason the types are held here: PyYAML's import is not paid on
    the write every `cycle end` makes."""
    import subprocess
    import sys

    code = (
        "import sys; from gtd.auto import memory_file; "
        "assert memory_file._needs_quotes('yes') and not memory_file._needs_quotes('T3'); "
        "print('yaml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert memory_file._yaml11()  # (compiled once, cached)
