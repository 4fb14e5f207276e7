"""The helper's own worktrees: one per task of a wave, where its implementer works
while the person's working tree stays as it is (docs/parallel.md), made by
`gtd cycle begin` (gtd.auto.cycle.waves).

Where they live, and what marks them as the helper's:

- the checkout: ``$XDG_CACHE_HOME/gtd/waves/<repository>/<loop>/gtd-wave-<task>``
  (``~/.cache`` without it), outside the person's tree and outside git's folder:
  Claude Code's sandbox denies a repository's ``.git`` whole and opens no folder
  inside a denied one, so an implementer could not write a checkout there
  (gtd.auto.sandbox.wave_opening). ``<repository>`` is the key the clean rooms
  use (gtd.auto.ratchet.early.repo_key), made from the common git directory;
  ``<loop>`` is ``main`` or the id of the linked worktree whose loop made it
  (each worktree of a repository runs a loop of its own, gtd.paths.refs_of);
- its branch: ``<the loop's refs>wave/<task>`` (``refs/gtd/wave/T3`` in the main
  work tree), in the helper's ref namespace, never under ``refs/heads/``: no name
  of a person's can collide with it, `git branch` does not show it, and the pins
  (gtd.auto.cycle.manifest) leave ``refs/gtd/`` alone. The checkout's HEAD is
  detached at the tip the branch was made at;
- git's entry for it (``<common>/worktrees/<id>/``) is locked with the reason
  ``gtd-wave <loop>``: a person's `git worktree prune` leaves it, and
  `git worktree remove` asks for ``-f -f``.

:func:`remove_all` takes away every one of the loop's worktrees, their entries and
their branches, whatever state a kill left them in: a half-made checkout, an entry
whose checkout is gone, a checkout git has no entry for, a branch without a
checkout. An entry is the helper's only when its ``gitdir`` leads into the loop's
folder, or git's lock file holds the loop's reason (git writes that before
anything else of a new entry): a person's worktree, wherever it is and whatever
its name, is never touched; nor is another loop's.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from pathlib import Path

from gtd import paths
from gtd.auto.faults import crash_point
from gtd.errors import RepoError
from gtd.fsio import read_bytes, remove_tree
from gtd.git import Git
from gtd.git_locks import children_running
from gtd.tuples import NamedTuple

WAVES = "waves"
# How long the removal waits for a killed helper's git child to finish: a
# checkout of a large tree on a loaded machine.
_CHILD_WAIT_S = 60.0
PREFIX = paths.WAVE_PREFIX
_TASK = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


class Place(NamedTuple):
    """One of the helper's worktrees, as git lists it."""

    task: str
    path: Path
    ref: str  # its branch (full ref name)
    head: str | None  # the checkout's HEAD now


def loop_name(git: Git) -> str:
    """``main``, or the linked worktree's id as one safe path component."""
    own = paths.refs_of(git.worktree_id())
    return "main" if own == paths.GTD_REFS else own.rstrip("/").rsplit("/", 1)[1]


def waves_root() -> Path:
    """``$XDG_CACHE_HOME/gtd/waves``: the folder of every repository's waves,
    beside the clean rooms (``~/.cache`` without XDG_CACHE_HOME)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache, "gtd", WAVES)


def home(git: Git) -> Path:
    """The folder of this loop's worktrees (it may not exist)."""
    from gtd.auto.ratchet.early import repo_key

    common = git.common_dir()
    real = Path(os.path.realpath(common))
    name = real.parent.name if real.name == ".git" else real.name
    return waves_root() / repo_key(str(real), name) / loop_name(git)


def prepare(git: Git) -> Path:
    """:func:`home`, made if missing (each level the helper's), so that a
    sandbox opening it finds a folder before a wave's first worktree."""
    where = home(git)
    _unlink_planted(where)
    _own_folders(where)
    return where


def refs_prefix(git: Git) -> str:
    return f"{paths.refs_of(git.worktree_id())}wave/"


