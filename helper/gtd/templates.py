"""Find the templates the helper renders, installed or from a source checkout.

An installed wheel carries them as package data in ``gtd/templates`` (see the
force-include in pyproject.toml); an editable install or a plain checkout has them
in the repository's top-level ``templates/`` directory, two levels above this file."""

from __future__ import annotations

from pathlib import Path

from gtd.errors import GtdError

_CHECKOUT_DIR = Path(__file__).resolve().parents[2] / "templates"


def template(name: str) -> str:
    """The text of template ``name`` (e.g. ``"config.yaml"``)."""
    from importlib import resources

    try:
        packaged = resources.files("gtd").joinpath("templates").joinpath(name)
        if packaged.is_file():
            return packaged.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, ModuleNotFoundError):
        pass
    path = _CHECKOUT_DIR / name
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GtdError(
            f"template {name} is missing from the gtd installation",
            "reinstall the gtd pack (python3 install.py)",
        ) from None
