"""Paths as every check of the plugin compares them: the path functions bound at
import, a fast absolute path, normal forms (given and with links resolved), and
"under one of these roots"."""

from __future__ import annotations

import os
import sys

# Bound at import, before any conftest or test runs: code that later replaces
# os.stat or os.lstat does not change what the plugin sees of the room's files.
_stat = os.stat
_lstat = os.lstat
# The same for the path functions every check here decides with: code that
# rebinds ``os.path.isabs`` for its own file cannot make it "relative" to the
# check that looks for code from outside (a rebinding of what they call inside
# is evidence: the path modules are compared as libraries, Values.start).
_isabs = os.path.isabs
_abspath = os.path.abspath
_realpath = os.path.realpath
_normcase = os.path.normcase
_dirname = os.path.dirname
_basename = os.path.basename
_join = os.path.join
_split = os.path.split
_isdir = os.path.isdir
_islink = os.path.islink
_exists = os.path.exists


# Where os.path is posixpath, normcase changes nothing, and an absolute path with no
# empty, "." or ".." part and no trailing slash is what abspath makes of it.
_POSIX = os.path.__name__ == "posixpath"


def _abs(text: str) -> str:
    """``_abspath(text)``, without its work where ``text`` is already in
    that form: nearly every path here is (a module's origin, a test's file), and
    the plugin asks a few thousand times a run (~7,000 instructions each). A
    hidden folder's name (``/.cache``, where the clean room lives) is no "." or
    ".." part: only those, an empty part or a trailing slash need the work."""
    if (
        _POSIX
        and text[:1] == "/"
        and "//" not in text
        and text[-1:] != "/"
        and (
            "/." not in text
            or ("/./" not in text and "/../" not in text and not text.endswith(("/.", "/..")))
        )
    ):
        return text
    return _abspath(text)


_NORMS: dict[str, str] = {}  # an absolute path as given -> _norm of it


def _norm(path: object) -> str:
    # Asked ~1,700 times a run, mostly of the same few hundred module files (the
    # end's checks walk every module again): an absolute path's answer is kept;
    # a relative one's depends on the working folder, which a test may change.
    text = path if type(path) is str else str(path)
    known = _NORMS.get(text)
    if known is None:
        known = _normcase(_abs(text))
        if text[:1] == os.sep:
            _NORMS[text] = known
    return known


def _both(path: str, folders: dict[str, str] | None = None) -> tuple[str, ...]:
    """A path as given and with its symbolic links resolved: pytest and the import
    system may each use either. ``folders``: the folders already resolved by one
    caller that resolves many files of the same folders (a selection of every test
    file): realpath walks each part of a path with an lstat, ~5 M instructions for
    a 500-test suite's files one by one."""
    return (_norm(path), _normcase(_real(path, folders)))


def _real(path: str, folders: dict[str, str] | None) -> str:
    parent, name = _split(path)
    if folders is None or name in ("", ".", "..") or _islink(path):
        return _realpath(path)
    real = folders.get(parent)
    if real is None:
        real = folders[parent] = _realpath(parent)
    return _join(real, name)


def _editable_folders() -> list[str]:
    """The source folders editable installs of the import-finder kind map their
    packages to (setuptools' ``MAPPING``, the ``editables`` redirector's table):
    not on ``sys.path``, yet the environment's own."""
    out: list[str] = []
    for finder in sys.meta_path:
        owner = sys.modules.get(getattr(finder, "__module__", "") or "")
        for source in (finder, owner):
            for attr in ("MAPPING", "_redirections"):
                table = getattr(source, attr, None)
                if isinstance(table, dict):
                    for path in table.values():
                        if isinstance(path, str) and _isabs(path):
                            # a package's folder, or a module's file
                            out.append(path if _isdir(path) else _dirname(path))
    return out


_PREFIXES: dict[tuple[str, ...], tuple[str, ...]] = {}


def _under(path: str, roots: tuple[str, ...]) -> bool:
    prefixes = _PREFIXES.get(roots)
    if prefixes is None:
        prefixes = _PREFIXES[roots] = tuple(root.rstrip(os.sep) + os.sep for root in roots)
    return path in roots or path.startswith(prefixes)
