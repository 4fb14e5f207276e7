"""`gtd doctor` through the real CLI: each check's ok / warn / fail, the JSON shape
and the exit code. Claude Code's directory is moved with CLAUDE_CONFIG_DIR so
nothing is written to HOME."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from gtd import __version__
from tests.conftest import Repo, run_gtd


@pytest.fixture(autouse=True)
def _no_plugins_of_the_test_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The doctor runs each folder's pytest (collect-only). The folders here use
    no pytest plugin, but this environment's (hypothesis, xdist) would load
    into every such run by their entry points: ~1 s of CPU each, as many runs
    as there are doctor calls, for plugins no project here has."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture
def claude_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "claude-config"
    path.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(path))
    monkeypatch.delenv("CLAUDE_PLUGIN_ROOT", raising=False)
    return path


def checks(answer: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in answer["checks"]}


def user_pack(base: Path, version: str) -> None:
    """What `install.py --user` leaves in a .claude directory."""
    (base / "commands" / "gtd").mkdir(parents=True)
    for name in ("auto", "auto-cycle"):
        (base / "commands" / "gtd" / f"{name}.md").write_text("---\ndescription: x\n---\nx\n")
    (base / "gtd-pack.json").write_text(json.dumps({"name": "gtd", "version": version}))


def test_outside_a_repository_every_check_is_listed(tmp_path: Path, claude_dir: Path) -> None:
    res = run_gtd(tmp_path, "doctor", "--json")
    answer = json.loads(res.stdout)
    assert set(answer) == {"status", "version", "checks"}
    by_name = checks(answer)
    assert {"python", "helper", "git", "gtd on PATH", "pack", "test command"} <= set(by_name)
    assert by_name["git"]["status"] == "ok"
    assert by_name["python"]["detail"].startswith(f"{sys.version_info.major}.")
    assert by_name["helper"]["detail"].startswith(f"gtd {__version__}")
    assert by_name["test command"]["detail"].startswith("skipped")
    assert by_name["pack"]["status"] == "warn"  # nothing installed: not an error
    assert "install.py" in by_name["pack"]["detail"]
    assert all(c["status"] in ("ok", "warn", "fail") for c in answer["checks"])
    assert res.code == 0
    assert answer["status"] in ("ok", "warn")


def test_plain_output_is_one_line_per_check(tmp_path: Path, claude_dir: Path) -> None:
    res = run_gtd(tmp_path, "doctor")
    lines = res.stdout.splitlines()
    answer = run_gtd(tmp_path, "doctor", "--json").json
    assert len(lines) == len(answer["checks"]) + 1
    for line, check in zip(lines, answer["checks"], strict=False):
        assert re.match(rf"^{check['status']}\s+{re.escape(check['name'])}: ", line), line
    assert lines[-1].startswith(f"doctor: {answer['status']}")


def test_user_pack_at_the_helper_version_is_green(tmp_path: Path, claude_dir: Path) -> None:
    user_pack(claude_dir, __version__)
    res = run_gtd(tmp_path, "doctor", "--json")
    pack = checks(res.json)["pack (user)"]
    assert pack["status"] == "ok"
    assert "/gtd:auto, /gtd:auto-cycle" in pack["detail"]
    assert res.code == 0


def test_version_mismatch_fails(tmp_path: Path, claude_dir: Path) -> None:
    user_pack(claude_dir, "0.0.1")
    res = run_gtd(tmp_path, "doctor", "--json")
    pack = checks(res.json)["pack (user)"]
    assert pack["status"] == "fail"
    assert f"pack version 0.0.1 ≠ helper version {__version__}" in pack["detail"]
    assert res.json["status"] == "fail"
    assert res.code == 1


def test_registered_plugin_is_read_from_claude_codes_records(
    tmp_path: Path, claude_dir: Path
) -> None:
    install_path = tmp_path / "cache" / "gtd" / "9.9.9"
    (install_path / ".claude-plugin").mkdir(parents=True)
    (install_path / ".claude-plugin" / "plugin.json").write_text(
        json.dumps({"name": "gtd", "version": "9.9.9"})
    )
    (install_path / "commands").mkdir()
    (install_path / "commands" / "auto.md").write_text("x\n")
    (claude_dir / "plugins").mkdir()
    (claude_dir / "plugins" / "installed_plugins.json").write_text(
        json.dumps(
            {"version": 2, "plugins": {"gtd@gtd-pack": [{"installPath": str(install_path)}]}}
        )
    )
    res = run_gtd(tmp_path, "doctor", "--json")
    pack = checks(res.json)["pack (plugin gtd@gtd-pack)"]
    assert pack["status"] == "fail"
    assert "9.9.9" in pack["detail"]
    assert res.code == 1


def test_a_missing_test_command_fails_in_a_repository(repo: Repo, claude_dir: Path) -> None:
    repo.write(".deepflow/config.yaml", "ratchet:\n  test_command: no-such-runner -q\n")
    res = run_gtd(repo.path, "doctor", "--json")
    test = checks(res.json)["test command"]
    assert test["status"] == "fail"
    assert "test command not found: no-such-runner" in test["detail"]
    assert res.code == 1


def test_a_detected_test_command_is_ok_and_says_so(repo: Repo, claude_dir: Path) -> None:
    repo.write("test_a.py", "def test_a():\n    assert True\n")
    test = checks(run_gtd(repo.path, "doctor", "--json").json)["test command"]
    assert test["status"] == "ok"
    assert "detected" in test["detail"]


def test_a_broken_config_fails_with_its_line(repo: Repo, claude_dir: Path) -> None:
    repo.write(".deepflow/config.yaml", "ratchet:\n  tset_command: pytest\n")
    res = run_gtd(repo.path, "doctor", "--json")
    test = checks(res.json)["test command"]
    assert test["status"] == "fail"
    assert ".deepflow/config.yaml:2" in test["detail"]
    assert res.code == 1


def test_no_git_fails(tmp_path: Path, claude_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    res = run_gtd(tmp_path, "doctor", "--json")
    git = checks(res.json)["git"]
    assert git["status"] == "fail"
    assert "git is not installed" in git["detail"]
    assert res.code == 1
    assert os.environ["PATH"] == str(empty)


# -- the test command is run (collect-only) --------------------------------------------


def test_a_configured_pytest_command_is_ok_run_and_its_tests_counted(
    repo: Repo, claude_dir: Path
) -> None:
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {sys.executable} -m pytest\n")
    repo.write("test_a.py", "def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")
    repo.commit_all("suite")
    test = checks(run_gtd(repo.path, "doctor", "--json").json)["test command"]
    assert test["status"] == "ok"
    assert ".deepflow/config.yaml" in test["detail"]  # where the command came from
    assert "2 tests collected" in test["detail"]
    assert repo.status() == ""  # collecting left no cache and no bytecode behind


def test_a_missing_dependency_fails_with_the_fix(repo: Repo, claude_dir: Path) -> None:
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {sys.executable} -m pytest\n")
    repo.write("test_ok.py", "def test_ok():\n    pass\n")
    repo.write("test_needs.py", "import no_such_dependency_xyz\n\n\ndef test_x():\n    pass\n")
    res = run_gtd(repo.path, "doctor", "--json")
    test = checks(res.json)["test command"]
    assert test["status"] == "fail"
    assert "1 test file could not be collected (test_needs.py)" in test["detail"]
    assert "'no_such_dependency_xyz' cannot be imported" in test["detail"]
    assert res.code == 1


def test_the_projects_virtualenv_is_chosen_and_a_broken_one_diagnosed(
    repo: Repo, claude_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A .venv without pytest (its test dependencies never installed): the detected
    command is the project's own, and the doctor says what is missing."""
    import subprocess

    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    repo.write("conftest.py", "")
    repo.write("tests/test_a.py", "def test_a():\n    pass\n")
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(repo.path / ".venv")], check=True
    )
    res = run_gtd(repo.path, "doctor")
    line = next(x for x in res.stdout.splitlines() if "test command" in x)
    # not set up for auto mode yet: said plainly, a warning with the whole finding
    assert line.startswith(
        f"warn test command: {repo.path} is not set up for auto mode (no "
        ".deepflow/config.yaml); if it were, this would fail: `.venv/bin/python -m pytest` "
        "(detected: "
    )
    assert "the project's virtualenv .venv/ (linked into the clean room)" in line
    assert "has no pytest module" in line
    assert "install pytest" in line
    assert res.code == 0


