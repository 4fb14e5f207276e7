"""The test interpreter's environment, watched between a cycle's begin and end.

An agent can change what the tests run with without touching the repository: a
``.pth`` file or a plugin dropped into the virtualenv's site-packages runs inside
every later test process. The baseline run names the directories on the test
interpreter's import path that lie outside the repository (the plugin reports
them); `cycle begin` records a fingerprint of each — every top-level entry: a
file by its inode, size and modification time, a folder by its inode and its
modification time (or the names in it, see ``_folder``), the content of
``.pth`` files, and every file of the packages that
carry pytest's reporting (pytest, _pytest, pluggy) — and `cycle end` compares. A difference is
a revert naming the entry. A file edited inside an installed package keeps every
top-level entry as it was, and a top-level file can be given back its size and
modification time: the end's test runs judge what they run instead, every
module file of the environment whose change time is later than the cycle's
begin (gtd.auto.ratchet.plugin.imports.EnvironmentFiles; a change time cannot be
set back).

Hidden entries (a name that starts with a dot) are not watched, except the kinds
the interpreter reads whatever their name: ``.pth`` files (``site`` runs a hidden
one too) and package metadata (``*.dist-info``, ``*.egg-info``, ``*.egg-link``:
importlib.metadata lists a hidden one's entry points, pytest plugins among them).
No module can be imported by such a name, and tools leave theirs in whatever
folder they run in (``.hypothesis``, ``.mypy_cache``, ``.pytest_cache``): a folder on
the import path that is also a person's working folder changed the "environment"
of a correct cycle (the kill harness met it, through a ``PYTHONPATH`` entry).

Not covered (written in the threat model): bytecode caches (``__pycache__``, at
the top level as inside the watched packages). Any Python process writes those
when it first imports a module (pytest writes its assertion-rewrite caches of
plugins there), so a person's own test run in the same virtualenv, or a first
import by the tests themselves, changed the "environment" of a correct cycle and
reverted it (the kill harness met it; a package folder's modification time
moves with its first cache, which is why one with no cache yet is read by its
names). A forged cache
with a valid header is therefore among what the threat model says the loop
cannot guarantee; so is a file the tests read as data, not code.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from gtd import digest as sha
from gtd.fsio import read_bytes, walk

# Packages whose every file is watched: they decide what a test report says.
_DEEP = frozenset({"pytest", "_pytest", "pluggy", "py.py"})
# Hidden entries the interpreter still reads (see the module's docstring).
_READ_HIDDEN = (".pth", ".dist-info", ".egg-info", ".egg-link")
# Package metadata: no module, so never a bytecode cache folder.
_METADATA = (".dist-info", ".egg-info")


# How :func:`fingerprint` describes entries: a seal taken by a helper that
# described them otherwise (one upgraded while a cycle was in flight) is not
# compared, since every entry would read as changed.
FORMAT = 2


def fingerprint(dirs: Iterable[str], like: Mapping[str, str] | None = None) -> dict[str, str]:
    """entry path → a short description that changes when the entry does;
    ``like``: an earlier fingerprint, whose form each folder's description takes
    (see :func:`_folder`)."""
    out: dict[str, str] = {}
    for folder in dirs:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            # An archive on the path, or no entry at all yet: the interpreter's
            # own ``pythonXY.zip`` comes before its library, so one made during
            # the cycle would shadow any module of it.
            out[folder] = _describe(folder)
            continue
        out[folder] = "dir"
        for entry in entries:
            name = entry.name
            if name == "__pycache__":
                continue  # bytecode caches: see the module's docstring
            if name.startswith(".") and not name.endswith(_READ_HIDDEN):
                continue  # a tool's folder: no import can name it
            is_dir = entry.is_dir(follow_symlinks=False)
            path = entry.path
            if is_dir:
                out[path] = _folder(path, None if like is None else like.get(path, ""))
            else:
                out[path] = _describe(path)
            if name in _DEEP and is_dir:
                for parent, _dirs, names in walk(entry.path):
                    if "__pycache__" in parent:
                        continue
                    for name in names:
                        path = os.path.join(parent, name)
                        out[path] = _describe(path)
    return out


def _describe(path: str) -> str:
    try:
        st = os.lstat(path)
    except OSError:
        return "missing"
    kind = "d" if os.path.isdir(path) and not os.path.islink(path) else "f"
    text = f"{kind}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    if path.endswith(".pth") and kind == "f":
        try:  # a named pipe in a .pth's place would wait for a writer forever
            text += ":" + sha.sha256(read_bytes(Path(path))).hexdigest()[:16]
        except OSError:
            text += ":unreadable"
    return text


def _folder(path: str, was: str | None) -> str:
    """A top-level folder by its inode and its modification time, which an entry
    added, removed or renamed moves; another folder moved into its place (an
    older copy of the package, whose files keep their old change times) is
    another inode. A file edited where it lies changes neither (the end's runs
    judge the files they run, gtd.auto.ratchet.plugin.imports.EnvironmentFiles).

    A first import writes a package's first bytecode cache folder into it (a
    virtualenv made without bytecode, as uv makes them), which moves the time:
    a package folder with no cache folder yet is read by the names in it instead
    (``was``: the form the earlier description took, kept at the end whatever
    the folder holds now)."""
    try:
        st = os.lstat(path)
        if was is None:
            named = not path.endswith(_METADATA) and not os.path.isdir(
                os.path.join(path, "__pycache__")
            )
        else:
            named = was.startswith("n:")
        if not named:
            return f"d:{st.st_ino}:{st.st_mtime_ns}"
        names = sorted(n for n in os.listdir(path) if n != "__pycache__")
    except OSError:
        return "d:unreadable"
    digest = sha.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()
    return f"n:{st.st_ino}:{digest[:16]}"


# The variables the test interpreter, pytest and hypothesis read that change what
# code runs or what an ``assert`` does: PYTHONPATH and PYTHONSTARTUP run code of
# their own, PYTHONOPTIMIZE compiles out the asserts of every module pytest does
# not rewrite (a person's assertion helper), PYTEST_ADDOPTS and PYTEST_PLUGINS
# load plugins, LD_PRELOAD a library into the process. The test process inherits
# them from the helper, whose environment is the agent CLI's: a settings file of
# that CLI can set variables for its shell commands.
_VARIABLE_PREFIXES = ("PYTHON", "PYTEST", "HYPOTHESIS")
_VARIABLES = frozenset(
    {
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "DYLD_INSERT_LIBRARIES",
        "DYLD_LIBRARY_PATH",
        "COVERAGE_PROCESS_START",
    }
)
# Of those, the ones that change how output looks, never what a test does: tools
# and terminals set them as they please.
_HARMLESS = frozenset(
    {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONUTF8"}
)


def variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The watched variables of ``environ``: name → a digest of the value (the
    seal holds no value: a path can name a person's home)."""
    return {
        name: sha.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        for name, value in sorted(environ.items())
        if (name.startswith(_VARIABLE_PREFIXES) or name in _VARIABLES) and name not in _HARMLESS
    }


