"""The templates the helper renders, and the one engine that renders them (package
data in ``gtd/templates``; the repository's top-level ``templates/`` is a symlink
to the same directory).

The engine is deliberately tiny and strict: ``{{ name }}`` inserts a context value
and ``{{> name }}`` renders the partial ``partials/<name>.md`` of the template's
own folder with the same context. A name the context lacks is an error, so a
template typo fails the tests instead of leaving a hole (or a stray ``$name``) in
what an agent reads. Values are inserted as they are, never scanned for tags.
Which sections a text has is decided by the caller; their words live in the
templates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from gtd.errors import GtdError

__all__ = ["TemplateError", "render", "render_text", "template"]

_DIR = Path(__file__).resolve().parent / "templates"
_TAG = re.compile(r"\{\{\s*(>?)\s*([A-Za-z0-9_-]+)\s*\}\}")
_BLANKS = re.compile(r"\n{4,}")
_MAX_DEPTH = 5


class TemplateError(KeyError):
    """A template names a value its context lacks, or nests partials too deeply: a
    bug in the helper's templates, never the user's input."""


def template(name: str) -> str:
    """The text of template ``name`` (e.g. ``"config.yaml"``, ``"step/idle.md"``)."""
    try:
        return (_DIR / name).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GtdError(
            f"template {name} is missing from the gtd installation",
            "reinstall the gtd pack (python3 install.py)",
        ) from None


def render_text(
    text: str, context: Mapping[str, str], *, folder: str = "", tidy: bool = False
) -> str:
    """``text`` with every tag filled from ``context``; partials come from
    ``<folder>/partials/``. ``tidy``: runs of three or more blank lines collapse to
    two and the text ends with exactly one newline (what a prompt prints)."""
    out = _expand(text, context, folder, 0)
    if tidy:
        return _BLANKS.sub("\n\n\n", out.strip("\n")) + "\n"
    return out


def render(name: str, context: Mapping[str, str], *, tidy: bool = False) -> str:
    """Template ``name`` rendered (see :func:`render_text`)."""
    folder = name.rpartition("/")[0]
    return render_text(template(name), context, folder=folder, tidy=tidy)


def _expand(text: str, context: Mapping[str, str], folder: str, depth: int) -> str:
    if depth > _MAX_DEPTH:
        raise TemplateError("template partials nest too deeply")

    def sub(match: re.Match[str]) -> str:
        partial, name = match.group(1), match.group(2)
        if partial:
            path = f"{folder}/partials/{name}.md" if folder else f"partials/{name}.md"
            return _expand(template(path).rstrip("\n"), context, folder, depth + 1)
        if name not in context:
            raise TemplateError(f"template uses an unknown name: {name}")
        return context[name]

    return _TAG.sub(sub, text)
