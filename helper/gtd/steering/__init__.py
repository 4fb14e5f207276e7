"""The steering files' formats: pure parsers for the open questions of
``.gtd/TODO.md`` and the checkbox review of ``.gtd/REVIEW.md``, and the dispatch
from a file name to its format. No IO: ``gtd validate``, the language server and
step mode's validation all read the file themselves and call :func:`check`."""

from __future__ import annotations

from pathlib import PurePath
from typing import Literal

from gtd.steering.findings import Finding

Kind = Literal["qa", "review"]

# The mode names of the 3.0 notes' state↔file association (`mode: qa | review`).
KIND_BY_NAME: dict[str, Kind] = {"TODO.md": "qa", "REVIEW.md": "review"}


def kind_of(path: str | PurePath) -> Kind | None:
    """The format a steering file has, decided by its name; None for other files."""
    return KIND_BY_NAME.get(PurePath(path).name)


def check(kind: Kind, text: str) -> tuple[Finding, ...]:
    """Every finding for ``text`` read as ``kind`` — the one validation both the CLI
    and the language server run."""
    if kind == "qa":
        from gtd.steering.questions import parse_questions

        return parse_questions(text).findings
    from gtd.steering.review import parse_review

    return parse_review(text).findings


__all__ = ["KIND_BY_NAME", "Finding", "Kind", "check", "kind_of"]
