"""The README's set-up section as a new user follows it, word for word: a fresh
clone (a git repository, as `git clone` gives it), a HOME of the test's own whose
PATH lacks ~/.local/bin (as on many machines), `python3 install.py` run through a
shell from the checkout exactly as the README writes it, first without Claude Code,
then with the pinned one. The install must end with exit 0 and a summary whose
next step, run as printed, makes the README's next line (`gtd demo`) work.

Each case pip-installs the helper and runs the demo's night (about 1.5 min)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gtd import __version__
from tests.claude_cli import claude_or_skip
from tests.integration.test_install import (
    ROOT,
    assert_doctor_warns,
    fresh_clone,
    hide,
    not_ours,
    snapshot,
    user_env,
)


def readme_setup_lines() -> list[str]:
    """The commands of the README's set-up block, comments taken off."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Set up", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]


def git_clone(dest: Path, env: dict[str, str]) -> Path:
    """The checkout as `git clone` makes it: a repository of its own, nothing ignored."""
    fresh_clone(dest)
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "clone"]):
        subprocess.run(argv, cwd=dest, env=env, check=True, capture_output=True)
    return dest


def shell(
    line: str, cwd: Path, env: dict[str, str], timeout: float = 400
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def summary(out: str) -> list[str]:
    """The install's closing block: the lines between its two rules."""
    rule = "=" * 72
    assert out.rstrip().endswith(rule), out[-2000:]
    return out.rstrip().split(rule)[-2].strip("\n").splitlines()


def after(lines: list[str], label: str) -> str:
    [found] = [line.split(label, 1)[1].strip() for line in lines if label in line]
    return found


@pytest.mark.slow
@pytest.mark.parametrize("with_claude", [False, True], ids=["no-claude", "claude"])
def test_the_readme_set_up_works_as_written(tmp_path: Path, with_claude: bool) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = user_env(home)
    local_bin = str(home / ".local" / "bin")
    path = [p for p in env["PATH"].split(os.pathsep) if p != local_bin]
    env.update(PATH=os.pathsep.join(path), SHELL="/bin/bash")
    if with_claude:
        claude = claude_or_skip()
        env["PATH"] = os.pathsep.join([str(Path(claude).parent), env["PATH"]])
    else:
        env = hide("claude", env, tmp_path / "no-claude")
    clone = git_clone(tmp_path / "gtd-pack", env)
    home_before = snapshot(home)
    install, next_line = readme_setup_lines()
    assert (install, next_line) == ("python3 install.py", "gtd demo")

    res = shell(install, clone, env)
    out = res.stdout
    assert res.returncode == 0, out + res.stderr
    assert "doctor: fail" not in out
    assert "$ gtd doctor --installation" in out
    # the checkout is not judged as a project: no test command, no "checkout" pack
    assert "test command" not in out
    assert "pack (checkout)" not in out

    lines = summary(out)
    assert lines[0] == f"gtd {__version__} is installed."
    assert after(lines, "the gtd command:").startswith("~/.local/bin/gtd")
    pack = "\n".join(lines)
    # the commands the summary says were installed are the ones doctor found
    [doctor] = [ln for ln in out.splitlines() if ln.startswith("ok   pack (plugin copy): ")]
    commands = doctor.split(": ", 2)[2].split(" in ", 1)[0]
    assert after(lines, "the pack:").startswith(commands + (":" if with_claude else " in "))
    if with_claude:
        assert "the plugin gtd@gtd-pack, registered with Claude Code" in pack
        # gtd not on PATH, and a permission prompt that can wait: no other warning
        assert_doctor_warns(out, {"gtd on PATH", "network prompts", "prompts"})
        assert "warn gtd on PATH" in out
        # install's own `claude plugin` calls leave no telemetry behind
        assert not (home / ".claude" / "telemetry").exists()
    else:
        assert "not registered (Claude Code is not on PATH): start Claude Code with " in pack
        assert "`claude --plugin-dir ~/.local/share/gtd-pack/plugin`" in pack
    assert lines[-4] == "Next: ~/.local/bin is not on your PATH, so `gtd` is not found yet."
    add = after(lines, "Add it (bash):")
    assert add == (
        "echo 'export PATH=\"$HOME/.local/bin:$PATH\"' >> ~/.bashrc && "
        'export PATH="$HOME/.local/bin:$PATH"'
    )
    assert after(lines, "then run:") == next_line
    full = after(lines, "or, without changing PATH:")
    assert full == f"~/.local/bin/{next_line}"

    # As a user would: the README's own next line is `command not found` before...
    assert shell(next_line, tmp_path, env).returncode == 127
    # ...and runs once the printed step is taken (the PATH line, or the full path)
    step = f"{add}\n{next_line}" if not with_claude else full
    demo = shell(step, tmp_path, env)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "The night went as scripted: 6 cycles, 4 committed, 2 reverted" in demo.stdout
    if not with_claude:
        # the line also reaches every new shell: ~/.bashrc holds it
        found = subprocess.run(
            ["bash", "-i", "-c", "command -v gtd"], env=env, capture_output=True, text=True
        )
        assert found.stdout.strip() == local_bin + "/gtd", found.stderr

    # uninstall (README: `--uninstall removes exactly what was installed`)
    gone = shell(f"{install} --uninstall", clone, env)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert "Uninstalled gtd: nothing left." in gone.stdout
    left = {
        rel
        for rel in set(snapshot(home)) - set(home_before)
        if not not_ours(rel) and rel != ".bashrc"
    }
    assert not left, sorted(left)
    assert shell("git status --porcelain", clone, env).stdout == ""  # the checkout untouched
