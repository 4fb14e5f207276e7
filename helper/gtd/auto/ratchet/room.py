"""The clean room: a checkout outside the repository where the ratchet runs the
configured commands, so the verdict reads nothing an agent wrote except the
candidate change itself.

Each repository has a few room *slots* under ``$XDG_CACHE_HOME/gtd/rooms/``
(``~/.cache/gtd/rooms/`` by default), one per concurrent run, each held with an
``flock`` for the run's length (when every one is held, a run makes a slot of its
own, ``busy-*``, and removes it afterwards). A slot keeps, between runs:

- ``tree/``: the checkout. It is brought to the judged tree with `git read-tree
  --reset -u` through a private index (only files that differ are rewritten, and a
  file changed behind git's back is rewritten too: its stat data no longer
  matches), then `git clean -ffdx` removes everything git did not put there —
  test litter of the last run, bytecode, anything planted — except the paths
  configured in ``ratchet.link``, which are symlinks to the live repository
  (ignored paths a suite needs: a virtualenv, ``node_modules``, a ``.env``).
- ``index``: that private index. The repository's own index, HEAD and working
  tree are never touched; git runs with GIT_WORK_TREE and GIT_INDEX_FILE set.
  Nothing of the helper writes the index (or ``tree-id``) once a run has ended, so
  one changed since is not trusted: the slot starts over from an empty checkout.
- after a run, every file of the checkout written since its sync (by stat data
  against the index; a change time cannot be set back) refuses the run (see
  :func:`touched`).
- bytecode (``__pycache__``) is kept between runs, so a run does not recompile
  the project, but only where it is provably the last run's own (see
  :func:`_prune_bytecode`): planted or stale bytecode never loads.
- ``site/``: the ratchet's pytest plugin, written afresh for every run.
- ``hypothesis/``: hypothesis's storage for the run, emptied at each sync and
  given only the Unicode tables the helper checked (gtd.auto.ratchet.hypotables).

The checkout has no ``.git``: a test that runs git in its working directory sees
no repository there.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from gtd import digest as sha
from gtd import gitindex
from gtd.auto.ratchet import early, hypotables
from gtd.errors import GtdError
from gtd.fsio import held, open_regular, read_bytes, remove_tree, walk
from gtd.git import Git
from gtd.git_locks import children_running
from gtd.tuples import NamedTuple

SLOTS = 4
CANDIDATE_INDEX = "candidate.index"
COMPOSE_INDEX = "compose.index"
_LAST_RUN = "last-run"
_TREE = "tree-id"


class Room(NamedTuple):
    slot: Path  # the slot directory
    tree: Path  # the checkout the commands run in
    index_file: Path
    site: Path
    live: Path  # the repository root
    # Since when the slot's files are not trusted, fixed by the holder's first sync
    # (a list: the one mutable part, filled in place).
    since: list[float | None]
    # A cycle's end: when its agent began (epoch seconds). The runs then report the
    # test environment's files run as code that changed since (room_run.run).
    began: float | None = None


def rooms_home() -> Path:
    return Path(early.rooms_home())


def _repo_id(git: Git) -> str:
    return early.repo_key(str(git.git_dir()), git.root.name)


@contextlib.contextmanager
def acquire(git: Git, runs: int | None = None) -> Iterator[Room]:
    """A free slot of this repository's rooms, held until the block ends, once a
    seat among ``runs`` (None: the config's `test_runs`) is free
    (gtd.auto.ratchet.seats: at most that many judged runs at once)."""
    from gtd.auto import config
    from gtd.auto.ratchet import seats

    cap = runs if runs is not None else config.test_runs(git.root)
    base = rooms_home() / _repo_id(git)
    try:
        base.parent.mkdir(parents=True, exist_ok=True)
        _real_directory(base)
    except OSError as exc:
        raise GtdError(
            f"cannot create the clean room under {base}: {exc.strerror or exc}",
            "make the directory writable, or point XDG_CACHE_HOME somewhere writable",
        ) from None
    with seats.seat(base, cap), _slot(git, base) as room:
        yield room


@contextlib.contextmanager
def _slot(git: Git, base: Path) -> Iterator[Room]:
    for number in range(SLOTS):
        slot = base / str(number)
        _real_directory(slot)
        with held(slot / "lock") as taken:
            if not taken:
                continue
            _remove_dead_locks(git, slot)
            try:
                yield Room(slot, slot / "tree", slot / "index", slot / "site", git.root, [])
            finally:
                with contextlib.suppress(OSError):
                    (slot / _LAST_RUN).write_text("")
            return
    # Every slot is held: more runs at once than there are slots, or a process left
    # running to hold them all (an agent's) so that nothing could be judged. A slot
    # of this run's own judges the same, only without a kept checkout and bytecode
    # (a slower run); nothing else knows its name, and it is removed afterwards.
    import tempfile

    for old in base.glob("busy-*"):
        # A killed run's: its lock is free (and it is not one just made, whose
        # run has yet to take its lock).
        if _mtime(old) is None or (_mtime(old) or 0) > time.time() - _BUSY_YOUNG_S:
            continue
        with held(old / "lock") as taken:
            if taken:
                remove_tree(old, ignore_errors=True)
    try:
        slot = Path(tempfile.mkdtemp(prefix="busy-", dir=base))
    except OSError as exc:
        raise GtdError(
            f"all {SLOTS} clean rooms of this repository are busy ({base}), and no "
            f"other can be made: {exc.strerror or exc}",
            "make the directory writable, or wait for the other gtd runs to finish",
        ) from None
    try:
        with held(slot / "lock"):  # so that a later run's sweep leaves it alone
            yield Room(slot, slot / "tree", slot / "index", slot / "site", git.root, [])
    finally:
        remove_tree(slot, ignore_errors=True)


# A room made when every slot was held is another run's for at least this long.
_BUSY_YOUNG_S = 60.0
# How long a run waits for a noted git child to end before it leaves a slot's
# lock file in place (git then names it).
_CHILD_WAIT_S = 5.0
# The slot's private indexes: the checkout's, the candidate tree's, the judged trees'.
_INDEXES = ("index", CANDIDATE_INDEX, COMPOSE_INDEX)


def _remove_dead_locks(git: Git, slot: Path) -> None:
    """The lock files a killed run's git left on the slot's private indexes; left
    there, every later run would stop at "git is locked". The slot is held (flock),
    so no live run uses it; a killed run's git child may still be finishing (the
    helper noted it in the git directory), and while one may be, nothing is
    removed (git then names the lock)."""
    locks = [slot / f"{name}.lock" for name in _INDEXES]
    present = [lock for lock in locks if os.path.lexists(lock)]
    if not present:
        return
    # Any noted child counts (the notes do not say which index a child writes),
    # including another gtd process's in this repository: wait a moment for it.
    deadline = time.monotonic() + _CHILD_WAIT_S
    while children_running(git.git_dir()):
        if time.monotonic() > deadline:
            return
        time.sleep(0.02)
    for lock in present:
        with contextlib.suppress(OSError):
            lock.unlink()


def candidate_index(room: Room, trust_until: float | None = None) -> Path:
    """The private index the candidate tree is built in (gtd.git.Git.worktree_tree),
    kept between runs so that only changed files are hashed again. Like the
    checkout's index it is trusted only when nothing wrote it since the helper
    did: an agent could record a changed file's stat data under the base's blob
    id, and git would take the entry as up to date (the candidate would hold code
    the working tree does not). ``trust_until``: as for :func:`sync`."""
    index = room.slot / CANDIDATE_INDEX
    since = trust_until if trust_until is not None else _mtime(room.slot / _LAST_RUN)
    if _written_after(index, since):
        index.unlink(missing_ok=True)
    return index


def _env(room: Room, git: Git) -> dict[str, str]:
    return {
        "GIT_DIR": str(git.git_dir()),
        "GIT_WORK_TREE": str(room.tree),
        "GIT_INDEX_FILE": str(room.index_file),
    }


def sync(
    git: Git,
    room: Room,
    tree: str,
    links: Sequence[str] = (),
    *,
    trust_until: float | None = None,
) -> None:
    """Make the checkout exactly ``tree``, plus the configured links; keep only the
    bytecode that is still the checkout's own.

    ``trust_until``: when an agent may have started writing (the cycle's begin);
    nothing in the slot changed after it is trusted. Without it, the end of the
    slot's last run (its marker: a file an agent could also move, which a run
    with no agent at work need not fear)."""
    _real_directory(room.tree)
    env = _env(room, git)
    first = not room.since
    if first:
        room.since.append(trust_until if trust_until is not None else _mtime(room.slot / _LAST_RUN))
    since = room.since[0]
    previous = _read(room.slot / _TREE)
    untrusted = _written_after(room.index_file, since) or _written_after(room.slot / _TREE, since)
    if first and untrusted:
        # Nothing of ours writes them once a run has ended: an index changed since
        # could say a planted file is already the candidate's (its stat data kept,
        # another blob id written over it). Start over from nothing.
        _start_over(room)
        previous = None
    (room.slot / _TREE).unlink(missing_ok=True)  # unknown until this sync completes
    result = git.call("read-tree", "--reset", "-u", tree, env=env, cwd=room.tree)
    if result.returncode != 0:
        # A damaged private index (or a checkout an agent scrambled): start over.
        _start_over(room)
        previous = None
        git.run("read-tree", "--reset", "-u", tree, env=env, cwd=room.tree)
    excludes = ["-e", "__pycache__"]
    excludes += [arg for link in links for arg in ("-e", "/" + link.strip("/"))]
    git.run("clean", "-ffdxq", *excludes, env=env, cwd=room.tree)
    for link in links:
        _link(room, link.strip("/"))
    _prune_bytecode(git, room, previous, tree, since)
    hypotables.prepare(room.slot, since)
    (room.slot / _TREE).write_text(tree + "\n")


def _real_directory(path: Path) -> None:
    """``path`` as a directory of its own. A symbolic link there (or a file) is
    not the helper's: the room is cleaned with `git clean -ffdx`, which must never
    reach through a link into a person's files (the live repository, a home)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    path.mkdir(exist_ok=True)


