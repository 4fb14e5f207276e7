"""`gtd auto setup --user-settings` puts `permissions.denyInsteadOfPrompting`
into the person's Claude Code user settings for the loop's duration, and every
way the loop ends takes out exactly that: a fake HOME with real files, the real
CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gtd.auto import user_settings
from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import gtd_json, make_project, run_cli

# The person's own file: their keys, their 4-space indentation, a key order
# json.dumps would not keep if it re-wrote the file.
PERSON = (
    "{\n"
    '    "theme": "dark",\n'
    '    "permissions": {\n'
    '        "allow": ["Bash(make:*)"],\n'
    '        "defaultMode": "acceptEdits"\n'
    "    },\n"
    '    "env": {"FOO": "1"}\n'
    "}\n"
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of this test's own with a Claude Code user settings file (the
    suite's HOME must stay empty, tests/conftest.py)."""
    folder = tmp_path / "person"
    (folder / ".claude").mkdir(parents=True)
    (folder / ".claude" / "settings.json").write_text(PERSON)
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv(user_settings.ENV, raising=False)
    return folder


def user_file(home: Path) -> Path:
    return home / ".claude" / "settings.json"


def set_up(repo: Repo, *flags: str, env: dict[str, str] | None = None) -> dict[str, object]:
    answer = gtd_json(repo, "auto", "setup", *flags, env=env)
    assert answer["status"] == "ready", answer
    return answer


def test_consent_writes_the_key_keeps_the_rest_and_the_loops_end_removes_it_exactly(
    repo: Repo, home: Path
) -> None:
    make_project(repo)
    answer = set_up(repo, "--user-settings")
    written = json.loads(user_file(home).read_text())
    assert written["permissions"]["denyInsteadOfPrompting"] is True
    assert written["permissions"]["allow"] == ["Bash(make:*)"]
    assert written["permissions"]["defaultMode"] == "acceptEdits"
    assert written["theme"] == "dark"
    assert written["env"] == {"FOO": "1"}
    assert "refused, not asked" in str(answer["prompts"])
    doctor = {c["name"]: c for c in run_gtd(repo.path, "doctor", "--json").json["checks"]}
    assert doctor["prompts"]["status"] == "ok", doctor["prompts"]
    assert str(repo.path.resolve()) in doctor["prompts"]["detail"]

    off = gtd_json(repo, "auto", "sandbox", "--off")
    assert off["status"] in {"off", "unavailable"}
    assert user_file(home).read_text() == PERSON  # byte for byte
    assert not user_settings.record_path().exists()
    doctor = {c["name"]: c for c in run_gtd(repo.path, "doctor", "--json").json["checks"]}
    assert doctor["prompts"]["status"] == "warn"
    assert "a prompt can wait for you" in doctor["prompts"]["detail"]


def test_without_consent_nothing_is_written_and_setup_says_a_prompt_can_wait(
    repo: Repo, home: Path
) -> None:
    make_project(repo)
    answer = set_up(repo)
    assert user_file(home).read_text() == PERSON
    assert not user_settings.record_path().exists()
    assert "can wait for you" in str(answer["prompts"])
    # The standing yes in gtd's environment counts as consent.
    set_up(repo, env={user_settings.ENV: "on"})
    assert json.loads(user_file(home).read_text())["permissions"]["denyInsteadOfPrompting"]
    # A later setup without consent takes this repository's hold back.
    set_up(repo)
    assert user_file(home).read_text() == PERSON


def test_a_halt_removes_the_key(repo: Repo, home: Path) -> None:
    # A breaker that trips on the first revert: the halt is the point here (the
    # count to the threshold: test_cycle.py's three reverts that trip it).
    make_project(repo, config_extra="circuit_breaker_threshold: 1\n")
    set_up(repo, "--user-settings")
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    answer = gtd_json(repo, "cycle", "end")  # the implementer changed nothing
    assert answer.get("next") == "halt" or answer["status"] == "halted", answer
    assert user_file(home).read_text() == PERSON
    assert not user_settings.record_path().exists()


def test_a_crash_between_the_record_and_the_write_is_recovered(repo: Repo, home: Path) -> None:
    """Killed after the record, before the settings: the key is not there, the
    record says so harmlessly; the next setup writes it whole, the end removes
    it; and a removal right after the crash changes nothing of the person's."""
    make_project(repo)
    crashed = run_cli(
        repo, "auto", "setup", "--user-settings", env={"GTD_CRASH_AT": "user-settings-recorded"}
    )
    assert crashed.code == -9, (crashed.code, crashed.stderr)
    assert user_settings.record_path().exists()
    assert user_file(home).read_text() == PERSON
    set_up(repo, "--user-settings")
    assert json.loads(user_file(home).read_text())["permissions"]["denyInsteadOfPrompting"]
    gtd_json(repo, "auto", "sandbox", "--off")
    assert user_file(home).read_text() == PERSON

    crashed = run_cli(
        repo, "auto", "setup", "--user-settings", env={"GTD_CRASH_AT": "user-settings-recorded"}
    )
    assert crashed.code == -9
    gtd_json(repo, "auto", "sandbox", "--off")
    assert user_file(home).read_text() == PERSON
    assert not user_settings.record_path().exists()