# -- the installation, not the folder -------------------------------------------------


def broken_checkout(repo: Repo) -> None:
    """A repository like a fresh clone of the pack: a plugin manifest, commands, and
    a suite whose package the detected command cannot import."""
    repo.write(".claude-plugin/plugin.json", json.dumps({"name": "gtd", "version": __version__}))
    repo.write("commands/auto.md", "---\ndescription: x\n---\nx\n")
    repo.write("tests/test_a.py", "import no_such_package_xyz\n\n\ndef test_a():\n    pass\n")
    repo.commit_all("a checkout")


def test_installation_leaves_the_folders_test_command_and_checkout_out(
    repo: Repo, claude_dir: Path
) -> None:
    broken_checkout(repo)
    res = run_gtd(repo.path, "doctor", "--installation")
    assert "test command" not in res.stdout
    assert "pack (checkout)" not in res.stdout
    assert res.code == 0, res.stdout
    assert res.stdout.splitlines()[-1].startswith("doctor: warn (0 failed, ")


def test_a_folder_not_set_up_for_auto_mode_says_so_and_does_not_fail(
    repo: Repo, claude_dir: Path
) -> None:
    broken_checkout(repo)
    res = run_gtd(repo.path, "doctor", "--json")
    test = checks(res.json)["test command"]
    assert test["status"] == "warn"
    assert test["detail"].startswith(
        f"{repo.path} is not set up for auto mode (no .deepflow/config.yaml); "
        "if it were, this would fail: "
    )
    assert "'no_such_package_xyz' cannot be imported" in test["detail"]
    assert res.code == 0
    # set up for auto mode, the same command is a failure
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {sys.executable} -m pytest\n")
    res = run_gtd(repo.path, "doctor", "--json")
    assert checks(res.json)["test command"]["status"] == "fail"
    assert res.code == 1


