"""Claude Code's own sandbox for the implementer's Bash: the operating system, not
a reading of shell text, refuses its writes to what the ratchet protects.

While auto mode is set up, the project's ``.claude/settings.local.json`` carries a
``sandbox`` block (docs/sandbox.md): Bash commands run in bubblewrap (Linux) or
Seatbelt (macOS), writable only inside the repository, minus ``denyWrite``: git's
folder (the helper's state there too), ``.deepflow/``, PLAN.md, the snapshot's
tests and protected configuration, the ignored files and other worktrees that
existed at setup, and git's configuration in the home folder. Claude Code
re-reads its settings files while it runs: written by `/gtd:auto`'s setup, the
block applies from the loop's first tick.

The helper's own commands write ``.git``: ``excludedCommands`` runs them outside
the sandbox. Claude Code excludes a call only when every part of it matches (no
``&&``, no ``$(…)``, no redirection, no ``cd``), and the PreToolUse hook refuses
them from a subagent and refuses ``dangerouslyDisableSandbox`` while a cycle is
in flight (gtd.auto.guard), so the implementer cannot use the same door.

Only our keys are merged into the person's file, and what was merged is recorded
in ``.git/gtd/sandbox.json`` (out of the agent's reach): :func:`remove` takes out
exactly those values and puts back any value of the person's they replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import paths
from gtd.errors import InputError
from gtd.fsio import atomic_write, read_bytes

if TYPE_CHECKING:
    from typing import Any

    from gtd.git import Git

SETTINGS = ".claude/settings.local.json"
RECORD = "sandbox.json"  # under .git/gtd/
# The helper's commands that write .git or .deepflow, run by the loop (a `!` line
# or the tick's Bash) and by a person: outside the sandbox.
HELPER_COMMANDS = (
    "gtd cycle begin",
    "gtd cycle end",
    "gtd cycle reset",
    "gtd auto setup",
    "gtd verify",
)
EXCLUDED = tuple(f"{c}:*" for c in HELPER_COMMANDS)
# Test litter gtd ignores (paths.EXCLUDE_LINES) stays writable: `rm -rf
# .pytest_cache && pytest` is ordinary work.
_LITTER = frozenset({"__pycache__", ".pytest_cache", ".coverage", "htmlcov", ".hypothesis"})


def unavailable() -> str | None:
    """Why Claude Code's sandbox cannot start here (and what to install), or None."""
    import shutil  # not at the top: `cycle begin` imports this module, not this function

    system = platform.system()
    if system == "Darwin":
        return None if shutil.which("sandbox-exec") else "sandbox-exec is missing (macOS)"
    if system == "Linux":
        missing = [tool for tool in ("bwrap", "socat") if shutil.which(tool) is None]
        if not missing:
            return None
        return (
            f"{' and '.join(missing)} not found: install bubblewrap and socat "
            "(Debian/Ubuntu: `sudo apt-get install bubblewrap socat`; Fedora: "
            "`sudo dnf install bubblewrap socat`)"
        )
    return f"Claude Code has no command sandbox on {system or 'this system'} (use WSL2)"


# The settings that make a sandboxed command's connection to a host outside
# ``sandbox.network.allowedDomains`` a refusal rather than a question to the
# person (Claude Code 2.1.332 asks in an interactive session, in the default and
# acceptEdits modes). Claude Code reads both only from user, --settings and
# managed settings: in the project's or local settings, where this block goes,
# they are ignored. gtd.auto.user_settings sets the first in the user settings
# for a loop, with the person's consent; `gtd doctor` says whether one is set.
_NO_NETWORK_ASK = (
    ("sandbox", "network", "strictAllowlist"),
    ("permissions", "denyInsteadOfPrompting"),
)
_MANAGED = (
    "/etc/claude-code/managed-settings.json",
    "/Library/Application Support/ClaudeCode/managed-settings.json",
)


