"""The harness's first line: a Claude Code ``PreToolUse`` hook that refuses, while a
cycle is in flight, the implementer's edits of what the ratchet protects.

The ratchet stays the judge — it reverts a cycle that changed a protected file
whatever this hook let through — but an edit refused up front saves the whole
cycle, and the reason tells the model what to do instead. The hook is shipped in
the plugin (``hooks/hooks.json``) and runs ``gtd hook pre-tool-use``: Claude Code
passes the tool call as JSON on stdin; a refusal is a JSON answer with
``permissionDecision: deny``; anything else (no cycle in flight, a path the
ratchet does not protect, an input it cannot read) lets the call through.

One call is let through *without asking*: the Skill call of the loop's tick,
``/gtd:auto-cycle``, in a repository set up for auto mode — Claude Code asks the
person to approve each tick the loop's cron job delivers, which would stop an
unattended night at its second tick.

What is refused while a cycle's implementer works (journal phase ``agent``):

- ``Edit``, ``Write``, ``MultiEdit``, ``NotebookEdit`` of anything under ``.git/`` or
  ``.deepflow/``, ``PLAN.md``, a test in the ratchet's snapshot (golden data that
  ``ratchet.protect`` declares among them), a ``conftest.py``,
  pytest's or a JavaScript runner's configuration, a file a configured command
  names, a task runner's files when a command may run one, and an existing file
  under a test folder (new files there are fine); Claude Code's settings
  (``.claude/settings.json``, ``.claude/settings.local.json``, the user's
  ``~/.claude/settings.json``: the hooks, permissions and variables the tests
  inherit); and git's configuration outside the repository (``~/.gitconfig``,
  the XDG ``git/`` folder), whose change halts the loop;
- ``Bash``: the helper's commands only the loop runs (from a subagent always, as
  some run outside Claude Code's sandbox), git's history-changing commands, and
  ``dangerouslyDisableSandbox``; where the sandbox is off (docs/sandbox.md), a
  plain literal protected path written by one simple command of the line (a
  redirection, ``rm``, ``mv``, ``cp``'s destination, ``sed -i``...). Never an
  ordinary command: what the text cannot decide exactly is the sandbox's and
  the ratchet's. With the sandbox on, the implementer's other Bash calls are
  approved (:func:`sandboxed_bash`): Claude Code would otherwise ask a person
  about some of them at night.

It reads the journal and the snapshot from their mirrors in ``.deepflow/`` (cheap,
no git call: the hook runs on every tool call); an agent that edits them can only
switch this guard off, never the ratchet, which reads the sealed copies.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import paths
from gtd.fsio import read_bytes

if TYPE_CHECKING:
    from typing import Any

TICK_SKILL = "gtd:auto-cycle"
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
AGENT_TOOLS = frozenset({"Agent", "Task"})  # ("Task": its name before Claude Code 2.1)
# The implementer as the plugin names it, and as install.py installs it.
IMPLEMENTERS = frozenset({"gtd:implementer", "gtd-implementer"})
_FORBIDDEN_GIT = frozenset(
    {
        "commit", "stash", "reset", "checkout", "restore", "clean", "switch", "push",
        "merge", "rebase", "config", "update-ref", "replace", "gc", "reflog", "worktree",
        "submodule", "am", "cherry-pick", "revert", "filter-branch", "tag", "prune",
        "symbolic-ref", "update-index", "read-tree", "pull", "fetch",
    }
)  # fmt: skip
# The helper's commands that change what judges a cycle, or start or end one: the
# loop runs them, never the implementer (the tick's own `gtd cycle end`, which runs
# while the journal still says ``agent``, is the one let through).
_FORBIDDEN_GTD = frozenset(
    {
        ("cycle", "begin"), ("cycle", "reset"), ("ratchet", "snapshot"),
        ("ratchet", "quarantine"), ("ratchet", "release"), ("auto", "setup"),
        ("loop", None), ("demo", None),
    }
)  # fmt: skip
# Commands whose every operand is written (moved, removed, truncated, ...);
# `touch` changes no content the ratchet reads, so it is ordinary everywhere.
_WRITERS = frozenset({"rm", "mv", "tee", "truncate", "chmod", "unlink", "shred"})
# Commands that write only their last operand (or the `-t` folder's files).
_COPIERS = frozenset({"cp", "install", "rsync", "ln"})
_IN_PLACE_EDITORS = frozenset({"sed", "perl", "ruby"})
# The helper's command groups only the loop runs (`gtd plan check` is the planner's).
_LOOP_GROUPS = frozenset({"cycle", "auto", "ratchet", "loop", "demo", "verify"})


def decide(root: Path, event: Mapping[str, Any]) -> str | None:
    """Why this tool call is refused, or None to let it through."""
    journal = _journal(root)
    in_flight = (journal is not None and journal.get("phase") == "agent") or _wave_briefs(root)
    tool = event.get("tool_name")
    data = event.get("tool_input") or {}
    if not isinstance(data, dict):
        return None
    if tool in AGENT_TOOLS:
        return _agent(data, in_flight)
    if tool == "Bash" and isinstance(data.get("command"), str):
        return _bash(root, data, _Protected(root) if in_flight else None, event)
    if not in_flight:
        return None
    protected = _Protected(root)
    if tool in EDIT_TOOLS:
        target = data.get("file_path") or data.get("notebook_path")
        if not isinstance(target, str):
            return None
        base, rel = _located(root, target, event.get("cwd"))
        if rel is None:
            return _outside(target, event.get("cwd"))
        why = protected.why(rel, base)
        return None if why is None else _refusal(rel or target, why)
    return None


def _agent(data: Mapping[str, Any], in_flight: bool) -> str | None:
    """The implementer runs only in a cycle's agent phase: launched at any other
    time (by a loop told to by some reply it read, say) nothing would judge what it
    does, and this hook would guard none of it."""
    if data.get("subagent_type") in IMPLEMENTERS and not in_flight:
        return (
            "gtd: the implementer runs only inside a cycle (after `gtd cycle begin` "
            "answered `task`, before `gtd cycle end`); none is in flight, so nothing "
            "would judge its work. End the tick; the next one begins a cycle."
        )
    return None


# The folder of a wave's briefs (gtd.auto.cycle.waves.BRIEFS, not imported: the
# hook runs on every tool call). A wave in flight has no cycle journal: its
# briefs, made by `begin` and removed once the wave is over, say it is.
_WAVE_BRIEFS = f"{paths.STATE_DIR}/wave"


def _wave_briefs(root: Path) -> bool:
    """Whether a wave is in flight: its implementers work, each in its worktree."""
    try:
        return any(n.endswith("-brief.md") for n in os.listdir(root / _WAVE_BRIEFS))
    except OSError:
        return False


def _journal(root: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(read_bytes(root / paths.JOURNAL))  # a pipe there: no wait
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _relative(root: Path, target: str, cwd: object) -> str | None:
    base = cwd if isinstance(cwd, str) and cwd else str(root)
    full = os.path.normpath(os.path.join(base, target))
    real_root = os.path.realpath(root)
    for candidate in (full, os.path.realpath(full)):
        for top in (str(root), real_root):
            if candidate == top:
                return ""
            if candidate.startswith(top + os.sep):
                return candidate[len(top) + 1 :].replace(os.sep, "/")
    return None


def _located(root: Path, target: str, cwd: object) -> tuple[Path, str | None]:
    """The tree ``target`` is judged in and its path there: the person's tree
    (:func:`_relative`), else the helper's wave worktree its real path lies in
    (a wave's implementer works there, and its PLAN.md, .deepflow/ and tests
    are protected as the person's are), else ``(root, None)``. The real path
    decides, so a link in a worktree that leads into git's folder or the
    person's tree is judged where it leads."""
    rel = _relative(root, target, cwd)
    if rel is not None:
        return root, rel
    base = cwd if isinstance(cwd, str) and cwd else str(root)
    real = os.path.realpath(os.path.join(base, target))
    tree = wave_worktree(real)
    if tree is None:
        return root, None
    rel = os.path.relpath(real, tree).replace(os.sep, "/")
    return Path(tree), "" if rel == "." else rel


def wave_worktree(real: str) -> str | None:
    """The wave worktree (``<waves>/<repository>/<loop>/gtd-wave-<task>``,
    gtd.auto.cycle.worktrees) that holds the resolved path ``real``, or None."""
    # worktrees.waves_root, not imported (git, locks: the hook runs on every
    # tool call); tests/integration/test_guard_waves.py holds the two together.
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    top = os.path.realpath(os.path.join(cache, "gtd", "waves"))
    if not real.startswith(top + os.sep):
        return None
    parts = real[len(top) + 1 :].split(os.sep)
    if len(parts) < 3 or not parts[2].startswith(paths.WAVE_PREFIX):
        return None
    return os.path.join(top, *parts[:3])


def wave_owner(tree: str) -> Path | None:
    """The working tree whose loop made the wave worktree ``tree``: from its
    ``.git`` file to git's common folder, then ``main`` (the common folder's
    parent) or the linked worktree the loop's name is the id of. Files only:
    the hook runs on every tool call. None where they do not read."""
    try:
        text = read_bytes(Path(tree, ".git")).decode("utf-8", "replace")
        if not text.startswith("gitdir:"):
            return None
        entry = Path(text[len("gitdir:") :].strip())
        common = (entry / read_bytes(entry / "commondir").decode().strip()).resolve()
        loop = os.path.basename(os.path.dirname(tree))
        if loop == "main":
            return common.parent if common.name == ".git" else None
        linked = read_bytes(common / "worktrees" / loop / "gitdir").decode().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Path(os.path.dirname(linked))


class _Protected:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.tests: set[str] = set()
        self.commands: list[str] | None = None
        try:
            snap = json.loads(read_bytes(root / paths.SNAPSHOT_JSON))
            self.tests = set(snap.get("files") or {})
            commands = (snap.get("baseline") or {}).get("commands") or []
            self.commands = [c["command"] for c in commands if isinstance(c, dict)]
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            pass

    def why(self, rel: str, base: Path | None = None) -> str | None:
        """Why ``rel`` (a path in ``base``: the person's tree, or a wave
        worktree) is protected, or None."""
        if rel in ("", ".git") or rel.startswith((".git/", ".deepflow/")) or rel == ".deepflow":
            return "the helper's and git's own files: only the helper and a person change them"
        if rel in _CLAUDE_SETTINGS:
            return _SETTINGS_WHY
        from gtd.auto.ratchet import protect

        found = protect.protection([rel], self.commands, self.tests).get(rel)
        if found is None or not found.whole:
            return None
        if found.category == "test-folder" and not ((base or self.root) / rel).exists():
            return None  # a new file under a test folder: new tests are welcome
        return found.why


# Claude Code's settings files in the repository: they decide the hooks (this one
# among them), the permissions and the variables every shell command gets, which
# the test process inherits (PYTHONOPTIMIZE there compiles out an assertion
# helper's `assert`; gtd.auto.cycle.seals compares those variables too).
_CLAUDE_SETTINGS = frozenset({".claude/settings.json", ".claude/settings.local.json"})
_SETTINGS_WHY = (
    "the agent CLI's settings: its hooks, its permissions and the variables the tests inherit"
)


def _outside(target: str, cwd: object) -> str | None:
    """A refusal for git's own configuration outside the repository (the global
    and system files, the files of the XDG git folder) and for the user's Claude
    Code settings, else None."""
    base = cwd if isinstance(cwd, str) and cwd else os.getcwd()
    full = os.path.normpath(os.path.join(base, os.path.expanduser(target)))
    folder, name = os.path.split(full)
    if folder == os.path.expanduser("~/.claude") and name in (
        "settings.json",
        "settings.local.json",
    ):
        return f"gtd: {full} is protected while a cycle is in flight ({_SETTINGS_WHY})."
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    if name in (".gitconfig", "gitconfig") or folder == os.path.join(xdg, "git"):
        return (
            f"gtd: {full} is git's configuration, which decides how every file is read "
            "and written: leave it as it is while a cycle is in flight (a change halts "
            "the loop)."
        )
    return None


def _refusal(rel: str, why: str) -> str:
    return (
        f"gtd: {rel} is protected while a cycle is in flight ({why}). Leave it as it is: "
        "fix the code instead, and put new tests in new test files. The ratchet reverts "
        "the whole cycle if it changes."
    )


def _bash(
    root: Path, data: Mapping[str, Any], protected: _Protected | None, event: Mapping[str, Any]
) -> str | None:
    """A Bash call: the helper's commands and git's (exact, by each simple
    command's name), leaving the sandbox (refused), and, where Claude Code's
    sandbox is off, the unambiguous writes of a protected path. ``protected`` is
    None when no cycle is in flight."""
    from gtd.auto import cmdline

    simples = cmdline.parse(data["command"])
    subagent = bool(event.get("agent_id"))
    for simple in simples:
        name = os.path.basename(simple.name or "")
        if name == "gtd":
            why = _helper_command(simple.args, subagent, protected is not None)
            if why is not None:
                return why
        elif name == "git" and protected is not None:
            sub = _git_subcommand([w or "" for w in simple.args])
            if sub in _FORBIDDEN_GIT:
                return (
                    f"gtd: `git {sub}` is not allowed while a cycle is in flight: leave "
                    "your work uncommitted in the working tree; the helper commits or "
                    "reverts it after you finish."
                )
    if protected is None:
        return None
    if _sandboxed(root):
        if data.get("dangerouslyDisableSandbox"):
            return (
                "gtd: commands run inside the sandbox while a cycle is in flight "
                "(`dangerouslyDisableSandbox` is refused). Do the task with what the "
                "sandbox allows: everything in the repository but the protected files."
            )
        return None  # the operating system fences every write: nothing to guess
    cwd: str | None = event.get("cwd") if isinstance(event.get("cwd"), str) else str(root)
    for simple in simples:
        if os.path.basename(simple.name or "") in ("cd", "pushd"):
            to = simple.args[0] if simple.args else "~"
            # a literal folder is followed; any other leaves relative paths unknown
            cwd = None if to is None or cwd is None else os.path.join(cwd, os.path.expanduser(to))
            continue
        for target in _written(simple):
            plain = os.path.expanduser(target)  # the shell expands ~
            if cwd is None and not os.path.isabs(plain):
                continue
            base, rel = _located(root, plain, cwd)
            if rel is None:
                outside = _outside(plain, cwd)
                if outside is not None:
                    return outside
                continue
            why = protected.why(rel, base)
            if why is not None:
                return _refusal(rel or target, why)
    return None


def sandboxed_bash(root: Path, event: Mapping[str, Any]) -> str | None:
    """Why the implementer's Bash call may run without asking, or None.

    With the sandbox on, Claude Code approves a sandboxed command by itself
    (``autoAllowBashIfSandboxed``) but still asks a person about some (`sed` with
    some scripts, `perl -i`, `find -delete`, `sh -c`...): at night nobody answers,
    and the cycle stalls. The operating system fences what such a command may
    write, so a subagent's Bash call in a cycle is approved here — unless it asks
    to leave the sandbox or runs the helper (whose commands Claude Code runs
    outside it); :func:`decide` refuses those first."""
    data = event.get("tool_input")
    if event.get("tool_name") != "Bash" or not event.get("agent_id"):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("command"), str):
        return None
    if data.get("dangerouslyDisableSandbox") or not _sandboxed(root):
        return None
    journal = _journal(root)
    if (journal is None or journal.get("phase") != "agent") and not _wave_briefs(root):
        return None
    from gtd.auto import cmdline

    names = {os.path.basename(s.name or "") for s in cmdline.parse(data["command"])}
    if "gtd" in names or (not names and data["command"].strip()):
        return None  # unreadable: Claude Code's own checks decide
    return "gtd: runs in Claude Code's sandbox (protected files are read-only there)"