def reason(git: Git) -> str:
    """What git's lock file of each of this loop's worktrees says."""
    return f"gtd-wave {loop_name(git)}"


def create(git: Git, task: str, tip: str) -> Place:
    """A worktree for ``task`` at commit ``tip``, on its branch. The branch is made
    first (create-only: a leftover of a killed run is an error, for
    :func:`remove_all` to clear), then the checkout; a kill between or during
    either leaves what :func:`remove_all` removes."""
    if not _TASK.fullmatch(task):
        raise ValueError(f"not a task id for a worktree: {task!r}")
    oid = git.rev(f"{tip}^{{commit}}")
    if oid is None:
        raise RepoError(f"no commit {tip} to start the worktree of {task} from")
    where = home(git)
    path = where / f"{PREFIX}{task}"
    ref = f"{refs_prefix(git)}{task}"
    if os.path.lexists(path) or git.rev(ref) is not None:
        raise RepoError(
            f"the worktree of {task} is left from an earlier run: {path}",
            "`gtd cycle begin` removes it first",
        )
    _own_folders(where)
    git.update_refs([(ref, oid, "")])
    crash_point("wave-branch")
    git.run("worktree", "add", "-q", "--detach", "--lock", "--reason", reason(git), str(path), oid)
    crash_point("wave-checkout")
    return Place(task, path, ref, oid)


def listing(git: Git) -> list[Place]:
    """This loop's worktrees git lists (a complete or half-made checkout with an
    entry), by task; :func:`remove_all` also finds what git no longer lists."""
    mine = os.path.realpath(home(git))
    prefix = refs_prefix(git)
    out = []
    for path, head, _ in git.worktrees():
        real = os.path.realpath(path)
        name = os.path.basename(real)
        if os.path.dirname(real) == mine and name.startswith(PREFIX):
            task = name.removeprefix(PREFIX)
            out.append(Place(task, Path(path), f"{prefix}{task}", head))
    return sorted(out, key=lambda p: p.task)


def entry_of(git: Git, worktree: str | Path) -> Path | None:
    """git's entry for ``worktree``, one of this loop's (locked with its reason),
    found from the common git folder; None without one. Never from the
    checkout's own ``.git`` file: its implementer may rewrite that to lead to a
    git folder of its own, whose configuration git would obey."""
    want = os.path.realpath(worktree)
    for entry in _entries(git):
        if _locked_by(entry) != reason(git):
            continue
        try:
            raw = read_bytes(entry / "gitdir").decode("utf-8", "surrogateescape").strip()
        except OSError:
            continue
        if raw and os.path.realpath(os.path.dirname(raw)) == want:
            return entry
    return None


def owned(git: Git, path: str | Path) -> bool:
    """Whether ``path`` is (inside) one of this loop's worktrees: what the pins'
    survey of a person's worktrees leaves out."""
    return _under(os.path.realpath(path), os.path.realpath(home(git)))


