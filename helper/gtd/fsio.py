"""File writes that cannot be half-done, and the lock that serialises shared state."""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from types import ModuleType

from gtd import paths
from gtd.errors import GtdError, LockTimeout
from gtd.names import readable, unsafe_name

# Reading as the helper must, where an agent may have left a pipe or a deep tree:
# gtd.reading, below the git edge (gtd.git reads with it, and this module's lock
# calls gtd.own_files, which calls git). Named here too, where callers look for them.
from gtd.reading import is_pipe as is_pipe  # noqa: PLC0414  (named here too)
from gtd.reading import read_bytes as read_bytes  # noqa: PLC0414  (named here too)
from gtd.reading import walk as walk  # noqa: PLC0414  (named here too)

_fcntl: ModuleType | None
try:
    import fcntl as _fcntl
except ImportError:  # Windows: the lock falls back to filelock (see locked)
    _fcntl = None


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file in the same directory + os.replace,
    so a reader (or a crash) sees either the old file or the new one, never a mix.
    A file name that is not UTF-8 in ``text`` is written as ``\\xNN``: the files
    written as text (reports, briefs, mirrors) are read by people, and a write that
    raised would stop the loop. (State read back keeps exact names: gtd.names.)"""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = readable(text).encode("utf-8")
    atomic_write_bytes(path, data)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """:func:`atomic_write` for bytes, written exactly as given."""
    place(stage(path, data), path)


def stage(path: Path, data: bytes) -> str:
    """The first half of :func:`atomic_write_bytes`: ``data`` in a new temp file
    beside ``path`` (on disk, with the mode ``path`` will have), its name returned
    for :func:`place`. Written before a seal, it lets a run after a crash finish
    the write from the temp alone (gtd.auto.state.adopt_journal)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


def place(tmp: str, path: Path) -> None:
    """The second half of :func:`atomic_write_bytes`: the staged ``tmp`` renamed
    to ``path`` (removed when it cannot be)."""
    try:
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and os.path.isdir(path) and not os.path.islink(path):
            # A rename cannot replace a folder; what is in it is not the helper's.
            shown = readable(str(path))
            raise GtdError(
                f"{shown}: a folder, where gtd writes a file",
                f"move the folder out of the way (mv {shown} <somewhere else>), then run again",
            ) from None
        raise


def sync_folder(folder: Path) -> None:
    """Make the names in ``folder`` durable (a new file's entry survives a power
    cut once this returns), where the system allows it."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def temp_bytes(path: Path, size: int) -> bytes | None:
    """The content of ``path`` when it can be an :func:`atomic_write` temp file of
    ``size`` bytes, else None: a regular file itself (a link is never followed, a
    named pipe never waited on), with no other name (a hard link would make a
    person's file the helper's), owned by this user. A file of another size is
    not read at all."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_size != size:
            return None
        if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
            return None
        data = b""
        while len(data) < size and (chunk := os.read(fd, size - len(data))):
            data += chunk
        # Grown or shrunk since fstat: a writer is at work on it, not a leftover.
        return data if len(data) == size and not os.read(fd, 1) else None
    except OSError:
        return None
    finally:
        os.close(fd)


TEMP_MARK = ".gtd-tmp-"


