#!/usr/bin/env python3
"""Install the gtd pack with nothing but python3 (>= 3.10) and git.

    python3 install.py                  helper + the pack as a Claude Code plugin
    python3 install.py --project PATH   helper + the pack in PATH/.claude/
    python3 install.py --user           helper + the pack in ~/.claude/
    python3 install.py --dry-run        print every action, change nothing
    python3 install.py --uninstall      remove exactly what was installed

The helper goes into its own virtual environment (``<prefix>/venv``, default prefix
``~/.local/share/gtd-pack``) with a ``gtd`` symlink in ``~/.local/bin``. Every path
installed is recorded, with its hash, in ``<prefix>/install-manifest.json``: a second
run compares against it and changes nothing when nothing differs, and --uninstall
removes those paths, gtd's own cache (``~/.cache/gtd``: the clean rooms, the crash
log) and its state (``~/.local/state/gtd``: where auto mode's sandbox settings went).
The run ends with ``gtd doctor --installation`` (the installation, not the folder
it runs in) and a summary: what is where, and the one next step (with the bin folder
not on PATH, the line for the user's shell). See docs/install.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

MIN_PYTHON = (3, 10)
SOURCE = Path(__file__).resolve().parent
PACK_PARTS = (".claude-plugin", "commands", "agents", "skills", "bin", "hooks")
# The plugin's PreToolUse hook, as --project/--user write it into settings.json
# (outside a plugin there is no ${CLAUDE_PLUGIN_ROOT}: the gtd on PATH runs it).
HOOK_COMMAND = "gtd hook pre-tool-use"
HOOK_MATCHER = "Edit|Write|MultiEdit|NotebookEdit|Bash|Skill|Agent|Task"
PLUGIN_README = "README.md"
SKIP_NAMES = {"__pycache__", ".DS_Store"}
MANIFEST = "install-manifest.json"
MARKER = "gtd-pack.json"  # in <dir>/.claude/ for the --project and --user layouts
FORMAT = 1
# Install's own `claude plugin` calls send nothing and leave no telemetry files in
# ~/.claude (measured with the pinned CLI: without these, each call writes
# ~/.claude/telemetry/1p_failed_events.*). The same set gtd demo starts Claude Code with.
CLAUDE_QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


class InstallError(Exception):
    """Something the user must fix; printed as `install.py: error: ...`, exit 1."""


# -- small helpers ---------------------------------------------------------------------


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_hash(path: Path) -> str | None:
    try:
        return sha256(path.read_bytes())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def tilde(path: Path | str) -> str:
    """A path for messages, with the home directory shortened to ~."""
    text, home = str(path), str(Path.home())
    return "~" + text[len(home) :] if text == home or text.startswith(home + os.sep) else text


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InstallError(f"{path}: unreadable ({exc})") from None


def pack_meta() -> tuple[str, str, str]:
    """(plugin name, version, marketplace name) from the checkout's manifests."""
    plugin = read_json(SOURCE / ".claude-plugin" / "plugin.json")
    market = read_json(SOURCE / ".claude-plugin" / "marketplace.json")
    if not isinstance(plugin, dict) or not isinstance(market, dict):
        raise InstallError(f"{SOURCE} is not a gtd pack checkout (no .claude-plugin/*.json)")
    return str(plugin["name"]), str(plugin["version"]), str(market["name"])


