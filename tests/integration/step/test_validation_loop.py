"""The validation loop and the state ↔ file association through the real CLI in
real repositories (docs/step-mode.md, "The validation loop"; docs/steering-files.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from gtd.steering import check
from tests.integration.step.conftest import StepRepo

BAD_TODO = (
    "# Plan\n\nSet value.txt to ok.\n\n## Open Questions\n\n### Spelling?\n\n"
    "ok, I guess\n\n###\n\nSuggested default: x\n"
)
GOOD_TODO = (
    "# Plan\n\nSet value.txt to ok.\n\n## Open Questions\n\n### Spelling?\n\n"
    "Suggested default: ok\n"
)
BAD_REVIEW = "# Review: the value change\n\n## The value\n\n- [ ] value.txt — the new value\n"


def _expected(path: str, kind: str, text: str) -> list[str]:
    lines = [f"{path}:{f.line}: {f.message}" for f in check(kind, text)]  # type: ignore[arg-type]
    assert len(lines) >= 2  # the fixtures break more than one rule
    return lines


def _to_grilling(r: StepRepo) -> None:
    r.write("idea.md", "make the value ok\n")
    assert r.ok("step").committed == ["gtd(human): grilling"]


def _fenced_examples(prompt: str) -> list[str]:
    return re.findall(r"````markdown\n(.*?)\n````", prompt, flags=re.S)


def test_a_malformed_todo_is_not_a_finished_grilling_turn(step_repo: StepRepo) -> None:
    r = step_repo
    _to_grilling(r)
    before = r.first_parent()
    r.write(".gtd/TODO.md", BAD_TODO)
    expected = _expected(".gtd/TODO.md", "qa", BAD_TODO)

    refused = r.gtd("step-agent")
    assert refused.code == 1
    assert refused.committed == []
    assert refused.stderr.startswith(
        f"gtd: grilling: .gtd/TODO.md breaks its format ({len(expected)} findings), so the "
        "agent's turn is not captured — fix every finding, then run `gtd step-agent` again:\n"
    )
    for line in expected:
        assert f"\n{line}\n" in refused.stderr + "\n"
    as_json = r.gtd("step-agent", "--json")
    assert as_json.code == 1
    assert as_json.json["state"] == "error"
    assert all(line in as_json.json["prompt"] for line in expected)
    assert r.first_parent() == before  # no `gtd(agent): grilling`
    assert "gtd(agent): grilling" not in r.first_parent()

    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["actor"], nxt["pending"]) == ("grilling", "agent", False)
    assert (nxt["file"], nxt["mode"]) == (".gtd/TODO.md", "qa")
    prompt = nxt["prompt"]
    assert "## Fix the format first" in prompt
    for line in expected:
        assert f"\n{line}\n" in prompt
    assert all(f"\n{line}\n" in r.ok("next").stdout for line in expected)
    # The loop driver's `gtd step-agent || true` then `gtd next`: still the agent.
    assert r.ok("status", "--json").json == {
        "state": "grilling",
        "actor": "agent",
        "predictedCommit": None,
        "predictedState": "grilling",
        "file": ".gtd/TODO.md",
        "mode": "qa",
    }

    r.write(".gtd/TODO.md", GOOD_TODO)
    assert "Fix the format first" not in r.ok("next", "--json").json["prompt"]
    assert r.ok("step-agent").committed == ["gtd(agent): grilling"]
    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["actor"], nxt["file"], nxt["mode"]) == (
        "grilling",
        "human",
        ".gtd/TODO.md",
        "qa",
    )
    plain = r.ok("status").stdout
    assert plain.startswith("State: grilling\nAwaits: human\nPredicted commit: ")
    assert plain.endswith("\nFile: .gtd/TODO.md\nMode: qa\n")


def test_a_human_answer_is_never_refused_for_format(step_repo: StepRepo) -> None:
    r = step_repo
    _to_grilling(r)
    r.write(".gtd/TODO.md", GOOD_TODO)
    r.ok("step-agent")
    # The human breaks the format while answering: that is feedback, captured.
    r.write(".gtd/TODO.md", GOOD_TODO.replace("Suggested default: ok", "make it ok, please"))
    assert r.ok("step").committed == ["gtd(human): grilling"]
    # ...and the agent's next draft must be valid again, even if it edits elsewhere.
    r.write(".gtd/notes.md", "thinking\n")
    refused = r.gtd("step-agent")
    assert refused.code == 1
    assert ".gtd/TODO.md:9: question 'Spelling?'" in refused.stderr
    r.write(".gtd/TODO.md", GOOD_TODO.replace("Suggested default", "Answer"))
    assert r.ok("step-agent").committed == ["gtd(agent): grilling"]


def test_a_malformed_review_is_not_a_finished_review_turn(step_repo: StepRepo) -> None:
    r = step_repo
    r.write("value.txt", "ok\n")
    r.commit_all("feat: value")
    base = r.git("rev-parse", "HEAD~1").strip()
    r.ok("review", "HEAD~1")
    head = r.git("rev-parse", "HEAD").strip()
    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["file"], nxt["mode"]) == ("review", ".gtd/REVIEW.md", "review")
    prompt = nxt["prompt"]
    assert f"# Review: {head[:7]}\n" in prompt
    assert f"<!-- base: {base} -->" in prompt
    # Drafts are born valid: the prompt's own example passes the validator.
    (example,) = _fenced_examples(prompt)
    assert check("review", example) == ()

    r.write(".gtd/REVIEW.md", BAD_REVIEW)
    expected = _expected(".gtd/REVIEW.md", "review", BAD_REVIEW)
    refused = r.gtd("step-agent")
    assert refused.code == 1
    assert refused.stderr.startswith("gtd: review: .gtd/REVIEW.md breaks its format")
    assert all(f"\n{line}" in refused.stderr for line in expected)
    assert "gtd(agent): review" not in r.first_parent()
    prompt = r.ok("next", "--json").json["prompt"]
    for line in expected:
        assert f"\n{line}\n" in prompt

    good = (
        f"# Review: {head[:7]}\n\n<!-- base: {base} -->\n\n## The value\n\n"
        "- [ ] ./value.txt#1 — the new value\n"
    )
    r.write(".gtd/REVIEW.md", good)
    assert r.ok("step-agent").committed == ["gtd(agent): review", "gtd: awaiting review"]
    status = r.ok("status", "--json").json
    assert (status["state"], status["actor"]) == ("await-review", "human")
    assert (status["file"], status["mode"]) == (".gtd/REVIEW.md", "review")
    assert r.ok("status").stdout.endswith("File: .gtd/REVIEW.md\nMode: review\n")
    # The human's free-form note breaks the format: feedback, captured as such.
    r.write(".gtd/REVIEW.md", good + "\n- [ ] also document it\n")
    assert r.ok("step").committed == ["gtd(human): review", "gtd: review feedback"]


def test_the_grilling_prompts_example_is_valid(step_repo: StepRepo) -> None:
    r = step_repo
    _to_grilling(r)
    prompt = r.ok("next", "--json").json["prompt"]
    (example,) = _fenced_examples(prompt)
    assert check("qa", example) == ()


def test_file_and_mode_are_omitted_without_a_file(step_repo: StepRepo) -> None:
    r = step_repo
    nxt = r.ok("next", "--json").json
    assert nxt["state"] == "idle"
    assert "file" not in nxt
    assert "mode" not in nxt
    assert "file" not in r.ok("status", "--json").json
    assert "File:" not in r.ok("status").stdout
    # A plain-text steering file has a file and no mode.
    _to_grilling(r)
    r.write(".gtd/TODO.md", GOOD_TODO)
    r.ok("step-agent")
    r.ok("step")  # accept the defaults: grilled
    r.write(".gtd/01-value/01-write.md", "# Task\n\nWrite ok.\n")
    assert r.ok("step-agent").committed == ["gtd(agent): grilled", "gtd: planning"]
    nxt = r.ok("next", "--json").json
    assert nxt["state"] == "building"
    assert "file" not in nxt
    r.write("value.txt", "still bad\n")
    out = r.ok("step-agent")  # red run
    assert out.committed == ["gtd(agent): building", "gtd: errors"]
    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["file"]) == ("fixing", ".gtd/FEEDBACK.md")
    assert "mode" not in nxt
    assert r.ok("status").stdout.endswith("File: .gtd/FEEDBACK.md\n")


def test_next_json_imports_the_parsers_only_to_check_a_file(step_repo: StepRepo) -> None:
    code = (
        "import sys\n"
        "from gtd.cli import main\n"
        "try:\n    main(['next', '--json'])\nexcept SystemExit:\n    pass\n"
        "print('STEERING', 'gtd.steering' in sys.modules)\n"
    )

    def loaded(cwd: Path) -> bool:
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True
        ).stdout
        return out.strip().splitlines()[-1] == "STEERING True"

    r = step_repo
    _to_grilling(r)
    assert not loaded(r.path)  # grilling, nothing drafted yet: nothing to check
    r.write(".gtd/TODO.md", GOOD_TODO)
    assert loaded(r.path)
    r.ok("step-agent")
    assert not loaded(r.path)  # committed, clean: no turn to capture, no check