def remove_all(git: Git, wait_s: float = _CHILD_WAIT_S) -> list[str]:
    """Remove every worktree of this loop, its entry in git and its branch, and
    nothing else; what was removed, one line each (empty when nothing was left).
    Idempotent: a kill during it leaves less for the next call.

    A helper killed while its `git worktree add` ran leaves that git running (each
    child has a session of its own): it goes on making the checkout. Its note in
    the git directory (gtd.git.stale_locks) says so, and the removal waits for it,
    up to ``wait_s``; what a git still running after that makes is the next
    call's to remove."""
    _wait_for_children(git, wait_s)
    where = home(git)
    removed = _unlink_planted(where)
    mine = os.path.realpath(where)
    for entry in _entries(git):
        checkout = _checkout(entry)
        if checkout is not None and not _under(checkout, mine):
            checkout = None  # a forged gitdir: its folder is no one's to delete here
        if _locked_by(entry) != reason(git) and checkout is None and not _unborn(entry):
            continue
        if checkout is not None and os.path.isfile(os.path.join(checkout, ".git")):
            # git's own removal first (it knows its entry's files); what it could
            # not take (a checkout cut short, a lock) goes below.
            git.call("worktree", "remove", "--force", "--force", checkout)
        if checkout is not None and os.path.lexists(checkout):
            remove_tree(checkout, ignore_errors=True)
        if os.path.lexists(entry):
            remove_tree(entry, ignore_errors=True)
        removed.append(f"worktree {checkout or entry}")
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for name in sorted(os.listdir(where)):
            left = where / name
            if left.is_dir() and not left.is_symlink():
                remove_tree(left, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    left.unlink()
            removed.append(f"folder {left}")
    refs = git.refs(refs_prefix(git), check=False)
    if refs:
        oids = [git.rev(ref) for ref in refs]
        git.update_refs([(ref, None, oid) for ref, oid in zip(refs, oids, strict=True)])
        removed += [f"branch {ref}" for ref in refs]
    return removed


def _wait_for_children(git: Git, wait_s: float) -> None:
    dot = git.root / ".git"
    if not dot.is_dir():
        return  # a linked worktree's children are not noted (gtd.git.Git._children)
    deadline = time.monotonic() + wait_s
    while children_running(dot) and time.monotonic() < deadline:
        time.sleep(0.05)


def _levels(where: Path) -> list[Path]:
    """The helper's folders on the way to ``where``: the waves root, the
    repository's folder and the loop's (the cache folder and its ``gtd`` are
    the person's, shared with the clean rooms and the log)."""
    return [where.parent.parent, where.parent, where]


def _unlink_planted(where: Path) -> list[str]:
    """The helper only ever makes folders on the way to ``where``: anything else
    there (a link to a person's folder, say) was planted, and a removal that
    followed it would delete what it leads to. Taken away (a link's target is
    left as it is), so what follows sees no folder of the helper's there."""
    out = []
    for folder in _levels(where):
        try:
            mode = os.lstat(folder).st_mode
        except OSError:
            break
        if stat.S_ISDIR(mode):
            continue
        with contextlib.suppress(OSError):
            os.unlink(folder)
            out.append(f"{folder}, which was no folder of the helper's")
        break
    return out


def _own_folders(where: Path) -> None:
    """``<cache>/gtd/waves/<repository>/<loop>``, each of the helper's levels
    its own (gtd.own_files); the cache folder made as the clean rooms make it."""
    from gtd.own_files import own_folder

    levels = _levels(where)
    levels[0].parent.mkdir(parents=True, exist_ok=True)
    for folder in levels:
        own_folder(folder)


def _entries(git: Git) -> list[Path]:
    """Every entry of git's worktree list, read from the folder itself: an entry
    a kill left before its ``gitdir`` was written is not in `git worktree list`."""
    folder = git.common_dir() / "worktrees"
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [folder / n for n in names if (folder / n).is_dir() and not (folder / n).is_symlink()]


def _checkout(entry: Path) -> str | None:
    """The checkout an entry stands for (its ``gitdir`` names the checkout's
    ``.git`` file), resolved; None without one."""
    try:
        raw = read_bytes(entry / "gitdir").decode("utf-8", "surrogateescape").strip()
    except OSError:
        return None
    return os.path.dirname(os.path.realpath(raw)) if raw else None


def _locked_by(entry: Path) -> str | None:
    try:
        return read_bytes(entry / "locked").decode("utf-8", "surrogateescape").strip()
    except OSError:
        return None


def _unborn(entry: Path) -> bool:
    """An entry git was killed in before it wrote its lock's reason, under a name
    only the helper gives: empty, or holding only a lock file still empty (git
    writes it in place, not atomically). Nothing tells whose, nothing is lost;
    a person's killed `git worktree add` leaves ``initializing`` there instead."""
    try:
        names = os.listdir(entry)
    except OSError:
        return False
    if not entry.name.startswith(PREFIX) or set(names) - {"locked"}:
        return False
    return not names or _locked_by(entry) == ""


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