def network_asks(home: Path, env: Mapping[str, str]) -> tuple[str | None, str]:
    """Whether a sandboxed command's connection to a host no setting allows can
    wait for a person's answer in an interactive session: (None, the setting and
    file that refuse it instead) when it cannot; else (why, the file to fix)."""
    user = Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "settings.json"
    for path in (*(Path(p) for p in _MANAGED), user):
        try:
            data = json.loads(read_bytes(path, limit=1 << 20))
        except (OSError, ValueError):
            continue
        for keys in _NO_NETWORK_ASK:
            node: Any = data
            for key in keys:
                node = node.get(key) if isinstance(node, dict) else None
            if node is True:
                return None, f"{'.'.join(keys)}: true in {path}"
    return (
        "in an interactive session, a sandboxed command's connection to a host "
        "outside sandbox.network.allowedDomains asks you and waits",
        str(user),
    )


def policy(root: Path, git: Git, protected: list[str], waves: Path | None = None) -> dict[str, Any]:
    """The ``sandbox`` block for this repository: ``protected`` are the snapshot's
    tests and protected configuration (paths relative to ``root``); ``waves``:
    the folder of the loop's wave worktrees, made writable (``allowWrite``)
    where no denial holds it (:func:`wave_opening`)."""
    real = Path(os.path.realpath(root))
    deny = {str(real / p) for p in (".git", paths.STATE_DIR, paths.PLAN, *protected)}
    deny |= {
        str(Path(os.path.realpath(git.common_dir()))),
        str(Path(os.path.realpath(git.git_dir()))),
    }
    for rel in git.ignored():
        top = rel.rstrip("/").split("/")[0]
        if top not in _LITTER and not rel.rstrip("/").endswith(tuple(_LITTER)):
            deny.add(str(real / rel.rstrip("/")))
    deny |= set(_other_worktrees(git, real))
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    deny |= {str(home / ".gitconfig"), str(xdg / "git")}
    denied = _outermost(deny)
    filesystem: dict[str, Any] = {"denyWrite": denied}
    if waves is not None and wave_opening(waves, denied) is None:
        filesystem["allowWrite"] = [os.path.realpath(waves)]
    return {
        "enabled": True,
        # No prompt ever waits for a person: a sandboxed command runs without
        # asking, and one the sandbox cannot start stops Claude Code at once
        # instead of running unsandboxed.
        "autoAllowBashIfSandboxed": True,
        "failIfUnavailable": True,
        "excludedCommands": list(EXCLUDED),
        "filesystem": filesystem,
    }