@pytest.mark.parametrize("no_register", [False, True], ids=["claude-missing", "no-register"])
def test_a_plugin_copy_left_unregistered_by_choice_is_not_a_warning(
    tmp_path: Path, claude_dir: Path, no_register: bool
) -> None:
    """After `install.py --no-register` doctor does not tell the user to re-run the
    install with claude on PATH: they chose not to register."""
    from gtd import doctor

    prefix = tmp_path / "gtd-pack"
    plugin = prefix / "plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(
        json.dumps({"name": "gtd", "version": __version__})
    )
    (plugin / "commands").mkdir()
    (plugin / "commands" / "auto.md").write_text("x\n")
    target = {"files": {}, "dirs": [], "no_register": no_register}
    (prefix / "install-manifest.json").write_text(json.dumps({"targets": {"plugin": target}}))
    home = tmp_path / "home"
    found = doctor.run_checks(
        tmp_path, home, {"CLAUDE_CONFIG_DIR": str(claude_dir)}, prefix / "venv", installation=True
    )
    registration = {c.name: c for c in found}["claude registration"]
    if no_register:
        assert registration.status == "ok"
        assert registration.detail == (
            "not registered (installed with --no-register): start Claude Code with "
            f"`claude --plugin-dir {plugin}`"
        )
    else:
        assert registration.status == "warn"
        assert "re-run install.py with claude on PATH" in registration.detail


