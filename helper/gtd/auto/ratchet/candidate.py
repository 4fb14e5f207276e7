"""The candidate as the ratchet's check sees it (gtd.auto.ratchet.check): its
files' blob ids and protected configuration read from git objects, the symbolic
links it adds, and the old-tests and new-tests trees it is judged in."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from gtd.auto.config import AutoConfig
from gtd.auto.ratchet import files as files_mod
from gtd.auto.ratchet import protect, room
from gtd.auto.ratchet.model import FileHashes, RunResult, Snapshot
from gtd.auto.ratchet.verdict import module_stem
from gtd.git import Git
from gtd.git_parse import Change, TreeEntry

_GITLINK = "160000"


def tree_of(git: Git, commit: str) -> str:
    return git.run("rev-parse", f"{commit}^{{tree}}").strip()


def commands_of(run: RunResult) -> list[str]:
    """The commands a snapshot was taken with: which of them may run a task runner
    decides what configuration is protected (gtd.auto.ratchet.invocation)."""
    return [c.command for c in run.commands]


def config_commands(config: AutoConfig) -> list[str]:
    found = (config.build_command, config.test_command, config.typecheck_command)
    return [c for c in (*found, config.lint_command) if c]


def protected_digests(
    git: Git,
    listing: Mapping[str, TreeEntry],
    commands: Sequence[str],
    *,
    unchanged: Callable[[str], bool] = lambda _: False,
    previous: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Protected configuration in a tree: key → digest (gtd.auto.ratchet.protect),
    read from git objects. A file ``unchanged`` says is the same as when
    ``previous`` was taken keeps its keys from there instead of being read again."""
    from gtd.auto.ratchet import invocation

    seen = invocation.read(commands)
    named = {p for p in map(invocation.repo_path, seen.named) if p is not None and p in listing}
    wanted = sorted(
        p
        for p, e in listing.items()
        if e.kind == "blob"
        and (
            protect.is_protected_path(p)
            or (not seen.plain and protect.is_runner_file(p))
            or p in named
        )
    )
    out: dict[str, str] = {}
    to_read: list[str] = []
    by_path: dict[str, list[str]] = {}
    for key in previous or {}:
        by_path.setdefault(protect.split_key(key)[0], []).append(key)
    for path in wanted:
        if previous is not None and unchanged(path):
            out.update({k: previous[k] for k in by_path.get(path, [])})
        else:
            to_read.append(path)
    for path, obj in zip(to_read, git.objects([listing[p].oid for p in to_read]), strict=True):
        if obj is None:
            continue
        if protect.is_protected_path(path) or (not seen.plain and protect.is_runner_file(path)):
            out.update(protect.digests(path, obj.data, plain=seen.plain))
        if path in named:
            out[f"{path} {protect.NAMED}"] = protect.digest(path, obj.data)
    return out


def hashes(
    git: Git,
    snapshot: Snapshot,
    listing: Mapping[str, TreeEntry],
    changes: Sequence[Change],
) -> FileHashes:
    """The candidate as the integrity check sees it, from its tree listing; file
    contents are read (one batch) only for protected files that changed."""
    changed = {c.path for c in changes}
    files = {p: (listing[p].oid if p in listing else None) for p in snapshot.files}
    new_files = {
        p: e.oid
        for p, e in listing.items()
        if files_mod.is_test_file(p) and p not in snapshot.files and e.kind == "blob"
    }
    protected = protected_digests(
        git,
        listing,
        commands_of(snapshot.baseline),
        unchanged=lambda p: p not in changed,
        previous=snapshot.protected,
    )
    doctests_now = _doctests_now(git, snapshot, listing, changed)
    inits = {p.rpartition("/")[0] for p in listing if _is_init(p)}
    # Any file Python imports as a module counts, not only source: a sourceless
    # ``pytest.pyc`` (a `.gitignore` negation lets git see it) is found in the
    # working directory before the installed pytest, as ``pytest.py`` would be.
    new_modules = tuple(
        c.path
        for c in changes
        if c.status == "A"
        and module_stem(c.path.rpartition("/")[2]) is not None
        and _folder_of_module(c.path) not in inits
    )
    submodules = tuple(sorted({c.path for c in changes if _GITLINK in (c.old_mode, c.new_mode)}))
    return FileHashes(files, new_files, protected, doctests_now, new_modules, submodules)


def _doctests_now(
    git: Git, snapshot: Snapshot, listing: Mapping[str, TreeEntry], changed: set[str]
) -> dict[str, Mapping[str, str] | None]:
    """The doctest digests of the snapshot's doctest modules the candidate changed
    (None: the module is gone)."""
    out: dict[str, Mapping[str, str] | None] = {}
    paths = [p for p in snapshot.doctests if p in changed or p not in listing]
    if not paths:
        return out
    from gtd.auto.ratchet import doctests  # ast and its kin: only when there is work

    present = [p for p in paths if p in listing]
    packages = {p.rpartition("/")[0] for p in listing if p.endswith("/__init__.py")}
    for path in paths:
        out[path] = None
    for path, obj in zip(present, git.objects([listing[p].oid for p in present]), strict=True):
        if obj is not None:
            out[path] = doctests.doctest_digests(obj.data, doctests.module_name(path, packages))
    return out