def _helper_command(args: list[str | None], subagent: bool, in_flight: bool) -> str | None:
    named = [w for w in args[:2] if w is not None and not w.startswith("-")]
    group, sub = [*named, None, None][:2]
    said = " ".join(w for w in ("gtd", group, sub) if w)
    if subagent and group in _LOOP_GROUPS:
        # Some of these run outside Claude Code's sandbox (its excludedCommands):
        # the loop's door, never the implementer's.
        return (
            f"gtd: `{said}` is the loop's to run, not a subagent's. Do your task, run "
            "the tests, and finish: the loop ends the cycle."
        )
    if in_flight and ((group, sub) in _FORBIDDEN_GTD or (group, None) in _FORBIDDEN_GTD):
        return (
            f"gtd: `{said}` is not allowed while a cycle is in flight: the loop runs "
            "the helper's commands. Do your task, run the tests, and finish."
        )
    return None


def _sandboxed(root: Path) -> bool:
    from gtd.auto import sandbox

    return sandbox.recorded(root)


def _written(simple: Any) -> list[str]:
    """The plain-literal paths one simple command writes, as far as it is
    unambiguous: its output redirections, the operands of a command that
    writes its operands, a copy's destination, an in-place edit's files."""
    from gtd.auto.cmdline import writes

    out = [t for op, t in simple.redirects if writes(op) and t]
    name = os.path.basename(simple.name or "")
    args: list[str | None] = simple.args
    operands = [w for w in args if w is not None and not w.startswith("-")]
    if name in _WRITERS:
        out += operands
    elif name in _COPIERS:
        into = _option_value(args, ("-t", "--target-directory"))
        if into is not None:
            sources = [w for w in operands if w != into]
            out += [os.path.join(into, os.path.basename(w)) for w in sources]
        elif len(operands) >= 2 and all(w is not None for w in args):
            out += operands[-1:]
    elif name in _IN_PLACE_EDITORS and any(_in_place(w) for w in args if w is not None):
        out += operands
    elif name == "dd":
        out += [w[3:] for w in operands if w.startswith("of=")]
    return out


