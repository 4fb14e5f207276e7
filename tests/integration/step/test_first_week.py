"""What a new user of step mode hit in the first week, walked through with the real
CLI in real repositories: auto mode's private files are never captured, an
unconfigured test command is detected and named, every config key is documented,
and the four places where gtd 2.0.0 answered differently now answer as it does."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from gtd.step.actions import SQUASH_TEMPLATE_2_0
from gtd.step.config_file import _MODEL_KEYS, _TOP_KEYS, SCHEMA_URL, load_step_config
from gtd.step.settings import MODEL_STATE_KEYS
from tests.integration.step.conftest import StepRepo

ROOT = Path(__file__).resolve().parents[3]
PRIVATE = (
    ".deepflow/auto-memory.yaml",
    ".deepflow/agent-output.log",
    ".deepflow/.gtd.lock",
    ".deepflow/auto-snapshot.txt",
    ".deepflow/cycle.json",
    ".deepflow/auto-report.md",
    ".deepflow/agent-logs/cycle-1.log",
)
TODO = "# Plan\n\nok\n\n## Open Questions\n\n### Spelling?\n\nSuggested default: ok\n"


def _files_of(r: StepRepo, rev: str = "HEAD") -> list[str]:
    return sorted(r.git("show", "--name-only", "--format=", rev).split())


# -- auto mode's private files ---------------------------------------------------------


def test_step_never_captures_auto_modes_private_files(step_repo: StepRepo) -> None:
    r = step_repo
    r.git("switch", "-q", "-c", "feature")  # a new branch: no .deepflow/.gitignore here
    for rel in PRIVATE:
        r.write(rel, f"{rel}\n")
    # Only private files pending: not a dirty tree for step mode.
    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["actor"]) == ("idle", "human")
    assert r.ok("status", "--json").json["predictedCommit"] is None
    # The human sketches an idea and edits the (public) auto-mode config.
    r.write("idea.md", "make it ok\n")
    r.write(".deepflow/config.yaml", "ratchet:\n  test_command: python3 check.py\n")
    assert r.ok("step").committed == ["gtd(human): grilling"]
    assert _files_of(r) == [".deepflow/config.yaml", "idea.md"]
    r.write(".gtd/TODO.md", TODO)
    assert r.ok("step-agent").committed == ["gtd(agent): grilling"]
    assert _files_of(r) == [".gtd/TODO.md"]
    for rel in PRIVATE:  # untouched, still untracked
        assert r.read(rel) == f"{rel}\n"
    untracked = r.git("ls-files", "--others", "--exclude-standard").split()
    assert sorted(untracked) == sorted(PRIVATE)


def test_a_tracked_private_file_is_never_staged_either(step_repo: StepRepo) -> None:
    r = step_repo
    r.write(".deepflow/auto-memory.yaml", "cycles: 1\n")
    r.commit_all("chore: auto mode's memory, committed by mistake")
    r.write(".deepflow/auto-memory.yaml", "cycles: 2\n")
    r.write("idea.md", "x\n")
    assert r.ok("step").committed == ["gtd(human): grilling"]
    assert _files_of(r) == ["idea.md"]
    assert r.status() == " M .deepflow/auto-memory.yaml\n"


# -- the test command when none is configured -------------------------------------------

PYTEST_PROJECT = {
    "pyproject.toml": '[project]\nname = "value"\nversion = "0"\n',
    "tests/test_value.py": (
        "from pathlib import Path\n\n\ndef test_value():\n"
        '    assert Path("value.txt").read_text().strip() == "ok"\n'
    ),
    "value.txt": "bad\n",
    ".gitignore": "__pycache__/\n.pytest_cache/\n",
}


def _project(r: StepRepo, files: dict[str, str]) -> None:
    r.git("init", "-q", "-b", "main")
    for rel, text in files.items():
        r.write(rel, text)
    r.write(".gtdrc.json", json.dumps({"$schema": SCHEMA_URL}) + "\n")  # the auto-init stub
    r.commit_all("chore: init")


def test_a_python_project_runs_pytest_and_says_so(
    make_repo: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{__import__('os').environ['PATH']}")
    # The project uses no pytest plugin; this environment's (hypothesis, xdist)
    # would load into both of its runs: ~1 s of CPU each.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    r = make_repo()  # type: ignore[operator]
    _project(r, PYTEST_PROJECT)
    config, _ = load_step_config(r.path)
    assert (config.test_command, config.test_command_source) == ("pytest", "detected")
    idle = r.ok("next").stdout
    assert "The test command is `pytest`, detected from the project's files" in idle
    out = r.ok("step")  # the health check runs pytest, not `npm run test`
    assert out.committed == ["gtd: health-check"]
    assert out.stderr == (
        "gtd: no testCommand is configured — running `pytest`, detected from the project's "
        "files; set testCommand in .gtdrc.json to choose\n"
    )
    health = r.read(".gtd/HEALTH.md")
    assert "test_value" in health
    assert "npm" not in health
    fixing = r.ok("next").stdout
    assert "detected from the project's files" in fixing
    r.write("value.txt", "ok\n")
    assert r.ok("step-agent").committed[-1] == "gtd: squash template"


@pytest.mark.parametrize(
    ("files", "command", "source"),
    [
        ({"package.json": '{"scripts": {"test": "node t.js"}}'}, "npm run test", "detected"),
        ({"Cargo.toml": "[package]\n"}, "cargo test", "detected"),
        ({"go.mod": "module x\n"}, "go test ./...", "detected"),
        ({"README.md": "words\n"}, "npm run test", "default"),
        (
            {"package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\""}}'},
            "npm run test",
            "default",
        ),
    ],
)
def test_detection_by_project_kind(
    make_repo: object, files: dict[str, str], command: str, source: str
) -> None:
    r = make_repo()  # type: ignore[operator]
    _project(r, files)
    config, _ = load_step_config(r.path)
    assert (config.test_command, config.test_command_source) == (command, source)
    note = {"detected": "detected from the project's files", "default": "gtd's default"}[source]
    assert note in r.ok("next").stdout


def test_a_configured_command_is_used_as_is(step_repo: StepRepo) -> None:
    config, _ = load_step_config(step_repo.path)
    assert (config.test_command, config.test_command_source) == ("python3 check.py", "config")
    assert "The test command is" not in step_repo.ok("next").stdout
    assert step_repo.ok("step").stderr == ""


def test_every_config_key_is_documented() -> None:
    """docs/step-mode.md has the "Config" section the code points to, naming every
    key the loader accepts."""
    text = (ROOT / "docs" / "step-mode.md").read_text(encoding="utf-8")
    match = re.search(r"^## Config\n(.*?)(?=^## )", text, re.M | re.S)
    assert match, "docs/step-mode.md has no '## Config' section"
    section = match.group(1)
    rows = re.findall(r"^\| `([^`]+)` \|", section, re.M)  # the key column of the table
    for key in ("$schema", *_TOP_KEYS):
        assert key in rows or any(row.startswith(f"{key}.") for row in rows), key
    for key in _MODEL_KEYS:
        assert any(row.startswith(f"models.{key}") for row in rows), key
    for key in MODEL_STATE_KEYS:  # the states' override keys, listed in their row
        assert f"`{key}`" in section, key
    for code in (ROOT / "helper" / "gtd" / "step").glob("*.py"):
        for ref in re.findall(r'docs/step-mode\.md, "([^"]+)"', code.read_text()):
            assert re.search(rf"^#+ {re.escape(ref)}\s*$", text, re.M), (code.name, ref)


# -- the four divergences from gtd 2.0.0 -------------------------------------------------


def test_status_on_a_dirty_tree_at_a_boundary_is_grilling(step_repo: StepRepo) -> None:
    r = step_repo
    r.write("idea.md", "x\n")
    assert r.ok("status").stdout == (
        "State: grilling\nAwaits: human\nPredicted commit: gtd(human): grilling\n"
        "Predicted state: grilling\nFile: .gtd/TODO.md\nMode: qa\n"
    )
    assert r.ok("status", "--json").json["state"] == "grilling"


@pytest.mark.parametrize("rel", [".gtd/notes.md", ".gtd/01-value/02-more.md"])
def test_next_refuses_changes_only_under_gtd(step_repo: StepRepo, rel: str) -> None:
    r = step_repo
    r.write("idea.md", "x\n")
    r.ok("step")
    r.write(".gtd/TODO.md", TODO)
    r.ok("step-agent")
    r.ok("step")
    r.write(".gtd/01-value/01-task.md", "# Task\n\n- [ ] ok\n")
    r.ok("step-agent")  # building, clean
    r.write(rel, "a human's note\n")
    out = r.gtd("next", "--json")
    assert out.code == 1
    assert out.json["state"] == "error"
    assert out.json["prompt"].startswith("gtd next: working tree is dirty")


def test_gtd_2_0_0s_squash_template_is_not_a_message(step_repo: StepRepo) -> None:
    r = step_repo
    r.write("idea.md", "x\n")
    r.ok("step")
    r.write(".gtd/TODO.md", TODO)
    r.ok("step-agent")
    r.ok("step")
    r.write(".gtd/01-value/01-task.md", "# Task\n\n- [ ] ok\n")
    r.ok("step-agent")
    r.write("value.txt", "ok\n")
    r.ok("step-agent")
    r.write(".gtd/FEEDBACK.md", "")
    r.ok("step-agent")
    r.write(".gtd/REVIEW.md", "# Review: v\n\n<!-- base: abc -->\n\n## V\n\n- [ ] ./value.txt\n")
    r.ok("step-agent")
    assert r.ok("step").committed[-1] == "gtd: squash template"
    # The template of the other implementation is a placeholder too, never a message.
    r.write(".gtd/SQUASH_MSG.md", SQUASH_TEMPLATE_2_0)
    out = r.ok("step-agent")
    assert out.committed == ["gtd(agent): squashing"]
    assert out.stdout.endswith("state: squashing\n")
    r.write(".gtd/SQUASH_MSG.md", "feat: value is ok\n")
    # HEAD is the squashing turn already: the real message squashes at once.
    assert r.ok("step-agent").committed == ["feat: value is ok"]


def test_predicted_state_copies_state(step_repo: StepRepo) -> None:
    r = step_repo
    seen = []
    r.write("idea.md", "x\n")
    seen.append(r.ok("status", "--json").json)
    r.ok("step")
    seen.append(r.ok("status", "--json").json)
    r.write(".gtd/TODO.md", TODO)
    seen.append(r.ok("status", "--json").json)
    r.ok("step-agent")
    r.git("commit", "-q", "--allow-empty", "-m", "gtd(human): grilling")  # mid-chain
    seen.append(r.ok("status", "--json").json)
    assert [s["state"] for s in seen] == ["grilling"] * 4
    assert all(s["predictedState"] == s["state"] for s in seen)
    assert [s["predictedCommit"] for s in seen] == [
        "gtd(human): grilling",
        None,
        "gtd(agent): grilling",
        "gtd: grilled",
    ]