def _folder_of_module(path: str) -> str:
    """The folder that must be on the import path for ``path`` to be a top-level
    module: its own folder, or its package's parent for an ``__init__.py``."""
    folder = path.rpartition("/")[0]
    if _is_init(path):
        folder = folder.rpartition("/")[0]
    return folder


def _is_init(path: str) -> bool:
    """A package's ``__init__`` in any form Python imports (source, bytecode...)."""
    return module_stem(path.rpartition("/")[2]) == "__init__"


_SYMLINK = "120000"


_LINK_HOPS = 40  # as many links as the kernel follows in one path


def links_out(
    git: Git, listing: Mapping[str, TreeEntry], changes: Sequence[Change], links: Sequence[str]
) -> list[str]:
    """Symbolic links the candidate adds or changes that lead out of the tree it
    commits: an absolute target, one that climbs above the repository (through
    other links of the tree too), or one into ``.git`` or a ``ratchet.link`` path.
    In the clean room such a link reaches files git does not hold (a copy of the
    good code kept elsewhere, an ignored file), so the tests would judge code that
    is not committed."""
    if not any(c.new_mode == _SYMLINK for c in changes):
        return []
    paths = sorted(p for p, e in listing.items() if e.mode == _SYMLINK)
    found = git.objects([listing[p].oid for p in paths])
    targets = {
        p: obj.data.decode("utf-8", "surrogateescape")
        for p, obj in zip(paths, found, strict=True)
        if obj is not None
    }
    linked = [link.strip("/") for link in links]
    out: list[str] = []
    for change in changes:
        target = targets.get(change.path)
        if change.new_mode != _SYMLINK or target is None:
            continue
        where = _resolve(change.path.rpartition("/")[0], target, targets, _LINK_HOPS)
        if where is None or any(
            where == top or where.startswith(top + "/") for top in (".git", *linked) if top
        ):
            out.append(f"symbolic link leads outside the repository: {change.path} → {target}")
    return out


def _resolve(folder: str, target: str, targets: Mapping[str, str], hops: int) -> str | None:
    """Where ``target``, read in ``folder``, leads inside the tree whose links are
    ``targets`` (path → target); None when it leaves the tree (or loops)."""
    if target.startswith("/") or hops <= 0:
        return None
    parts = folder.split("/") if folder else []
    for name in target.split("/"):
        if name in ("", "."):
            continue
        if name == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(name)
        here = "/".join(parts)
        if here in targets:
            inner = _resolve("/".join(parts[:-1]), targets[here], targets, hops - 1)
            if inner is None:
                return None
            parts = inner.split("/") if inner else []
    return "/".join(parts)


def judged_trees(
    git: Git,
    scratch: Path,
    candidate: str,
    base_listing: Mapping[str, TreeEntry],
    listing: Mapping[str, TreeEntry],
    *,
    guarded: Mapping[str, protect.Protection],
) -> tuple[str, str]:
    """(old-tests tree, new-tests tree) for ``candidate``: every wholly protected
    file as the base has it; in the old-tests tree, the protected files the
    candidate adds (new tests in a test folder, a new conftest...) left out."""
    whole = {p for p, why in guarded.items() if why.whole}
    from_base: dict[str, TreeEntry | None] = {
        p: base_listing[p] for p in whole if p in base_listing and base_listing[p] != listing.get(p)
    }
    new_tests_tree = _replace(git, scratch, candidate, from_base)
    dropped: dict[str, TreeEntry | None] = {
        p: None for p in listing if p not in base_listing and p in whole
    }
    old_tests_tree = _replace(git, scratch, new_tests_tree, dropped)
    return old_tests_tree, new_tests_tree


def _replace(git: Git, scratch: Path, tree: str, entries: Mapping[str, TreeEntry | None]) -> str:
    """``tree`` with each path set to the entry given (None: removed)."""
    if not entries:
        return tree
    index = scratch / room.COMPOSE_INDEX
    env = {"GIT_INDEX_FILE": str(index)}
    zero = "0" * len(tree)
    lines = "".join(
        f"{e.mode} {e.oid}\t{p}\0" if e is not None else f"0 {zero}\t{p}\0"
        for p, e in sorted(entries.items())
    )
    try:
        git.run("read-tree", tree, env=env)
        git.run("update-index", "-z", "--index-info", input_text=lines, env=env)
        return git.run("write-tree", env=env).strip()
    finally:
        index.unlink(missing_ok=True)
