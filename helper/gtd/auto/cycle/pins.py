"""Pins: a person's refs, stash entries and other worktrees, copied where the
agent's git commands cannot reach them when a cycle begins, and put back when it
ends (docs/your-work-is-safe.md).

The pins live in a side repository of the helper's, ``<git dir>/gtd/pins.git``:
a bare repository with its own object store, which no `git branch -D`, `git
stash clear`, `git reflog expire` or `git gc` run in the work tree ever reads or
prunes (it is never anyone's remote, and gc never runs there). Each object a ref
of the person's names is pinned there by a ref of its own,
``refs/pins/<worktree>/<oid>``; the manifest (gtd.auto.cycle.manifest) is a blob
there too, and its id is sealed in the journal. Pinning is incremental: only the
objects reachable from the new tips and not from the tips already pinned are
packed (`git pack-objects --revs`, written straight into the side repository's
pack folder), so a begin with no new commit packs nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from gtd import paths
from gtd.auto.cycle import manifest as mf
from gtd.auto.cycle.manifest import Manifest, Worktree
from gtd.digest import sha256
from gtd.errors import GitError
from gtd.fsio import atomic_write_bytes, locked, read_bytes
from gtd.git import HARDENED_ENV, Git

SIDE = "pins.git"
# The side repository's git: no hooks, no fsmonitor, replace refs ignored, and its
# own git directory named (it is bare; the hardened env says core.bare=false).
_SIDE_ENV = {k: v for k, v in HARDENED_ENV.items() if not k.startswith("GIT_CONFIG_")}
_SIDE_ENV.update(
    {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "core.hooksPath",
        "GIT_CONFIG_VALUE_0": os.devnull,
        "GIT_CONFIG_KEY_1": "core.fsmonitor",
        "GIT_CONFIG_VALUE_1": "false",
    }
)
_LOCK = "gtd.lock"
_PACKS_MAX = 32
_MANIFESTS = "gtd-manifests"
# How many uncommitted paths of another worktree the manifest names.
_DIRTY_NAMES = 50


def side_path(git: Git) -> Path:
    return git.common_dir() / paths.PRIVATE_DIR / SIDE


def side(git: Git) -> Git:
    """The side repository, made on first use."""
    from gtd.own_files import own_folder

    path = side_path(git)
    own_folder(path.parent)
    env = {**_SIDE_ENV, "GIT_DIR": str(path)}
    repo = Git(path.parent, env=env)
    if not (path / "HEAD").is_file():
        repo.run("init", "--bare", "-q", str(path))
        for key, value in (
            ("gc.auto", "0"),
            ("receive.autogc", "false"),
            ("core.logAllRefUpdates", "false"),
        ):
            repo.run("config", key, value)
    return repo


def namespace(git: Git) -> str:
    return git.worktree_id() or "main"


# -- begin -------------------------------------------------------------------------------


def read_refs(git: Git) -> dict[str, str]:
    raw = git.run("for-each-ref", "--format=%(objectname) %(refname)")
    out: dict[str, str] = {}
    for line in raw.splitlines():
        oid, _, name = line.partition(" ")
        if name:
            out[name] = oid
    return out


def read_stash(git: Git, refs: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The stash entries, newest first, with their messages (`git stash list`)."""
    if mf.STASH not in refs:
        return ()
    raw = git.call("log", "-g", "-z", "--format=%H %gs", mf.STASH).stdout
    entries = []
    for record in raw.split("\0"):
        oid, _, message = record.strip("\n").partition(" ")
        if oid:
            entries.append((oid, message))
    return tuple(entries)


def read_worktrees(git: Git) -> list[tuple[str, str | None, str | None]]:
    """(path, HEAD, branch) of every worktree of the repository, this one included."""
    return git.worktrees()


def _others(git: Git) -> list[Worktree]:
    """The person's other worktrees: the helper's own for a wave
    (gtd.auto.cycle.worktrees) are not theirs, and come and go with the wave."""
    from gtd.auto.cycle import worktrees

    here = os.path.realpath(git.root)
    out = []
    for path, head, branch in read_worktrees(git):
        if os.path.realpath(path) == here or not os.path.isdir(path):
            continue
        if worktrees.owned(git, path):
            continue
        status = git.call("status", "--porcelain", "-z", "--untracked-files=all", cwd=Path(path))
        names = [r[3:] for r in status.stdout.split("\0") if len(r) > 3]
        out.append(Worktree(path, head, branch, tuple(names[:_DIRTY_NAMES])))
    return out


