"""The helper's own files in `.deepflow/` stay files. The folder is ignored and an
agent can write there during a cycle: a folder, a named pipe or a socket made
where the helper keeps one of its files would stop every later command (a write
cannot replace a folder, a lock cannot be opened in one, a read of a pipe never
ends). Nothing there is the helper's to delete, so such a thing is set aside whole
into the helper's folder in the git directory, named on stderr, and the command
goes on. (A symbolic link or a hard link there is left: the helper's writes
replace the name, never write through it; see gtd.fsio.)"""

from __future__ import annotations

import errno
import itertools
import os
import sys
import time
from pathlib import Path
from stat import S_ISDIR, S_ISFIFO, S_ISLNK, S_ISREG, S_ISSOCK

from gtd import paths
from gtd.errors import GtdError
from gtd.names import readable

# Every file the helper writes in `.deepflow/` (the config is the person's).
OWN = (
    paths.LOCK,
    paths.JOURNAL,
    paths.SNAPSHOT,
    paths.SNAPSHOT_JSON,
    paths.MEMORY,
    paths.REPORT,
    paths.BRIEF,
    paths.CHECK_LOG,
    paths.REPORTED,
    paths.RENDERED,
)
# In the helper's folder in the git directory: one new folder per thing set aside.
SET_ASIDE = "set-aside"
_SEQUENCE = itertools.count()
_DIR_FLAGS = (
    os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


def reclaim(root: Path, names: tuple[str, ...] = OWN) -> list[Path]:
    """Set aside whatever is at one of ``names`` (repository-relative) and is
    neither a regular file nor a symbolic link; each move is said on stderr.
    Returns where they went. A cheap `lstat` per name when nothing is amiss: this
    runs before every command takes the state lock."""
    moved: list[Path] = []
    for rel in names:
        path = root / rel
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if S_ISREG(mode) or S_ISLNK(mode):
            continue
        kept = set_aside(root, path)
        if kept is None:
            continue
        print(
            f"gtd: {readable(str(path))} was {_kind(mode)}, where gtd keeps a file of "
            f"its own (made during a cycle, say): moved to {readable(str(kept))}, nothing "
            "deleted; look inside, then delete it",
            file=sys.stderr,
        )
        moved.append(kept)
    return moved


def set_aside(root: Path, path: Path) -> Path | None:
    """Move ``path`` (itself, never where a link leads) into a new folder of its own
    under `<git dir>/gtd/set-aside/`; returns its new path, or None when it was
    gone before the move (another gtd command set it aside first). The git
    directory on another file system than the work tree (a rename cannot cross
    one): under `.deepflow/set-aside/` instead, which the sweep never touches. A
    move that cannot be made at all (no permission) is an error naming both
    places."""
    folder = Path(_git_dir(root), paths.PRIVATE_DIR, SET_ASIDE)
    try:
        own_folder(folder.parent)
        try:
            return _move_into(path, own_folder(folder))
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
        folder = root / paths.STATE_DIR / SET_ASIDE
        return _move_into(path, own_folder(folder))
    except OSError as exc:
        raise _cannot(path, folder, exc.strerror or str(exc)) from None


def _move_into(path: Path, folder: Path) -> Path | None:
    """``path`` moved into a new folder in ``folder``. No link is followed on the
    way in: each folder is opened with O_NOFOLLOW and the move made relative to it,
    so nothing lands where an agent's link leads."""
    top = os.open(folder, _DIR_FLAGS)
    try:
        name = _new_folder(top)
        inner = os.open(name, _DIR_FLAGS, dir_fd=top)
        try:
            os.rename(path, path.name, dst_dir_fd=inner)
        except OSError:
            os.rmdir(name, dir_fd=top)  # empty: nothing came in
            if not os.path.lexists(path):
                return None
            raise
        finally:
            os.close(inner)
    finally:
        os.close(top)
    return folder / name / path.name


def _new_folder(top: int) -> str:
    """A new folder in ``top``, named by the time and this process: mkdir is
    exclusive, so it is this call's alone."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    while True:
        name = f"{stamp}-{os.getpid()}-{next(_SEQUENCE)}"
        try:
            os.mkdir(name, dir_fd=top)
            return name
        except FileExistsError:
            continue


def private_dir(git_dir: Path) -> Path:
    """The helper's folder in the git directory: private indexes, and what is set
    aside."""
    return own_folder(git_dir / paths.PRIVATE_DIR)


def own_folder(folder: Path) -> Path:
    """``folder``, one the helper keeps in the git directory, made if missing.
    Anything else in its place is not the helper's, which only ever makes a
    directory there: a file would stop every later cycle at the mkdir, and a
    symbolic link would have the helper write and delete where it leads. It is
    removed (a link's target is left as it is)."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink()
    folder.mkdir(exist_ok=True)
    return folder


def _git_dir(root: Path) -> Path:
    from gtd.git import Git  # on use: nothing to set aside is the common case

    return Git(root, hardened=True).git_dir()


def _kind(mode: int) -> str:
    if S_ISDIR(mode):
        return "a folder"
    if S_ISFIFO(mode):
        return "a named pipe"
    if S_ISSOCK(mode):
        return "a socket"
    return "not a regular file (a device?)"


def _cannot(path: Path, folder: Path, why: str) -> GtdError:
    shown = readable(str(path))
    return GtdError(
        f"{shown}: not a file, where gtd keeps a file of its own, and it could not be "
        f"moved to {readable(str(folder))} ({why})",
        f"move it out of the way yourself (mv {shown} <somewhere else>), then run again",
    )
