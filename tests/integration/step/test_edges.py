"""Refusals, inert steps, old histories, corruption and bad input — each a clear
message with nothing lost (issue 5, "Must hold")."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.step.conftest import StepRepo


def test_out_of_turn_refusals_make_zero_commits(step_repo: StepRepo) -> None:
    r = step_repo
    r.write("idea.md", "x\n")
    refused = r.gtd("step-agent", "--json")
    assert refused.code == 1
    assert refused.json == {"state": "error", "prompt": "idle awaits a human turn — run `gtd step`"}
    assert refused.stderr == "gtd: idle awaits a human turn — run `gtd step`\n"
    r.ok("step")
    head = r.git("rev-parse", "HEAD")
    for dirty in (False, True):
        if dirty:
            r.write("more.md", "y\n")
        out = r.gtd("step")
        assert out.code == 1
        assert out.stderr == "gtd: grilling awaits an agent turn — run `gtd step-agent`\n"
        assert r.git("rev-parse", "HEAD") == head


def test_clean_step_agent_at_an_agent_rest_is_inert(step_repo: StepRepo) -> None:
    r = step_repo
    r.write("idea.md", "x\n")
    r.ok("step")
    head = r.git("rev-parse", "HEAD")
    for _ in range(2):
        out = r.ok("step-agent", "--json")
        assert out.json == {"state": "grilling", "actions": [], "commits": []}
    assert r.git("rev-parse", "HEAD") == head


def test_next_pending_and_dirty(step_repo: StepRepo) -> None:
    r = step_repo
    r.write("idea.md", "x\n")
    dirty = r.gtd("next")
    assert dirty.code == 1
    assert dirty.stderr == (
        "gtd next: working tree is dirty — run `gtd status` to inspect it, then advance "
        "with `gtd step` or `gtd step-agent` (whichever actor is awaited)\n"
    )
    # As gtd 2.0.0 (and its README's example): a sketch at a boundary is the human's
    # grilling turn-to-be, so status reports grilling, not the idle HEAD resolves to.
    status = r.ok("status", "--json").json
    assert status == {
        "state": "grilling",
        "actor": "human",
        "predictedCommit": "gtd(human): grilling",
        "predictedState": "grilling",
        "file": ".gtd/TODO.md",
        "mode": "qa",
    }
    r.ok("step")
    r.write(".gtd/TODO.md", "# Plan\n")
    r.ok("step-agent")
    # An empty human grilling turn committed by hand is mid-chain (gtd: grilled next).
    r.git("commit", "-q", "--allow-empty", "-m", "gtd(human): grilling")
    nxt = r.ok("next", "--json").json
    assert nxt == {"state": "grilling", "actor": "human", "pending": True, "prompt": None}
    assert r.ok("next").stdout == "mid-chain checkpoint — run `gtd step` to continue\n"
    # predictedState copies state, as gtd 2.0.0 does.
    assert r.ok("status").stdout == (
        "State: grilling\nAwaits: human\nPredicted commit: gtd: grilled\n"
        "Predicted state: grilling\n"
    )
    assert r.ok("step-agent").committed == ["gtd: grilled"]  # mid-chain: either mutator


def test_one_x_history_is_inert(step_repo: StepRepo) -> None:
    r = step_repo
    for subject in ("gtd: new task", "gtd: grilling", "gtd: transport", "gtd: reviewing"):
        r.git("commit", "-q", "--allow-empty", "-m", subject)
    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["actor"], nxt["pending"]) == ("idle", "human", False)
    assert r.ok("status", "--json").json["predictedCommit"] is None


def test_corruption_is_an_error_never_a_guess(step_repo: StepRepo) -> None:
    r = step_repo
    r.write(".gtd/FEEDBACK.md", "x\n")
    r.commit_all("wip")
    out = r.gtd("next", "--json")
    assert out.code == 1
    assert out.json == {
        "state": "error",
        "prompt": "illegal combination: .gtd/FEEDBACK.md without packages",
    }
    r.git("rm", "-q", "-r", ".gtd")
    r.write(".gtd/01-a/01-t.md", "task\n")
    r.commit_all("wip 2")
    out = r.gtd("step")
    assert out.code == 1
    assert out.stderr == (
        'gtd: no precedence rule matched (HEAD="wip 2", clean=true); repo is in an '
        "unrecognized state — refusing to guess\n"
    )
    assert r.first_parent()[-1] == "wip 2"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            ".gtdrc.json",
            "{nope",
            "{path}: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        ),
        (".gtdrc", "- a\n- b\n", "{path}: config must be a plain object"),
        (".gtdrc.yaml", "", "{path}: config must be a plain object"),
        (".gtdrc.yml", "a: [\n", "{path}: "),
        ("gtd.config.json", '{"bogus": 1}', "Invalid gtd config: bogus: unknown key"),
        (
            "gtd.config.yaml",
            "fixAttemptCap: -1\n",
            "Invalid gtd config: fixAttemptCap: must be ≥ 0, got -1",
        ),
        (
            ".gtdrc.json",
            '{"reviewThreshold": 0}',
            "Invalid gtd config: reviewThreshold: must be ≥ 1, got 0",
        ),
        (
            ".gtdrc.json",
            '{"squash": "yes"}',
            'Invalid gtd config: squash: expected true or false, got "yes"',
        ),
        (
            ".gtdrc.json",
            '{"models": {"states": {"x": "m"}}}',
            "Invalid gtd config: models.states.x: unknown key",
        ),
    ],
)
def test_each_config_error(
    make_repo: Callable[..., StepRepo], name: str, text: str, message: str
) -> None:
    r = make_repo()
    r.write("README.md", "hi\n")
    r.write(name, text)
    r.commit_all("chore: init")
    out = r.gtd("status", "--json")
    assert out.code == 1
    expected = message.format(path=r.path / name)
    assert out.json["state"] == "error"
    assert out.json["prompt"].startswith(expected)
    assert out.stderr.startswith(f"gtd: {expected}")
    assert r.first_parent() == ["chore: init"]


def test_config_is_merged_from_parent_directories(make_repo: Callable[..., StepRepo]) -> None:
    r = make_repo()
    (r.path.parent / ".gtdrc.yaml").write_text(
        "$schema: x\nfixAttemptCap: 0\nmodels:\n  states:\n    building: outer-model\n"
    )
    r.write(".gtdrc.json", json.dumps({"models": {"execution": "inner-exec"}}))
    r.write(".gtd/01-a/01-t.md", "task\n")
    r.write("README.md", "x\n")
    r.commit_all("chore: init")
    r.git("commit", "-q", "--allow-empty", "-m", "gtd: planning")
    prompt = r.ok("next", "--json").json["prompt"]
    assert "outer-model" in prompt
    assert "inner-exec" not in prompt


def test_missing_test_binary_keeps_commits_and_rerun_resumes(step_repo: StepRepo) -> None:
    r = step_repo
    r.config(testCommand="gtd-no-such-binary --flag")
    r.write(".gtd/01-a/01-t.md", "task\n")
    r.commit_all("chore: setup")
    r.git("commit", "-q", "--allow-empty", "-m", "gtd: planning")
    r.write("value.txt", "ok\n")
    out = r.gtd("step-agent")
    assert out.code == 1
    assert out.stderr == "gtd: test command not found: gtd-no-such-binary --flag\n"
    assert out.committed == ["gtd(agent): building"]
    assert r.first_parent()[-1] == "gtd(agent): building"
    assert r.status() == ""
    r.config()
    r.commit_all("chore: fix the test command")
    out = r.ok("step-agent")
    assert out.committed == ["gtd: tests green"]
    assert out.stdout.endswith("state: agentic-review\n")


def test_red_run_without_output_writes_the_exact_message(step_repo: StepRepo) -> None:
    r = step_repo
    r.config(testCommand="python3 -c 'raise SystemExit(3)'")
    r.write(".gtd/01-a/01-t.md", "task\n")
    r.commit_all("chore: setup")
    r.git("commit", "-q", "--allow-empty", "-m", "gtd: planning")
    r.write("value.txt", "ok\n")
    assert r.ok("step-agent").committed == ["gtd(agent): building", "gtd: errors"]
    assert r.read(".gtd/FEEDBACK.md") == (
        "Test command `python3 -c 'raise SystemExit(3)'` failed with exit code 3 and "
        "produced no output.\n"
    )


def test_test_command_is_not_run_by_a_shell(step_repo: StepRepo) -> None:
    r = step_repo
    r.config(testCommand="python3 check.py && false")  # a shell would run `false`
    r.commit_all("chore: shell words")
    r.write("value.txt", "ok\n")
    r.commit_all("fix")
    assert r.ok("step").committed == []  # green: `&&` and `false` are argv words


def test_subdirectory_is_refused(step_repo: StepRepo) -> None:
    r = step_repo
    (r.path / "sub").mkdir()
    for args in (("next",), ("step",), ("status", "--json")):
        out = StepRepo(r.path / "sub").gtd(*args)
        assert out.code == 1
        assert "must run from the repository root" in out.stderr
    assert r.first_parent() == ["chore: init"]


def test_merge_commit_at_head(step_repo: StepRepo) -> None:
    r = step_repo
    r.git("switch", "-q", "-c", "side")
    r.write("side.txt", "s\n")
    r.commit_all("side")
    r.git("switch", "-q", "main")
    r.write("main.txt", "m\n")
    r.commit_all("main work")
    r.git("merge", "-q", "--no-ff", "-m", "Merge side", "side")
    assert r.ok("next", "--json").json["state"] == "idle"  # degrades gracefully
    r.write(".gtd/01-a/01-t.md", "t\n")
    r.commit_all("wip")
    r.git("switch", "-q", "side")
    r.git("merge", "-q", "--no-ff", "-m", "Merge main", "main")
    out = r.gtd("step")
    assert out.code == 1
    assert "HEAD is a merge commit" in out.stderr


def test_detached_head_is_refused(step_repo: StepRepo) -> None:
    r = step_repo
    r.git("checkout", "-q", "--detach")
    r.write("idea.md", "x\n")
    out = r.gtd("step", "--json")
    assert out.code == 1
    assert "HEAD is detached" in out.json["prompt"]
    assert r.first_parent() == ["chore: init"]
    assert r.exists("idea.md")


def test_empty_repository_auto_inits(make_repo: Callable[..., StepRepo]) -> None:
    r = make_repo()
    out = r.ok("next", "--json")
    assert out.json["state"] == "idle"
    assert r.first_parent() == ["chore: add .gtdrc.json"]
    assert json.loads(r.read(".gtdrc.json")) == {
        "$schema": "https://unpkg.com/@pmelab/gtd/schema.json"
    }


def test_status_in_a_fresh_repository_commits_the_config_stub_once(
    make_repo: Callable[..., StepRepo],
) -> None:
    # gtd 2.0's auto-init runs for every state command, `status` included: its one
    # write, documented in docs/step-mode.md beside "never mutates".
    r = make_repo()
    r.write("README.md", "x\n")
    r.commit_all("chore: init")
    first = r.ok("status")
    assert first.stdout == (
        "State: idle\nAwaits: human\nPredicted commit: (none)\nPredicted state: idle\n"
    )
    # the write is said, since status prints no commit lines
    assert first.stderr == (
        "gtd: no config file in this folder or above: wrote .gtdrc.json and committed it as "
        "`chore: add .gtdrc.json` (gtd 2.0's auto-init, once per repository; set "
        "testCommand in it)\n"
    )
    assert r.first_parent() == ["chore: init", "chore: add .gtdrc.json"]
    again = r.ok("status")
    assert (again.stdout, again.stderr) == (first.stdout, "")
    page = Path(__file__).resolve().parents[3] / "docs" / "step-mode.md"
    assert first.stderr in page.read_text(encoding="utf-8")  # the page quotes it as printed
    assert r.first_parent() == ["chore: init", "chore: add .gtdrc.json"]  # never again


def test_auto_init_commits_only_the_stub_and_amends_a_gtd_head(
    make_repo: Callable[..., StepRepo],
) -> None:
    r = make_repo()
    r.write("README.md", "x\n")
    r.commit_all("chore: init")
    r.write("idea.md", "x\n")
    out = r.ok("step")
    assert out.committed == ["chore: add .gtdrc.json", "gtd(human): grilling"]
    assert r.first_parent() == ["chore: init", "chore: add .gtdrc.json", "gtd(human): grilling"]

    other = make_repo("other")
    other.write("README.md", "x\n")
    other.commit_all("chore: init")
    other.write(".gtd/TODO.md", "# Plan\n")
    other.commit_all("gtd(agent): grilling")
    other.write("pending.md", "not mine\n")
    amended = other.ok("status")
    assert amended.stdout.startswith("State: grilling\nAwaits: human\n")
    assert amended.stderr.startswith(
        "gtd: no config file in this folder or above: wrote .gtdrc.json and amended it into HEAD"
    )
    assert other.first_parent() == ["chore: init", "gtd(agent): grilling"]
    files = other.git("show", "--name-only", "--format=", "HEAD").split()
    assert sorted(files) == [".gtd/TODO.md", ".gtdrc.json"]
    assert other.status() == "?? pending.md\n"


def test_cli_surface(step_repo: StepRepo) -> None:
    r = step_repo
    out = r.gtd("next", "--jsn")
    assert (out.code, out.stderr) == (1, "gtd: unknown option '--jsn' — see `gtd --help`\n")
    assert r.gtd("-v").stdout.strip().startswith("gtd ")
    assert "step-agent" in r.gtd("-h").stdout
    bare = r.gtd()
    assert bare.code == 1


def test_format(step_repo: StepRepo) -> None:
    r = step_repo
    r.write(".prettierrc", '{"printWidth": 20}')
    r.write("notes.md", "# T\n\n* " + "word " * 30 + "\n")
    assert r.ok("format", "notes.md").stdout == ""
    lines = r.read("notes.md").splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[2].startswith("- word")
    assert r.gtd("format").stderr == "gtd format: missing file path argument\n"
    assert r.gtd("format", "a.md", "b.md").stderr == (
        "gtd format: too many arguments — expected one path, got: a.md b.md\n"
    )
    assert r.gtd("format", "x.txt").stderr == (
        "gtd format: x.txt is not a markdown file (expected .md or .markdown)\n"
    )
    assert r.gtd("format", "gone.md").stderr == "gtd: skipped formatting gone.md: not found\n"
    out = r.gtd("format", "notes.md", "--json")
    assert (out.code, out.stderr) == (1, "gtd format does not accept --json\n")
