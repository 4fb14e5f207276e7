"""`gtd doctor`: is this installation usable? Each check is ok, warn or fail.

Checks: python version; the helper itself; git; `gtd` on PATH; every installed copy
of the pack found (Claude Code plugin, the plugin copy install.py made, ~/.claude,
the repository's .claude, a pack checkout) with its version against the helper's;
and, inside a git repository, the test command (configured or detected, and why),
whether its executable exists and, for pytest, whether it collects the suite (a
``--collect-only`` run: a missing dependency or the wrong interpreter shows here,
with the fix, before a baseline is taken). Inputs (home, cwd, environment) are
parameters so tests can point them anywhere.

``installation=True`` (`gtd doctor --installation`, what install.py runs) judges the
installation alone and leaves the folder it runs in out: the checkout install.py is
run from is no project of the user's. In a repository not set up for auto mode (no
.deepflow/config.yaml), a test command that would not run is a warning that says so
plainly, not a failure: nothing there asked for auto mode yet.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from gtd import __version__

Status = Literal["ok", "warn", "fail"]
MANIFEST = "install-manifest.json"  # written by install.py next to the helper's venv
MARKER = "gtd-pack.json"  # install.py's record in a .claude/ directory
REINSTALL = "re-run `python3 install.py` from the gtd pack checkout"


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def overall(checks: list[Check]) -> Status:
    if any(c.status == "fail" for c in checks):
        return "fail"
    return "warn" if any(c.status == "warn" for c in checks) else "ok"


def run_checks(
    cwd: Path,
    home: Path,
    env: Mapping[str, str],
    prefix: Path | None = None,
    *,
    installation: bool = False,
) -> list[Check]:
    """Every check, in display order. ``prefix`` is the helper's venv (sys.prefix);
    ``installation``: the installation's checks only, not the repository's."""
    venv = Path(sys.prefix) if prefix is None else prefix
    checks = [check_python(), check_helper(venv), check_git(cwd), check_on_path(env, venv)]
    checks += check_packs(cwd, home, env, venv, installation=installation)
    if not installation:
        checks.append(check_test_command(cwd))
    checks.append(check_sandbox())
    checks.append(check_network_asks(home, env))
    checks.append(check_prompts(home, env))
    checks.append(check_judge_box(cwd))
    return checks


def check_sandbox() -> Check:
    """Claude Code's command sandbox, which fences the implementer's shell writes
    in auto mode (docs/sandbox.md); without it the loop still runs, judged by
    the ratchet, with the hook's exact refusals as the only fence up front."""
    from gtd.auto.sandbox import unavailable

    why = unavailable()
    if why is None:
        return Check("sandbox", "ok", "Claude Code's sandbox can start (auto mode turns it on)")
    return Check("sandbox", "warn", f"{why}; auto mode runs without it (docs/sandbox.md)")


def check_network_asks(home: Path, env: Mapping[str, str]) -> Check:
    """No prompt may wait for a person at night: a sandboxed command's connection
    to a host no setting allows is one, unless the user's settings refuse it
    (not the project's: gtd.auto.sandbox.network_asks; `check_prompts` covers
    every prompt)."""
    from gtd.auto.sandbox import network_asks, unavailable

    name = "network prompts"
    if unavailable() is not None:
        return Check(name, "ok", "no sandbox here, so no sandbox network prompt")
    why, where = network_asks(home, env)
    if why is None:
        return Check(name, "ok", f"a host outside the allowed domains is refused ({where})")
    return Check(
        name,
        "warn",
        f"{why}: `gtd auto setup --user-settings` refuses it for the loop's duration, "
        f'or set "sandbox": {{"network": {{"strictAllowlist": true}}}} in '
        f"{where} (Claude Code reads it only there, --settings or managed settings; "
        "docs/sandbox.md)",
    )


def check_prompts(home: Path, env: Mapping[str, str]) -> Check:
    """Whether any permission prompt of Claude Code can still wait for a person
    during a night's loop, said plainly: only
    ``permissions.denyInsteadOfPrompting`` in the user's (or managed) settings
    refuses every one; gtd sets it for a loop's duration with the person's
    consent (gtd.auto.user_settings)."""
    from gtd.auto import user_settings

    name = "prompts"
    why, where = user_settings.prompt_waits(home, env)
    held = user_settings.owners()
    if why is None:
        by = f"; set by gtd for the loop in {', '.join(held)}" if held else ""
        return Check(name, "ok", f"no prompt can wait for you: {where}{by}")
    return Check(
        name,
        "warn",
        f"a prompt can wait for you: {why}. `gtd auto setup --user-settings` (or "
        f"GTD_USER_SETTINGS=on) sets permissions.denyInsteadOfPrompting in {where} "
        "for the loop's duration (docs/sandbox.md)",
    )