def _written_after(path: Path, since: float | None) -> bool:
    """Whether ``path`` exists and changed after ``since`` (any change moves its
    change time, which cannot be set back); with no ``since``, whether it exists."""
    try:
        changed = path.stat().st_ctime
    except OSError:
        return False
    return since is None or changed > since


def _start_over(room: Room) -> None:
    """An empty checkout and no private index. The slot is ours (flock), so its
    index lock can only be a dead run's."""
    room.index_file.unlink(missing_ok=True)
    (room.slot / "index.lock").unlink(missing_ok=True)
    remove_tree(room.tree, ignore_errors=True)
    _real_directory(room.tree)


def _read(path: Path) -> str | None:
    try:
        return read_bytes(path).decode("utf-8", "replace").strip() or None
    except OSError:
        return None


def _prune_bytecode(
    git: Git, room: Room, previous: str | None, tree: str, since: float | None
) -> None:
    """Bytecode stays between runs (recompiling a project on every run is slow),
    but only where it is provably the run's own: the caches of modules this sync
    rewrote are dropped (a rewrite within the second of the last compile would
    otherwise pass the timestamp check), and a cache anything else wrote after the
    slot stopped being trusted (a planted file: its ctime cannot be set back) is
    wiped."""
    changed: set[str] | None = None
    if previous == tree and since is not None:
        changed = set()  # the same tree again: no module was rewritten
    elif previous is not None and since is not None:
        diff = git.call("diff-tree", "-r", "-z", "--name-only", "--no-renames", previous, tree)
        # A previous tree the repository does not have (it was made anew at the same
        # path, the slot is a dead one's): nothing is known, every cache goes.
        if diff.returncode == 0:
            changed = {p for p in diff.stdout.split("\0") if p}
    for parent, dirs, _files in walk(room.tree):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(parent, d))]
        if "__pycache__" not in dirs:
            continue
        cache = Path(parent) / "__pycache__"
        dirs.remove("__pycache__")
        if changed is None or since is None or _changed_since(cache, since):
            remove_tree(cache, ignore_errors=True)
            continue
        folder = Path(parent).relative_to(room.tree).as_posix()
        prefix = "" if folder == "." else folder + "/"
        for name in os.listdir(cache):
            stem = name.split(".", 1)[0]
            if f"{prefix}{stem}.py" in changed:
                with contextlib.suppress(OSError):
                    os.unlink(cache / name)


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _link(room: Room, rel: str) -> None:
    target = room.live / rel
    place = room.tree / rel
    if place.is_symlink():
        if os.readlink(place) == str(target):
            return
        place.unlink()
    elif place.is_dir() and not any(place.iterdir()):
        place.rmdir()  # an empty submodule folder: the live checkout is linked in
    elif place.exists():
        return  # the tree itself has this path (tracked): the tree wins
    if not os.path.lexists(target):
        return  # nothing to link (yet): the command reports what it misses
    place.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, place)


