"""Files a project's own install step regenerates: the ``*.egg-info/`` folder
``pip install -e .`` rewrites (``PKG-INFO``, ``SOURCES.txt``...), and a
``*.dist-info/`` folder inside the repository. Pure: paths in, folders and the
command that stops tracking them out.

Where such a folder is tracked, every install rewrites it and `gtd cycle begin`
answers ``dirty``. It stays ``dirty``: the helper never sets a person's change
aside or restores over it, and it cannot tell a regenerated file from one a
person edited. Nor can it leave them out of a cycle's commit without judging a
tree that is not the working tree. The answer names the folders and the one
command that stops tracking them (the files stay on disk, ignored from then on);
set-up says the same before the first tick.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

_SUFFIXES = (".egg-info", ".dist-info")


def folders(paths: Iterable[str]) -> list[str]:
    """The install-metadata folders (repository-relative) that hold any of ``paths``."""
    out: set[str] = set()
    for path in paths:
        parts = path.split("/")
        for depth, part in enumerate(parts[:-1]):
            if part.endswith(_SUFFIXES):
                out.add("/".join(parts[: depth + 1]))
                break
    return sorted(out)


def untrack_command(found: Iterable[str]) -> str:
    """The shell command that stops tracking ``found`` and ignores them from then on."""
    found = list(found)
    names = sorted({f.rpartition("/")[2] for f in found})
    ignore = " ".join(shlex.quote(f"{n}/") for n in names)
    return (
        f"git rm -r -q --cached -- {' '.join(shlex.quote(f) for f in found)}"
        f" && printf '\\n%s\\n' {ignore} >> .gitignore && git add .gitignore"
        f" && git commit -q -m {shlex.quote('Stop tracking ' + ', '.join(names))}"
    )


def advice(found: Iterable[str]) -> str:
    """One line for a person: what these are, and the command."""
    found = list(found)
    return (
        f"{', '.join(f + '/' for f in found)}: tracked, and rewritten by the project's "
        f"install (pip install -e .); stop tracking it: `{untrack_command(found)}`"
    )
