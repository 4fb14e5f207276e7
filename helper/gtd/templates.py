"""Read the templates the helper renders (package data in ``gtd/templates``; the
repository's top-level ``templates/`` is a symlink to the same directory)."""

from __future__ import annotations

from pathlib import Path

from gtd.errors import GtdError

_DIR = Path(__file__).resolve().parent / "templates"


def template(name: str) -> str:
    """The text of template ``name`` (e.g. ``"config.yaml"``)."""
    try:
        return (_DIR / name).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GtdError(
            f"template {name} is missing from the gtd installation",
            "reinstall the gtd pack (python3 install.py)",
        ) from None