def variable_changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """What changed among the watched variables: set, unset, then given another value."""
    return (
        [f"{name} set" for name in sorted(set(after) - set(before))]
        + [f"{name} unset" for name in sorted(set(before) - set(after))]
        + [
            f"{name} changed"
            for name in sorted(set(before) & set(after))
            if before[name] != after[name]
        ]
    )


def changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """What changed, most telling first: added, removed, then modified entries."""
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    modified = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    return (
        [f"{p} added" for p in added]
        + [f"{p} removed" for p in removed]
        + [f"{p} modified" for p in modified]
    )


def outside(paths: Sequence[str], roots: Sequence[str], keep: Sequence[str] = ()) -> list[str]:
    """The directories of ``paths`` that are not under any of ``roots`` (the
    repository, the clean room), or are under one of ``keep`` (a virtualenv inside
    the repository, linked into the room): those are the environment."""
    real_roots = [os.path.realpath(r) for r in roots]
    real_keep = [os.path.realpath(k) for k in keep]
    out: list[str] = []
    for path in paths:
        # Entries that are no folder are kept too: an archive, or a path with
        # nothing there yet (see fingerprint).
        if not path or not os.path.isabs(path):
            continue
        real = os.path.realpath(path)
        kept = any(real == k or real.startswith(k + os.sep) for k in real_keep)
        if not kept and any(real == r or real.startswith(r + os.sep) for r in real_roots):
            continue
        if real not in out:
            out.append(real)
    return out
