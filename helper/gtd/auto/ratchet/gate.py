"""The gate a held test process waits at (gtd.auto.ratchet.held): the source of
the ``sitecustomize`` a held run's folder holds, the variable that tells it its
pipes, and the word that opens it.

The process starts in its run's own folder, outside the room and the
repository. At the gate it has loaded its interpreter, the environment's
``.pth`` files and pytest (the room is not on ``sys.path`` yet: Python adds the
working directory after ``site``), and says so; then it waits for the word.
The word is the room's device, inode and path as the helper synced it: the
process enters that folder and runs on only if it is that very directory (a
room replaced, or a link put in its place, since the helper looked is another
one). No word (the pipe closed: the run called off, or the helper killed) ends
it at once.

This module imports nothing: gtd.auto.ratchet.early writes the gate before the
helper has loaded anything else."""

from __future__ import annotations

ENV_GATE = "GTD_RATCHET_GATE"  # "<gate fd>:<arrival fd>", popped by the gate
ARRIVED = b"r"
REFUSED = b"x"  # the named folder is not the room the helper synced


def word(dev: int, ino: int, path: str) -> bytes:
    """What opens the gate into the directory ``path`` (device ``dev``, inode
    ``ino``)."""
    return f"{dev}:{ino}:".encode() + path.encode("utf-8", "surrogateescape") + b"\n"


# The sitecustomize of a held run (any Python 3 that pytest supports reads it).
SOURCE = '''\
"""The gtd ratchet's gate for one held test run (gtd.auto.ratchet.gate)."""
import os as _os
import sys as _sys


def _gtd_gate(spec):
    gate, came = [int(x) for x in spec.split(":")]
    here = _os.path.dirname(_os.path.abspath(__file__))
    rest = [p for p in _sys.path if p and _os.path.abspath(p) != here]
    try:
        from importlib.machinery import PathFinder

        hidden = PathFinder.find_spec("sitecustomize", rest)
    except Exception:
        hidden = None
    if hidden is None:
        # This folder holds only this module and the plugin's entry point: last
        # on the path while pytest is imported, it is not looked in first for
        # each of pytest's top-level imports (~100: ~1.5 ms of every run), and
        # it is back in its place before pytest looks for its plugins.
        ours = [p for p in _sys.path if p and _os.path.abspath(p) == here]
        at = _sys.path.index(ours[0]) if ours else 0
        for entry in ours:
            _sys.path.remove(entry)
        _sys.path.extend(ours)
        try:
            import importlib

            import pytest  # noqa: F401  the environment's: the room is not on sys.path yet
            from _pytest.config import default_plugins

            for name in default_plugins:  # what pytest imports first thing after
                try:
                    importlib.import_module("_pytest." + name)
                except Exception:
                    pass  # pytest imports it again itself, and says what is wrong
        except Exception:
            pass  # only time is lost: pytest loads as it would have
        for entry in ours:
            if entry in _sys.path:
                _sys.path.remove(entry)
        _sys.path[at:at] = ours
    _os.write(came, b"r")
    said = b""
    while True:
        chunk = _os.read(gate, 4096)
        if not chunk:
            break
        said += chunk
    _os.close(gate)
    try:
        dev, ino, path = said[:-1].split(b":", 2) if said.endswith(b"\\n") else (b"", b"", b"")
        entered = bool(path)
        if entered:
            _os.chdir(path)
            here_now = _os.stat(".")
            entered = b"%d:%d" % (here_now.st_dev, here_now.st_ino) == dev + b":" + ino
    except (OSError, ValueError):  # no such folder; a garbled word
        entered = False
    if not entered:
        if said:
            _os.write(came, b"x")
        _os._exit(1)
    _os.close(came)
    _os.environ["PWD"] = _os.fsdecode(path)  # as a shell started there says
    # hypothesis's storage: the slot's, beside the room (gtd.auto.ratchet.hypotables)
    _os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = _os.path.join(
        _os.path.dirname(_os.fsdecode(path)), "hypothesis"
    )
    return hidden


_gtd_spec = _os.environ.pop("GTD_RATCHET_GATE", None)
if _gtd_spec:
    try:
        _gtd_hidden = _gtd_gate(_gtd_spec)
    except BaseException:  # Python would go on past a failing sitecustomize
        _os._exit(1)
    # No file once through the gate (its spec still names it): hypothesis draws
    # examples from the literals of every module whose file is outside
    # site-packages and the standard library, taking them for the project's
    # own; this one's (4096, "PWD", ...) would join the project's, and be parsed
    # on every run.
    del __file__
    if _gtd_hidden is not None:  # the environment's own, as Python would run it
        import importlib.util

        _gtd_module = importlib.util.module_from_spec(_gtd_hidden)
        _sys.modules["sitecustomize"] = _gtd_module
        _gtd_hidden.loader.exec_module(_gtd_module)
'''