def helper_version() -> str:
    text = (SOURCE / "helper" / "gtd" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"', text, re.MULTILINE)
    if not found:
        raise InstallError("helper/gtd/__init__.py has no __version__")
    return found.group(1)


def source_hash() -> str:
    """One hash over everything pip builds the helper from."""
    digest = hashlib.sha256()
    files = [SOURCE / "pyproject.toml", SOURCE / "README.md"]
    files += sorted(p for p in (SOURCE / "helper").rglob("*") if p.is_file())
    for path in files:
        if SKIP_NAMES & set(path.parts) or path.suffix == ".pyc":
            continue
        digest.update(path.relative_to(SOURCE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def pack_sources() -> list[Path]:
    """The pack's files in the checkout (never tests, .venv or caches)."""
    found: list[Path] = []
    for part in PACK_PARTS:
        for path in sorted((SOURCE / part).rglob("*")):
            rel = path.relative_to(SOURCE)
            if path.is_file() and not SKIP_NAMES & set(rel.parts):
                found.append(rel)
    return found


def host_pip_ok() -> bool:
    """True when this python has a pip that can install into another environment
    (`pip --python`, pip 22.3 and later)."""
    res = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True)
    found = re.match(r"pip (\d+)\.(\d+)", res.stdout)
    return (
        res.returncode == 0
        and found is not None
        and (
            int(found.group(1)),
            int(found.group(2)),
        )
        >= (22, 3)
    )


# -- Claude Code's records ---------------------------------------------------------------


def claude_dir() -> Path:
    """Claude Code's user directory: ~/.claude unless CLAUDE_CONFIG_DIR moves it."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def claude_marketplaces() -> dict[str, str]:
    """Known marketplace name → its directory (or other source location)."""
    known = read_json(claude_dir() / "plugins" / "known_marketplaces.json")
    out: dict[str, str] = {}
    for name, entry in (known or {}).items() if isinstance(known, dict) else ():
        where = entry.get("installLocation") if isinstance(entry, dict) else None
        out[str(name)] = str(where)
    return out


def claude_state_file() -> Path:
    """Claude Code's own state file: ~/.claude.json, or .claude.json inside
    CLAUDE_CONFIG_DIR when that is set (measured with the CLI)."""
    moved = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(moved) / ".claude.json" if moved else Path.home() / ".claude.json"


def claude_plugins() -> set[str]:
    """Installed plugin ids (name@marketplace)."""
    data = read_json(claude_dir() / "plugins" / "installed_plugins.json")
    plugins = data.get("plugins") if isinstance(data, dict) else None
    return set(plugins) if isinstance(plugins, dict) else set()


# -- what goes where -------------------------------------------------------------------


def plugin_files() -> dict[str, tuple[bytes, int]]:
    """rel path in the plugin dir → (content, mode): the pack exactly as in the checkout,
    and its README (Claude Code's `plugin validate` refuses a plugin without one; the
    checkout is the plugin too, and its README is this one)."""
    out: dict[str, tuple[bytes, int]] = {}
    for rel in [*pack_sources(), Path(PLUGIN_README)]:
        src = SOURCE / rel
        out[rel.as_posix()] = (src.read_bytes(), 0o755 if os.access(src, os.X_OK) else 0o644)
    return out


def dotclaude_files(version: str, layout: str) -> dict[str, tuple[bytes, int]]:
    """rel path under a .claude/ dir → (content, mode), for --project and --user.

    Outside a plugin nothing is namespaced by plugin name, so the layout does it:
    commands go to ``commands/gtd/`` (Claude Code names them ``gtd:auto``: measured
    with the CLI, see docs/install.md), agents and skills get a ``gtd-`` prefix,
    every ``gtd:<agent or skill>`` reference in the markdown becomes ``gtd-<name>``
    and so do the names in each file's frontmatter.
    """
    agents = sorted(p.stem for p in (SOURCE / "agents").glob("*.md"))
    skills = sorted(p.name for p in (SOURCE / "skills").iterdir() if p.is_dir())

    def adapt(text: str) -> str:
        for name in agents + skills:
            text = text.replace(f"gtd:{name}", f"gtd-{name}")
        # Bare names are renamed in the frontmatter only (`name:` and the `skills:`
        # list items): in prose a bare word such as "loop" means something else
        # (Claude Code's own /loop skill in commands/auto.md).
        head, sep, body = text.partition("\n---\n") if text.startswith("---\n") else ("", "", text)
        for name in agents + skills:
            escaped = re.escape(name)
            head = re.sub(rf"^(name: |  - ){escaped}$", rf"\g<1>gtd-{name}", head, flags=re.M)
        return head + sep + body

    out: dict[str, tuple[bytes, int]] = {}
    for rel in pack_sources():
        parts = rel.parts
        if parts[0] == "commands":
            dest = Path("commands", "gtd", *parts[1:])
        elif parts[0] == "agents":
            dest = Path("agents", f"gtd-{parts[1]}")
        elif parts[0] == "skills":
            dest = Path("skills", f"gtd-{parts[1]}", *parts[2:])
        else:
            continue  # .claude-plugin, bin/ and hooks/ belong to the plugin layout only
        data = (SOURCE / rel).read_bytes()
        if rel.suffix == ".md":
            data = adapt(data.decode("utf-8")).encode("utf-8")
        out[dest.as_posix()] = (data, 0o644)
    marker = {
        "name": "gtd",
        "version": version,
        "layout": layout,
        "installed_by": "install.py",
        "files": sorted(out),
    }
    out[MARKER] = ((json.dumps(marker, indent=2) + "\n").encode(), 0o644)
    return out


# -- the installer ---------------------------------------------------------------------


class Installer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.dry = bool(args.dry_run)
        self.prefix = Path(args.prefix).expanduser().absolute()
        self.bin_dir = Path(args.bin_dir).expanduser().absolute()
        self.venv = self.prefix / "venv"
        self.manifest_path = self.prefix / MANIFEST
        self.changes = 0
        self.warnings: list[str] = []
        manifest = read_json(self.manifest_path)
        self.manifest: dict[str, Any] = (
            manifest
            if isinstance(manifest, dict)
            else {"format": FORMAT, "helper": None, "link": None, "dirs": [], "targets": {}}
        )

    # output
    def act(self, message: str) -> bool:
        """Announce a change; True when it should be carried out (not a dry run)."""
        self.changes += 1
        print(("would " if self.dry else "") + message)
        return not self.dry

    def same(self, message: str) -> None:
        print(f"unchanged: {message}")

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        print(f"warning: {message}")

    def save(self) -> None:
        if self.dry:
            return
        self.prefix.mkdir(parents=True, exist_ok=True)
        tmp = self.manifest_path.with_name(MANIFEST + ".tmp")
        tmp.write_text(json.dumps(self.manifest, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, self.manifest_path)

    # directories we create are recorded so uninstall removes them (when empty)
    def mkdirs(self, path: Path, owned: list[str]) -> None:
        missing = []
        probe = path
        while not probe.exists():
            missing.append(probe)
            probe = probe.parent
        for directory in reversed(missing):
            if self.act(f"create directory {tilde(directory)}"):
                directory.mkdir()
            owned.append(str(directory))

    # -- helper ------------------------------------------------------------------------

    def install_helper(self) -> None:
        version, wanted = helper_version(), source_hash()
        helper = self.manifest.get("helper") or {}
        python = self.venv / "bin" / "python"
        installed = self._venv_version(python)
        if installed == version and helper.get("source_hash") == wanted:
            self.same(f"helper gtd {version} in {tilde(self.venv)}")
            return
        host_pip = host_pip_ok()
        if not python.exists():
            self.mkdirs(self.prefix, self.manifest.setdefault("dirs", []))
            if self.act(f"create virtual environment {tilde(self.venv)}"):
                # With a recent pip beside this python, the venv needs no pip of its own
                # (ensurepip is the slow half of `python3 -m venv`).
                bare = ["--without-pip"] if host_pip else []
                self._run([sys.executable, "-m", "venv", *bare, str(self.venv)], "python3 -m venv")
        was = f" (was {installed})" if installed else ""
        if self.act(f"pip install the helper gtd {version}{was} from {tilde(SOURCE)}"):
            # pip always rebuilds and reinstalls a local directory, same version or not
            own_pip = (self.venv / "bin" / "pip").exists()
            pip = (
                [str(python), "-m", "pip"]
                if own_pip or not host_pip
                else [sys.executable, "-m", "pip", "--python", str(python)]
            )
            flags = ["--quiet", "--no-cache-dir", "--disable-pip-version-check"]
            self._run([*pip, "install", *flags, str(SOURCE)], "pip install")
        self.manifest["helper"] = {
            "version": version,
            "source_hash": wanted,
            "venv": str(self.venv),
        }

    def _venv_version(self, python: Path) -> str | None:
        if not python.exists():
            return None
        res = subprocess.run(
            [str(python), "-c", "import gtd; print(gtd.__version__)"],
            capture_output=True,
            text=True,
        )
        return res.stdout.strip() or None if res.returncode == 0 else None

    def _run(self, argv: list[str], what: str, cwd: Path | None = None) -> str:
        env = {**os.environ, **CLAUDE_QUIET} if what == "claude" else None
        res = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env)
        if res.returncode != 0:
            raise InstallError(f"{what} failed (exit {res.returncode}):\n{res.stdout}{res.stderr}")
        return res.stdout

    def link_helper(self) -> None:
        link, target = self.bin_dir / "gtd", self.venv / "bin" / "gtd"
        if link.is_symlink() and Path(os.readlink(link)) == target:
            self.same(f"{tilde(link)} -> {tilde(target)}")
        else:
            ours = self.manifest.get("link") or {}
            if (link.exists() or link.is_symlink()) and ours.get("path") != str(link):
                raise InstallError(
                    f"{link} exists and was not installed by install.py; "
                    "remove it or choose another --bin-dir"
                )
            self.mkdirs(self.bin_dir, self.manifest.setdefault("dirs", []))
            if self.act(f"link {tilde(link)} -> {tilde(target)}"):
                if link.is_symlink() or link.exists():
                    link.unlink()
                link.symlink_to(target)
        self.manifest["link"] = {"path": str(link), "target": str(target)}
        if self.bin_dir not in path_dirs():
            self.warn(
                f"{tilde(self.bin_dir)} is not on your PATH: add "
                f'`export PATH="{self.bin_dir}:$PATH"` to your shell profile'
            )

    # -- pack files --------------------------------------------------------------------

    def preflight(self, key: str, base: Path, files: dict[str, tuple[bytes, int]]) -> None:
        """Refuse before changing anything when a path install.py would write is
        someone else's (not in the manifest, different content)."""
        target = self.manifest["targets"].get(key) or {"files": {}}
        for rel, (data, _) in sorted(files.items()):
            dest = base / rel
            if dest.exists() and not dest.is_file():
                raise InstallError(f"{dest} exists and is not a file")
            have = file_hash(dest)
            if have not in (None, sha256(data), target["files"].get(str(dest))):
                raise InstallError(
                    f"{dest} exists and was not written by install.py (or was edited since); "
                    "move it away and run again"
                )
        link = self.bin_dir / "gtd"
        ours = (self.manifest.get("link") or {}).get("path") == str(link)
        if (link.exists() or link.is_symlink()) and not ours:
            target_link = os.readlink(link) if link.is_symlink() else None
            if target_link != str(self.venv / "bin" / "gtd"):
                raise InstallError(
                    f"{link} exists and was not installed by install.py; "
                    "remove it or choose another --bin-dir"
                )

    def install_files(self, key: str, base: Path, files: dict[str, tuple[bytes, int]]) -> bool:
        """Write ``files`` under ``base``; True when anything changed."""
        before = self.changes
        target = self.manifest["targets"].get(key) or {"files": {}, "dirs": []}
        recorded: dict[str, str] = target["files"]
        owned: list[str] = target["dirs"]
        for rel, (data, mode) in sorted(files.items()):
            dest = base / rel
            have = file_hash(dest)
            want = sha256(data)
            if dest.exists() and not dest.is_file():
                raise InstallError(f"{dest} exists and is not a file")
            if have == want and (dest.stat().st_mode & 0o777) == mode:
                recorded[str(dest)] = want
                continue
            if have is not None and have != want and recorded.get(str(dest)) != have:
                raise InstallError(
                    f"{dest} exists and was not written by install.py (or was edited since); "
                    "move it away and run again"
                )
            self.mkdirs(dest.parent, owned)
            verb = "update" if have is not None else "install"
            if self.act(f"{verb} {tilde(dest)}"):
                tmp = dest.with_name(dest.name + ".gtd-tmp")
                tmp.write_bytes(data)
                tmp.chmod(mode)
                os.replace(tmp, dest)
            recorded[str(dest)] = want
        # files an earlier version installed that this one no longer has
        wanted = {str(base / rel) for rel in files}
        for stale in sorted(set(recorded) - wanted):
            self.remove_file(Path(stale), recorded.pop(stale))
        if self.changes == before:
            self.same(f"{len(files)} pack files in {tilde(base)}")
        target["files"], target["dirs"] = recorded, owned
        self.manifest["targets"][key] = target
        return self.changes > before

    def remove_file(self, path: Path, recorded_hash: str) -> None:
        have = file_hash(path)
        if have is None:
            return
        if have != recorded_hash:
            self.warn(f"kept {tilde(path)}: edited since install.py wrote it")
            return
        if self.act(f"remove {tilde(path)}"):
            path.unlink()

    def remove_dirs(self, dirs: list[str]) -> None:
        for directory in sorted(dirs, key=lambda d: -len(Path(d).parts)):
            path = Path(directory)
            if not path.is_dir():
                continue
            if any(path.iterdir()) and not self.dry:
                self.warn(f"kept {tilde(path)}: not empty")
                continue
            if self.act(f"remove directory {tilde(path)}"):
                path.rmdir()

    # -- claude registration -----------------------------------------------------------

    def register(self, plugin_dir: Path, changed: bool) -> None:
        name, _, market = pack_meta()
        plugin_id = f"{name}@{market}"
        target = self.manifest["targets"]["plugin"]
        claude = shutil.which("claude")
        if claude is None:
            print(
                "Claude Code (claude) is not on PATH: the plugin is not registered. "
                f"Load it with `claude --plugin-dir {plugin_dir}`, or register it with "
                f"`claude plugin marketplace add {plugin_dir}` and "
                f"`claude plugin install {plugin_id}`."
            )
            return
        reg = target.get("claude") or {"marketplace": None, "plugin": None}
        # Claude Code's own records are read, not queried: any `claude` run writes to
        # its config, and a dry run or a run with nothing to do must change nothing.
        path = claude_marketplaces().get(market)
        if path is not None:
            if path != str(plugin_dir) and reg.get("marketplace") != market:
                raise InstallError(
                    f"Claude Code already has a marketplace named {market} at {path}; "
                    f"remove it with `claude plugin marketplace remove {market}` first"
                )
            self.same(f"Claude Code marketplace {market}")
        elif self.act(f"run claude plugin marketplace add {tilde(plugin_dir)}"):
            self._run([claude, "plugin", "marketplace", "add", str(plugin_dir)], "claude")
        reg["marketplace"] = market
        installed = plugin_id in claude_plugins()
        if installed and changed:
            # Claude Code caches a plugin by version: reinstall so it reads the new files.
            if self.act(f"run claude plugin uninstall {plugin_id} (to reinstall changed files)"):
                self._run([claude, "plugin", "uninstall", plugin_id], "claude")
                self._clean_claude_cache(market, name)
            installed = False
        if installed:
            self.same(f"Claude Code plugin {plugin_id}")
        elif self.act(f"run claude plugin install {plugin_id}"):
            self._run([claude, "plugin", "install", plugin_id], "claude")
        reg["plugin"] = plugin_id
        target["claude"] = reg

    def _clean_claude_cache(self, market: str, name: str) -> None:
        """Claude Code leaves an uninstalled plugin's cache marked `.orphaned_at` for
        a later clean-up; remove ours now so nothing is left behind."""
        cache = claude_dir() / "plugins" / "cache" / market
        for version_dir in sorted((cache / name).glob("*")):
            if (version_dir / ".orphaned_at").exists():
                shutil.rmtree(version_dir)
        for directory in (cache / name, cache):
            if directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()

    def unregister(self, reg: dict[str, Any]) -> None:
        plugin_id, market = reg.get("plugin"), reg.get("marketplace")
        installed = plugin_id in claude_plugins()
        listed = market in claude_marketplaces()
        if installed or listed:
            self._claude_remove(str(plugin_id), str(market), installed=installed, listed=listed)
        self._forget_declined(str(plugin_id))

    def _claude_remove(self, plugin_id: str, market: str, *, installed: bool, listed: bool) -> None:
        claude = shutil.which("claude")
        if claude is None:
            self.warn(
                f"claude is not on PATH: run `claude plugin uninstall {plugin_id}` "
                f"and `claude plugin marketplace remove {market}` yourself"
            )
            return
        if installed and self.act(f"run claude plugin uninstall {plugin_id}"):
            self._run([claude, "plugin", "uninstall", plugin_id], "claude")
            self._clean_claude_cache(market, plugin_id.partition("@")[0])
        if listed and self.act(f"run claude plugin marketplace remove {market}"):
            self._run([claude, "plugin", "marketplace", "remove", market], "claude")

    def _forget_declined(self, plugin_id: str) -> None:
        """`claude plugin uninstall` records the plugin in ``declinedPlugins`` of
        Claude Code's state file; take it out (and the key, when that leaves it empty)
        so nothing of gtd stays. Every other key and the file's mode are kept."""
        path = claude_state_file()
        state = read_json(path)
        declined = state.get("declinedPlugins") if isinstance(state, dict) else None
        if not isinstance(declined, list) or plugin_id not in declined:
            return
        if not self.act(f"remove {plugin_id} from declinedPlugins in {tilde(path)}"):
            return
        assert isinstance(state, dict)
        kept = [entry for entry in declined if entry != plugin_id]
        if kept:
            state["declinedPlugins"] = kept
        else:
            del state["declinedPlugins"]
        # The file is private (0600: it holds account data); the copy is created with
        # the same mode, never readable by others for a moment.
        tmp = path.with_name(path.name + ".gtd-tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, path.stat().st_mode & 0o777)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(state, indent=2) + "\n")
        os.replace(tmp, path)

    # -- the commands ------------------------------------------------------------------

    def install(self, args: argparse.Namespace) -> int:
        _, version, _ = pack_meta()
        if shutil.which("git") is None:
            self.warn("git is not on PATH: the helper needs it at run time")
        key, base, files = self.target(args, version)
        self.preflight(key, base, files)
        self.install_helper()
        self.link_helper()
        changed = self.install_files(key, base, files)
        if key != "plugin":
            self.install_hook(key, base)
        if key == "plugin" and not args.no_register:
            self.register(base, changed)
        elif key == "plugin":
            print(f"Not registered (--no-register): load it with `claude --plugin-dir {base}`.")
        if key == "plugin":
            self.manifest["targets"]["plugin"]["no_register"] = bool(args.no_register)
        self.save()
        if self.dry and self.changes:
            print(f"Dry run: {self.changes} change(s) listed, nothing done.")
            print("would run gtd doctor --installation")
            return 0
        if self.changes == 0:
            print(f"Nothing changed: gtd {version} and its pack are already installed.")
        else:
            print(f"Installed gtd {version}: {self.changes} change(s).")
        code = self.doctor(key, base)
        print(self.summary(key, base, version, code))
        return code

    def target(
        self, args: argparse.Namespace, version: str
    ) -> tuple[str, Path, dict[str, tuple[bytes, int]]]:
        if args.project:
            project = Path(args.project).expanduser().resolve()
            if not project.is_dir():
                raise InstallError(f"--project {project}: no such directory")
            return f"project:{project}", project / ".claude", dotclaude_files(version, "project")
        if args.user:
            return "user", claude_dir(), dotclaude_files(version, "user")
        return "plugin", self.prefix / "plugin", plugin_files()

    def install_hook(self, key: str, base: Path) -> None:
        """The guard hook in ``base/settings.json``, beside whatever else is there."""
        path = base / "settings.json"
        settings = read_json(path) if path.exists() else {}
        if not isinstance(settings, dict):
            self.warn(f"{tilde(path)} is not a JSON object: the gtd hook was not added")
            return
        hooks = settings.setdefault("hooks", {})
        groups = hooks.setdefault("PreToolUse", []) if isinstance(hooks, dict) else None
        if not isinstance(groups, list):
            self.warn(f"{tilde(path)}: hooks.PreToolUse is not a list: the gtd hook was not added")
            return
        ours = [group for group in groups if _is_gtd_hook(group)]
        if ours and all(group.get("matcher") == HOOK_MATCHER for group in ours):
            self.same(f"hook in {tilde(path)}")
        elif ours:
            # an earlier install's hook, on fewer tools (before it allowed the tick)
            if self.act(f"update the gtd PreToolUse hook's tools in {tilde(path)}"):
                for group in ours:
                    group["matcher"] = HOOK_MATCHER
                _write_json(path, settings)
        elif self.act(f"add the gtd PreToolUse hook to {tilde(path)}"):
            groups.append(
                {"matcher": HOOK_MATCHER, "hooks": [{"type": "command", "command": HOOK_COMMAND}]}
            )
            _write_json(path, settings)
        self.manifest["targets"][key]["hook"] = str(path)

    def remove_hook(self, path: Path) -> None:
        settings = read_json(path) if path.exists() else None
        hooks = settings.get("hooks") if isinstance(settings, dict) else None
        groups = hooks.get("PreToolUse") if isinstance(hooks, dict) else None
        if not isinstance(groups, list) or not any(_is_gtd_hook(g) for g in groups):
            return
        if not self.act(f"remove the gtd PreToolUse hook from {tilde(path)}"):
            return
        kept = [g for g in groups if not _is_gtd_hook(g)]
        assert isinstance(hooks, dict)  # narrowed above, for the type checker
        assert isinstance(settings, dict)
        if kept:
            hooks["PreToolUse"] = kept
        else:
            del hooks["PreToolUse"]
            if not hooks:
                del settings["hooks"]
        if not settings:
            path.unlink()  # it held nothing but ours
            return
        _write_json(path, settings)

    def doctor(self, key: str, base: Path) -> int:
        """The installation's checks, not the folder's: install.py runs from the
        checkout, which is no project of the user's (its own tests need its .venv)."""
        gtd = self.venv / "bin" / "gtd"
        cwd = base.parent if key.startswith("project:") else Path.cwd()
        print("\n$ gtd doctor --installation", flush=True)
        return subprocess.run([str(gtd), "doctor", "--installation"], cwd=cwd).returncode

    def summary(self, key: str, base: Path, version: str, doctor_code: int) -> str:
        """The last lines of an install: what is where, and the one thing to do next."""
        link = self.bin_dir / "gtd"
        lines = ["", "=" * 72]
        if doctor_code == 0:
            lines.append(f"gtd {version} is installed.")
        else:
            lines.append(
                f"gtd {version} is installed, but doctor found a problem: see its fail lines."
            )
        lines.append(f"  the gtd command:  {tilde(link)}  (its environment: {tilde(self.venv)})")
        lines += self.pack_lines(key, base)
        found = shutil.which("gtd", path=os.environ.get("PATH", ""))
        if found == str(link):
            lines.append("Next: gtd demo   (one night of auto mode on a sample project)")
        elif found is not None and self.bin_dir in path_dirs():
            lines += [
                f"Next: the `gtd` first on your PATH is another one ({tilde(found)}):",
                f"  run this one by its full path:  {tilde(link)} demo",
            ]
        else:
            lines += next_without_path(self.bin_dir)
        lines.append("=" * 72)
        return "\n".join(lines)

    def pack_lines(self, key: str, base: Path) -> list[str]:
        # The pack's own commands, as doctor lists them: a name fixed here went
        # stale when /gtd:auto-status came.
        names = sorted(p.stem for p in (SOURCE / "commands").glob("*.md"))
        commands = ", ".join(f"/gtd:{name}" for name in names)
        head = f"  the pack:         {commands}"
        if key != "plugin":
            return [f"{head} in {tilde(base)}"]
        target = self.manifest["targets"]["plugin"]
        reg = target.get("claude")
        if reg and reg.get("plugin"):
            return [f"{head}: the plugin {reg['plugin']}, registered with Claude Code"]
        why = "--no-register" if target.get("no_register") else "Claude Code is not on PATH"
        return [
            f"{head} in {tilde(base)}",
            f"                    not registered ({why}): start Claude Code with "
            f"`claude --plugin-dir {tilde(base)}`",
        ]

    def remove_cache(self) -> None:
        """gtd's own cache goes with the helper that made it: the clean rooms the
        ratchet checks candidates in (one folder per repository) and the crash log.
        Nothing in it is the user's: a room is rebuilt from the repository."""
        cache = gtd_cache()
        if not (cache.exists() or cache.is_symlink()):
            return
        rooms = cache / "rooms"
        count = sum(1 for p in rooms.iterdir() if p.is_dir()) if rooms.is_dir() else 0
        held = []
        if count:
            held.append(f"the clean rooms of {count} repositor{'y' if count == 1 else 'ies'}")
        if (cache / "gtd.log").exists():
            held.append("the crash log")
        what = f" ({', '.join(held)})" if held else ""
        if not self.act(f"remove gtd's cache {tilde(cache)}{what}"):
            return
        if cache.is_symlink() or not cache.is_dir():
            cache.unlink()
        elif sys.version_info >= (3, 12):
            shutil.rmtree(cache, onexc=_writable_then_retry)
        else:
            shutil.rmtree(cache, onerror=_writable_then_retry)

    def uninstall(self, args: argparse.Namespace) -> int:
        if not self.manifest_path.exists():
            print(f"Nothing to uninstall: no {tilde(self.manifest_path)}.")
            return 0
        targets: dict[str, Any] = self.manifest["targets"]
        only = None
        if args.project:
            only = f"project:{Path(args.project).expanduser().resolve()}"
        elif args.user:
            only = "user"
        elif args.plugin:
            only = "plugin"
        keys = [only] if only else sorted(targets)
        if only and only not in targets:
            print(f"Nothing to uninstall for {only}: install.py did not install it.")
            return 0
        for key in keys:
            target = targets[key]
            if target.get("claude"):
                self.unregister(target["claude"])
            if target.get("hook"):
                self.remove_hook(Path(target["hook"]))
            for path, digest in sorted(target["files"].items()):
                self.remove_file(Path(path), digest)
            self.remove_dirs(target["dirs"])
            if not self.dry:
                del targets[key]
        if only:
            self.save()
            print(f"Uninstalled {only}; the helper stays (`install.py --uninstall` removes it).")
            return 0
        self.remove_sandbox_settings()
        link = self.manifest.get("link")
        if link:
            path = Path(link["path"])
            ours = path.is_symlink() and os.readlink(path) == link["target"]
            if ours and self.act(f"remove {tilde(path)}"):
                path.unlink()
        if self.venv.exists() and self.act(f"remove virtual environment {tilde(self.venv)}"):
            shutil.rmtree(self.venv)
        self.remove_cache()
        kept = self.remove_state()
        if self.act(f"remove {tilde(self.manifest_path)}"):
            self.manifest_path.unlink()
        self.remove_dirs(self.manifest.get("dirs", []))
        if self.dry:
            print("Dry run: nothing removed.")
        elif kept:
            print(f"Uninstalled gtd, but kept {tilde(kept)}: see the warning above.")
        else:
            print("Uninstalled gtd: nothing left.")
        return 0

    def remove_state(self) -> Path | None:
        """gtd's state folder: the list of repositories auto mode's sandbox block
        went to and the record of the user-settings key, both emptied by
        remove_sandbox_settings. Left behind, it would name folders no installed
        helper can clean any more. Kept, with the reason, while it still names
        one; the folder kept, or None."""
        state = gtd_state()
        if not state.is_dir():
            return None
        registry = state / "sandboxed.json"
        try:
            listed = read_json(registry) or []
        except InstallError:
            listed = None
        if not isinstance(listed, list):
            listed = [f"{registry} (unreadable)"]
        others = sorted(p.name for p in state.iterdir() if p.name != registry.name)
        if not self.dry and (listed or others):
            if listed:
                named = ", ".join(tilde(Path(str(p))) for p in listed)
                why = (
                    f"auto mode's sandbox settings may still be in the "
                    f'.claude/settings.local.json of {named}: take their "sandbox" '
                    "block out, then remove the folder"
                )
            else:
                why = f"it holds {', '.join(others)}, which gtd did not expect"
            self.warn(f"kept gtd's state {tilde(state)}: {why}")
            return state
        what = "the list of repositories auto mode's sandbox settings went to"
        if self.act(f"remove gtd's state {tilde(state)} ({what})"):
            shutil.rmtree(state)
        # ~/.local/state made by gtd inside a ~/.local install.py made: it was not
        # there before, and left empty it keeps ~/.local from going too.
        made = {Path(d) for d in self.manifest.get("dirs", [])}
        parent = state.parent
        empty = parent.parent in made and parent.is_dir() and not any(parent.iterdir())
        if empty and self.act(f"remove directory {tilde(parent)}"):
            parent.rmdir()
        return None

    def remove_sandbox_settings(self) -> None:
        """Auto mode's sandbox block in each repository's
        .claude/settings.local.json (docs/sandbox.md): taken out by the helper,
        which recorded exactly what it merged, before the helper goes."""
        python = self.venv / "bin" / "python"
        if not python.exists():
            return
        state = gtd_state()
        try:
            listed = read_json(state / "sandboxed.json")
        except InstallError:
            listed = True  # the helper reads it its own way
        if not listed and not (state / "user-settings.json").exists():
            return  # gtd never set any: no line for a step with nothing to do
        argv = [str(python), "-m", "gtd", "auto", "sandbox", "--off", "--all", "--json"]
        if not self.act("remove auto mode's sandbox settings from the repositories gtd set"):
            return
        res = subprocess.run(argv, capture_output=True, text=True)
        try:
            removed = json.loads(res.stdout).get("removed") or []
        except ValueError:
            print(f"  could not remove them (exit {res.returncode}): {res.stderr.strip()[-300:]}")
            return
        for folder in removed:
            print(f"  removed from {tilde(Path(folder))}/.claude/settings.local.json")
        if json.loads(res.stdout).get("user_settings") == "removed":
            print("  removed permissions.denyInsteadOfPrompting from Claude Code's user settings")


def path_dirs() -> list[Path]:
    return [Path(p).expanduser().absolute() for p in os.environ.get("PATH", "").split(":") if p]


def gtd_cache() -> Path:
    """The helper's own cache folder (the clean rooms, the crash log): the folder
    gtd.auto.ratchet.early and gtd.cli.crash write under."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "gtd"


def gtd_state() -> Path:
    """The helper's own state folder, where gtd.auto.sandbox.registry_path and
    gtd.auto.user_settings.record_path keep their records."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "gtd"


def _writable_then_retry(func: Any, path: str, _exc: object) -> None:
    """rmtree's error hook: a clean room may hold read-only folders (a copied
    project's own modes); make the parent writable and try once more."""
    os.chmod(os.path.dirname(path), 0o700)
    func(path)


def next_without_path(bin_dir: Path) -> list[str]:
    """What to do when ``bin_dir`` is not on PATH: the exact line for the user's shell
    (from $SHELL) that puts it there now and in every new shell, then the README's
    next command; or that command by its full path, changing nothing."""
    home = str(Path.home())
    text = str(bin_dir)
    under_home = text.startswith(home + os.sep)
    in_shell = "$HOME" + text[len(home) :] if under_home else text
    shell = Path(os.environ.get("SHELL", "")).name
    if shell == "fish":
        fish_dir = "~" + text[len(home) :] if under_home else text
        add = f"fish_add_path {fish_dir}"
    else:
        profile = {"bash": "~/.bashrc", "zsh": "~/.zshrc"}.get(shell, "~/.profile")
        export = f'export PATH="{in_shell}:$PATH"'
        add = f"echo '{export}' >> {profile} && {export}"
    full = f"{tilde(bin_dir / 'gtd')} demo"
    return [
        f"Next: {tilde(bin_dir)} is not on your PATH, so `gtd` is not found yet.",
        f"  Add it ({shell or 'sh'}):  {add}",
        "  then run:  gtd demo",
        f"  or, without changing PATH:  {full}",
    ]


def _write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def _is_gtd_hook(group: object) -> bool:
    entries = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(entries, list) and any(
        isinstance(e, dict) and e.get("command") == HOOK_COMMAND for e in entries
    )


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="install.py",
        description="Install (or uninstall) the gtd helper and the gtd pack for Claude Code.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--plugin", action="store_true", help="the pack as a Claude Code plugin (the default)"
    )
    where.add_argument("--project", metavar="PATH", help="the pack into PATH/.claude/")
    where.add_argument("--user", action="store_true", help="the pack into ~/.claude/")
    parser.add_argument(
        "--prefix",
        default="~/.local/share/gtd-pack",
        help="where the helper's venv, the plugin copy and the manifest go (default: %(default)s)",
    )
    parser.add_argument(
        "--bin-dir", default="~/.local/bin", help="where the `gtd` link goes (default: %(default)s)"
    )
    parser.add_argument(
        "--no-register",
        action="store_true",
        help="plugin layout: copy the plugin but do not register it with `claude plugin`",
    )
    parser.add_argument("--dry-run", action="store_true", help="print every action, change nothing")
    parser.add_argument(
        "--uninstall",
        action="store_true",
        help="remove what install.py installed (everything, or only the layout named)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    if sys.version_info < MIN_PYTHON:
        print("install.py: error: Python 3.10 or newer is needed", file=sys.stderr)
        return 1
    args = parse_args(sys.argv[1:] if argv is None else argv)
    installer = Installer(args)
    try:
        return installer.uninstall(args) if args.uninstall else installer.install(args)
    except InstallError as exc:
        if installer.changes:
            installer.save()  # keep the record of whatever was done before the failure
        print(f"install.py: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