def _changed_since(folder: Path, since: float) -> bool:
    try:
        if folder.stat().st_ctime > since:
            return True
        return any(
            entry.stat(follow_symlinks=False).st_ctime > since for entry in os.scandir(folder)
        )
    except OSError:
        return True


def altered(git: Git, room: Room, expected: Mapping[str, str]) -> list[str]:
    """The paths whose content in the checkout is not the blob ``expected`` says
    (rewritten behind git's back, or during the run), by content, not stat data.
    Anything but a regular file is altered (git would hash a link's target). A
    file holding the blob's very bytes is hashed here, without a process (the
    usual case); any other is hashed the way git would store it (line endings
    converted as the repository's attributes and core.autocrlf say), in one git
    call."""
    out: list[str] = []
    asked: list[str] = []
    for path in sorted(expected):
        file = room.tree / path
        try:
            regular = stat.S_ISREG(os.lstat(file).st_mode)
        except OSError:
            regular = False
        if not regular:
            out.append(path)
        elif not _holds_blob(file, expected[path]):
            asked.append(path)
    if asked:
        result = git.call(
            "hash-object", "--stdin-paths", input_text="".join(map(_stdin_path, asked)),
            env=_env(room, git), cwd=room.tree,
        )  # fmt: skip
        oids = result.stdout.split()
        if result.returncode != 0 or len(oids) != len(asked):
            return sorted(out + asked)
        out.extend(p for p, oid in zip(asked, oids, strict=True) if oid != expected[p])
    return sorted(out)


