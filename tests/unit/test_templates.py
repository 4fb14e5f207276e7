"""The one template engine: strict about names, literal about values."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gtd import templates
from gtd.templates import TemplateError, render, render_text

TEMPLATES = Path(templates.__file__).resolve().parent / "templates"


def test_a_name_the_context_lacks_is_an_error() -> None:
    with pytest.raises(TemplateError, match="unknown name: titel"):
        render_text("# {{ titel }}\n", {"title": "x"})


def test_values_are_inserted_as_they_are() -> None:
    text = render_text("{{ a }}|{{ b }}", {"a": "{{ b }}", "b": "$rules"})
    assert text == "{{ b }}|$rules"


def test_partials_come_from_the_templates_folder() -> None:
    header = render("step/partials/header.md", {"state": "idle", "actor": "human", "intro": "x"})
    text = render_text(
        "{{> header }}", {"state": "idle", "actor": "human", "intro": "x"}, folder="step"
    )
    assert text == header.rstrip("\n")


def test_tidy_collapses_blank_runs_and_ends_with_one_newline() -> None:
    assert render_text("\n\na\n\n\n\n\nb\n\n", {}, tidy=True) == "a\n\n\nb\n"


def test_no_template_uses_another_syntax() -> None:
    # One engine: no `$name` placeholders (string.Template's). The check script is
    # shell, whose variables are its own.
    for path in TEMPLATES.rglob("*.md"):
        if path.relative_to(TEMPLATES).as_posix() == "step/check.md":
            continue
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\$[a-z_]+\b", text), path