# -- the environment -------------------------------------------------------------------


def check_python() -> Check:
    info = sys.version_info
    version = f"{info.major}.{info.minor}.{info.micro}"
    if info < (3, 10):
        return Check("python", "fail", f"{version} ({sys.executable}): 3.10 or newer needed")
    return Check("python", "ok", f"{version} ({sys.executable})")


def check_helper(venv: Path) -> Check:
    return Check("helper", "ok", f"gtd {__version__} (in {venv})")


def check_git(cwd: Path) -> Check:
    from gtd.errors import GitError
    from gtd.git import Git

    try:
        res = Git(cwd).call("--version", timeout=30)
    except GitError:  # not installed (git's own bound is not reached: ours is 30 s)
        return Check("git", "fail", "git is not installed or not on PATH: install git")
    if not res.ok:
        return Check("git", "fail", f"`git --version` failed: {res.output.strip()[:200]}")
    return Check("git", "ok", res.stdout.strip().removeprefix("git version ").strip())


def check_on_path(env: Mapping[str, str], venv: Path) -> Check:
    found = shutil.which("gtd", path=env.get("PATH", ""))
    if found is None:
        return Check(
            "gtd on PATH",
            "warn",
            "no `gtd` on PATH: the slash commands run `gtd`; add install.py's --bin-dir "
            "(default ~/.local/bin) to PATH",
        )
    real = Path(os.path.realpath(found))
    mine = Path(os.path.realpath(venv))
    if mine in real.parents:
        return Check("gtd on PATH", "ok", found)
    if _is_plugin_shim(real):
        return Check("gtd on PATH", "ok", f"{found} (the plugin's shim)")
    return Check("gtd on PATH", "warn", f"{found} is another installation than this one ({venv})")


