"""install.py as a new user runs it: a fresh copy of the checkout, the README's install
command, real pip into a virtual environment under a HOME of the test's own, then a
sample repository with a PLAN.md, `gtd doctor`, a second run, dry runs, the --project
and --user layouts, a version mismatch and the uninstall.

The walk-through runs twice: with the real `claude` CLI on PATH (the pinned one
scripts/check provides; it reads its commands without a model: the init line of
`claude -p --output-format stream-json` lists them), and on a machine without it,
where the plugin cannot be registered and doctor says so with a warning.

The helper is pip-installed once per walk-through (about 30 s)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gtd import __version__
from tests.claude_cli import claude_or_skip

ROOT = Path(__file__).resolve().parents[2]
CLAUDE = shutil.which("claude")
PLUGIN_ID = "gtd@gtd-pack"

PLAN = """\
# Sample

### spec-sample

- [ ] **T1**: Add double
  - Files: sample.py, tests/test_sample.py
  - Blocked by: none
"""


# -- helpers ---------------------------------------------------------------------------


def fresh_clone(dest: Path) -> Path:
    """The checkout as `git clone` would give it: tracked and new files, nothing ignored
    (no .venv, no caches)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        rel = raw.decode()
        src = ROOT / rel
        if not src.is_file() or (src.is_symlink() and not src.exists()):
            continue  # deleted in the working tree
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            target.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, target)
    return dest


def readme_install_argv() -> list[str]:
    """The first command of the README's set-up section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = text.split("## Set up", 1)[1]
    command = setup.split("```sh\n", 1)[1].split("\n", 1)[0].split("#", 1)[0].split()
    assert command[:2] == ["python3", "install.py"], command
    return [sys.executable, *command[1:]]


def user_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "XDG_"))}
    dev_bin = str(Path(sys.executable).parent)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != dev_bin]
    env.update(HOME=str(home), PATH=os.pathsep.join([str(home / ".local" / "bin"), *path]))
    env.pop("VIRTUAL_ENV", None)
    return env


def hide(program: str, env: dict[str, str], shadow: Path) -> dict[str, str]:
    """``env`` on a machine without ``program``: each PATH directory that has it is
    replaced by a directory of links to everything else in it."""
    path = []
    for i, entry in enumerate(env.get("PATH", "").split(os.pathsep)):
        found = Path(entry) / program
        if not entry or not (found.exists() or found.is_symlink()):
            path.append(entry)
            continue
        mirror = shadow / str(i)
        mirror.mkdir(parents=True)
        for item in Path(entry).iterdir():
            if item.name != program:
                (mirror / item.name).symlink_to(item)
        path.append(str(mirror))
    hidden = {**env, "PATH": os.pathsep.join(path)}
    assert shutil.which(program, path=hidden["PATH"]) is None
    return hidden


def run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 240) -> Any:
    res = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return res


def snapshot(root: Path) -> dict[str, str]:
    """Every path under root → its content hash (or symlink target / "dir")."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def not_ours(rel: str) -> bool:
    """Paths other programs write in HOME when the walk-through runs them: Claude
    Code's config, backups and telemetry, and the rustup settings its environment
    probe leaves when rustup's shims are on PATH."""
    top = rel.split("/", 1)[0]
    # `.cache` alone: the XDG cache folder gtd's own cache was made in, which is
    # not gtd's (uninstall removes `.cache/gtd`, test_uninstall_removes_gtds_cache)
    return top in (".claude", ".rustup") or top.startswith(".claude.json") or rel == ".cache"


