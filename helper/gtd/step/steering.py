"""The steering files and work packages under ``.gtd/`` (docs/step-mode.md,
"State ↔ file association").

Steering files live only under ``.gtd/``: a root ``TODO.md`` or ``REVIEW.md`` is the
project's own file and never read. Auto mode's private files under ``.deepflow/``
(memory, logs, lock, snapshot, journal, report — everything there but the human's
``config.yaml``) are not step mode's either: :func:`is_private` names them, and the
edge neither sees them as pending changes nor stages them, whatever the ignore
rules of the branch say. The one exception is history: commits made by
earlier 2.x builds kept FEEDBACK.md and ERRORS.md at the root, and the README
promises the counter folds still recognise those, so :data:`LEGACY_FEEDBACK` and
:data:`LEGACY_ERRORS` exist for :mod:`gtd.step.counters` alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gtd.paths import CONFIG as AUTO_CONFIG
from gtd.paths import STATE_DIR as AUTO_DIR
from gtd.tuples import NamedTuple

__all__ = [
    "AUTO_CONFIG",
    "AUTO_DIR",
    "ERRORS",
    "FEEDBACK",
    "GTD_DIR",
    "HEALTH",
    "LEGACY_ERRORS",
    "LEGACY_FEEDBACK",
    "REVIEW",
    "SQUASH_MSG",
    "STEERING_FILES",
    "TODO",
    "Package",
    "is_package_path",
    "is_private",
    "package_of",
    "packages_from_paths",
]

GTD_DIR = ".gtd"
TODO = ".gtd/TODO.md"
REVIEW = ".gtd/REVIEW.md"
FEEDBACK = ".gtd/FEEDBACK.md"
ERRORS = ".gtd/ERRORS.md"
HEALTH = ".gtd/HEALTH.md"
SQUASH_MSG = ".gtd/SQUASH_MSG.md"
STEERING_FILES: tuple[str, ...] = (TODO, REVIEW, FEEDBACK, ERRORS, HEALTH, SQUASH_MSG)

LEGACY_FEEDBACK = "FEEDBACK.md"
LEGACY_ERRORS = "ERRORS.md"

_PACKAGE_DIR = re.compile(r"(\d+)-.*")


class Package(NamedTuple):
    """A work package: a ``.gtd/`` folder named ``^\\d+-``. ``tasks`` are the file
    names of its ``*.md`` files, sorted."""

    name: str
    tasks: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        return f"{GTD_DIR}/{self.name}"

    @property
    def order(self) -> tuple[int, str]:
        # Numeric first so 2-x precedes 10-y whatever the zero padding.
        match = _PACKAGE_DIR.fullmatch(self.name)
        return (int(match.group(1)) if match else 0, self.name)


def package_of(path: str) -> str | None:
    """The package folder name a repo-relative path lies in, if any."""
    parts = path.split("/")
    if len(parts) >= 3 and parts[0] == GTD_DIR and _PACKAGE_DIR.fullmatch(parts[1]):
        return parts[1]
    return None


def is_package_path(path: str) -> bool:
    return package_of(path) is not None


def is_private(path: str) -> bool:
    """Auto mode's private state: under ``.deepflow/`` and not its ``config.yaml``."""
    return path.startswith(f"{AUTO_DIR}/") and path != AUTO_CONFIG


def packages_from_paths(paths: Iterable[str]) -> tuple[Package, ...]:
    """The packages a listing of repo-relative file paths shows, lowest number first.

    Pure, so the edge can feed it whatever listing it already has (a directory walk
    or ``git ls-files`` plus untracked files). A task is a ``*.md`` file directly in
    the package folder.
    """
    tasks: dict[str, set[str]] = {}
    for path in paths:
        name = package_of(path)
        if name is None:
            continue
        found = tasks.setdefault(name, set())
        rest = path.split("/")[2:]
        if len(rest) == 1 and rest[0].endswith(".md"):
            found.add(rest[0])
    packages = [Package(name, tuple(sorted(names))) for name, names in tasks.items()]
    return tuple(sorted(packages, key=lambda p: p.order))