def _holds_blob(path: Path, oid: str) -> bool:
    """Whether ``path`` is a regular file (not a link to one) whose bytes are
    exactly the blob ``oid``. Bytes equal to the committed blob are unaltered
    whatever filters say; anything else git hashes as it would store it. Read in
    pieces: a large fixture costs no more memory than git's own hashing."""
    # (without waiting: a named pipe swapped in since the caller's lstat is no
    # regular file, not the blob's)
    opened = open_regular(path, follow=False)
    if opened is None:
        return False
    fd, info = opened
    try:
        digest = sha.blob_hash(info.st_size, len(oid))
        left = info.st_size
        while left > 0:
            piece = os.read(fd, min(left, 1 << 20))
            if not piece:
                return False  # shorter than it said: changed while read
            digest.update(piece)
            left -= len(piece)
        if os.read(fd, 1):
            return False  # longer than it said
    except OSError:
        return False
    finally:
        os.close(fd)
    return digest.hexdigest() == oid


def _stdin_path(path: str) -> str:
    """One line of `git hash-object --stdin-paths`: a path git would split or trim
    (a newline, a carriage return, a leading quote) C-quoted, as git reads it. A
    file name with a newline, once committed, otherwise made every later check
    hash the wrong files and refuse every cycle."""
    if not any(c in path for c in '\n\r"\\'):
        return path + "\n"
    quoted = path.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + quoted.replace("\n", "\\n").replace("\r", "\\r") + '"\n'


def touched(git: Git, room: Room, ignore: frozenset[str] = frozenset()) -> list[str]:
    """The checkout's files written (or removed) since the last sync, by their stat
    data against the private index: a file's change time cannot be set back, so a
    write that put the content back is seen too. Read in the process where the
    index is small and plain (:func:`_touched_here`), else one git call.
    ``ignore``: paths the sync does not write (submodules, whose folders the links
    may fill)."""
    here = _touched_here(room, ignore)
    return here if here is not None else _touched_by_git(git, room, ignore)


def _touched_by_git(git: Git, room: Room, ignore: frozenset[str]) -> list[str]:
    result = git.call(
        "-c", "core.trustctime=true", "-c", "core.checkStat=default",
        "diff-files", "--name-only", "-z", env=_env(room, git), cwd=room.tree,
    )  # fmt: skip
    if result.returncode != 0:
        return ["(the clean room's index is unreadable)"]
    return sorted(p for p in result.stdout.split("\0") if p and p not in ignore)