def take(git: Git, ignored: list[str]) -> dict[str, str]:
    """Pin everything of the person's the agent's git commands could lose; the
    seal (side repository, namespace, manifest blob) for the journal."""
    from gtd.auto.cycle import ignored as ignored_files

    repo = side(git)
    refs = read_refs(git)
    stash = read_stash(git, refs)
    found, unlisted = ignored_files.survey(git.root, repo, ignored)
    made = Manifest(
        refs={r: o for r, o in refs.items() if mf.pinned(r)},
        stash=stash,
        worktrees=tuple(_others(git)),
        ignored=found,
        unlisted=unlisted,
    )
    ns = namespace(git)
    data = mf.dumps(made)
    with locked(side_path(git) / _LOCK):
        pinned = _read_pins(side_path(git))
        prefix = f"refs/pins/{ns}/"
        old = {name.removeprefix(prefix) for name in pinned if name.startswith(prefix)}
        new = mf.tips(made)
        added = [oid for oid in new if oid not in old]
        if added:
            kept = [oid for oid in new if oid in old]
            listing = "".join(f"{oid}\n" for oid in added) + "".join(f"^{oid}\n" for oid in kept)
            git.run(
                "pack-objects", "--revs", "-q", str(side_path(git) / "objects" / "pack" / "pack"),
                input_text=listing,
            )  # fmt: skip
        if added or len(old) != len(new):
            others = {r: o for r, o in pinned.items() if not r.startswith(prefix)}
            _write_pins(side_path(git), {**others, **{prefix + oid: oid for oid in new}})
        _consolidate(repo, side_path(git))
        manifest = side_path(git) / _MANIFESTS / f"{ns}.json"
        manifest.parent.mkdir(exist_ok=True)
        atomic_write_bytes(manifest, data)
    return {"namespace": ns, "manifest": sha256(data).hexdigest()}


def _consolidate(repo: Git, side: Path) -> None:
    """One pack of the pinned objects again once a begin a new commit has made
    too many: each is a file git looks in. Objects no pin reaches any more (a
    branch deleted between cycles) are dropped; the loose copies of ignored
    files are left (repack only removes loose objects it packed)."""
    try:
        packs = sum(1 for name in os.listdir(side / "objects" / "pack") if name.endswith(".pack"))
    except OSError:
        return
    if packs > _PACKS_MAX:
        repo.run("repack", "-a", "-d", "-q")


def _read_pins(side: Path) -> dict[str, str]:
    """The side repository's refs: its ``packed-refs`` file, which only the
    helper writes (under the side's lock). One file for thousands of refs: git
    writing each as a loose ref took seconds (a file, a lock, a rename apiece)."""
    try:
        raw = read_bytes(side / "packed-refs").decode("utf-8", "surrogateescape")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in raw.splitlines():
        if line and line[0] not in "#^":
            oid, _, name = line.partition(" ")
            out[name] = oid
    return out


def _write_pins(side: Path, refs: dict[str, str]) -> None:
    lines = "".join(f"{oid} {name}\n" for name, oid in sorted(refs.items()))
    atomic_write_bytes(side / "packed-refs", ("# pack-refs with: sorted \n" + lines).encode())


# -- end ---------------------------------------------------------------------------------


def load(git: Git, seal: dict[str, str]) -> Manifest | None:
    """The manifest sealed at `begin`; None when it is gone or is not the one
    sealed (its digest differs)."""
    path = side_path(git) / _MANIFESTS / f"{seal.get('namespace')}.json"
    try:
        data = read_bytes(path)
    except OSError:
        return None
    return _checked(data, seal)


def manifest_bytes(git: Git, seal: dict[str, str]) -> bytes | None:
    """The manifest :func:`take` just wrote, for a copy in the sealed state."""
    path = side_path(git) / _MANIFESTS / f"{seal.get('namespace')}.json"
    try:
        data = read_bytes(path)
    except OSError:
        return None
    return data if sha256(data).hexdigest() == seal.get("manifest") else None


def load_copy(git: Git, seal: dict[str, str], name: str) -> Manifest | None:
    """The manifest's copy sealed in the state (``name`` in its tree), where the
    side repository was lost (`rm -rf .git/gtd`): the list of the person's refs
    at `begin`, to put back those whose commits git still has."""
    from gtd.auto import state

    (found,) = git.objects([f"{state.ref(git)}:{name}"])
    return None if found is None else _checked(found.data, seal)