def _create_temp(path: Path) -> tuple[int, str]:
    """A new, exclusively created file beside ``path``. What ``tempfile.mkstemp``
    does, without importing tempfile (with shutil, bz2, lzma and random behind it,
    ~8 ms of every tick): the process id and a counter make the name unique, and
    O_EXCL steps past a leftover of a crashed process that had the same id. The
    name says whose it is (:func:`temp_owner`), so recovery removes the leftovers
    of a killed helper and nothing else."""
    while True:
        tmp = str(path.parent / f".{path.name}{TEMP_MARK}{os.getpid()}-{next(_TEMP_SEQUENCE)}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), tmp
        except FileExistsError:
            continue


_TEMP_SEQUENCE = itertools.count()


def temp_owner(name: str) -> int | None:
    """The process id in the name of an :func:`atomic_write` temp file, else None."""
    if not name.startswith("."):
        return None
    _, mark, rest = name.partition(TEMP_MARK)
    pid, dash, seq = rest.partition("-")
    if not mark or not dash or not pid.isdigit() or not seq.isdigit():
        return None
    return int(pid)


def fresh_file(path: Path) -> int:
    """A new, empty regular file at ``path``, created by this call and opened for
    writing: its descriptor. For a file of the helper's own that it rewrites from
    the start (a log), in a folder an agent can write: whatever was at the name is
    unlinked, never opened, so nothing is written through a symbolic link, nor
    into a person's file that a hard link there shares, and a named pipe cannot
    block the open. O_EXCL makes the file this call's own even if something is put
    back in between (it is unlinked again, a few times). A folder at ``path``
    raises IsADirectoryError: it may hold anything, and is not this function's to
    remove (see gtd.own_files)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(5):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError:
            if S_ISDIR(os.lstat(path).st_mode):  # Linux says EISDIR, macOS EPERM
                raise IsADirectoryError(errno.EISDIR, "is a directory", str(path)) from None
            raise
        try:
            return os.open(path, flags, 0o644)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "made again each time it was removed", str(path))


def open_regular(path: str | Path, *, follow: bool = True) -> tuple[int, os.stat_result] | None:
    """A descriptor of the regular file at ``path`` and its stat data, opened
    without waiting: a named pipe an agent put there would make a plain open
    wait for a writer, for ever. None where the file is missing or anything but
    a regular file (``follow=False``: a symbolic link too). The caller closes it."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        info = None
    if info is None or not S_ISREG(info.st_mode):
        os.close(fd)
        return None
    return fd, info


def unsafe_path(root: Path, rel: str) -> str | None:
    """Why the helper may not act on ``rel`` (a repository-relative name from git's
    output) in the working tree at ``root`` (a few words, without the name); None
    when it may: :func:`gtd.names.unsafe_name`, then where its folder really is.

    A folder the cycle made a link to elsewhere leads a removal there too. Every
    name from git that the helper turns into a removal, a move or a folder it runs
    git in passes here just before the act (a link may have appeared since)."""
    why = unsafe_name(rel)
    if why is not None:
        return why
    top = os.path.realpath(root)
    parent = os.path.realpath(os.path.join(top, os.path.dirname(rel.removesuffix("/"))))
    if parent != top and not parent.startswith(top.rstrip(os.sep) + os.sep):
        return f"leads out of the working tree, to {readable(parent)}"
    return None


def remove_tree(path: str | Path, *, ignore_errors: bool = False) -> None:
    """``shutil.rmtree(path)`` without recursion, as safe as rmtree is on Linux:
    each folder is opened relative to its parent with O_NOFOLLOW, so a link never
    leads the removal elsewhere, not even one swapped in while it runs. A link at
    ``path`` itself is an error, as with rmtree. ``ignore_errors``: what cannot
    be removed is left, and the rest goes."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        top = os.open(path, flags)
    except OSError:
        if ignore_errors:
            return
        raise
    # (the folder's descriptor, its names still to remove, its name in its parent)
    stack: list[tuple[int, list[str], str]] = [(top, _names(top), "")]
    try:
        while stack:
            fd, names, own = stack[-1]
            if not names:
                stack.pop()
                os.close(fd)
                where = stack[-1][0] if stack else None
                try:
                    os.rmdir(own if stack else path, dir_fd=where)
                except OSError:
                    if not ignore_errors:
                        raise
                continue
            name = names.pop()
            try:
                os.unlink(name, dir_fd=fd)
                continue
            except (IsADirectoryError, PermissionError):  # Linux EISDIR, macOS EPERM
                pass  # a folder: opened and emptied below
            except OSError:
                if ignore_errors:
                    continue
                raise
            try:
                child = os.open(name, flags, dir_fd=fd)
            except OSError:
                if ignore_errors:
                    continue
                raise
            stack.append((child, _names(child), name))
    finally:
        for fd, _left, _own in stack:
            os.close(fd)


def _names(fd: int) -> list[str]:
    try:
        return os.listdir(fd)
    except OSError:
        return []


def read_text(path: Path) -> str | None:
    """The UTF-8 text of the regular file at ``path`` with its newlines as Python
    reads text (CRLF and CR as LF), None when it is missing."""
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        return None
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def state_lock(root: Path) -> Path:
    """The state lock, ``.deepflow/.gtd.lock``, with ``.deepflow`` made a folder of
    its own first. A symbolic link in its place (an agent's) would have the lock,
    and every state file written after it, land in the folder it leads to,
    replacing a person's files of the same names there; the link holds nothing,
    and is removed (the folder it leads to is left as it is). Anything else in its
    place that is not a folder is a person's to move. Then the helper's files in
    it are made files again: a folder (or a pipe) an agent made at one of their
    names, the lock's included, would stop every command from here on; it is set
    aside, kept whole (gtd.own_files)."""
    folder = root / paths.STATE_DIR
    if folder.is_symlink():
        folder.unlink()
    elif os.path.lexists(folder) and not folder.is_dir():
        raise GtdError(
            f"{folder}: not a folder (auto mode keeps its state there)",
            f"move it away ({readable(str(folder))}), then run again",
        )
    else:
        from gtd.own_files import reclaim  # on use: `ratchet run` is a fast path

        reclaim(root)
    return root / paths.LOCK


@contextlib.contextmanager
def locked(lock_path: Path, timeout_s: float = 30.0) -> Iterator[None]:
    """Hold the sidecar lock for a short critical section (state read-modify-write).

    A plain ``flock``: the kernel releases it when the holder dies, so a killed
    helper never leaves a stale lock. filelock does the same on POSIX but costs
    ~40 ms of imports on every tick (docs/dependencies.md), so it is used only where
    there is no ``fcntl`` (Windows), imported there and nowhere else.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    if _fcntl is None:
        with _portable_lock(lock_path, timeout_s):
            yield
        return
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise _timeout(lock_path, timeout_s) from None
                time.sleep(0.02)
        try:
            yield
        finally:
            _fcntl.flock(fd, _fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def held(lock_path: Path) -> Iterator[bool]:
    """Take the lock if it is free, without waiting: yields whether it was taken
    (and holds it until the block ends when it was)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    if _fcntl is None:
        try:
            with _portable_lock(lock_path, 0.0):
                yield True
        except LockTimeout:
            yield False
        return
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the flock


@contextlib.contextmanager
def _portable_lock(lock_path: Path, timeout_s: float) -> Iterator[None]:
    """The same lock through filelock: the OS's file lock on Windows; elsewhere
    without fcntl, its soft lock (a lock file; filelock's warning that only that is
    available is silenced: it would print on every command)."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from filelock import FileLock, Timeout
    except ImportError:
        raise GtdError(
            "no file lock on this system: fcntl is missing and the filelock package is "
            "not installed",
            "reinstall the helper (python3 install.py) so its dependencies are installed",
        ) from None
    lock = FileLock(str(lock_path))
    try:
        lock.acquire(timeout=timeout_s, poll_interval=0.02)
    except Timeout:
        raise _timeout(lock_path, timeout_s) from None
    try:
        yield
    finally:
        lock.release()


def _timeout(lock_path: Path, timeout_s: float) -> LockTimeout:
    holders = lock_holders(lock_path)
    if not holders:
        return LockTimeout(
            f"{lock_path}: another gtd process held the lock for {timeout_s:.0f} s",
            "if no gtd process is running, delete the lock file and retry",
        )
    shown = "; ".join(f"{pid} ({command})" for pid, command in holders)
    return LockTimeout(
        f"{lock_path}: held for {timeout_s:.0f} s by process {shown}",
        "if that is no gtd command still at work (a process an agent left running "
        f"holds it for good), stop it: kill {' '.join(str(p) for p, _ in holders)}",
    )


def lock_holders(lock_path: Path) -> list[tuple[int, str]]:
    """The processes that hold a ``flock`` on ``lock_path`` and their command
    lines, as far as /proc tells (none on a system without it). A lock's inode
    is matched: the device numbers /proc/locks gives differ from stat's on an
    overlay filesystem."""
    try:
        inode = os.stat(lock_path).st_ino
        with open("/proc/locks", "rb") as handle:
            table = handle.read().decode("ascii", "replace")
    except OSError:
        return []
    out: list[tuple[int, str]] = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK" or not fields[4].isdigit():
            continue
        if fields[5].rpartition(":")[2] != str(inode):
            continue
        pid = int(fields[4])
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().rstrip(b"\0").split(b"\0")
        except OSError:
            continue  # gone since
        command = " ".join(a.decode("utf-8", "backslashreplace") for a in argv)
        out.append((pid, command[:200] or "?"))
    return out
