"""What a cycle must leave as it found it, recorded at `begin` and checked at `end`.

The agent works in the repository with the user's rights, so besides the tree it
could change what judges the tree: the repository's git configuration and
attributes (filters, fsmonitor, autocrlf, hooksPath, a bare repository, a work
tree elsewhere), its hooks, the test interpreter's site-packages (a ``.pth``
runs in every test process) and the variables it reads (PYTHONPATH,
PYTHONOPTIMIZE, PYTEST_ADDOPTS...). Each is recorded when the cycle begins. At `end`
a change is a revert that names it; and the git configuration and attributes are
put back as they were before anything else is done, so the candidate is read,
and the base restored, under the rules the cycle began with.

The configuration git reads from outside the repository (the user's global and
system files, files they include, the global attributes file) is the user's: it
is recorded as digests and never written. A change there halts the loop (every
later cycle would be judged under it), and the revert runs with the repository's
own configuration only (:meth:`gtd.git.Git.without_outside_config`).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import digest as sha
from gtd.auto.ratchet import environment
from gtd.fsio import atomic_write_bytes, read_bytes
from gtd.git import Git

if TYPE_CHECKING:
    from typing import Any

# Files of the git directory kept whole in the seal (small, and restored verbatim),
# and what a reason calls each. The exclude file decides, as `.gitignore` does, what
# the candidate holds: an agent's edit, or a named pipe in its place, never counts.
# `commondir` (in a main work tree's `.git`, never git's own) would take the config,
# hooks, refs and objects from elsewhere; `info/grafts` and `shallow` rewrite the
# history git shows (a graft making the base parentless leaves all history before
# it to a person's next `git gc`), and a `shallow` git cannot parse stops git.
_KEPT = {
    "git_config": "config",
    "git_attributes": "info/attributes",
    "git_exclude": "info/exclude",
    "git_commondir": "commondir",
    "git_grafts": "info/grafts",
    "git_shallow": "shallow",
    # Read with `extensions.worktreeConfig` (sparse checkouts turn it on).
    "git_worktree_config": "config.worktree",
}
# The one file of those kept in the worktree's own git directory; the others are in
# the common directory, which in a linked worktree is the main repository's (git
# reads no `config`, `hooks/` or `info/` of `.git/worktrees/<id>/`).
_PER_WORKTREE = frozenset({"git_commondir", "git_worktree_config"})
# Files an empty copy of which says nothing: git reads no key, pattern or graft
# from it. Claude Code's sandbox makes empty files where it mounts a path it
# keeps read-only that does not exist (`config.worktree`), while the agent works.
_EMPTY_IS_ABSENT = frozenset({"git_worktree_config", "git_attributes", "git_exclude", "git_grafts"})


def _kept_paths(git: Git) -> dict[str, Path]:
    """Each kept file's path; the two git directories asked once (in a linked
    worktree each is a `git rev-parse`)."""
    own, common = git.git_dir(), git.common_dir()
    return {key: (own if key in _PER_WORKTREE else common) / rel for key, rel in _KEPT.items()}


_CALLED = {
    "git_config": "git configuration",
    "git_attributes": "git attributes",
    "git_exclude": "git exclude rules",
    "git_commondir": "git common directory",
    "git_grafts": "git grafts",
    "git_shallow": "git shallow list",
    "git_worktree_config": "git configuration",
}


def _read(path: Path) -> bytes | None:
    try:
        return read_bytes(path)
    except FileNotFoundError:
        return None
    except OSError:
        return b""


def _hooks_digest(folder: Path) -> str:
    digest = sha.sha256()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return "missing"
    for name in names:
        digest.update(name.encode("utf-8", errors="surrogateescape") + b"\0")
        data = _read(folder / name)
        digest.update(sha.sha256(data or b"").hexdigest().encode() + b"\0")
    return digest.hexdigest()


# A hook file larger than this is sealed by its digest alone (a person's compiled
# hook, say): changed, it is set aside and not written back.
_HOOK_BYTES = 256 << 10


def _hook_files(folder: Path) -> dict[str, str]:
    """``name`` → ``x:`` or ``-:`` (executable or not) and its content in base64
    (``#`` and a digest when large), for each file of the hooks folder: what a
    revert puts back; ``o:`` and a digest for a link or a folder."""
    out: dict[str, str] = {}
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return out
    for name in names:
        path = folder / name
        if path.is_symlink() or not path.is_file():
            # A link or a folder (a hook manager's): known by what it is, never
            # written back, set aside only when it changed.
            what = os.readlink(path) if path.is_symlink() else str(path.is_dir())
            out[name] = "o:" + sha.sha256(os.fsencode(what)).hexdigest()
            continue
        data = _read(path)
        if data is None:
            continue
        mode = "x:" if os.access(path, os.X_OK) else "-:"
        if len(data) > _HOOK_BYTES:
            out[name] = mode + "#" + sha.sha256(data).hexdigest()
        else:
            out[name] = mode + base64.b64encode(data).decode("ascii")
    return out


def restore_hooks(root: Path, git: Git, seals: dict[str, Any]) -> None:
    """The hooks folder as sealed at `begin`: a hook the cycle added or changed
    is set aside (`.git/gtd/set-aside/`, never deleted) and the sealed one
    written back, so nothing the agent planted runs at a person's next `git
    commit`. Nothing for a seal made before the hooks were kept whole."""
    from gtd.own_files import set_aside

    sealed = seals.get("hook_files")
    if not isinstance(sealed, dict):
        return
    folder = git.common_dir() / "hooks"
    if _hooks_digest(folder) == seals.get("hooks"):
        return
    now = _hook_files(folder)
    try:
        present = set(os.listdir(folder))
    except OSError:
        present = set()
    for name in sorted(present):
        if name in sealed and now.get(name) == sealed[name]:
            continue
        set_aside(root, folder / name)
    for name, kept in sealed.items():
        if now.get(name) == kept and name in present:
            continue
        mode, _, body = kept.partition(":")
        if mode == "o" or body.startswith("#"):
            continue  # not kept whole: set aside above if changed, not written back
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(folder / name, base64.b64decode(body))
        (folder / name).chmod(0o755 if mode == "x" else 0o644)


def take(git: Git, env_dirs: Sequence[str]) -> dict[str, Any]:
    git_dir = git.git_dir()
    hooks = git.common_dir() / "hooks"
    sealed: dict[str, Any] = {
        "hooks": _hooks_digest(hooks),
        "hook_files": _hook_files(hooks),
        "environment": environment.fingerprint(env_dirs),
        "environment_format": environment.FORMAT,
        "variables": environment.variables(os.environ),
        "empty_dirs": sorted(git.empty_dirs()),
        # What git ignored as the cycle began: a person's (a `.env`, build output),
        # which a `.gitignore` edit of the cycle's must not sweep into its commit.
        "ignored": git.ignored(),
    }
    for key, path in _kept_paths(git).items():
        data = _read(path)
        sealed[key] = None if data is None else base64.b64encode(data).decode("ascii")
    sealed["outside"] = outside(git)
    sealed["dot_git"] = _dot_git_file(git.root)
    _keep_copies(git_dir)
    return sealed


def _dot_git_file(root: Path) -> str | None:
    """A linked worktree's (or a submodule's) `.git` *file*, in base64: the link to
    its git directory lies in the working tree, where the agent writes."""
    path = root / ".git"
    if path.is_symlink() or not path.is_file():
        return None
    data = _read(path)
    return None if data is None else base64.b64encode(data).decode("ascii")


def restore_dot_git(root: Path, seals: dict[str, Any]) -> str | None:
    """The worktree's `.git` file as sealed at `begin`; the reason when it had
    changed. The agent can point it at a copy of the git directory (hooks of its
    own, say): git then reads HEAD, the index, the config, refs and objects there,
    and the revert would keep the work, and the person's later git commands
    run, in the copy. The copy holds the state as sealed at `begin` (the agent
    made it during the cycle), so the seal read through it still names the file
    the cycle began with."""
    raw = seals.get("dot_git")
    if not isinstance(raw, str):
        return None
    path = root / ".git"
    if path.is_symlink() or not path.is_file():
        return None  # a folder now: not a pointer to put back
    sealed = base64.b64decode(raw)
    now = _read(path)
    if now == sealed:
        return None
    atomic_write_bytes(path, sealed)
    shown = (now or b"").decode("utf-8", "backslashreplace").strip()
    return f"the worktree's link to its git directory changed: {path} (it read {shown!r}; put back)"


# The files of the git directory without which git runs no command at all (a config
# git cannot parse, an unknown repository extension, a HEAD that names no ref: "not
# a git repository"). The seal lives in git, so the helper could not read it to put
# them back: a copy is kept beside it while the cycle runs (gtd.auto.cycle.engine).
_VITAL = ("config", "HEAD")
_COPIES = "sealed"


def _keep_copies(git_dir: Path) -> None:
    from gtd.own_files import own_folder, private_dir

    folder = own_folder(private_dir(git_dir) / _COPIES)
    for name in _VITAL:
        data = _read(git_dir / name)
        if data is None:
            (folder / name).unlink(missing_ok=True)
        else:
            atomic_write_bytes(folder / name, data)


def drop_copies(git_dir: Path) -> None:
    """The cycle is over: a person's own later change is none of the helper's.
    (The helper's folder is made its own first: a link the agent put there is not
    followed.)"""
    from gtd.fsio import remove_tree
    from gtd.own_files import private_dir

    remove_tree(private_dir(git_dir) / _COPIES, ignore_errors=True)


def repair_unreadable(root: Path) -> list[str]:
    """git failed to read the repository while a cycle is in flight: each vital
    file that differs from its copy made at `begin` is set aside and the copy put
    in its place (the journal's seal is checked once git runs again); a reason for
    each. Empty when there is no copy (no cycle began) or nothing differs."""
    from gtd.own_files import set_aside

    git_dir = root / ".git"
    if git_dir.is_symlink() or not git_dir.is_dir():
        return []
    out: list[str] = []
    for name in _VITAL:
        kept = _read(git_dir / "gtd" / _COPIES / name)
        path = git_dir / name
        if kept is None or _read(path) == kept:
            continue
        aside = set_aside(root, path) if os.path.lexists(path) else None
        atomic_write_bytes(path, kept)
        moved = f"; the cycle's is at {aside}" if aside is not None else ""
        out.append(
            f"git could not read the repository: {path} changed "
            f"(put back as the cycle began{moved})"
        )
    return out


_ATTRIBUTES = "(attributes)"
# Configuration no git command of the helper reads, and that tools change on their
# own (credential helpers, `git maintenance register`): a change there is no reason
# to stop the loop. Every other key is watched, unknown ones included.
_UNREAD = (
    "advice.", "alias.", "branch.", "color.", "credential.", "fetch.", "gui.", "help.",
    "http.", "init.", "maintenance.", "pull.", "push.", "remote.", "safe.", "sendemail.",
    "url.", "user.", "web.",
)  # fmt: skip


def outside(git: Git) -> dict[str, str]:
    """``file<TAB>key`` → a digest of its values, for every configuration entry git
    reads from outside the repository, and the global attributes file's content
    (``file<TAB>(attributes)``). Digests only: the user's files may hold secrets."""
    local = {
        os.path.realpath(git.common_dir() / "config"),
        os.path.realpath(git.git_dir() / "config.worktree"),
    }
    values: dict[str, list[str]] = {}
    attributes: str | None = None
    for origin, key, value in git.config_entries():
        kind, _, where = origin.partition(":")
        if kind != "file":
            continue  # the command line (the helper's own pins), standard input, blobs
        path = os.path.realpath(os.path.join(git.root, where))
        if path in local:
            continue  # kept whole, and put back, above
        if key.startswith(_UNREAD):
            continue
        values.setdefault(f"{path}\t{key}", []).append("" if value is None else value)
        if key == "core.attributesfile" and value:
            attributes = value
    # A value in a legacy encoding (a Latin-1 user.name) is read byte for byte.
    joined = {k: "\0".join(v).encode("utf-8", "surrogateescape") for k, v in values.items()}
    out = {k: sha.sha256(data).hexdigest() for k, data in joined.items()}
    path = _attributes_file(attributes)
    data = _read(Path(path))
    out[f"{path}\t{_ATTRIBUTES}"] = "absent" if data is None else sha.sha256(data).hexdigest()
    return out


def _attributes_file(configured: str | None) -> str:
    """The global attributes file git reads (core.attributesFile, else the XDG one)."""
    if configured:
        return os.path.expanduser(configured)
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(xdg, "git", "attributes")


def outside_changes(git: Git, seals: dict[str, Any]) -> list[str]:
    """Why the configuration outside the repository is not as sealed, one reason per
    file (naming the keys that changed); empty for a seal made before it was kept."""
    before = seals.get("outside")
    if not isinstance(before, dict):
        return []
    now = outside(git)
    changed: dict[str, list[str]] = {}
    attributes: list[str] = []
    for entry in sorted(before.keys() | now.keys()):
        if before.get(entry) != now.get(entry):
            path, _, key = entry.partition("\t")
            if key == _ATTRIBUTES:
                attributes.append(f"global git attributes changed: {path}")
            else:
                changed.setdefault(path, []).append(key)
    # The configuration first: it names the attributes file, and the filters.
    return [
        f"git configuration outside the repository changed: {path} "
        f"({', '.join(keys[:5])}{', …' if len(keys) > 5 else ''})"
        for path, keys in changed.items()
    ] + attributes


def restore(git: Git, seals: dict[str, Any]) -> list[str]:
    """Put the git configuration and attributes back as sealed; return a reason for
    each that had changed (naming the keys of a changed configuration)."""
    out: list[str] = []
    for key, path in _kept_paths(git).items():
        if key not in seals:
            continue
        now = _read(path)
        raw = seals[key]
        sealed = None if raw is None else base64.b64decode(raw)
        if now == sealed or (sealed is None and now == b"" and key in _EMPTY_IS_ABSENT):
            continue
        what = _changed_keys(sealed, now) if key in ("git_config", "git_worktree_config") else ""
        out.append(f"{_CALLED[key]} changed: {path}" + (f" ({what})" if what else ""))
        if sealed is None:
            path.unlink(missing_ok=True)
        else:
            atomic_write_bytes(path, sealed)
    return out


def _changed_keys(before: bytes | None, after: bytes | None) -> str:
    old, new = _entries(before), _entries(after)
    keys = sorted({k for k in old.keys() | new.keys() if old.get(k) != new.get(k)})
    return ", ".join(keys[:5]) + (", …" if len(keys) > 5 else "")


def _entries(data: bytes | None) -> dict[str, list[str]]:
    """``section.key`` → values, from a git config file (a reader good enough to
    name what changed; git itself decides what the file means)."""
    out: dict[str, list[str]] = {}
    section = ""
    for raw in (data or b"").decode("utf-8", errors="replace").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            head = line[1 : line.find("]")] if "]" in line else line[1:]
            name, _, sub = head.partition(" ")
            section = name + (f".{sub.strip().strip(chr(34))}" if sub else "")
            continue
        key, _, value = line.partition("=")
        out.setdefault(f"{section}.{key.strip()}", []).append(value.strip())
    return out


def was_ignored(seals: dict[str, Any], added: Sequence[str]) -> list[str]:
    """The paths of ``added`` that git ignored when the cycle began (the file, or
    a folder it ignored whole): not the cycle's work, whatever it did to the
    ignore rules since. Empty for a seal made before they were kept."""
    ignored = seals.get("ignored")
    if not isinstance(ignored, list) or not ignored:
        return []
    before = set(ignored)
    out = []
    for path in added:
        parts = path.split("/")
        folders = ("/".join(parts[:i]) + "/" for i in range(1, len(parts)))
        if path in before or any(folder in before for folder in folders):
            out.append(path)
    return out


def take_back_common_dir(root: Path) -> str | None:
    """A ``commondir`` file git must not follow, set aside before any git runs;
    the reason, or None when there is none. git reads one in any git directory (a
    linked worktree's link to its main repository, which git always writes as
    ``../..``) and takes the config, hooks, refs and objects from where it points:
    an agent that writes one into a main work tree's ``.git`` (where git never
    makes one) would have the helper read and write its state, keep the work and
    move the branch in a folder of the agent's, and every later git command of
    the person's run the hooks there. Pinning ``GIT_COMMON_DIR`` is no cure: git's
    ref store reads the file regardless. The file is moved to the helper's
    set-aside folder (a linked worktree's gets its ``../..`` back)."""
    from gtd.own_files import set_aside

    dot = root / ".git"
    if dot.is_symlink():
        return None
    if dot.is_dir():
        git_dir, expected = dot, None
    else:
        try:
            text = read_bytes(dot).decode("utf-8", "surrogateescape").strip()
        except OSError:
            return None
        if not text.startswith("gitdir:"):
            return None
        git_dir = root / text[len("gitdir:") :].strip()
        expected = b"../.." if git_dir.parent.name == "worktrees" else None
    path = git_dir / "commondir"
    if not os.path.lexists(path):
        return None
    try:
        data = read_bytes(path, limit=4096)
    except OSError:
        data = None
    if expected is not None and data is not None and data.strip() == expected:
        return None
    shown = "" if data is None else data.decode("utf-8", "backslashreplace").strip()
    aside = set_aside(root, path)
    if expected is not None:
        atomic_write_bytes(path, expected + b"\n")
    where = f" (it pointed at {shown})" if shown else ""
    moved = f", moved to {aside}" if aside is not None else ""
    return f"git common directory changed: {path}{where}{moved}"


def broken(git: Git, seals: dict[str, Any], env_dirs: Sequence[str]) -> list[str]:
    """The sealed things, other than config and attributes, that changed."""
    hooks = git.common_dir() / "hooks"
    out: list[str] = []
    if _hooks_digest(hooks) != seals.get("hooks"):
        out.append(f"git hooks changed: {hooks}")
    changed = environment_changes(seals, env_dirs)
    if changed:
        out.append(f"test environment changed: {changed[0]}")
    sealed_variables = seals.get("variables")
    if isinstance(sealed_variables, dict):  # (a seal taken before they were)
        now = environment.variables(os.environ)
        moved = environment.variable_changes(sealed_variables, now)
        if moved:
            out.append(f"test environment variable changed since the cycle began: {moved[0]}")
    return out


def environment_changes(seals: dict[str, Any], env_dirs: Sequence[str]) -> list[str]:
    """What changed in the test interpreter's environment since the cycle began."""
    if seals.get("environment_format") != environment.FORMAT:
        return []  # taken by a helper that described entries otherwise
    before = seals.get("environment") or {}
    return environment.changes(before, environment.fingerprint(env_dirs, like=before))
