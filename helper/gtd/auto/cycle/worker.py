"""The worker process of a cycle's check, a snapshot refresh and setup's baseline:
forked into a session of its own so it outlives the command that started it (a
tool call with a timeout, a killed shell), its output in `.deepflow/check.log`."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import paths
from gtd.errors import GtdError
from gtd.fsio import fresh_file

if TYPE_CHECKING:
    from collections.abc import Callable


def fork(root: Path, work: Callable[[], object]) -> int:
    """Run ``work()`` in a child process of its own session, detached from this
    one's terminal, output and process group: it goes on when the caller (a tool
    call with a timeout, a killed shell) ends. Returns the child's pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: never return into the caller's stack
        os.setsid()
        fd = _open_log(root)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.closerange(3, _max_fd())
        sys.stdout = os.fdopen(1, "w", buffering=1)
        sys.stderr = os.fdopen(2, "w", buffering=1)
        from gtd.auto.ratchet import checklog

        checklog.to(1)  # the commands' output joins the log
        work()
        code = 0
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
    os._exit(code)


def _open_log(root: Path) -> int:
    """The worker's log, `.deepflow/check.log`, a new file each time (gtd.fsio
    fresh_file: nothing at the name is opened, so no link is written through and
    no named pipe blocks). A folder there, made since the command's sweep (gtd
    own_files), is set aside first. A log that still cannot be made is no reason
    for the worker to die (the cycle would be reverted as interrupted, every time):
    it then writes nowhere."""
    from gtd.own_files import reclaim

    log = root / paths.CHECK_LOG
    for _ in range(2):
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            return fresh_file(log)
        except IsADirectoryError:
            with contextlib.suppress(GtdError, OSError):
                reclaim(root, (paths.CHECK_LOG,))
        except (OSError, GtdError):
            break
    return os.open(os.devnull, os.O_WRONLY)


def _max_fd() -> int:
    try:
        return int(os.sysconf("SC_OPEN_MAX"))
    except (ValueError, OSError):
        return 1024