def claude_sees(claude: str, cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """The init line of a real `claude -p` run: its slash commands and agents. The API
    is a closed port: the line comes before any request, then the process is killed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    probe_env = {
        **env,
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "sk-test-not-a-key",
    }
    proc = subprocess.Popen(
        [claude, "-p", "hello", "--output-format", "stream-json", "--verbose"],
        cwd=cwd,
        env=probe_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    timer = threading.Timer(60, lambda: os.killpg(proc.pid, signal.SIGKILL))
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            data = json.loads(line)
            if data.get("type") == "system" and data.get("subtype") == "init":
                return dict(data)
        raise AssertionError("claude printed no init line")
    finally:
        timer.cancel()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def sample_repo(path: Path, env: dict[str, str]) -> Path:
    path.mkdir()
    (path / "PLAN.md").write_text(PLAN)
    (path / "sample.py").write_text("def one():\n    return 1\n")
    (path / "tests").mkdir()
    (path / "tests" / "test_sample.py").write_text(
        "from sample import one\n\n\ndef test_one():\n    assert one() == 1\n"
    )
    (path / "conftest.py").write_text("")
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"]):
        subprocess.run(argv, cwd=path, env=env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "initial"], cwd=path, env=env, check=True)
    return path


def doctor_json(gtd: Path, cwd: Path, env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    res = run([str(gtd), "doctor", "--json"], cwd, env, timeout=60)
    return res.returncode, json.loads(res.stdout)


def load_install() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gtd_install", ROOT / "install.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def validate_findings(claude: str, plugin: Path, home: Path) -> list[str]:
    """The codes of every finding `claude plugin validate` reports for ``plugin``
    (its manifest, its contents and the plugin directory's own review)."""
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }
    res = subprocess.run(
        [claude, "plugin", "validate", "--json", str(plugin)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    report = json.loads(res.stdout)
    found = [*(report.get("directory") or {}).get("findings", [])]
    for part in [report.get("manifest") or {}, *(report.get("contents") or [])]:
        found += [*part.get("errors", []), *part.get("warnings", [])]
    return [str(f.get("code") or f.get("message")) for f in found]


# -- the walk-through ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("with_claude", [True, False], ids=["claude", "no-claude"])
def test_new_user_walk_through(tmp_path: Path, with_claude: bool) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = user_env(home)
    claude: str | None = None
    if with_claude:
        claude = claude_or_skip()
    else:
        env = hide("claude", env, tmp_path / "no-claude")
    clone = fresh_clone(tmp_path / "gtd-pack")
    sample = sample_repo(tmp_path / "sample", env)
    gtd = home / ".local" / "bin" / "gtd"
    home_before = snapshot(home)
    install = readme_install_argv()
    plugin = home / ".local" / "share" / "gtd-pack" / "plugin"
    # Without Claude Code the plugin cannot be registered, and doctor says so: that
    # one warning, and nothing else, is what such a machine rightly shows.
    unregistered = (
        "warn claude registration: the plugin in ~/.local/share/gtd-pack/plugin is not "
        "registered with Claude Code: start it with `claude --plugin-dir "
        "~/.local/share/gtd-pack/plugin` or re-run install.py with claude on PATH"
    )
    # A fresh machine also rightly warns that a permission prompt can wait for a
    # person (gtd auto setup --user-settings closes it): those and no others.
    expected_warnings = {"network prompts", "prompts"}
    if claude is None:
        expected_warnings.add("claude registration")

    # 1. the README's install command
    first = run(install, clone, env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"Installed gtd {__version__}" in first.stdout
    assert_doctor_warns(first.stdout, expected_warnings)
    assert (unregistered in first.stdout) is (claude is None), first.stdout
    assert os.path.realpath(gtd).startswith(str(home / ".local" / "share" / "gtd-pack" / "venv"))
    assert (plugin / "commands" / "auto.md").is_file()
    assert (plugin / "README.md").read_bytes() == (ROOT / "README.md").read_bytes()
    assert not (plugin / "tests").exists()
    assert not (plugin / "helper").exists()
    assert not (plugin / ".venv").exists()

    # 2. Claude Code sees the commands (the real CLI, no model needed), and the copy
    # it loads passes its own validation, README included
    if claude:
        seen = claude_sees(claude, sample, env)
        assert {"gtd:auto", "gtd:auto-cycle", "gtd:step"} <= set(seen["slash_commands"]), seen
        listed = run([claude, "plugin", "list", "--json"], sample, env)
        assert PLUGIN_ID in listed.stdout
        codes = validate_findings(claude, plugin, tmp_path / "validate-home")
        assert "README_MISSING" not in codes, codes
    else:
        assert f"claude --plugin-dir {plugin}" in first.stdout

    # 3. doctor in the sample repository: no failure; the prompt warnings, and the
    # registration one without claude
    code, answer = doctor_json(gtd, sample, env)
    assert code == 0
    warned = [c["name"] for c in answer["checks"] if c["status"] != "ok"]
    assert set(warned) <= expected_warnings, answer
    assert ("claude registration" in warned) is (claude is None), answer
    assert answer["status"] == ("warn" if warned else "ok"), answer
    by_name = {c["name"]: c for c in answer["checks"]}
    assert by_name["test command"]["status"] == "ok"
    assert any(name.startswith("pack (plugin") for name in by_name)

    # 4. a second run changes nothing and says so
    before = snapshot(home)
    second = run(install, clone, env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Nothing changed" in second.stdout
    assert "would " not in second.stdout
    assert_doctor_warns(second.stdout, expected_warnings)
    assert snapshot(home) == before

    # 5. dry runs print every action and change nothing
    dry_user = run([*install, "--user", "--dry-run"], clone, env)
    assert dry_user.returncode == 0, dry_user.stderr
    assert "would install ~/.claude/commands/gtd/auto.md" in dry_user.stdout
    dry_uninstall = run([*install, "--uninstall", "--dry-run"], clone, env)
    assert "would remove virtual environment" in dry_uninstall.stdout
    assert snapshot(home) == before

    # 6. a version mismatch turns doctor red
    installed = [
        p
        for p in home.rglob("plugin.json")
        if p.parent.name == ".claude-plugin" and "gtd" in p.as_posix()
    ]
    assert installed
    saved = {p: p.read_text() for p in installed}
    for path in installed:
        path.write_text(json.dumps({**json.loads(saved[path]), "version": "0.0.0-old"}))
    code, answer = doctor_json(gtd, sample, env)
    assert code == 1
    assert answer["status"] == "fail"
    assert any("0.0.0-old" in c["detail"] for c in answer["checks"] if c["status"] == "fail")
    for path, text in saved.items():
        path.write_text(text)

    # 7. the plugin goes; the project layout comes, with the same command names
    only_plugin = run([*install, "--uninstall", "--plugin"], clone, env)
    assert only_plugin.returncode == 0, only_plugin.stdout + only_plugin.stderr
    assert not plugin.exists()
    assert gtd.exists()  # the helper stays
    project = run([*install, "--project", str(sample)], clone, env)
    assert project.returncode == 0, project.stdout + project.stderr
    dot = sample / ".claude"
    assert (dot / "commands" / "gtd" / "auto.md").is_file()
    assert (dot / "commands" / "gtd" / "auto-cycle.md").is_file()
    assert "name: gtd-implementer" in (dot / "agents" / "gtd-implementer.md").read_text()
    assert (
        "subagent_type: gtd-implementer" in (dot / "commands" / "gtd" / "auto-cycle.md").read_text()
    )
    assert (dot / "skills" / "gtd-plan-format" / "SKILL.md").is_file()
    assert not (dot / "bin").exists()
    assert not (dot / "README.md").exists()
    # the project copy is registered where it is: only the prompt warnings remain
    assert_doctor_warns(project.stdout, {"network prompts", "prompts"})
    if claude:
        seen = claude_sees(claude, sample, env)
        assert {"gtd:auto", "gtd:auto-cycle", "gtd:step"} <= set(seen["slash_commands"]), seen
        assert {"gtd-implementer", "gtd-planner"} <= set(seen["agents"]), seen
        assert PLUGIN_ID not in run([claude, "plugin", "list", "--json"], sample, env).stdout

    # 8. the user layout
    user = run([*install, "--user"], clone, env)
    assert user.returncode == 0, user.stdout + user.stderr
    assert (home / ".claude" / "commands" / "gtd" / "auto.md").is_file()
    code, answer = doctor_json(gtd, tmp_path, env)
    assert code == 0
    assert "pack (user)" in {c["name"] for c in answer["checks"]}

    # 9. uninstall leaves nothing behind, in Claude Code's own state file too
    gone = run([*install, "--uninstall"], clone, env)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert "nothing left" in gone.stdout
    after = snapshot(home)
    ours = {rel for rel in set(after) - set(home_before) if not not_ours(rel)}
    assert not ours, sorted(ours)
    assert not [rel for rel in after if "gtd" in rel], sorted(rel for rel in after if "gtd" in rel)
    assert not dot.exists()
    assert subprocess.run(["git", "status", "--porcelain"], cwd=sample, env=env,
                          capture_output=True, text=True).stdout == ""  # fmt: skip
    state = home / ".claude.json"
    assert "gtd" not in (state.read_text() if state.exists() else "")
    if claude:
        assert "gtd@" not in run([claude, "plugin", "list", "--json"], sample, env).stdout


# -- quick paths (no pip) --------------------------------------------------------------


def test_dry_run_on_a_fresh_home_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = user_env(home)
    res = run([sys.executable, str(ROOT / "install.py"), "--dry-run"], tmp_path, env)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "would create virtual environment ~/.local/share/gtd-pack/venv" in out
    assert "would pip install the helper" in out
    assert "would link ~/.local/bin/gtd" in out
    assert "would install ~/.local/share/gtd-pack/plugin/commands/auto.md" in out
    if CLAUDE:
        assert "would run claude plugin install gtd@gtd-pack" in out
    assert "nothing done" in out
    assert snapshot(home) == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_prefix_and_bin_dir_are_honoured_in_a_dry_run(tmp_path: Path) -> None:
    env = user_env(tmp_path / "home")
    res = run(
        [sys.executable, str(ROOT / "install.py"), "--dry-run", "--no-register",
         "--prefix", str(tmp_path / "p"), "--bin-dir", str(tmp_path / "b")],
        tmp_path,
        env,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"would create virtual environment {tmp_path / 'p' / 'venv'}" in res.stdout
    assert f"would link {tmp_path / 'b' / 'gtd'}" in res.stdout
    assert "claude --plugin-dir" in res.stdout
    assert "is not on your PATH" in res.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_uninstall_with_nothing_installed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    res = run([sys.executable, str(ROOT / "install.py"), "--uninstall"], tmp_path, user_env(home))
    assert res.returncode == 0
    assert "Nothing to uninstall" in res.stdout
    assert snapshot(home) == {}


def test_someone_elses_file_is_refused_before_anything_changes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project"
    theirs = project / ".claude" / "commands" / "gtd" / "auto.md"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("my own command\n")
    res = run(
        [sys.executable, str(ROOT / "install.py"), "--project", str(project)],
        tmp_path,
        user_env(home),
    )
    assert res.returncode == 1
    assert f"{theirs} exists and was not written by install.py" in res.stderr
    assert theirs.read_text() == "my own command\n"
    assert snapshot(home) == {}


def test_project_layout_namespaces_without_a_plugin() -> None:
    install = load_install()
    files = install.dotclaude_files(__version__, "project")
    assert {
        "commands/gtd/auto.md",
        "commands/gtd/auto-cycle.md",
        "agents/gtd-implementer.md",
        "agents/gtd-planner.md",
        "agents/gtd-reviewer.md",
        "skills/gtd-plan-format/SKILL.md",
        "gtd-pack.json",
    } <= set(files)
    assert not any(rel.startswith(("bin/", ".claude-plugin/")) for rel in files)
    text = "".join(data.decode() for data, _ in files.values())
    assert "gtd:implementer" not in text
    assert "gtd:planner" not in text
    assert "gtd:reviewer" not in text
    # frontmatter names are prefixed; prose keeps its words (`loop` in auto.md is
    # Claude Code's own /loop skill, not the pack's step-mode skill)
    assert "  - gtd-plan-format\n" in files["agents/gtd-planner.md"][0].decode()
    assert files["skills/gtd-loop/SKILL.md"][0].decode().startswith("---\nname: gtd-loop\n")
    auto = files["commands/gtd/auto.md"][0].decode()
    assert "(the `loop` skill with the arguments `1m /gtd:auto-cycle`)" in auto
    assert "gtd-loop" not in auto
    marker = json.loads(files["gtd-pack.json"][0])
    assert marker["version"] == __version__
    assert "commands/gtd/auto.md" in marker["files"]


def test_plugin_copy_is_the_pack_and_its_readme() -> None:
    files = load_install().plugin_files()
    tops = {rel.split("/", 1)[0] for rel in files}
    assert tops == {".claude-plugin", "commands", "agents", "skills", "bin", "hooks", "README.md"}
    assert files["bin/gtd"][1] == 0o755
    assert files["README.md"] == ((ROOT / "README.md").read_bytes(), 0o644)


def test_the_plugin_copy_passes_claude_plugin_validate(tmp_path: Path) -> None:
    """What install.py copies is what Claude Code's own validator accepts: no
    README_MISSING, no error or warning about the manifest or the contents."""
    claude = claude_or_skip()
    plugin = tmp_path / "plugin"
    for rel, (data, mode) in load_install().plugin_files().items():
        target = plugin / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(mode)
    codes = validate_findings(claude, plugin, tmp_path / "claude-home")
    # A listing icon is the directory's wish, not a defect of the plugin.
    assert [c for c in codes if c != "ICON_MISSING"] == [], codes


def fake_venv(prefix: Path) -> Path:
    """The installed helper behind the venv's `python`: this checkout's."""
    python = prefix / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return python


def installed(
    home: Path,
    *,
    dirs: list[str] | None = None,
    targets: dict[str, object] | None = None,
    helper: bool = False,
) -> Path:
    """The prefix of an install as install.py records it (no layout unless
    ``targets`` names some; ``helper``: this checkout's helper behind the venv's
    `python`), for --uninstall to read: its manifest written, the prefix returned."""
    prefix = home / ".local" / "share" / "gtd-pack"
    prefix.mkdir(parents=True, exist_ok=True)
    if helper:
        fake_venv(prefix)
    manifest = {
        "format": 1, "helper": None, "link": None,
        "dirs": dirs or [], "targets": targets or {},
    }  # fmt: skip
    (prefix / "install-manifest.json").write_text(json.dumps(manifest))
    return prefix


@pytest.mark.parametrize("moved", [False, True], ids=["home", "CLAUDE_CONFIG_DIR"])
def test_uninstall_takes_gtd_out_of_declined_plugins(tmp_path: Path, moved: bool) -> None:
    """`claude plugin uninstall` leaves ``"declinedPlugins": ["gtd@gtd-pack"]`` in
    Claude Code's state file; --uninstall removes that entry and keeps the rest."""
    home = tmp_path / "home"
    home.mkdir()
    env = user_env(home)
    config = home / ".claude"
    if moved:
        config = tmp_path / "claude-config"
        config.mkdir()
        env["CLAUDE_CONFIG_DIR"] = str(config)
    state = (config if moved else home) / ".claude.json"
    theirs = {"userID": "abc", "projects": {"/x": {"allowedTools": []}}}
    state.write_text(json.dumps({**theirs, "declinedPlugins": ["other@market", PLUGIN_ID]}))
    state.chmod(0o600)
    # What install.py recorded when it registered the plugin (the plugin itself is
    # gone already: Claude Code's uninstall ran, the entry stayed behind).
    registration = {"marketplace": "gtd-pack", "plugin": PLUGIN_ID}
    targets: dict[str, object] = {"plugin": {"files": {}, "dirs": [], "claude": registration}}
    installed(home, targets=targets)
    install = [sys.executable, str(ROOT / "install.py"), "--uninstall"]

    dry = run([*install, "--dry-run"], tmp_path, env)
    assert dry.returncode == 0, dry.stderr
    shown = "~/.claude.json" if not moved else str(state)
    assert f"would remove {PLUGIN_ID} from declinedPlugins in {shown}" in dry.stdout
    assert PLUGIN_ID in state.read_text()

    res = run(install, tmp_path, env)
    assert res.returncode == 0, res.stderr
    assert f"remove {PLUGIN_ID} from declinedPlugins in {shown}" in res.stdout
    assert json.loads(state.read_text()) == {**theirs, "declinedPlugins": ["other@market"]}
    assert state.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in state.parent.iterdir() if "gtd" in p.name) == []

    # Only ours listed: the key goes with it.
    state.write_text(json.dumps({**theirs, "declinedPlugins": [PLUGIN_ID]}))
    installed(home, targets=targets)
    assert run(install, tmp_path, env).returncode == 0
    assert json.loads(state.read_text()) == theirs


def test_an_earlier_installs_hook_is_brought_up_to_date(tmp_path: Path) -> None:
    """--project/--user put the guard hook in settings.json; an install from before
    the hook allowed the loop's tick matched fewer tools. Re-installing widens our
    group's matcher and leaves every other hook as it was; a second run is a no-op."""
    install = load_install()
    args = install.parse_args(["--prefix", str(tmp_path / "p"), "--bin-dir", str(tmp_path / "b")])
    installer = install.Installer(args)
    installer.manifest["targets"]["project:x"] = {}
    base = tmp_path / ".claude"
    base.mkdir()
    theirs = {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-check"}]}
    old = {
        "matcher": "Edit|Write|MultiEdit|NotebookEdit|Bash",
        "hooks": [{"type": "command", "command": install.HOOK_COMMAND}],
    }
    settings = base / "settings.json"
    settings.write_text(json.dumps({"model": "x", "hooks": {"PreToolUse": [theirs, old]}}))
    installer.install_hook("project:x", base)
    after = json.loads(settings.read_text())
    assert after["model"] == "x"
    assert after["hooks"]["PreToolUse"] == [theirs, {**old, "matcher": install.HOOK_MATCHER}]
    assert "Skill" in install.HOOK_MATCHER.split("|")
    changes = installer.changes
    installer.install_hook("project:x", base)
    assert installer.changes == changes
    assert json.loads(settings.read_text()) == after


# -- the closing summary and what uninstall leaves -------------------------------------


def installer_in(home: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> Any:
    """An Installer for a HOME of the test's own, its default prefix and bin dir."""
    monkeypatch.setenv("HOME", str(home))
    install = load_install()
    local = home / ".local"
    argv = ["--prefix", str(local / "share" / "gtd-pack"), "--bin-dir", str(local / "bin")]
    return install.Installer(install.parse_args([*argv, *extra]))


def test_the_summary_in_docs_install_is_what_install_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("SHELL", "/bin/bash")
    installer = installer_in(home, monkeypatch)
    installer.manifest["targets"]["plugin"] = {"files": {}, "dirs": [], "no_register": False}
    printed = installer.summary("plugin", installer.prefix / "plugin", __version__, 0)
    doc = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    block = doc.split("`SHELL=/bin/bash`:\n\n```\n", 1)[1].split("\n```", 1)[0]
    assert printed.strip("\n") == block.replace("gtd 0.1.0 ", f"gtd {__version__} ")
    # what was installed: every command of the pack, as doctor lists them
    names = sorted(p.stem for p in (ROOT / "commands").glob("*.md"))
    listed = ", ".join(f"/gtd:{name}" for name in names)
    assert f"  the pack:         {listed} in ~/.local/share/gtd-pack/plugin" in printed


EXPORT = 'export PATH="$HOME/.local/bin:$PATH"'


@pytest.mark.parametrize(
    ("shell", "line"),
    [
        ("/bin/bash", f"echo '{EXPORT}' >> ~/.bashrc && {EXPORT}"),
        ("/usr/bin/zsh", f"echo '{EXPORT}' >> ~/.zshrc && {EXPORT}"),
        ("/usr/bin/fish", "fish_add_path ~/.local/bin"),
        ("", f"echo '{EXPORT}' >> ~/.profile && {EXPORT}"),
    ],
    ids=["bash", "zsh", "fish", "unknown"],
)
def test_without_the_bin_dir_on_path_the_next_step_is_the_line_for_the_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shell: str, line: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SHELL", shell)
    lines = load_install().next_without_path(tmp_path / ".local" / "bin")
    assert lines[0] == "Next: ~/.local/bin is not on your PATH, so `gtd` is not found yet."
    assert lines[1] == f"  Add it ({Path(shell).name or 'sh'}):  {line}"
    assert lines[2:] == [
        "  then run:  gtd demo",
        "  or, without changing PATH:  ~/.local/bin/gtd demo",
    ]


def test_a_bin_dir_outside_home_is_named_by_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELL", "/bin/bash")
    bin_dir = tmp_path / "opt" / "bin"
    lines = load_install().next_without_path(bin_dir)
    assert f'export PATH="{bin_dir}:$PATH"' in lines[1]
    assert lines[-1] == f"  or, without changing PATH:  {bin_dir}/gtd demo"
    # the printed line, run by bash, does put the folder first on PATH
    bin_dir.mkdir(parents=True)
    (tmp_path / "home").mkdir()
    add = lines[1].split(":  ", 1)[1]
    res = subprocess.run(
        ["bash", "-c", f"{add}\necho $PATH"],
        env={"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert res.stdout.split(":")[0] == str(bin_dir), res.stderr


@pytest.mark.parametrize("xdg", [False, True], ids=["home", "XDG_CACHE_HOME"])
def test_uninstall_removes_gtds_cache_and_says_so(tmp_path: Path, xdg: bool) -> None:
    """The clean rooms (~/.cache/gtd/rooms/<repo>/…, read-only folders among them)
    and the crash log go with the helper; a dry run names them and keeps them."""
    home = tmp_path / "home"
    home.mkdir()
    env = user_env(home)
    cache = home / ".cache" / "gtd"
    if xdg:
        env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
        cache = tmp_path / "xdg" / "gtd"
    for repo in ("app-1a2b", "lib-3c4d"):
        room = cache / "rooms" / repo / "slot-0" / "pkg"
        room.mkdir(parents=True)
        (room / "mod.py").write_text("x = 1\n")
        room.chmod(0o555)
    (cache / "gtd.log").write_text("### version information\n")
    installed(home)
    install = [sys.executable, str(ROOT / "install.py"), "--uninstall"]
    shown = "~/.cache/gtd" if not xdg else str(cache)
    said = f"remove gtd's cache {shown} (the clean rooms of 2 repositories, the crash log)"

    dry = run([*install, "--dry-run"], tmp_path, env)
    assert f"would {said}" in dry.stdout, dry.stdout
    assert (cache / "gtd.log").is_file()

    res = run(install, tmp_path, env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert said in res.stdout.splitlines(), res.stdout
    assert "Uninstalled gtd: nothing left." in res.stdout
    assert not cache.exists()
    assert cache.parent.is_dir()  # the cache folder itself is not gtd's


def test_uninstall_names_a_cache_without_rooms_by_what_it_holds(tmp_path: Path) -> None:
    """A cache that holds only the box's note (a headless demo's rooms live in its
    own temporary folder) is not "the clean rooms of 0 repositories"."""
    home = tmp_path / "home"
    home.mkdir()
    env = user_env(home)
    cache = home / ".cache" / "gtd"
    cache.mkdir(parents=True)
    (cache / "box-starts").write_text("key\n")
    installed(home)
    res = run([sys.executable, str(ROOT / "install.py"), "--uninstall"], tmp_path, env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "remove gtd's cache ~/.cache/gtd" in res.stdout.splitlines(), res.stdout
    assert not cache.exists()


@pytest.mark.parametrize("helper", [True, False], ids=["helper", "helper-gone"])
def test_uninstall_removes_gtds_state_or_says_why_it_stays(tmp_path: Path, helper: bool) -> None:
    """~/.local/state/gtd lists the repositories auto mode's sandbox block went to.
    `gtd demo --claude` leaves its repository there (its Claude Code takes the
    block out with a home of its own), and a repository may be gone since: the
    helper forgets both, then the folder goes and uninstall says nothing is left.
    Without a helper to take a block out, the folder stays and the warning names
    the repository."""
    home = tmp_path / "home"
    home.mkdir()
    env = user_env(home)
    demo = tmp_path / "gtd-demo-x" / "cart"
    demo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=demo, env=env, check=True)
    state = home / ".local" / "state" / "gtd"
    state.mkdir(parents=True)
    listed = [str(demo), str(tmp_path / "gone")]
    (state / "sandboxed.json").write_text(json.dumps(listed, indent=2) + "\n")
    # install.py made ~/.local (and its share/gtd-pack): ~/.local/state is gtd's
    made = [str(home / ".local"), str(home / ".local" / "share")]
    installed(home, dirs=[*made, str(home / ".local" / "share" / "gtd-pack")], helper=helper)
    install = [sys.executable, str(ROOT / "install.py"), "--uninstall"]
    said = (
        "remove gtd's state ~/.local/state/gtd "
        "(the list of repositories auto mode's sandbox settings went to)"
    )
    dry = run([*install, "--dry-run"], tmp_path, env)
    assert f"would {said}" in dry.stdout.splitlines(), dry.stdout
    assert (state / "sandboxed.json").is_file()

    res = run(install, tmp_path, env)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    if helper:
        assert said in lines, res.stdout
        assert "remove directory ~/.local/state" in lines, res.stdout
        assert "warning" not in res.stdout
        assert lines[-1] == "Uninstalled gtd: nothing left."
        assert not (home / ".local").exists()
    else:
        assert (
            "warning: kept gtd's state ~/.local/state/gtd: auto mode's sandbox settings "
            f"may still be in the .claude/settings.local.json of {demo}, {tmp_path / 'gone'}: "
            'take their "sandbox" block out, then remove the folder'
        ) in lines, res.stdout
        assert lines[-1] == ("Uninstalled gtd, but kept ~/.local/state/gtd: see the warning above.")
        assert json.loads((state / "sandboxed.json").read_text()) == listed


def test_uninstall_of_one_layout_keeps_the_cache(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = user_env(home)
    cache = home / ".cache" / "gtd" / "rooms"
    cache.mkdir(parents=True)
    installed(home, targets={"user": {"files": {}, "dirs": []}})
    res = run([sys.executable, str(ROOT / "install.py"), "--uninstall", "--user"], tmp_path, env)
    assert res.returncode == 0, res.stderr
    assert "the helper stays" in res.stdout
    assert cache.is_dir()


def test_with_another_gtd_first_on_path_the_next_step_names_this_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    other = tmp_path / "other-bin"
    other.mkdir()
    (other / "gtd").write_text("#!/bin/sh\n")
    (other / "gtd").chmod(0o755)
    installer = installer_in(home, monkeypatch)
    installer.bin_dir.mkdir(parents=True)
    (installer.bin_dir / "gtd").symlink_to("/bin/true")
    monkeypatch.setenv("PATH", f"{other}:{installer.bin_dir}:/usr/bin:/bin")
    installer.manifest["targets"]["plugin"] = {"files": {}, "dirs": [], "no_register": True}
    lines = installer.summary("plugin", installer.prefix / "plugin", __version__, 0).splitlines()
    assert lines[-3:-1] == [
        f"Next: the `gtd` first on your PATH is another one ({other / 'gtd'}):",
        "  run this one by its full path:  ~/.local/bin/gtd demo",
    ]
    assert "not registered (--no-register)" in "\n".join(lines)

    # with this one first, the next step is the README's next line as it stands
    monkeypatch.setenv("PATH", f"{installer.bin_dir}:{other}:/usr/bin:/bin")
    lines = installer.summary("plugin", installer.prefix / "plugin", __version__, 0).splitlines()
    assert lines[-2] == "Next: gtd demo   (one night of auto mode on a sample project)"


def test_uninstall_gives_the_user_settings_back(tmp_path: Path) -> None:
    """The night's key gtd merged into Claude Code's user settings
    (gtd.auto.user_settings) goes with the helper: install.py runs the helper's
    `gtd auto sandbox --off --all` before removing it. The helper here is this
    checkout's, behind the venv's `python`."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    person = '{\n    "theme": "dark"\n}\n'
    settings = home / ".claude" / "settings.json"
    settings.write_text(person)
    env = user_env(home)
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    python = installed(home, helper=True) / "venv" / "bin" / "python"
    held = subprocess.run(
        [str(python), "-c", "import sys; from pathlib import Path; "
         "from gtd.auto import user_settings; user_settings.hold(Path(sys.argv[1]))",
         str(tmp_path)],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert held.returncode == 0, held.stderr
    assert json.loads(settings.read_text())["permissions"]["denyInsteadOfPrompting"] is True
    res = run([sys.executable, str(ROOT / "install.py"), "--uninstall"], tmp_path, env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "removed permissions.denyInsteadOfPrompting" in res.stdout, res.stdout
    assert settings.read_text() == person
    assert not (tmp_path / "state" / "gtd").exists()
    assert (tmp_path / "state").is_dir()  # $XDG_STATE_HOME itself is not gtd's


def assert_doctor_warns(out: str, allowed: set[str]) -> None:
    """Doctor's summary says no check failed, its warnings are only of ``allowed``
    kinds, every warning is counted, and ``claude registration`` is there when
    allowed (the one that depends on the machine under test)."""
    warned = [line.removeprefix("warn ").split(":")[0] for line in out.splitlines()
              if line.startswith("warn ")]  # fmt: skip
    assert set(warned) <= allowed, out
    assert ("claude registration" in warned) is ("claude registration" in allowed), out
    word = "ok" if not warned else "warn"
    assert f"doctor: {word} (0 failed, {len(warned)} warnings)" in out, out


def test_uninstall_without_sandbox_settings_says_nothing_of_them(tmp_path: Path) -> None:
    """No repository on gtd's list and no user-settings key held: no line about
    taking settings out of repositories gtd never set."""
    home = tmp_path / "home"
    home.mkdir()
    env = user_env(home)
    installed(home, helper=True)
    res = run([sys.executable, str(ROOT / "install.py"), "--uninstall"], tmp_path, env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "sandbox settings" not in res.stdout, res.stdout
    assert res.stdout.splitlines()[-1] == "Uninstalled gtd: nothing left."