def test_the_sandbox_check_says_what_to_install_when_bubblewrap_is_missing(
    tmp_path: Path, claude_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PATH with git but neither bwrap nor socat: a warning naming both
    packages (the loop still runs, judged by the ratchet)."""
    import shutil

    if sys.platform != "linux":
        pytest.skip("the bubblewrap check is Linux's")
    only_git = tmp_path / "only-git"
    only_git.mkdir()
    git = shutil.which("git")
    assert git is not None
    (only_git / "git").symlink_to(git)
    original = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(only_git))
    sandbox = checks(run_gtd(tmp_path, "doctor", "--json").json)["sandbox"]
    assert sandbox["status"] == "warn"
    assert "bwrap and socat not found" in sandbox["detail"]
    assert "apt-get install bubblewrap socat" in sandbox["detail"]
    if shutil.which("bwrap", path=original) and shutil.which("socat", path=original):
        monkeypatch.setenv("PATH", original)
        found = checks(run_gtd(tmp_path, "doctor", "--json").json)["sandbox"]
        assert found["status"] == "ok", found


def test_the_judges_box_is_named_with_its_limits(repo: Repo, claude_dir: Path) -> None:
    from gtd.auto.ratchet import box
    from gtd.executables import which

    repo.write(
        ".deepflow/config.yaml",
        f"ratchet:\n  test_command: {sys.executable} -m pytest\n  memory_limit_mb: 1024\n",
    )
    line = checks(run_gtd(repo.path, "doctor", "--json").json)["judge's box"]
    bwrap = which("bwrap", os.environ.get("PATH"))
    problem = "bwrap not found" if bwrap is None else box.probe(bwrap)
    if problem is None:
        assert line["status"] == "ok"
        assert line["detail"] == (
            "boxed (bubblewrap: read-only outside the room, private /tmp, own PID namespace, "
            "no network, memory limit 1.0 GiB)"
        )
    else:
        assert line["status"] == "warn"
        assert line["detail"].startswith("the tests run unboxed: ")
        assert "bubblewrap" in line["detail"] or "bwrap" in line["detail"]
    repo.write(".deepflow/config.yaml", "ratchet:\n  box: false\n")
    line = checks(run_gtd(repo.path, "doctor", "--json").json)["judge's box"]
    assert line == {
        "name": "judge's box",
        "status": "warn",
        "detail": "off (ratchet.box: false): the tests run unboxed",
    }


def test_a_network_prompt_at_night_is_warned_of_until_the_user_settings_refuse_it(
    tmp_path: Path, claude_dir: Path
) -> None:
    """Claude Code asks the person about a sandboxed command's host outside the
    allowed domains (interactive, default mode); the settings that refuse it
    instead are read only from user, --settings and managed settings, where gtd
    does not write: doctor says so, and which line to add."""
    from gtd.auto import sandbox

    if sandbox.unavailable() is not None:
        line = checks(run_gtd(tmp_path, "doctor", "--json").json)["network prompts"]
        assert line["status"] == "ok", line
        return
    if any(Path(p).exists() for p in sandbox._MANAGED):
        pytest.skip("managed settings on this machine decide it")
    line = checks(run_gtd(tmp_path, "doctor", "--json").json)["network prompts"]
    assert line["status"] == "warn", line
    assert '"strictAllowlist": true' in line["detail"]
    assert str(claude_dir / "settings.json") in line["detail"]
    (claude_dir / "settings.json").write_text(
        json.dumps({"sandbox": {"network": {"strictAllowlist": True}}})
    )
    line = checks(run_gtd(tmp_path, "doctor", "--json").json)["network prompts"]
    assert line["status"] == "ok", line
    assert "sandbox.network.strictAllowlist: true in" in line["detail"]
    (claude_dir / "settings.json").write_text(
        json.dumps({"permissions": {"denyInsteadOfPrompting": True}})
    )
    line = checks(run_gtd(tmp_path, "doctor", "--json").json)["network prompts"]
    assert line["status"] == "ok", line
    # The project's own settings do not count: Claude Code ignores the key there.
    (claude_dir / "settings.json").write_text("{}")
    project = tmp_path / ".claude"
    project.mkdir()
    (project / "settings.local.json").write_text(
        json.dumps({"sandbox": {"network": {"strictAllowlist": True}}})
    )
    line = checks(run_gtd(tmp_path, "doctor", "--json").json)["network prompts"]
    assert line["status"] == "warn", line


def test_doctor_says_plainly_whether_a_prompt_can_still_wait(
    tmp_path: Path, claude_dir: Path
) -> None:
    """Only permissions.denyInsteadOfPrompting in the user's (or managed)
    settings refuses every prompt; strictAllowlist refuses the network's only,
    and the project's settings do not count."""
    from gtd.auto import sandbox

    if any(Path(p).exists() for p in sandbox._MANAGED):
        pytest.skip("managed settings on this machine decide it")
    line = checks(run_gtd(tmp_path, "doctor", "--json").json)["prompts"]
    assert line["status"] == "warn", line
    assert "a prompt can wait for you" in line["detail"]
    assert "--user-settings" in line["detail"]
    (claude_dir / "settings.json").write_text(
        json.dumps({"sandbox": {"network": {"strictAllowlist": True}}})
    )
    assert checks(run_gtd(tmp_path, "doctor", "--json").json)["prompts"]["status"] == "warn"
    project = tmp_path / ".claude"
    project.mkdir()
    (project / "settings.local.json").write_text(
        json.dumps({"permissions": {"denyInsteadOfPrompting": True}})
    )
    assert checks(run_gtd(tmp_path, "doctor", "--json").json)["prompts"]["status"] == "warn"
    (claude_dir / "settings.json").write_text(
        json.dumps({"permissions": {"denyInsteadOfPrompting": True}})
    )
    line = checks(run_gtd(tmp_path, "doctor", "--json").json)["prompts"]
    assert line["status"] == "ok", line
    assert line["detail"].startswith("no prompt can wait for you")
    assert str(claude_dir / "settings.json") in line["detail"]