# Above this many entries `git diff-files` answers sooner than the process's own
# reading and lstat of each file: ~3.4 µs an entry here against git's ~1.4 ms
# start and ~0.5 µs an entry (30 files: 0.13 against 1.4 ms; 500: 1.7 against
# 1.9 ms; 5,000: 19 against 4 ms; docs/performance.md).
_HERE_MOST = 400


def _touched_here(room: Room, ignore: frozenset[str]) -> list[str] | None:
    """What `git -c core.trustctime=true -c core.checkStat=default diff-files
    --name-only` says of the checkout, without the process; None where only git
    can say (gtd.gitindex reads no more than it can read exactly as git does).

    As git: an entry whose file is gone, is of another kind (a link for a file,
    a file for a link), lost or gained its owner's execute bit, lies behind a
    symbolic link to a folder, or whose stat data (change and modification times,
    inode, owner, group, size) differs from what the sync recorded, was written.
    Unlike git, the times are compared to the nanosecond where the index has
    them (git compares seconds unless built otherwise): a write within the same
    second as the sync is seen too. An entry whose stat data still matches but
    was recorded in the second the index was written ("racily clean": a write
    in that second can leave it unchanged) is compared by content, as git does;
    bytes that are not the blob's own (line-ending filters) go to git."""
    index = gitindex.read(str(room.index_file), _HERE_MOST)
    if index is None:
        return None
    tree = str(room.tree) + os.sep
    folders: dict[str, bool] = {}  # a folder of the checkout -> a real folder (no link)
    out: list[str] = []
    for entry in index.entries:
        path = entry.path
        if path in ignore:
            continue
        kind = stat.S_IFMT(entry.mode)
        if kind not in (stat.S_IFREG, stat.S_IFLNK):
            return None  # a submodule not ignored: git looks into it
        if not _real_folders(tree, path, folders):
            out.append(path)
            continue
        try:
            st = os.lstat(tree + path)
        except OSError:
            out.append(path)
            continue
        if kind == stat.S_IFREG:
            same = stat.S_ISREG(st.st_mode) and not (entry.mode ^ st.st_mode) & 0o100
        else:
            same = stat.S_ISLNK(st.st_mode)
        now = gitindex.stat_data(st)
        recorded = entry.stat
        if recorded[1] == 0 and recorded[3] == 0 and (now[1] or now[3]):
            return None  # an index without nanoseconds (a git built without them)
        if not same or now != recorded:
            out.append(path)
        elif recorded[7] == 0 and entry.oid not in _EMPTY_BLOBS:
            out.append(path)  # smudged by git as racily clean and changed: written
        elif (recorded[2] >= index.stamp_s or recorded[0] >= index.stamp_s) and (
            kind != stat.S_IFREG or not _holds_blob(Path(tree + path), entry.oid)
        ):
            return None  # git compares it as it would store it
    return sorted(out)


_EMPTY_BLOBS = frozenset(
    {
        "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
        "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
    }
)


def _real_folders(tree: str, path: str, folders: dict[str, bool]) -> bool:
    """Whether every folder on ``path``'s way inside the checkout is a folder,
    not a symbolic link or anything else (git's leading-path check). Walked up to
    the nearest folder already known, then down, without recursion: a checkout
    can nest deeper than Python's recursion limit."""
    parent = path.rpartition("/")[0]
    unknown: list[str] = []
    while parent and parent not in folders:
        unknown.append(parent)
        parent = parent.rpartition("/")[0]
    real = folders[parent] if parent else True
    for folder in reversed(unknown):
        if real:
            try:
                real = stat.S_ISDIR(os.lstat(tree + folder).st_mode)
            except OSError:
                real = False
        folders[folder] = real
    return real


def environment(room: Room) -> dict[str, str]:
    """What a command run in the room adds to the environment: hypothesis keeps
    its storage in the slot, not the checkout (gtd.auto.ratchet.hypotables)."""
    return {"PWD": str(room.tree), hypotables.VARIABLE: str(hypotables.folder(room.slot))}
