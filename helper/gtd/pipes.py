"""The pipes a long command's output goes through (gtd.spawned.Spawned). Imports
nothing but ``os`` (and ``fcntl``, a C module): gtd.auto.ratchet.early makes
them before anything else of the helper is loaded."""

from __future__ import annotations

import os

# As large as Linux lets an unprivileged process make one (/proc/sys/fs/pipe-max-size).
SIZE = 1 << 20
_F_SETPIPE_SZ = 1031  # fcntl's, Linux only


def long_pipe() -> tuple[int, int]:
    """A pipe (read end, write end) for a long command's output, made as large as
    the system allows: its reader drains it only now and then (gtd.proc), and a
    writer that finds it full waits."""
    read, write = os.pipe()
    try:  # (no contextlib: it would load functools and collections first)
        import fcntl

        fcntl.fcntl(write, getattr(fcntl, "F_SETPIPE_SZ", _F_SETPIPE_SZ), SIZE)
    except (ImportError, OSError):
        pass  # not Linux, or a smaller limit: the default size
    return read, write
