"""`gtd auto setup` writes Claude Code's sandbox settings into the project's
`.claude/settings.local.json`, a cycle's begin refreshes them, the loop's end
removes them, and the person's own file comes back byte for byte. Real
repository, real CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gtd.auto import sandbox
from gtd.git import Git
from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import gtd_json, make_project

PERSON = (
    '{\n    "permissions": {"allow": ["Bash(make:*)"]},\n    "sandbox": {"enabled": false}\n}\n'
)


@pytest.fixture(autouse=True)
def _needs_the_sandbox() -> None:
    why = sandbox.unavailable()
    if why is not None:
        pytest.skip(f"Claude Code's sandbox cannot start here: {why}")


def settings(repo: Repo) -> dict[str, object]:
    data = json.loads((repo.path / sandbox.SETTINGS).read_text())
    assert isinstance(data, dict)
    return data


def test_setup_writes_the_block_and_the_loops_end_gives_the_persons_file_back(
    repo: Repo,
) -> None:
    make_project(repo)
    sandbox.remove(repo.path, Git(repo.path))
    (repo.path / ".claude").mkdir(exist_ok=True)
    (repo.path / sandbox.SETTINGS).write_text(PERSON)
    assert sandbox.apply(repo.path, Git(repo.path))
    begun = gtd_json(repo, "cycle", "begin")
    assert begun["status"] == "task"
    block = settings(repo)["sandbox"]
    assert isinstance(block, dict)
    assert block["enabled"] is True
    assert block["autoAllowBashIfSandboxed"] is True
    assert "gtd cycle end:*" in block["excludedCommands"]
    deny = block["filesystem"]["denyWrite"]
    real = repo.path.resolve()
    for rel in (".git", ".deepflow", "PLAN.md", "tests/test_calc.py", "conftest.py"):
        assert str(real / rel) in deny, rel
    assert str(real / "calc.py") not in deny  # the agent's work stays writable
    assert settings(repo)["permissions"] == {"allow": ["Bash(make:*)"]}
    assert git_is_clean(repo)  # the settings file is never the project's change

    sandbox.remove(repo.path, Git(repo.path))
    assert (repo.path / sandbox.SETTINGS).read_text() == PERSON
    assert not sandbox.recorded(repo.path)


def test_a_file_we_created_is_gone_after_the_loop(repo: Repo) -> None:
    make_project(repo)
    assert sandbox.recorded(repo.path)
    sandbox.remove(repo.path, Git(repo.path))
    assert not (repo.path / sandbox.SETTINGS).exists()
    assert not (repo.path / ".claude").exists()  # the folder gtd made goes too
    again = gtd_json(repo, "auto", "setup")
    assert again["sandbox"] == f"on ({sandbox.SETTINGS})"


def test_a_halt_removes_the_block(repo: Repo) -> None:
    # A breaker that trips on the first revert: the halt is the point here (the
    # count to the threshold: test_cycle.py's three reverts that trip it).
    make_project(repo, config_extra="circuit_breaker_threshold: 1\n")
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    assert sandbox.recorded(repo.path)
    answer = gtd_json(repo, "cycle", "end")  # the implementer changed nothing
    assert answer.get("next") == "halt" or answer["status"] == "halted", answer
    assert not sandbox.recorded(repo.path)
    assert not (repo.path / sandbox.SETTINGS).exists()


def test_a_broken_settings_file_is_named_and_left_alone(repo: Repo) -> None:
    make_project(repo)
    sandbox.remove(repo.path, Git(repo.path))
    (repo.path / ".claude").mkdir(exist_ok=True)
    (repo.path / sandbox.SETTINGS).write_text("{ not json")
    answer = gtd_json(repo, "auto", "setup")
    assert answer["status"] == "ready"
    assert "settings.local.json" in str(answer.get("warning"))
    assert "sandbox" not in answer or not str(answer["sandbox"]).startswith("on")
    assert (repo.path / sandbox.SETTINGS).read_text() == "{ not json"
    assert not sandbox.recorded(repo.path)


def test_a_tracked_settings_file_is_not_written(repo: Repo) -> None:
    """A person who commits their local settings would see every cycle answer
    `dirty`: there the sandbox is not set (the text guard is the fence)."""
    (repo.path / ".claude").mkdir()
    (repo.path / sandbox.SETTINGS).write_text(PERSON)
    make_project(repo)
    assert repo.git("ls-files", sandbox.SETTINGS).strip()
    assert not sandbox.recorded(repo.path)
    assert (repo.path / sandbox.SETTINGS).read_text() == PERSON
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"


def git_is_clean(repo: Repo) -> bool:
    return repo.git("status", "--porcelain") == ""


def test_off_everywhere_takes_the_block_out_of_every_repository(repo: Repo, tmp_path: Path) -> None:
    """What `install.py --uninstall` runs: every repository gtd wrote the block
    to (its registry, in the user's state folder) gets its settings back."""
    make_project(repo)
    sandbox.remove(repo.path, Git(repo.path))
    (repo.path / ".claude").mkdir(exist_ok=True)
    (repo.path / sandbox.SETTINGS).write_text(PERSON)
    assert sandbox.apply(repo.path, Git(repo.path))
    assert str(repo.path.resolve()) in sandbox.registered()
    res = run_gtd(tmp_path, "auto", "sandbox", "--off", "--all", "--json")
    assert res.code == 0, res.stderr
    assert str(repo.path.resolve()) in res.json["removed"]
    assert (repo.path / sandbox.SETTINGS).read_text() == PERSON
    assert sandbox.registered() == []
    here = run_gtd(repo.path, "auto", "sandbox", "--json").json
    assert here["status"] == "off"


def test_off_everywhere_forgets_a_repository_whose_block_is_already_gone(
    repo: Repo, tmp_path: Path
) -> None:
    """`gtd demo --claude` sets the block up with the person's state folder and
    takes it out inside Claude Code, whose home is the demo's own: the list kept
    naming the repository, and `install.py --uninstall` left it behind."""
    make_project(repo)
    record = sandbox.record_path(Git(repo.path))
    assert record.is_file()
    record.unlink()  # what the other state folder's gtd removed, with the block
    assert str(repo.path.resolve()) in sandbox.registered()
    res = run_gtd(tmp_path, "auto", "sandbox", "--off", "--all", "--json")
    assert res.code == 0, res.stderr
    assert res.json["removed"] == []
    assert sandbox.registered() == []


def test_waves_open_their_folder_only_where_no_denial_holds_it(repo: Repo, tmp_path: Path) -> None:
    """A folder of wave worktrees outside every denial is opened by one
    ``allowWrite`` entry, every denial of the serial block kept; inside git's
    folder it could not be opened without opening git's folder, so the block
    would stay the serial one and say why. Through setup, `parallel: 2` opens
    the loop's folder in the cache (gtd.auto.cycle.worktrees.home), made
    before any wave; `parallel: 1` opens nothing."""
    from gtd.auto.cycle import worktrees

    make_project(repo)
    git = Git(repo.path)
    protected = sandbox.protected_files(repo.path, git)
    serial = sandbox.policy(repo.path, git, protected)
    assert "allowWrite" not in serial["filesystem"]

    outside = tmp_path / "waves" / "main"
    outside.mkdir(parents=True)
    opened = sandbox.policy(repo.path, git, protected, waves=outside)
    assert opened["filesystem"]["allowWrite"] == [str(outside.resolve())]
    assert opened["filesystem"]["denyWrite"] == serial["filesystem"]["denyWrite"]

    inside = repo.path / ".git" / "gtd" / "waves" / "main"
    closed = sandbox.policy(repo.path, git, protected, waves=inside)
    assert closed == serial
    why = sandbox.wave_opening(inside, serial["filesystem"]["denyWrite"])
    assert why is not None
    assert f"inside {repo.path.resolve() / '.git'}" in why

    # Through setup's answer: `parallel: 2` opens the loop's folder, made now.
    home = worktrees.home(git)
    assert not home.exists()
    config = repo.path / ".deepflow/config.yaml"
    config.write_text(config.read_text() + "parallel: 2\n")
    answer: dict[str, object] = {"status": "ready"}
    sandbox.follow(repo.path, answer)
    assert answer["sandbox"] == f"on ({sandbox.SETTINGS})"
    block = settings(repo)["sandbox"]
    assert isinstance(block, dict)
    assert block["filesystem"]["allowWrite"] == [os.path.realpath(home)]
    assert block["filesystem"]["denyWrite"] == serial["filesystem"]["denyWrite"]
    assert home.is_dir()
    config.write_text(config.read_text().replace("parallel: 2\n", ""))
    answer = {"status": "ready"}
    sandbox.follow(repo.path, answer)
    assert answer["sandbox"] == f"on ({sandbox.SETTINGS})"


def test_an_opened_wave_folder_is_added_to_the_permissions_and_taken_out_again(
    repo: Repo, tmp_path: Path
) -> None:
    """Opening a folder outside the project takes two keys: the sandbox's
    ``allowWrite`` (Bash) and ``permissions.additionalDirectories`` (Edit and
    Write, which Claude Code would otherwise ask about). Both are recorded and
    taken out at the loop's end; the person's file comes back byte for byte."""
    make_project(repo)
    git = Git(repo.path)
    sandbox.remove(repo.path, git)
    (repo.path / ".claude").mkdir(exist_ok=True)
    (repo.path / sandbox.SETTINGS).write_text(PERSON)
    waves = tmp_path / "waves" / "main"
    waves.mkdir(parents=True)
    assert sandbox.apply(repo.path, git, waves=waves)
    written = settings(repo)
    block = written["sandbox"]
    assert isinstance(block, dict)
    assert block["filesystem"]["allowWrite"] == [str(waves.resolve())]
    assert written["permissions"] == {
        "allow": ["Bash(make:*)"],
        "additionalDirectories": [str(waves.resolve())],
    }
    sandbox.remove(repo.path, git)
    assert (repo.path / sandbox.SETTINGS).read_text() == PERSON