def _is_plugin_shim(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(200)
    except OSError:
        return False
    return b"# gtd-plugin-shim:" in head


# -- the pack --------------------------------------------------------------------------


@dataclass(frozen=True)
class Pack:
    where: str  # plugin / plugin copy / user / project / checkout
    path: Path  # the directory the commands are in
    version: str | None
    commands: tuple[str, ...]


def find_packs(
    cwd: Path, home: Path, env: Mapping[str, str], venv: Path, *, installation: bool = False
) -> list[Pack]:
    packs: list[Pack] = []
    seen: set[Path] = set()

    def add_plugin(where: str, root: Path) -> None:
        real = Path(os.path.realpath(root))
        if real in seen:
            return
        manifest = _read_json(root / ".claude-plugin" / "plugin.json")
        if not isinstance(manifest, dict) or manifest.get("name") != "gtd":
            return
        seen.add(real)
        names = _commands(root / "commands")
        packs.append(Pack(where, root / "commands", _str(manifest.get("version")), names))

    # 1. registered with Claude Code (what a session loads)
    claude_dir = Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    installed = _read_json(claude_dir / "plugins" / "installed_plugins.json")
    entries = installed.get("plugins") if isinstance(installed, dict) else None
    if isinstance(entries, dict):
        for plugin_id, records in sorted(entries.items()):
            if not plugin_id.startswith("gtd@") or not isinstance(records, list):
                continue
            for record in records:
                if isinstance(record, dict) and isinstance(record.get("installPath"), str):
                    add_plugin(f"plugin {plugin_id}", Path(record["installPath"]))
    # 2. the running session's plugin root (the bin/ shim runs us from there)
    if env.get("CLAUDE_PLUGIN_ROOT"):
        add_plugin("plugin (this session)", Path(env["CLAUDE_PLUGIN_ROOT"]))
    # 3. install.py's plugin copy next to this venv
    manifest = _read_json(venv.parent / MANIFEST)
    targets = manifest.get("targets") if isinstance(manifest, dict) else None
    if isinstance(targets, dict) and "plugin" in targets:
        add_plugin("plugin copy", venv.parent / "plugin")
    # 4. ~/.claude and the repository's .claude (install.py --user / --project)
    root = _repo_root(cwd) or cwd
    for where, base in (("user", claude_dir), ("project", root / ".claude")):
        marker = _read_json(base / MARKER)
        if isinstance(marker, dict) and marker.get("name") == "gtd":
            real = Path(os.path.realpath(base))
            if real in seen:
                continue
            seen.add(real)
            names = _commands(base / "commands" / "gtd")
            packs.append(Pack(where, base / "commands" / "gtd", _str(marker.get("version")), names))
    # 5. a checkout of the pack itself (`claude --plugin-dir .`): the folder, not the
    # installation (install.py runs from a checkout)
    if not installation:
        add_plugin("checkout", root)
    return packs


def check_packs(
    cwd: Path, home: Path, env: Mapping[str, str], venv: Path, *, installation: bool = False
) -> list[Check]:
    packs = find_packs(cwd, home, env, venv, installation=installation)
    if not packs:
        return [
            Check(
                "pack",
                "warn",
                "no installed gtd pack found (Claude Code plugin, ~/.claude, "
                f"{_tilde(cwd, home)}/.claude): {REINSTALL}",
            )
        ]
    checks = []
    for pack in packs:
        name = f"pack ({pack.where})"
        where = _tilde(pack.path, home)
        commands = ", ".join(pack.commands) or "no commands"
        if not pack.commands:
            checks.append(Check(name, "fail", f"no commands in {where}: {REINSTALL}"))
        elif pack.version != __version__:
            checks.append(
                Check(
                    name,
                    "fail",
                    f"pack version {pack.version} ≠ helper version {__version__} "
                    f"({where}): {REINSTALL}",
                )
            )
        else:
            checks.append(Check(name, "ok", f"{pack.version}: {commands} in {where}"))
    registered = any(p.where.startswith("plugin") and p.where != "plugin copy" for p in packs)
    copy = next((p for p in packs if p.where == "plugin copy"), None)
    if copy is not None and not registered:
        plugin_dir = _tilde(copy.path.parent, home)
        if _not_registered_by_choice(venv):
            checks.append(
                Check(
                    "claude registration",
                    "ok",
                    f"not registered (installed with --no-register): start Claude Code "
                    f"with `claude --plugin-dir {plugin_dir}`",
                )
            )
            return checks
        checks.append(
            Check(
                "claude registration",
                "warn",
                f"the plugin in {plugin_dir} is not registered with Claude Code: "
                f"start it with `claude --plugin-dir {plugin_dir}` or re-run install.py "
                "with claude on PATH",
            )
        )
    return checks


def _not_registered_by_choice(venv: Path) -> bool:
    """install.py records --no-register with the plugin copy it made."""
    manifest = _read_json(venv.parent / MANIFEST)
    targets = manifest.get("targets") if isinstance(manifest, dict) else None
    plugin = targets.get("plugin") if isinstance(targets, dict) else None
    return isinstance(plugin, dict) and plugin.get("no_register") is True


# -- the repository --------------------------------------------------------------------


def check_test_command(cwd: Path) -> Check:
    root = _repo_root(cwd)
    if root is None:
        return Check("test command", "ok", "skipped: not in a git repository")
    from gtd.paths import CONFIG as CONFIG_PATH

    found = _check_test_command(root)
    if found.status != "fail" or (root / CONFIG_PATH).is_file():
        return found
    # Nothing here asked for auto mode: what would fail is worth knowing, not a failure.
    return Check(
        "test command",
        "warn",
        f"{_tilde(root, Path.home())} is not set up for auto mode (no {CONFIG_PATH}); "
        f"if it were, this would fail: {found.detail}",
    )


def _check_test_command(root: Path) -> Check:
    from gtd.auto.config import load_auto_config
    from gtd.errors import GtdError
    from gtd.paths import CONFIG as CONFIG_PATH
    from gtd.proc import command_argv

    try:
        config = load_auto_config(root)
    except GtdError as exc:
        return Check("test command", "fail", exc.render())
    command = config.test_command
    if command is None:
        return Check(
            "test command",
            "warn",
            f"none configured in {CONFIG_PATH} and none detected: set ratchet.test_command",
        )
    why = config.test_command_reason or ""
    source = f"detected: {why}" if config.test_command_source == "detected" else why
    argv, via_shell = command_argv(command)
    exe = _first_word(command) if via_shell else (argv[0] if argv else None)
    if exe is None:
        return Check("test command", "ok", f"{command} ({source}; shell syntax, not checked)")
    if shutil.which(exe, path=os.environ.get("PATH")) is None and not (root / exe).is_file():
        return Check(
            "test command", "fail", f"test command not found: {exe} (`{command}`, {source})"
        )
    if "pytest" not in command:
        return Check("test command", "ok", f"{command} ({source}; not run: only pytest is tried)")
    return _collect(root, command, argv, source)


# Collecting a large suite takes seconds; a hung import should not hang the doctor.
_COLLECT_TIMEOUT_S = 300.0
_NO_TESTS = 5  # pytest's exit status when it collects nothing (and nothing failed)


def check_judge_box(cwd: Path) -> Check:
    """Whether the judge's box (gtd.auto.ratchet.box) can start here, and what
    to install where it cannot: the run goes on unboxed, never silently."""
    from gtd.auto.config import AutoConfig, load_auto_config
    from gtd.auto.ratchet import box
    from gtd.errors import GtdError

    if not sys.platform.startswith("linux"):
        return Check("judge's box", "warn", f"no box on {sys.platform}: the tests run unboxed")
    root = _repo_root(cwd)
    config = AutoConfig()
    if root is not None:
        # (a config with a mistake: the test command's check names it)
        with contextlib.suppress(GtdError):
            config = load_auto_config(root)
    plan = box.plan(config)
    if plan.boxed:
        return Check("judge's box", "ok", plan.described.removeprefix("judge "))
    if not config.box:
        return Check("judge's box", "warn", "off (ratchet.box: false): the tests run unboxed")
    return Check("judge's box", "warn", f"the tests run unboxed: {plan.why_not}")


def _collect(root: Path, command: str, argv: list[str], source: str) -> Check:
    """Run the pytest command with --collect-only (fast: no test runs, nothing
    written: no cache, no bytecode) and report what it collected, or why not."""
    import re

    from gtd import proc
    from gtd.auto.ratchet.diagnose import collection

    addopts = os.environ.get("PYTEST_ADDOPTS", "")
    env = {
        "PYTEST_ADDOPTS": f"{addopts} --collect-only -q -p no:cacheprovider".strip(),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    res = proc.run(argv, root, timeout=_COLLECT_TIMEOUT_S, env=env, check_exists=False)
    if res.not_found:
        return Check("test command", "fail", f"test command not found: `{command}` ({source})")
    if res.timed_out:
        return Check(
            "test command",
            "warn",
            f"{command} ({source}): collecting the tests took over {_COLLECT_TIMEOUT_S:g} s",
        )
    if res.returncode == _NO_TESTS:
        return Check(
            "test command", "ok", f"{command} ({source}; no tests yet: auto mode's first cycle "
            "writes them)"
        )  # fmt: skip
    found = collection(res.returncode, res.output)
    if found is not None:
        return Check(
            "test command",
            "fail",
            f"`{command}` ({source}) does not run the suite: {found.problem}; fix: {found.fix}",
        )
    counted = re.search(r"(\d+)(?:/\d+)? tests? (?:collected|selected)", res.output)
    what = f"{counted.group(1)} tests collected" if counted else "collects"
    return Check("test command", "ok", f"{command} ({source}; {what})")


def _first_word(command: str) -> str | None:
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or any(ch in words[0] for ch in "=$`(|&;<>"):
        return None
    return words[0]


def _repo_root(cwd: Path) -> Path | None:
    from gtd.errors import GitError
    from gtd.git import Git

    try:
        res = Git(cwd).call("rev-parse", "--show-toplevel", timeout=30)
    except GitError:  # no git: check_git says so
        return None
    return Path(res.stdout.strip()) if res.ok and res.stdout.strip() else None


# -- small helpers ---------------------------------------------------------------------


def _commands(directory: Path) -> tuple[str, ...]:
    return tuple(sorted(f"/gtd:{p.stem}" for p in directory.glob("*.md")))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _tilde(path: Path, home: Path) -> str:
    text, base = str(path), str(home)
    return "~" + text[len(base) :] if text == base or text.startswith(base + os.sep) else text


def report(checks: list[Check]) -> dict[str, Any]:
    return {
        "status": overall(checks),
        "version": __version__,
        "checks": [c.as_dict() for c in checks],
    }