def test_the_persons_edit_of_the_key_meanwhile_is_never_overwritten(repo: Repo, home: Path) -> None:
    make_project(repo)
    set_up(repo, "--user-settings")
    data = json.loads(user_file(home).read_text())
    data["permissions"]["denyInsteadOfPrompting"] = False  # the person's choice
    data["model"] = "opus"  # and a key of their own
    user_file(home).write_text(json.dumps(data, indent=4))
    gtd_json(repo, "auto", "sandbox", "--off")
    after = json.loads(user_file(home).read_text())
    assert after["permissions"]["denyInsteadOfPrompting"] is False
    assert after["model"] == "opus"
    assert after["permissions"]["allow"] == ["Bash(make:*)"]


def test_a_value_the_person_had_comes_back(repo: Repo, home: Path) -> None:
    had = '{"permissions": {"denyInsteadOfPrompting": false}}\n'
    user_file(home).write_text(had)
    make_project(repo)
    set_up(repo, "--user-settings")
    assert json.loads(user_file(home).read_text())["permissions"]["denyInsteadOfPrompting"]
    gtd_json(repo, "auto", "sandbox", "--off")
    assert user_file(home).read_text() == had


def test_a_file_gtd_created_goes_and_a_linked_file_stays_a_link(
    repo: Repo, home: Path, tmp_path: Path
) -> None:
    user_file(home).unlink()
    make_project(repo)
    set_up(repo, "--user-settings")
    assert user_file(home).exists()
    gtd_json(repo, "auto", "sandbox", "--off")
    assert not user_file(home).exists()
    assert (home / ".claude").is_dir()  # a folder that was there stays

    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(PERSON)
    os.symlink(dotfiles, user_file(home))
    set_up(repo, "--user-settings")
    assert user_file(home).is_symlink()
    assert json.loads(dotfiles.read_text())["permissions"]["denyInsteadOfPrompting"]
    gtd_json(repo, "auto", "sandbox", "--off")
    assert user_file(home).is_symlink()
    assert dotfiles.read_text() == PERSON


def test_the_key_stays_while_another_repositorys_loop_holds_it(
    repo: Repo, home: Path, tmp_path: Path
) -> None:
    make_project(repo)
    set_up(repo, "--user-settings")
    other = Repo(tmp_path / "other")
    other.path.mkdir()
    other.git("init", "-q")
    (other.path / "README").write_text("x\n")
    other.git("add", "README")
    other.git("commit", "-qm", "init")
    user_settings.hold(other.path)  # a second loop, as its setup would
    gtd_json(repo, "auto", "sandbox", "--off")
    assert json.loads(user_file(home).read_text())["permissions"]["denyInsteadOfPrompting"]
    assert user_settings.owners() == [str(other.path.resolve())]
    assert user_settings.release(other.path)
    assert user_file(home).read_text() == PERSON


def test_uninstalls_command_removes_it_whoever_holds_it(repo: Repo, home: Path) -> None:
    """`install.py --uninstall` runs `gtd auto sandbox --off --all`."""
    make_project(repo)
    set_up(repo, "--user-settings")
    res = run_gtd(home, "auto", "sandbox", "--off", "--all", "--json")
    assert res.code == 0, res.stderr
    assert res.json["user_settings"] == "removed"
    assert user_file(home).read_text() == PERSON
    assert not user_settings.record_path().exists()


# Not JSON; and JSON whose bytes are not UTF-8 (Latin-1 é): read with
# replacement characters, the person's byte would be written back as U+FFFD.
@pytest.mark.parametrize("broken", [b"{ not json", b'{"theme": "caf\xe9"}'])
def test_a_broken_user_settings_file_is_named_and_left_alone(
    repo: Repo, home: Path, broken: bytes
) -> None:
    user_file(home).write_bytes(broken)
    make_project(repo)
    answer = set_up(repo, "--user-settings")
    assert "settings.json" in str(answer.get("warning")), answer
    assert "can wait for you" in str(answer["prompts"])
    assert user_file(home).read_bytes() == broken
    assert not user_settings.record_path().exists()
