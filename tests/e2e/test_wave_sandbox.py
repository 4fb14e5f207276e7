"""Claude Code's sandbox and a wave's worktrees, through the real CLI.

The block gtd.auto.sandbox.policy writes for a folder of wave worktrees outside
every denial (one ``allowWrite`` entry), with its ``permissions``
(``additionalDirectories``), lets the implementer's Bash and Write write there,
and nowhere beside it, every serial denial holding. And the fact
gtd.auto.sandbox.wave_opening rests on: the pinned CLI opens no folder inside a
denied one, so a worktrees' folder inside git's folder stays read-only even
when ``allowWrite`` names it (why gtd.auto.cycle.worktrees keeps them in the
cache). Skipped, with the reason, where the sandbox cannot start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gtd.auto import sandbox
from gtd.auto.cycle import worktrees
from gtd.demo.model_rules import tick_rules, write
from gtd.demo.model_server import ModelServer, ToolUse
from gtd.git import Git
from tests.e2e.harness import git, make_project, run_claude
from tests.e2e.test_guard import MUL, MUL_TEST, implementer

pytestmark = pytest.mark.slow

TICK = "/gtd:auto-cycle"


@pytest.fixture(autouse=True)
def _needs_the_sandbox() -> None:
    why = sandbox.unavailable()
    if why is not None:
        pytest.skip(f"Claude Code's sandbox cannot start here: {why}")


def test_a_wave_folder_outside_git_is_opened_and_one_inside_cannot_be(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo")
    common = repo.resolve() / ".git"
    inside = common / "gtd" / "waves" / "main"
    inside.mkdir(parents=True)
    outside = worktrees.prepare(Git(repo))  # the loop's own folder in the cache
    waves = outside.parent
    protected = sandbox.protected_files(repo, Git(repo))
    block = sandbox.policy(repo, Git(repo), protected, waves=outside)
    assert block["filesystem"]["allowWrite"] == [str(outside.resolve())]
    data = json.loads((repo / sandbox.SETTINGS).read_text())
    data["permissions"] = sandbox.permissions(block)
    assert data["permissions"] == {"additionalDirectories": [str(outside.resolve())]}
    # By hand, what the policy refuses to write: an opening inside git's folder.
    block["filesystem"]["allowWrite"].append(str(inside))
    data["sandbox"] = block
    (repo / sandbox.SETTINGS).write_text(json.dumps(data, indent=2))
    kept = [repo / "tests/test_calc.py", common / "HEAD", common / "config"]
    before = {p: p.read_bytes() for p in kept}

    allowed = [
        f"echo x > {outside}/probe",
        f"mkdir -p {outside}/gtd-wave-T9/pkg && echo x > {outside}/gtd-wave-T9/pkg/mod.py",
    ]
    refused = [
        f"echo x > {inside}/probe",  # the CLI's fact: no opening inside a denial
        f"mkdir -p {waves}/other && echo x > {waves}/other/probe",  # beside the opening
        f"echo x > {waves}/probe",
        f"echo x > {common}/gtd/probe",
        f"echo x > {common}/refs/heads/evil",
        f"echo x > {common}/packed-refs",
        f"echo x > {common}/ORIG_HEAD",
        f"echo 'ref: refs/heads/evil' > {common}/HEAD",
        f"echo x >> {common}/config",
        "echo 'def test_add(): pass' > tests/test_calc.py",
        "echo x > PLAN.md",
    ]
    tries = [ToolUse("Bash", {"command": f"{c} && echo WROTE"}) for c in allowed + refused]
    # The Write tool too: accepted in the opened folder, asked (so refused at
    # night) beside it.
    tries += [
        ToolUse("Write", {"file_path": str(outside / "gtd-wave-T8/new.py"), "content": "N = 1\n"}),
        ToolUse("Write", {"file_path": str(waves / "beside.py"), "content": "N = 1\n"}),
    ]
    good = [write(repo, "calc.py", MUL), write(repo, "tests/test_mul.py", MUL_TEST)]
    server.script(*tick_rules(), *implementer(repo, tries, good))
    session = run_claude(server, repo, [TICK], base=tmp_path / "claude", timeout=240)
    assert not server.errors, server.errors
    assert session.returncode == 0, session.stderr[-2000:]

    calls: dict[str, str] = {}
    for call in session.tool_calls("Bash"):
        calls.setdefault(call["input"]["command"], call["id"])
    for attempt in allowed:
        out = session.tool_result(calls[f"{attempt} && echo WROTE"])
        assert "WROTE" in out, (attempt, out)
    for attempt in refused:
        out = session.tool_result(calls[f"{attempt} && echo WROTE"])
        assert "WROTE" not in out, (attempt, out)
    assert (outside / "gtd-wave-T9/pkg/mod.py").read_text() == "x\n"
    assert (outside / "gtd-wave-T8/new.py").read_text() == "N = 1\n"
    assert not (waves / "beside.py").exists()
    assert [d["tool_input"]["file_path"] for d in session.permission_denials] == [
        str(waves / "beside.py")
    ]
    for path in (inside / "probe", waves / "other/probe", waves / "probe", common / "gtd/probe"):
        assert not path.exists(), path
    assert not (common / "refs/heads/evil").exists()
    for path in (common / "packed-refs", common / "ORIG_HEAD"):  # git's own may be there since
        assert not path.exists() or path.read_text() != "x\n", path
    for path, data_before in before.items():
        assert path.read_bytes() == data_before, path
    assert (repo / "PLAN.md").read_text() != "x\n"  # the helper ticks it; the agent did not
    assert git(repo, "for-each-ref", "refs/heads/evil") == ""