def _checked(data: bytes, seal: dict[str, str]) -> Manifest | None:
    if sha256(data).hexdigest() != seal.get("manifest"):
        return None
    try:
        return mf.loads(data)
    except (ValueError, KeyError, TypeError):
        return None


def _fetch_missing(git: Git, seal: dict[str, str], oids: list[str]) -> None:
    """The objects of ``oids`` (with all they reach) brought back from the side
    repository where the cycle had them pruned."""
    wanted = list(dict.fromkeys(oids))
    present = git.call("cat-file", "--batch-check", input_text="".join(f"{o}\n" for o in wanted))
    gone = [line.split()[0] for line in present.stdout.splitlines() if line.endswith(" missing")]
    if not gone or not (side_path(git) / "HEAD").is_file():
        return  # (no pins to fetch from: a ref whose commit is gone is named)
    ns = seal["namespace"]
    git.run(
        "-c", "gc.auto=0", "-c", "maintenance.auto=false",
        "fetch", "-q", "--no-tags", "--no-write-fetch-head",
        str(side_path(git)), *(f"refs/pins/{ns}/{oid}" for oid in gone),
    )  # fmt: skip


def called(ref: str) -> str:
    for prefix, word in (("refs/heads/", "branch"), ("refs/tags/", "tag")):
        if ref.startswith(prefix):
            return f"{word} {ref.removeprefix(prefix)}"
    return f"ref {ref}"


def settle(
    git: Git, seal: dict[str, str], cycle: int, branch: str, before: Manifest | None = None
) -> list[str]:
    """Put back every ref and stash entry of the person's the cycle deleted or
    moved; name the worktrees it removed. What was done, a sentence each.
    ``before``: the manifest (by default the side repository's)."""
    before = load(git, seal) if before is None else before
    if before is None:
        return []
    gtd_refs = paths.refs_of(git.worktree_id())
    now = read_refs(git)
    worktrees = read_worktrees(git)
    here = os.path.realpath(git.root)
    checked_out = {b for p, _, b in worktrees if b and os.path.realpath(p) != here}
    repairs, left = mf.ref_repairs(before.refs, now, [f"refs/heads/{branch}"], checked_out)
    order = mf.stash_order(before.stash, read_stash(git, now))
    lost = mf.lost_worktrees(before.worktrees, {p for p, _, _ in worktrees})
    detached = [w for w in lost if w.branch is None and w.head]
    if not (repairs or order or lost or left):
        return []
    _fetch_missing(
        git,
        seal,
        [r.to for r in repairs] + [c for c, _ in order or ()] + [w.head or "" for w in detached],
    )
    notes: list[str] = []
    for r in repairs:
        moves: list[tuple[str, str | None, str | None]] = [(r.ref, r.to, r.was or "")]
        if r.was is not None:
            aside = f"{gtd_refs}moved/cycle-{cycle}/{r.ref.removeprefix('refs/')}"
            moves.append((aside, r.was, None))
        try:
            git.update_refs(moves)
        except GitError as exc:
            notes.append(f"{called(r.ref)} could not be put back at {r.to[:12]}: {exc.message}")
            continue
        if r.was is None:
            notes.append(f"{called(r.ref)} put back at {r.to[:12]} (the cycle deleted it)")
        else:
            notes.append(
                f"{called(r.ref)} put back at {r.to[:12]} (the cycle moved it; "
                f"where it had gone is kept as {moves[1][0]})"
            )
    for ref in left:
        notes.append(f"{called(ref)} moved in another worktree during the cycle: left as it is")
    if order is not None:
        git.call("update-ref", "-d", mf.STASH)
        for oid, message in reversed(order):
            git.run("stash", "store", "-q", "-m", message, oid)
        notes.append(
            f"stash: {len(before.stash)} entries of yours put back in their order "
            "(the cycle dropped or cleared them)"
        )
    for w in lost:
        text = f"worktree {w.path} removed by the cycle"
        if w.branch is None and w.head:
            ref = f"{gtd_refs}lost-worktree/cycle-{cycle}/{os.path.basename(w.path) or 'root'}"
            git.update_refs([(ref, w.head, None)])
            text += f"; its detached HEAD is kept as {ref}"
        if w.dirty:
            text += f"; its uncommitted files are lost: {', '.join(w.dirty)}"
        notes.append(text)
    return notes