def _option_value(args: list[str | None], names: tuple[str, ...]) -> str | None:
    for i, word in enumerate(args):
        if word in names and i + 1 < len(args):
            return args[i + 1]
        for name in names:
            if word is not None and word.startswith(name + "="):
                return word[len(name) + 1 :]
    return None


def _in_place(word: str) -> bool:
    return (
        word == "--in-place"
        or word.startswith("--in-place=")
        or bool(re.fullmatch(r"-[a-zA-Z]*i\S*", word))
    )


def _git_subcommand(rest: list[str]) -> str | None:
    """The subcommand of a git command line, past its global options."""
    skip_next = False
    for word in rest:
        if skip_next:
            skip_next = False
            continue
        if word in ("-C", "-c", "--git-dir", "--work-tree", "--namespace"):
            skip_next = True
            continue
        if word.startswith("-"):
            continue
        return word
    return None


def is_tick(event: Mapping[str, Any]) -> bool:
    """A Skill call of the loop's tick, `/gtd:auto-cycle`."""
    data = event.get("tool_input")
    skill = data.get("skill") if isinstance(data, dict) else None
    return (
        event.get("tool_name") == "Skill"
        and isinstance(skill, str)
        and (skill.lstrip("/") == TICK_SKILL)
    )


def tick_allowed(root: Path) -> str | None:
    """Why the loop's tick may run without asking, or None: auto mode is set up here.

    Claude Code delivers each tick of `/loop 1m /gtd:auto-cycle` as a Skill call the
    person would have to approve, every minute, which stops an unattended night at
    its second tick. Running `/gtd:auto` is the person's approval of its ticks; the
    tick's own allowed-tools still limit what it runs."""
    if (root / paths.SNAPSHOT_JSON).is_file():
        return f"gtd: {TICK_SKILL} is the tick of the loop /gtd:auto started here"
    return None


def answer(reason: str | None, decision: str = "deny") -> str:
    """What the hook prints: nothing to let the call through as it is, else the
    decision (`deny`, or `allow` for the loop's tick) with its reason."""
    if reason is None:
        return ""
    return json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": reason,
            }
        }
    )
