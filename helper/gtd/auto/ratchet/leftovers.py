"""What a boxed test command left running when it ended (gtd.auto.ratchet.box).

The box's PID namespace ends every process the test session started when the
session ends, so a daemon a test leaves never outlives the check; but a change
that leaves one would leave it on a person's machine, where nothing ends it. So
the judge is told, and the cycle is reverted with the process named.

How: the box runs the test command under a small ``/bin/sh`` script as the
namespace's first process (``bwrap --as-pid-1``). The script runs the command,
and once it has ended lists the namespace's processes still alive in the box's
own ``/proc`` (zombies are dead and not listed; one seen alive is looked at
again after a moment, so a process already on its way out is not taken for a
daemon), then exits with the command's status, which ends the namespace and
every process in it. The list goes to a pipe the helper reads once the box
has ended.

What the code under test can do to it, and why it does not matter: process 1
of a namespace cannot be killed from inside it (the kernel drops every signal
it has no handler for). The command inherits the pipe, and any process of the
user's may open it through ``/proc``: it may write lines to it, or fill it so
the script's writes wait until the timeout. A forged line only reverts the
change itself; a pipe kept full is a timeout; lines only
add, so "nothing left" cannot be forged; and a process that makes the script
miss it (by ptrace, say) is still ended with the namespace: it hides a daemon
from the report, never from the machine, and never makes a failing change
pass (docs/threat-model.md).

A project whose own suite leaves a process (a build server, a test database
started once) is not refused for it: a process the baseline's run left too,
with the same command line once digits are set aside (ports, pids and temporary
names vary), is excused; so is all of it where the baseline's run was not
looked at (:func:`reasons`).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gtd.auto.ratchet.model import RunResult

SHELL = "/bin/sh"
# $1: the channel's fd; the rest: the command. Then every process of the
# namespace but this one (pid 1) that is not a zombie is listed (at most 16, each
# command line cut to 300 bytes: never more than the channel holds, so the script
# never waits on the helper), looked at twice. A POSIX shell (dash) names only
# fds 0-9 in a redirection: the pipe is opened again through /proc instead, and
# the command inherits it (what it can do with it is above).
SCRIPT = r"""fd=$1; shift
"$@"
rc=$?
left=
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  [ "$p" = "$$" ] && continue
  read -r s < "$d/stat" 2>/dev/null || continue
  case ${s##*) } in Z*|X*) continue;; esac
  left="$left $p"
done
if [ -n "$left" ]; then
  sleep 0.2 2>/dev/null || sleep 1
  n=0
  for p in $left; do
    read -r s < "/proc/$p/stat" 2>/dev/null || continue
    case ${s##*) } in Z*|X*) continue;; esac
    n=$((n+1)); [ $n -gt 16 ] && break
    { printf '%s ' "$p"; head -c 300 "/proc/$p/cmdline" | tr '\0' ' '; printf '\n'; } \
      >"/proc/self/fd/$fd" 2>/dev/null
  done
fi
exit $rc
"""
_NAME = "gtd-box"  # the script's $0, as `ps` shows it
_READ_MAX = 1 << 16
_SHOWN = 3
_DIGITS = re.compile(r"\d+")


def channel() -> tuple[int, int]:
    """The list's pipe: (the helper's reading end, the box's writing end, to be
    passed to the box and closed here once it has started). A pipe, not a
    socket: the script opens it again by its ``/proc`` path, which a socket
    refuses."""
    return os.pipe()


def wrapped(argv: Sequence[str], fd: int) -> list[str]:
    """``argv`` run under the script that lists what it leaves to ``fd``."""
    return [SHELL, "-c", SCRIPT, _NAME, str(fd), *argv]


def collect(fd: int) -> tuple[str, ...]:
    """The command lines the script listed (the writing end closed already:
    the box has ended); ``fd`` closed. Never waits: what is there is read."""
    data = b""
    try:
        os.set_blocking(fd, False)
        while len(data) < _READ_MAX:
            try:
                got = os.read(fd, _READ_MAX - len(data))
            except (BlockingIOError, InterruptedError):
                break
            if not got:
                break
            data += got
    except OSError:
        pass
    finally:
        os.close(fd)
    out: list[str] = []
    for line in data.decode("utf-8", "replace").splitlines():
        pid, _, command = line.partition(" ")
        if pid.isdigit() and command.strip():
            out.append(command.strip())
    return tuple(out)


def reasons(run: RunResult, baseline: RunResult) -> list[str]:
    """The revert's reason where the test command left a process running that
    the baseline's did not leave (:func:`_same`); [] otherwise. A baseline
    nobody looked at (taken unboxed, or by a gtd before this one) cannot tell
    the project's own from the change's: nothing is held against the change
    (check.log names what was left), and the baseline the pass advances to
    knows from then on."""
    now = run.command("test")
    if now is None or not now.left or now.timed_out:
        return []  # (a timeout is the reason then, and the list is cut short)
    before = baseline.command("test")
    if before is None or before.left is None:
        return []
    excused = {_same(c) for c in before.left}
    new = [c for c in now.left if _same(c) not in excused]
    if not new:
        return []
    shown = "; ".join(_quoted(c) for c in new[:_SHOWN])
    more = f" (+{len(new) - _SHOWN} more)" if len(new) > _SHOWN else ""
    what = "a process" if len(new) == 1 else f"{len(new)} processes"
    return [
        f"the tests left {what} running: {shown}{more}: it outlived the test "
        "session (the judge's box ended it)"
    ]


def described(left: Sequence[str]) -> str:
    """For the check log: what a command left running."""
    return "left running when the command ended (the box ended it): " + "; ".join(left)


def _same(command: str) -> str:
    return _DIGITS.sub("#", command)


def _quoted(command: str) -> str:
    return f"`{command if len(command) <= 120 else command[:120] + '…'}`"