def permissions(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``permissions`` keys that go with ``block``: the folders its
    ``allowWrite`` opens outside the project, as ``additionalDirectories``, so
    that the implementers' Edit and Write there are accepted as in the project
    (Claude Code asks about any other path outside it, and a question at night
    is a refusal). None when the block opens nothing."""
    filesystem = block.get("filesystem")
    opened = filesystem.get("allowWrite") if isinstance(filesystem, Mapping) else None
    return {"additionalDirectories": list(opened)} if opened else None


def wave_opening(waves: Path, denied: list[str]) -> str | None:
    """Why Claude Code's sandbox cannot let the implementers write ``waves`` (the
    folder of the loop's wave worktrees) with the denials ``denied`` kept; None
    when an ``allowWrite`` entry opens it, and nothing beside it.

    In Claude Code 2.1.332 a denial wins over any ``allowWrite`` inside it, and
    its settings have no exception within a denial (the sandbox runtime's
    ``allowWriteWithinDeny`` is filled from Claude Code's own worktrees only,
    never from the settings). A folder inside git's folder, which stays denied
    whole (a new name there, a ``packed-refs`` or a pseudo-ref, changes what
    git reads), cannot be opened: tests/e2e/test_wave_sandbox.py shows both
    on the real CLI."""
    real = os.path.realpath(waves)
    for top in denied:
        if real == top or real.startswith(top.rstrip("/") + "/"):
            return (
                f"the wave worktrees ({real}) are inside {top}, which the sandbox "
                "denies whole: Claude Code opens no folder inside a denied one"
            )
    return None


def _outermost(found: set[str]) -> list[str]:
    """Sorted, without the paths a denied folder among them already holds."""
    out: list[str] = []
    for path in sorted(found):
        if not any(path.startswith(top + os.sep) for top in out):
            out.append(path)
    return out


def _other_worktrees(git: Git, real: Path) -> list[str]:
    out = git.run("worktree", "list", "--porcelain")
    found = [line[len("worktree ") :] for line in out.splitlines() if line.startswith("worktree ")]
    return [os.path.realpath(w) for w in found if os.path.realpath(w) != str(real)]


# -- merge and unmerge ------------------------------------------------------------------

# A leaf we set ("leaves" of the record): its key path, the value we wrote and
# the person's value before (`had`: whether there was one); a list leaf records
# only the entries we added.


def merge(
    settings: dict[str, Any], block: dict[str, Any], under: tuple[str, ...] = ("sandbox",)
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``settings`` with ``block`` merged under ``under`` (the user's settings
    take theirs at the top: gtd.auto.user_settings), and what changed, in order:
    each object we had to create (or put in place of a value that was no
    object), each value we set and what it replaced, each list entry we added."""
    out: dict[str, Any] = json.loads(json.dumps(settings))
    leaves: list[dict[str, Any]] = []
    for keys, value in _leaves(block, under):
        parent = out
        for depth, k in enumerate(keys[:-1]):
            node = parent.get(k)
            if not isinstance(node, dict):
                leaves.append(_replaced(keys[: depth + 1], parent, k, {}))
                node = parent[k] = {}
            parent = node
        last = keys[-1]
        had = parent.get(last)
        if isinstance(value, list):
            current = list(had) if isinstance(had, list) else []
            added = [v for v in value if v not in current]
            if not isinstance(had, list):
                leaves.append(_replaced(keys, parent, last, []))
            parent[last] = current + added
            leaves.append({"keys": list(keys), "added": added})
        else:
            leaves.append(_replaced(keys, parent, last, value))
            parent[last] = value
    return out, leaves


def _replaced(
    keys: tuple[str, ...], parent: dict[str, Any], key: str, value: Any
) -> dict[str, Any]:
    return {"keys": list(keys), "value": value, "had": key in parent, "before": parent.get(key)}


def unmerge(settings: dict[str, Any], leaves: list[dict[str, Any]]) -> dict[str, Any]:
    """``settings`` without what :func:`merge` recorded in ``leaves``: entries we
    added are removed, values we replaced come back, anything the person changed
    since is theirs and stays."""
    out: dict[str, Any] = json.loads(json.dumps(settings))
    for leaf in reversed(leaves):
        keys = leaf["keys"]
        parent: Any = out
        for k in keys[:-1]:
            parent = parent.get(k) if isinstance(parent, dict) else None
        if not isinstance(parent, dict) or keys[-1] not in parent:
            continue
        last = keys[-1]
        if "added" in leaf:
            if isinstance(parent[last], list):
                parent[last] = [v for v in parent[last] if v not in leaf["added"]]
        elif parent[last] == leaf["value"]:  # an object or list we made is empty again
            if leaf["had"]:
                parent[last] = leaf["before"]
            else:
                del parent[last]
    return out


def _leaves(block: dict[str, Any], prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    out: list[tuple[tuple[str, ...], Any]] = []
    for key, value in block.items():
        if isinstance(value, dict):
            out += _leaves(value, (*prefix, key))
        else:
            out.append(((*prefix, key), value))
    return out


# -- the files ---------------------------------------------------------------------------


def record_path(git: Git) -> Path:
    return git.common_dir() / paths.PRIVATE_DIR / RECORD


def protected_files(root: Path, git: Git) -> list[str]:
    """The tracked files the ratchet protects whole, as the hook judges an edit
    (gtd.auto.guard): the snapshot's tests, test configuration, files a command
    names, existing files under a test folder."""
    from gtd.auto.ratchet import protect

    tests: set[str] = set()
    commands: list[str] | None = None
    try:
        snap = json.loads(read_bytes(root / paths.SNAPSHOT_JSON))
        tests = set(snap.get("files") or {})
        found = (snap.get("baseline") or {}).get("commands") or []
        commands = [c["command"] for c in found if isinstance(c, dict)]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        pass
    tracked, _ = git.listing()
    marked = protect.protection(sorted({*tracked, *tests}), commands, tests)
    return sorted(rel for rel, found_ in marked.items() if found_.whole)


def apply(root: Path, git: Git, waves: Path | None = None) -> bool:
    """Write (or refresh) our sandbox block into the project's local settings;
    False, changing nothing, where the sandbox cannot start (the text guard then
    is the only fence, and `gtd doctor` says what to install). ``waves``: the
    folder of wave worktrees to open (None: the loop's, when it runs waves)."""
    if unavailable() is not None or os.environ.get("GTD_SANDBOX") == "off":
        return False
    if git.run("ls-files", "--", SETTINGS).strip():
        return False  # a tracked file: every write would make the tree dirty
    opening = waves if waves is not None else _waves(root, git)
    block = policy(root, git, protected_files(root, git), waves=opening)
    remove(root, git)  # a second setup replaces exactly ours
    settings = _load(root)
    merged, leaves = merge(settings, block)
    opened = permissions(block)
    if opened is not None:
        merged, more = merge(merged, opened, under=("permissions",))
        leaves += more
    record = record_path(git)
    record.parent.mkdir(parents=True, exist_ok=True)
    created = not (root / SETTINGS).exists()
    folder_created = not (root / SETTINGS).parent.exists()
    # The person's own text, so that taking our keys out gives back their bytes
    # (order, spacing) when they changed nothing else meanwhile.
    original = None if created else read_bytes(root / SETTINGS).decode("utf-8")
    # The record first: a crash between the two leaves a record of keys that are
    # not there yet, which remove() skips; never keys no record names.
    data = {
        "settings": SETTINGS,
        "created": created,
        "folder_created": folder_created,
        "original": original,
        "leaves": leaves,
    }
    _register(root, True)
    atomic_write(record, json.dumps(data, indent=2) + "\n")
    _save(root, merged)
    return True


def _waves(root: Path, git: Git) -> Path | None:
    """The folder of the loop's wave worktrees when it runs waves (``parallel:``
    above 1), else None. A config that does not read is setup's to refuse."""
    from gtd.auto.config import load_auto_config
    from gtd.auto.cycle import worktrees
    from gtd.errors import GtdError

    try:
        if load_auto_config(root).parallel < 2:
            return None
    except GtdError:
        return None
    # Made now: the sandbox binds what exists, and the implementers' first
    # command may come before the wave's first worktree is made.
    return worktrees.prepare(git)


def waves_closed(root: Path, git: Git) -> str | None:
    """Why the block written cannot open the loop's wave worktrees, when the loop
    runs waves and it cannot (:func:`wave_opening`); else None."""
    waves = _waves(root, git)
    if waves is None:
        return None
    block = _load(root).get("sandbox")
    filesystem = block.get("filesystem") if isinstance(block, dict) else None
    denied = filesystem.get("denyWrite") if isinstance(filesystem, dict) else None
    return wave_opening(waves, [d for d in denied or () if isinstance(d, str)])


def registry_path() -> Path:
    """The list of repositories whose settings carry our block, so that
    `install.py --uninstall` (through `gtd auto sandbox --off --all`) can take it
    out of each: the user's state folder, never a repository."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(state) / "gtd" / "sandboxed.json"


def registered() -> list[str]:
    try:
        data = json.loads(read_bytes(registry_path()))
    except (OSError, ValueError):
        return []
    return [p for p in data if isinstance(p, str)] if isinstance(data, list) else []


def _register(root: Path, present: bool) -> None:
    here = str(Path(os.path.realpath(root)))
    now = [p for p in registered() if p != here] + ([here] if present else [])
    path = registry_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(sorted(now), indent=2) + "\n")


def remove_everywhere() -> list[str]:
    """:func:`remove` in every registered repository; the ones it changed."""
    from gtd.git import Git

    done = []
    for folder in registered():
        root = Path(folder)
        if (root / ".git").exists() and remove(root, Git(root)):
            done.append(folder)
        else:
            # No repository any more, or no record of a block in it: a gtd with
            # another state folder took the block out (`gtd demo --claude` runs
            # Claude Code with a home of its own). Listed, it would outlive the
            # helper that could ever remove it (`install.py --uninstall`).
            _register(root, False)
    return done


def remove(root: Path, git: Git) -> bool:
    """Take out exactly what :func:`apply` wrote (the file too, when we created it
    and nothing else is left in it); whether there was a block to take out."""
    record = record_path(git)
    try:
        data = json.loads(read_bytes(record))
        leaves, created = data["leaves"], bool(data.get("created"))
        original = data.get("original")
    except (OSError, ValueError, KeyError, TypeError):
        return False
    path = root / SETTINGS
    if path.is_file():
        settings = _load(root)
        cleaned = unmerge(settings, leaves)
        if created and not cleaned:
            path.unlink()
            if data.get("folder_created"):
                with contextlib.suppress(OSError):  # not empty: someone's files
                    path.parent.rmdir()
        elif isinstance(original, str) and _parses_to(original, cleaned):
            if read_bytes(path).decode("utf-8", "replace") != original:
                atomic_write(path, original)
        elif cleaned != settings:
            _save(root, cleaned)
    record.unlink(missing_ok=True)
    _register(root, False)
    return True


def _parses_to(text: str, value: dict[str, Any]) -> bool:
    try:
        return bool(json.loads(text) == value) if text.strip() else value == {}
    except ValueError:
        return False


def recorded(root: Path) -> bool:
    """:func:`active` without a git call (the hook runs on every tool call): the
    record under the repository's git folder, a linked worktree's `.git` file
    followed to its common folder."""
    dot = root / ".git"
    if dot.is_file():
        try:
            text = read_bytes(dot).decode("utf-8", "replace")
        except OSError:
            return False
        if not text.startswith("gitdir:"):
            return False
        folder = (root / text[len("gitdir:") :].strip()).resolve()
        try:
            common = read_bytes(folder / "commondir").decode().strip()
            dot = (folder / common).resolve()
        except OSError:
            dot = folder
    return (dot / paths.PRIVATE_DIR / RECORD).is_file()


def active(git: Git) -> bool:
    """Whether our block is in the settings (a record of it exists)."""
    return record_path(git).is_file()


def read_settings(
    path: Path, shown: Path | str, hint: str, limit: int | None = None
) -> tuple[dict[str, Any], str | None]:
    """A Claude Code settings file: its JSON object and its text, or ``({}, None)``
    where there is no file. Anything else raises InputError naming ``shown`` (the
    name the person knows the file by) with ``hint``: a file that is not UTF-8,
    not JSON or not an object is the person's to fix, never overwritten. The
    project's block (here) and the user settings' key (gtd.auto.user_settings)
    both read through this one."""
    try:
        raw = read_bytes(path, limit=limit)
    except FileNotFoundError:
        return {}, None
    try:
        text = raw.decode("utf-8")
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:  # UnicodeDecodeError included
        raise InputError(shown, f"not valid JSON ({exc})", hint=hint) from exc
    if not isinstance(data, dict):
        raise InputError(shown, "not a JSON object", hint=hint)
    return data, text


def _load(root: Path) -> dict[str, Any]:
    return read_settings(root / SETTINGS, SETTINGS, "fix it or move it away, then run again")[0]


def _save(root: Path, settings: dict[str, Any]) -> None:
    path = root / SETTINGS
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(settings, indent=2) + "\n")


# Answers after which no agent runs until a person acts: the loop has ended.
_ENDED = frozenset({"halted", "blocked", "complete", "error"})


def ends(answer: Mapping[str, Any]) -> bool:
    """Whether ``answer`` ends the loop (no agent runs until a person acts)."""
    following = str(answer.get("next") or "")
    return answer.get("status") in _ENDED or following.startswith(("halt", "complete", "stop"))


def follow(root: Path, answer: MutableMapping[str, Any]) -> None:
    """Keep the settings in step with the loop, after a helper command answered:
    written when setup is ready, removed when the loop ends. Never in the way:
    the ratchet stays the judge, so a failure here changes no answer.

    Not refreshed per cycle: Claude Code tells the model the whole sandbox
    configuration each time it changes (about 12 KB in the loop's conversation),
    so a tick would pay that for the last cycle's new tests, which the hook and
    the ratchet already guard."""
    from gtd.errors import GtdError
    from gtd.git import Git

    status = answer.get("status")
    try:
        git = Git(root)
        if status == "ready":
            on = apply(root, git)
            why = unavailable() or "off (GTD_SANDBOX=off, or the settings file is tracked)"
            answer["sandbox"] = f"on ({SETTINGS})" if on else why
            closed = waves_closed(root, git) if on else None
            if closed is not None:  # a wave's implementers could not write their worktrees
                answer["sandbox"] += f"; parallel: {closed}"
        elif ends(answer):
            remove(root, git)
    except (OSError, GtdError) as exc:
        said = f"sandbox settings: {exc}"
        earlier = answer.get("warning")  # another warning (set up on main) stays too
        answer["warning"] = f"{earlier}; {said}" if earlier else said
