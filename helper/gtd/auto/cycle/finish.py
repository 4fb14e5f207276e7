"""Finishing a judged cycle in the repository: the commits of a pass, the exact
restore of a revert. Every step is idempotent and its result is sealed in the
journal before the next one, so a crash anywhere is finished by a rerun.

A pass commits the *candidate tree* — exactly what was judged, built from git
objects with `commit-tree` on top of the cycle's base — then the PLAN.md tick on
top of it, and moves the cycle's branch there with a compare-and-swap. Nothing is
staged from the live tree at commit time, so a file a person saves while the
tests run is never swept into the agent's commit: it stays in the working tree,
uncommitted.

A revert first stores the whole working tree under ``refs/gtd/reverted/cycle-N``
(gtd.auto.cycle.keep), puts HEAD back on the cycle's branch and the branch back on
the base, then makes every path the cycle changed equal to the base again:
tracked files restored, files the cycle created removed, submodules checked out
at their recorded commits, nested repositories and empty directories it left
removed. Files that appeared after the candidate was taken (a person's, while the
tests ran) are left where they are. Ignored files are never touched.

No name git lists is acted on before gtd.fsio.unsafe_path allows it: a forged
tree object can list ``..`` or ``.git`` entries, and the revert would remove a
person's ignored folder, or a file beside the repository. Such a name is left
alone and handed back, for the cycle's reason to name (and the loop to halt).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from stat import S_ISDIR, S_ISFIFO, S_ISLNK, S_ISREG

from gtd import paths
from gtd.auto import plan_tick
from gtd.auto.cycle.keep import KEPT_DIR, kept_tree
from gtd.auto.journal import Journal
from gtd.auto.state import reverted_ref
from gtd.errors import CommitBlocked, GitError, GtdError
from gtd.fsio import read_bytes, remove_tree, unsafe_path, walk
from gtd.git import Git, remove_empty_tree
from gtd.git_parse import Change, TreeEntry, parse_tree
from gtd.names import readable, unsafe_name

_GITLINK = "160000"


def trailers(journal: Journal) -> str:
    return f"Gtd-Task: {journal.task}\nGtd-Cycle: {journal.cycle}\n"


def signs(git: Git) -> bool:
    """Whether the person's configuration asks for signed commits
    (``commit.gpgsign``): read once for a cycle's work and tick commits."""
    value = (git.config_value("commit.gpgsign") or "").lower()
    return value in ("true", "yes", "on", "1")


def _commit(git: Git, tree: str, parent: str, message: str, sign: bool) -> str:
    try:
        return git.commit_tree(tree, [parent], message, sign=sign)
    except GitError as exc:
        if sign:
            raise CommitBlocked(
                f"signing failed ({exc.message}); commit.gpgsign is on",
                "make gpg work for this repository, or run `git config commit.gpgsign false`",
            ) from None
        raise CommitBlocked(
            exc.message, "fix what git reports (`git commit` shows the same problem)"
        ) from None


def work_commit(git: Git, journal: Journal, sign: bool) -> str:
    assert journal.candidate is not None
    message = f"{journal.task}: {journal.title}\n\n{trailers(journal)}"
    return _commit(git, journal.candidate, journal.base, message, sign)


def tick_commit(git: Git, journal: Journal, work: str, sign: bool) -> str:
    """The PLAN.md tick on top of the work commit (the plan is the base's: the
    cycle may not change it)."""
    assert journal.candidate is not None
    # The plan and the root tree it is replaced in, read in one git call.
    found, top = git.objects([f"{journal.candidate}:{paths.PLAN}", journal.candidate])
    if found is None or top is None or top.kind != "tree":
        return work
    short = git.short(work)
    try:
        text = plan_tick.tick(found.data.decode("utf-8"), journal.task, short)
    except (KeyError, UnicodeDecodeError):
        return work  # the task left the plan (a person's edit): nothing to tick
    root = {
        name: (mode, _KINDS.get(mode, "blob"), oid)
        for name, (mode, oid) in parse_tree(top.data, len(top.oid) // 2).items()
    }
    root[paths.PLAN] = ("100644", "blob", git.write_blob(text.encode("utf-8")))
    tree = git.make_tree((m, k, o, n) for n, (m, k, o) in sorted(root.items()))
    message = f"{journal.task}: mark done in PLAN.md ({short})\n\n{trailers(journal)}"
    return _commit(git, tree, work, message, sign)


# A tree entry's kind by its mode (`git ls-tree` names it; a raw tree holds the mode).
_KINDS = {"040000": "tree", _GITLINK: "commit"}


def move_branch(git: Git, journal: Journal, final: str) -> None:
    """Point the cycle's branch at ``final``, from where the cycle left it."""
    ref = f"refs/heads/{journal.branch}"
    current = git.rev(ref)
    if current == final:
        return
    allowed = {journal.base, journal.head_at_check}
    if current not in allowed:
        raise GtdError(
            f"the branch {journal.branch} moved while cycle {journal.cycle} was checked "
            f"(now at {current})",
            "commit nothing on the loop's branch while a cycle runs",
        )
    git.update_refs([(ref, final, current)])


def sync_tree(root: Path, git: Git, journal: Journal, final: str) -> None:
    """After the branch moved: the index matches the new HEAD, and PLAN.md on disk
    shows the tick (unless someone edited it meanwhile)."""
    if git.branch() != journal.branch:
        git.run("symbolic-ref", "HEAD", f"refs/heads/{journal.branch}")
    git.run("reset", "-q")
    found = git.objects([f"{final}:{paths.PLAN}", f"{journal.base}:{paths.PLAN}"])
    ticked, before = found[0], found[1]
    if ticked is None or before is None or ticked.data == before.data:
        return
    plan_file = root / paths.PLAN
    try:
        on_disk = read_bytes(plan_file)
    except OSError:  # gone, or no regular file: not the plan to tick
        return
    if on_disk == before.data:
        from gtd.fsio import atomic_write_bytes

        atomic_write_bytes(plan_file, ticked.data)
        git.run("update-index", "-q", "--refresh", check=False)


# -- revert ------------------------------------------------------------------------------


def keep(git: Git, journal: Journal, scratch: Path) -> str:
    """The kept commit's ref, made once: a ref of that name holding another commit
    than the one the journal sealed when this revert made it is moved aside
    first, never overwritten (an agent can write a commit with the cycle's
    trailers and the base's tree there: taken for the kept work, the revert would
    put nothing back). A symbolic ref there is never the helper's (it makes plain
    refs only): its target is noted aside and the link itself replaced
    (update_refs writes no ref through a link), the ref it leads to left as it is."""
    ref = f"{reverted_ref(git)}{journal.cycle}"
    existing = git.rev(ref)
    if existing is not None:
        if existing == journal.kept_commit and not git.symbolic(ref):
            return ref
        git.update_refs([(f"{ref}-foreign-{existing[:12]}", existing, ""), (ref, None, existing)])
    from gtd.auto.cycle import seals

    # HEAD read once: the kept tree is built on it and the kept commit's parent
    at = git.head()
    tree = kept_tree(git, scratch, lambda added: seals.was_ignored(journal.seals or {}, added), at)
    head = at or journal.base
    message = (
        f"gtd: reverted work of cycle {journal.cycle} ({journal.task})\n\n"
        f"{journal.reason or 'reverted'}\n\n{trailers(journal)}"
    )
    commit = git.commit_tree(tree, [head], message)
    git.update_refs([(ref, commit, "")])
    return ref


NO_CHANGES = "no changes: the implementer left the tree as it was"


def drop_if_empty(git: Git, journal: Journal, ref: str) -> str:
    """``ref`` once the revert is done, or "" after deleting it when it holds
    nothing: a cycle reverted for making no changes whose kept tree is the base's
    own on the base, which a person would only open to find it empty. (Any other
    revert keeps its ref, even one whose work left no trace in the tree: what
    was refused is evidence.) Run after the restore (which reads the kept tree);
    a crash before the record makes and drops it again."""
    kept = git.rev(ref)
    if kept is None or kept != journal.kept_commit or journal.reason != NO_CHANGES:
        return ref
    same_tree = git.rev(f"{kept}^{{tree}}") == git.rev(f"{journal.base}^{{tree}}")
    if not same_tree or git.rev(f"{kept}^") != journal.base:
        return ref
    git.update_refs([(ref, None, kept)])
    return ""


class Refused:
    """The names from git the revert would not act on (see gtd.fsio.unsafe_path),
    each with why, in the order met."""

    def __init__(self, root: Path, since: float | None = None) -> None:
        self.root = root
        self.since = since  # when the cycle began (a `.git` file made since is its own)
        self.found: dict[str, str] = {}

    def allows(self, rel: str, *, where: bool = True) -> bool:
        """Whether ``rel`` may be acted on. Without ``where``, by its name alone:
        the diff is read before the removals, and a folder the cycle made a link
        to elsewhere is removed before the files git restores under its name."""
        why = unsafe_path(self.root, rel) if where else unsafe_name(rel)
        if why is not None:
            self.found.setdefault(rel, why)
        return why is None

    def reason(self) -> str | None:
        """What the cycle's reason says of them; None when there were none."""
        if not self.found:
            return None
        named = "; ".join(f"{readable(rel)} ({why})" for rel, why in self.found.items())
        return (
            f"the revert left alone paths git listed that it may not touch: {named}; "
            "a forged git object? `git fsck` names it"
        )


def restore(root: Path, git: Git, journal: Journal, kept: str) -> Refused:
    """Make the working tree the base again wherever the cycle changed it. Returns
    the names it refused to act on."""
    refused = Refused(root, journal.started_epoch)
    branch_ref = f"refs/heads/{journal.branch}"
    if git.run("symbolic-ref", "-q", "HEAD", check=False).strip() != branch_ref:
        git.run("symbolic-ref", "HEAD", branch_ref)
    _set_aside_broken_ref(root, git, branch_ref)
    _move_aside_blocking_refs(git, journal, branch_ref)
    current = git.rev(branch_ref)
    # A branch the agent made a symbolic ref (to `feature`, say) is put back as a
    # plain ref of its own, even when what it leads to is the base already: left a
    # link, every later cycle would write through it to the other branch.
    if current != journal.base or git.symbolic(branch_ref):
        git.update_refs([(branch_ref, journal.base, current)])
    git.run("reset", "-q")  # the index is the base's again; the working tree untouched
    base_tree = git.run("rev-parse", f"{journal.base}^{{tree}}").strip()
    kept_tree_id = git.run("rev-parse", f"{kept}^{{tree}}").strip()
    changes = [
        c
        for c in git.diff_trees(base_tree, kept_tree_id)
        if not c.path.startswith(KEPT_DIR + "/") and refused.allows(c.path, where=False)
    ]
    made_by_cycle = _candidate_paths(git, journal)
    kept_ignored = _ignored_at_base(root, git, changes, made_by_cycle, refused)
    restore_paths: list[str] = []
    for change in sorted(changes, key=lambda c: c.path.count("/"), reverse=True):
        if change.status == "A":
            if change.path in kept_ignored:
                continue
            if made_by_cycle is None or change.path in made_by_cycle:
                _remove(root, change.path, refused)
        elif change.old_mode == _GITLINK and change.new_mode == _GITLINK:
            continue  # a submodule moved: checked out again below
        else:
            if change.status == "T" or change.new_mode == _GITLINK:
                _remove(root, change.path, refused)
            if change.old_mode != _GITLINK:
                restore_paths.append(change.path)
    restore_paths.extend(_no_files(root, git, restore_paths, refused))
    if restore_paths:
        listed = "\0".join(restore_paths)
        # A skip-worktree bit (an agent's `git update-index --skip-worktree`, which
        # `reset` keeps) makes checkout-index pass the path over: the revert failed,
        # and every later begin with it, the cycle's file left in the tree (and
        # hidden from `git status`). The paths put back lose the bit, and the
        # assume-unchanged one (its sibling: left, it hides a person's later edit of
        # the file from `git status` and `commit -a`). One flag a call: git applies
        # only the first it is given.
        git.run("update-index", "--no-skip-worktree", "-z", "--stdin", input_text=listed)
        git.run("update-index", "--no-assume-unchanged", "-z", "--stdin", input_text=listed)
        git.run("checkout-index", "-u", "-f", "-q", "-z", "--stdin", input_text=listed)
    _restore_submodules(git, git.ls_tree(base_tree), refused)
    _unhidden(root, git, journal, kept, refused)
    _remove_strays(root, journal)
    before = set((journal.seals or {}).get("empty_dirs") or ())
    for folder in sorted(git.empty_dirs() - before, reverse=True):
        if refused.allows(folder):
            remove_empty_tree(root / folder)
    return refused


def _set_aside_broken_ref(root: Path, git: Git, branch_ref: str) -> None:
    """The branch's loose ref file holding what git cannot read (not an object id,
    or the id of no object): git then refuses to write the ref at all ("reference
    broken"), and the revert stopped, HEAD on a branch with no commit. The branch
    was sound when the cycle began, so the file is the cycle's: set aside under
    `.git/gtd/set-aside/` (never deleted), and the branch written anew."""
    from gtd.own_files import set_aside

    if git.rev(branch_ref) is not None:
        return
    path = git.common_dir() / branch_ref
    if path.is_symlink() or not path.is_file():
        return
    try:
        if read_bytes(path, limit=4096).startswith(b"ref:"):
            return  # a symbolic ref: replaced by update_refs itself
    except OSError:
        return
    set_aside(root, path)


def _move_aside_blocking_refs(git: Git, journal: Journal, branch_ref: str) -> None:
    """A ref one folder below the branch's name (`main/x`) or above it: git keeps no
    ref that is both a name and a folder, so with the branch there when the cycle
    began, such a ref was made during it (the agent deleted the branch and made
    `main/x`), and it keeps the revert from writing the branch back (the revert
    stopped, HEAD on a branch with no commit). Moved aside, never deleted:
    ``refs/gtd/reverted/cycle-N-aside-<name>``."""
    blocking = [
        ref
        for ref in git.refs("refs/heads/", check=False)
        if ref.startswith(branch_ref + "/") or branch_ref.startswith(ref + "/")
    ]
    for ref in blocking:
        oid = git.rev(ref)
        if oid is None:
            continue
        name = ref.removeprefix("refs/heads/").replace("/", "-")
        aside = f"{reverted_ref(git)}{journal.cycle}-aside-{name}"
        git.update_refs([(aside, oid, None), (ref, None, oid)])


def _remove_strays(root: Path, journal: Journal) -> None:
    """Remove the named pipes the cycle made in the working tree. git neither lists
    nor keeps what is not a file, a link or a folder, so the diff above passes them
    over; left there, a pipe where git reads a file (a `.gitignore`, which git reads
    as empty while a writer holds it open) stops every git command once its writer
    is gone. One made since the cycle began is the cycle's (a pipe holds no bytes
    to keep). Sockets are left: one cannot stop git, and may be a running
    service's. Folders git ignored whole when the cycle began (a virtualenv) are
    not walked."""
    ignored = (journal.seals or {}).get("ignored") or ()
    skipped = {p.rstrip("/") for p in ignored if isinstance(p, str) and p.endswith("/")}
    since = journal.started_epoch
    for folder, dirs, files in walk(root):
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        dirs[:] = [d for d in dirs if d != ".git" and prefix + d not in skipped]
        for name in files:
            path = os.path.join(folder, name)
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                if S_ISFIFO(info.st_mode) and info.st_ctime >= since:
                    os.unlink(path)


def _no_files(root: Path, git: Git, listed: list[str], refused: Refused) -> list[str]:
    """Tracked paths where the tree holds what git can neither add nor keep (a
    named pipe, a socket, a device): the kept tree has their old entry, so the
    diff above passes them over, and every later read of them would fail (PLAN.md
    as a pipe stops each `begin`). Removed here, to be checked out again."""
    out = []
    for rel in git.run("diff-files", "--name-only", "-z").split("\0"):
        if not rel or rel in listed or not refused.allows(rel):
            continue
        try:
            mode = os.lstat(root / rel).st_mode
        except OSError:
            continue
        if not (S_ISREG(mode) or S_ISLNK(mode) or S_ISDIR(mode)):
            (root / rel).unlink()
            out.append(rel)
    return out


def _ignored_at_base(
    root: Path, git: Git, changes: list[Change], made_by_cycle: set[str] | None, refused: Refused
) -> set[str]:
    """The added paths the base's ignore rules ignore. A cycle that edits a
    `.gitignore` makes files visible that were there, ignored, before it began (a
    person's build output, their `.env`): the candidate holds them as added, yet
    they are not the cycle's to remove. So the `.gitignore` files come back first,
    and what they ignore is left in place (the kept ref has a copy anyway), as
    any ignored file is."""
    rules = [
        c
        for c in changes
        if c.path.rpartition("/")[2] == ".gitignore"
        # (one the cycle did not make, inside a nested repository it left, say, is
        # not the cycle's to remove: the loop below leaves it too)
        and (c.status != "A" or made_by_cycle is None or c.path in made_by_cycle)
    ]
    if not rules:
        return set()
    back: list[str] = []
    for change in rules:
        if change.status in ("A", "T"):
            _remove(root, change.path, refused)
        if change.status != "A":
            back.append(change.path)
    if back:
        git.run("checkout-index", "-u", "-f", "-q", "-z", "--stdin", input_text="\0".join(back))
    added = [c.path for c in changes if c.status == "A" and c not in rules]
    if not added:
        return set()
    found = git.call("check-ignore", "-z", "--stdin", input_text="\0".join(added) + "\0")
    return {p for p in found.stdout.split("\0") if p}


def _unhidden(root: Path, git: Git, journal: Journal, kept: str, refused: Refused) -> None:
    """Files the cycle made that its own ignore rules hid (a `.gitignore` it edited,
    now restored): visible again, they are kept in a second commit on the kept ref
    and removed. Only files older than the check: one a person saved while the tests
    ran is not the cycle's."""
    since = journal.checked_epoch
    made = []
    for entry in git.status():
        if not entry.untracked or not refused.allows(entry.path):
            continue
        try:
            if since is None or os.lstat(root / entry.path).st_ctime <= since:
                made.append(entry.path)
        except OSError:
            continue
    if not made:
        return
    index = git.git_dir() / "gtd" / "unhidden.index"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        git.run("read-tree", f"{kept}^{{tree}}", env=env)
        git.run("add", "-f", "--", *made, env=env)
        tree = git.run("write-tree", env=env).strip()
    finally:
        index.unlink(missing_ok=True)
    parent = git.run("rev-parse", kept).strip()
    commit = git.commit_tree(tree, [parent], "gtd: files the cycle hid from git\n")
    git.update_refs([(kept, commit, parent)])
    for rel in made:
        _remove(root, rel, refused)


def _candidate_paths(git: Git, journal: Journal) -> set[str] | None:
    """The paths of the tree that was judged: what the cycle made. None when the
    cycle was reverted before its candidate was taken (then every change is the
    cycle's, as it was the only writer allowed)."""
    if journal.candidate is None:
        return None
    return set(git.ls_tree(journal.candidate))


def _remove(root: Path, rel: str, refused: Refused) -> None:
    if not refused.allows(rel):  # checked again just before: a link may be new
        return
    target = root / rel
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        remove_tree(target)
    parent = target.parent
    while parent != root and parent.is_dir():
        names = os.listdir(parent)
        rest = [name for name in names if name != _BYTECODE]
        litter = len(rest) < len(names) and rest in ([], [".git"])
        if litter and _bytecode_of_cycle(parent / _BYTECODE, refused.since):
            remove_tree(parent / _BYTECODE)
            names = rest
        if names == [".git"] and _stray_git_file(parent / ".git", refused.since):
            (parent / ".git").unlink()
        elif names:
            break
        parent.rmdir()
        parent = parent.parent


_BYTECODE = "__pycache__"


def _bytecode_of_cycle(folder: Path, since: float | None) -> bool:
    """A ``__pycache__`` the cycle's own test runs wrote, in a folder whose
    modules it made and the revert has just removed: bytecode of nothing, and
    ignored, so git would never name it, and the folder the base does not have
    would stay behind for it. Only ``.pyc`` files, every one made since the
    cycle began; anything else there is not the revert's to judge."""
    if since is None or folder.is_symlink() or not folder.is_dir():
        return False
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                if not (
                    entry.name.endswith(".pyc") and S_ISREG(info.st_mode) and info.st_ctime >= since
                ):
                    return False
    except OSError:
        return False
    return True


def _stray_git_file(path: Path, since: float | None) -> bool:
    """A `.git` file (``gitdir: <path>``) the cycle made in a folder whose every
    other file it made too, and which git did not take for a repository (the
    folder it names does not exist): git added the folder's files as any others
    and never lists the `.git` file, so it would be left behind, alone, in a
    folder the base does not have. A pointer, not work: removed with its folder."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return S_ISREG(info.st_mode) and since is not None and info.st_ctime >= since


def _restore_submodules(git: Git, base_listing: Mapping[str, TreeEntry], refused: Refused) -> None:
    """Every submodule of the base at its recorded commit, with nothing else in it
    (its changes are in the kept ref's archive). A forged base tree could name any
    folder holding a `.git` (a person's repository beside this one), where the
    forced checkout and `clean -ffd` would destroy work: checked first."""
    for path, entry in base_listing.items():
        if entry.mode != _GITLINK or not refused.allows(path):
            continue
        folder = git.root / path
        if not (folder / ".git").exists():
            continue  # not checked out: nothing the cycle could have changed
        head = git.call("rev-parse", "HEAD", cwd=folder).stdout.strip()
        dirty = git.call("status", "--porcelain", cwd=folder).stdout.strip()
        if head == entry.oid and not dirty:
            continue
        git.call("checkout", "-f", "-q", entry.oid, cwd=folder)
        git.call("clean", "-ffdq", cwd=folder)
