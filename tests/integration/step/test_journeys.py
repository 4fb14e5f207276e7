"""The issue's journeys in real repositories, asserting the exact first-parent
subject sequence each leaves behind (gtd 2.x's walkthroughs)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.integration.step.conftest import StepRepo

TODO = (
    "# Plan\n\nSet value.txt to ok.\n\n"
    "## Open Questions\n\n### Spelling?\n\nSuggested default: ok\n"
)
TASK = "# Task\n\nWrite ok into value.txt.\n\n- [ ] value.txt says ok\n"
RECORD = (
    "# Review: value\n\n<!-- base: abc -->\n\n## The value\n\n- [ ] ./value.txt#1 — the new value\n"
)


def _to_building(r: StepRepo) -> None:
    """Sketch → grilling → accept defaults → decompose: rests at building."""
    r.write("idea.md", "make the value ok\n")
    assert r.ok("step").committed == ["gtd(human): grilling"]
    assert r.ok("step-agent").committed == []  # inert: the agent has not acted
    r.write(".gtd/TODO.md", TODO)
    assert r.ok("step-agent").committed == ["gtd(agent): grilling"]
    assert r.ok("next", "--json").json["actor"] == "human"
    out = r.ok("step")
    assert out.committed == ["gtd(human): grilling", "gtd: grilled"]
    assert out.stdout.endswith("state: grilled\n")
    r.write(".gtd/01-value/01-write.md", TASK)
    out = r.ok("step-agent", "--json")
    assert out.json["commits"] == ["gtd(agent): grilled", "gtd: planning"]
    assert out.json["state"] == "building"
    assert not r.exists(".gtd/TODO.md")


def _approve_package_and_review(r: StepRepo) -> None:
    r.write(".gtd/FEEDBACK.md", "")
    out = r.ok("step-agent")
    assert out.committed == ["gtd(agent): agentic-review", "gtd: package done"]
    assert out.stdout.endswith("state: review\n")
    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["actor"], nxt["pending"]) == ("review", "agent", False)
    assert "+ok" in nxt["prompt"]
    r.write(".gtd/REVIEW.md", RECORD)
    assert r.ok("step-agent").committed == ["gtd(agent): review", "gtd: awaiting review"]


def test_happy_path_squashes_into_one_conventional_commit(step_repo: StepRepo) -> None:
    r = step_repo
    _to_building(r)
    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["actor"]) == ("building", "agent")
    assert "Write ok into value.txt." in nxt["prompt"]
    assert "Finish your turn" not in nxt["prompt"]  # JSON prompts carry no tail
    assert r.ok("next").stdout.rstrip().endswith("when it awaits the human, stop and hand off.")
    r.write("value.txt", "ok\n")
    out = r.ok("step-agent")
    assert out.committed == ["gtd(agent): building", "gtd: tests green"]
    _approve_package_and_review(r)
    assert r.ok("next", "--json").json["actor"] == "human"
    out = r.ok("step")  # clean approval
    assert out.committed == ["gtd(human): review", "gtd: done", "gtd: squash template"]
    assert r.ok("step-agent").committed == []  # the template is unchanged: inert
    r.write(".gtd/SQUASH_MSG.md", "feat: make the value ok\n\nDecided: spell it ok.\n")
    out = r.ok("step-agent")
    assert out.committed == ["gtd(agent): squashing", "feat: make the value ok"]
    assert out.stdout.endswith("state: idle\n")
    assert r.first_parent() == ["chore: init", "feat: make the value ok"]
    assert (
        r.git("log", "-1", "--format=%B").strip()
        == "feat: make the value ok\n\nDecided: spell it ok."
    )
    assert r.status() == ""
    assert not r.exists(".gtd")
    assert r.read("value.txt") == "ok\n"
    # the human's sketch, untouched by the cycle, is not part of the feature
    assert not r.exists("idea.md")
    assert r.git("show", "--name-only", "--format=", "HEAD").split() == ["value.txt"]
    assert out.stderr.startswith("gtd: left out of the squashed commit: idea.md — ")


def test_red_fix_green(step_repo: StepRepo) -> None:
    r = step_repo
    _to_building(r)
    r.write("value.txt", "nearly\n")
    out = r.ok("step-agent")
    assert out.committed == ["gtd(agent): building", "gtd: errors"]
    assert out.stdout.endswith("state: fixing\n")
    assert "FAILED test_value" in r.read(".gtd/FEEDBACK.md")
    assert "FAILED test_value" in r.ok("next", "--json").json["prompt"]
    r.write("value.txt", "ok\n")
    out = r.ok("step-agent")
    assert out.committed == ["gtd(agent): fixing", "gtd: tests green"]
    assert not r.exists(".gtd/FEEDBACK.md")
    assert r.first_parent()[-4:] == [
        "gtd(agent): building",
        "gtd: errors",
        "gtd(agent): fixing",
        "gtd: tests green",
    ]


def test_red_at_cap_escalates_and_deleting_errors_retests(step_repo: StepRepo) -> None:
    r = step_repo
    r.config(fixAttemptCap=1)
    r.commit_all("chore: cap 1")
    _to_building(r)
    r.write("value.txt", "nearly\n")
    assert r.ok("step-agent").committed == ["gtd(agent): building", "gtd: errors"]
    r.write("value.txt", "still not\n")
    out = r.ok("step-agent")
    assert out.committed == ["gtd(agent): fixing", "gtd: errors"]
    assert out.stdout.endswith("state: escalate\n")
    assert r.exists(".gtd/ERRORS.md")
    assert not r.exists(".gtd/FEEDBACK.md")
    refused = r.gtd("step-agent")
    assert refused.code == 1
    assert refused.stderr == "gtd: escalate awaits a human turn — run `gtd step`\n"
    assert r.ok("step").committed == []  # settled at the human gate: nothing to capture
    r.remove(".gtd/ERRORS.md")
    out = r.ok("step")  # the deletion is the human's turn; it re-tests at once
    assert out.committed == ["gtd(human): escalate", "gtd: errors"]
    assert out.stdout.endswith("state: fixing\n")  # budget reset: FEEDBACK, not ERRORS
    assert r.exists(".gtd/FEEDBACK.md")
    assert not r.exists(".gtd/ERRORS.md")
    assert r.first_parent()[-6:] == [
        "gtd(agent): building",
        "gtd: errors",
        "gtd(agent): fixing",
        "gtd: errors",
        "gtd(human): escalate",
        "gtd: errors",
    ]


def test_agentic_findings_fix_then_force_approve_at_threshold(step_repo: StepRepo) -> None:
    r = step_repo
    r.config(reviewThreshold=1)
    r.commit_all("chore: threshold 1")
    _to_building(r)
    r.write("value.txt", "ok\n")
    assert r.ok("step-agent").committed == ["gtd(agent): building", "gtd: tests green"]
    r.write(".gtd/FEEDBACK.md", "- value.txt lacks a trailing comment\n")
    out = r.ok("step-agent")
    assert out.committed == ["gtd(agent): agentic-review"]
    assert out.stdout.endswith("state: fixing\n")
    assert "lacks a trailing comment" in r.ok("next", "--json").json["prompt"]
    r.write("value.txt", "ok\n\n")
    out = r.ok("step-agent")
    assert out.committed == ["gtd(agent): fixing", "gtd: tests green", "gtd: package done"]
    assert out.stdout.endswith("state: review\n")
    # the last package's folder is gone; an empty `.gtd/` (nothing git sees) is
    # ready for the agent's REVIEW.md
    assert list((r.path / ".gtd").iterdir()) == []
    assert r.status() == ""


def test_human_review_feedback_goes_back_to_grilling(step_repo: StepRepo) -> None:
    r = step_repo
    _to_building(r)
    r.write("value.txt", "ok\n")
    r.ok("step-agent")
    _approve_package_and_review(r)
    r.write(".gtd/REVIEW.md", RECORD + "\nPlease also document the value.\n")
    out = r.ok("step")
    assert out.committed == ["gtd(human): review", "gtd: review feedback"]
    assert out.stdout.endswith("state: grilling\n")
    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["actor"]) == ("grilling", "agent")
    assert "Please also document the value." in nxt["prompt"]


def test_checkbox_flips_approve(step_repo: StepRepo) -> None:
    r = step_repo
    r.config(squash=False)
    r.commit_all("chore: no squash")
    _to_building(r)
    r.write("value.txt", "ok\n")
    r.ok("step-agent")
    _approve_package_and_review(r)
    r.write(".gtd/REVIEW.md", RECORD.replace("- [ ]", "- [x]"))
    out = r.ok("step")
    assert out.committed == ["gtd(human): review", "gtd: done"]
    assert out.stdout.endswith("state: idle\n")


def test_idle_health_check_red_then_health_fix_green(step_repo: StepRepo) -> None:
    r = step_repo
    assert r.ok("status").stdout.startswith("State: idle\nAwaits: human\n")
    out = r.ok("step")
    assert out.committed == ["gtd: health-check"]
    assert out.stdout.endswith("state: health-fixing\n")
    assert "FAILED test_value" in r.read(".gtd/HEALTH.md")
    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["actor"]) == ("health-fixing", "agent")
    r.write("value.txt", "ok\n")
    out = r.ok("step-agent")
    assert out.committed == [
        "gtd(agent): health-fixing",
        "gtd: health-fix",
        "gtd: tests green",
        "gtd: squash template",
    ]
    assert out.stdout.endswith("state: squashing\n")
    r.write(".gtd/SQUASH_MSG.md", "fix: make the suite green again\n")
    assert r.ok("step-agent").committed == [
        "gtd(agent): squashing",
        "fix: make the suite green again",
    ]
    assert r.first_parent() == ["chore: init", "fix: make the suite green again"]
    assert r.ok("step").committed == []  # green health check: zero commits
    assert r.status() == ""


def test_review_main_on_a_feature_branch(step_repo: StepRepo) -> None:
    r = step_repo
    r.git("switch", "-q", "-c", "feature")
    r.write("value.txt", "ok\n")
    r.commit_all("feat: value")
    assert r.gtd("review").stderr == "gtd review: missing target argument\n"
    assert r.gtd("review", "a", "b").stderr == (
        "gtd review: too many arguments — expected one target, got: a b\n"
    )
    bad = r.gtd("review", "nope", "--json")
    assert bad.code == 1
    assert bad.stderr.startswith("gtd review: cannot resolve ref 'nope': ")
    assert bad.json["state"] == "error"
    base = r.git("merge-base", "main", "HEAD").strip()
    out = r.ok("review", "main")
    assert out.stdout == f"anchored review at {base} — run `gtd next` to get the review prompt\n"
    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["actor"]) == ("review", "agent")
    assert "+ok" in nxt["prompt"]
    assert base in nxt["prompt"]
    # the anchor leaves the folder ready: written as `cat > .gtd/REVIEW.md` would
    with open(r.path / ".gtd/REVIEW.md", "w", encoding="utf-8") as review:
        review.write(RECORD)
    assert r.ok("step-agent").committed == ["gtd(agent): review", "gtd: awaiting review"]
    assert r.ok("step").committed == ["gtd(human): review", "gtd: done", "gtd: squash template"]
    r.write(".gtd/SQUASH_MSG.md", "docs: review the value change\n")
    r.ok("step-agent")
    assert r.first_parent() == ["chore: init", "feat: value", "docs: review the value change"]
    empty = r.gtd("review", "HEAD")
    assert empty.stderr == "gtd review: nothing to review (HEAD diff is empty after filtering)\n"


def test_the_agent_can_write_its_review_once_the_last_package_is_done(
    step_repo: StepRepo,
) -> None:
    r = step_repo
    _to_building(r)
    r.write("value.txt", "ok\n")
    r.ok("step-agent")
    r.write(".gtd/FEEDBACK.md", "")
    assert r.ok("step-agent").stdout.endswith("state: review\n")
    # An agent's turn that wrote nothing is not captured, and says why (gtd 2.x
    # exits 0 for an inert turn: the message is on stderr).
    idle = r.gtd("step-agent")
    assert (idle.code, idle.stdout, idle.committed) == (0, "state: review\n", [])
    assert idle.stderr == (
        "gtd: nothing to capture: review awaits `.gtd/REVIEW.md` and the working tree "
        "has none — `gtd next` prints the turn\n"
    )
    assert "make the `.gtd/` folder first if it is not there" in r.ok("next").stdout
    # A review that went anywhere but `.gtd/REVIEW.md` is not a finished turn: it
    # would otherwise be committed into the feature as `gtd(agent): review`.
    r.write("REVIEW.md", RECORD)
    astray = r.gtd("step-agent")
    assert (astray.code, astray.stdout, astray.committed) == (1, "", [])
    assert astray.stderr == (
        "gtd: review: the working tree has changes (REVIEW.md) but no `.gtd/REVIEW.md`, so "
        "the agent's turn is not captured — write the review to `.gtd/REVIEW.md` (make the "
        "`.gtd/` folder if it is missing), then run `gtd step-agent` again\n"
    )
    assert r.first_parent()[-1] == "gtd: package done"
    assert r.ok("status").stdout.startswith(
        "State: review\nAwaits: agent\nPredicted commit: (none)\n"
    )
    r.remove("REVIEW.md")
    # Written as `cat > .gtd/REVIEW.md` would: no folder is made on the way.
    with open(r.path / ".gtd/REVIEW.md", "w", encoding="utf-8") as review:
        review.write(RECORD)
    assert r.ok("step-agent").committed == ["gtd(agent): review", "gtd: awaiting review"]


def test_the_humans_sketch_note_is_carried_into_the_plan_and_removed(
    step_repo: StepRepo,
) -> None:
    r = step_repo
    r.write("IDEA.md", "make the value ok\n")
    r.write("docs/value.md", "What the value means.\n")
    assert r.ok("step").committed == ["gtd(human): grilling"]
    prompt = r.ok("next").stdout
    assert (
        "5. `IDEA.md` only describes the request: carry what it says into `.gtd/TODO.md`, "
        "then delete it; an unchanged note is left out of the squashed commit. If it "
        "is documentation the project keeps, move it under `docs/`.\n"
    ) in prompt
    assert "`docs/value.md`" not in prompt  # documentation, not a note
    r.write(".gtd/TODO.md", TODO)
    r.remove("IDEA.md")
    assert r.ok("step-agent").committed == ["gtd(agent): grilling"]
    r.ok("step")
    r.write(".gtd/01-value/01-write.md", TASK)
    r.ok("step-agent")
    r.write("value.txt", "ok\n")
    r.ok("step-agent")
    _approve_package_and_review(r)
    r.ok("step")
    r.write(".gtd/SQUASH_MSG.md", "feat: make the value ok\n")
    r.ok("step-agent")
    assert r.first_parent() == ["chore: init", "feat: make the value ok"]
    shipped = r.git("show", "--name-only", "--format=", "HEAD").split()
    assert sorted(shipped) == ["docs/value.md", "value.txt"]  # no IDEA.md


def _cycle_keeping_the_note(r: StepRepo, note: str) -> None:
    """A cycle whose agent never deletes the human's ``note``; it ends squashing."""
    r.write(note, "make the value ok\n")
    r.ok("step")
    r.write(".gtd/TODO.md", TODO)
    r.ok("step-agent")
    r.ok("step")
    r.write(".gtd/01-value/01-write.md", TASK)
    r.ok("step-agent")
    r.write("value.txt", "ok\n")
    r.ok("step-agent")
    _approve_package_and_review(r)
    r.ok("step")
    r.write(".gtd/SQUASH_MSG.md", "feat: make the value ok\n")


def test_a_sketch_the_agent_left_is_not_squashed_into_the_feature(step_repo: StepRepo) -> None:
    r = step_repo
    _cycle_keeping_the_note(r, "IDEA.md")
    log = r.git("log", "--reverse", "--format=%H %s").splitlines()
    opening = next(line.split()[0] for line in log if line.endswith(" gtd(human): grilling"))
    ref = f"refs/gtd/sketch/{opening[:12]}"
    out = r.ok("step-agent")
    assert out.committed == ["gtd(agent): squashing", "feat: make the value ok"]
    assert out.stderr == (
        "gtd: left out of the squashed commit: IDEA.md — the sketch the human's first turn "
        f"added, unchanged since; kept at {ref} (`git show {ref}:IDEA.md`)\n"
    )
    assert r.first_parent() == ["chore: init", "feat: make the value ok"]
    assert r.git("show", "--name-only", "--format=", "HEAD").split() == ["value.txt"]
    assert not r.exists("IDEA.md")
    assert r.status() == ""  # idle, not a new sketch
    assert r.git("show", f"{ref}:IDEA.md") == "make the value ok\n"
    assert r.ok("status").stdout.startswith("State: idle\n")
    page = (Path(__file__).resolve().parents[3] / "docs" / "step-mode.md").read_text()
    quoted = re.sub(r"[0-9a-f]{12}", "<hash>", out.stderr)
    assert quoted in re.sub(r"[0-9a-f]{12}", "<hash>", page)  # the page quotes it as printed


def test_a_note_the_cycle_changed_ships(step_repo: StepRepo) -> None:
    r = step_repo
    _cycle_keeping_the_note(r, "NOTES.md")
    r.write("NOTES.md", "The value is ok, always.\n")  # kept and edited: the project's
    out = r.ok("step-agent")
    assert "left out" not in out.stderr
    shipped = r.git("show", "--name-only", "--format=", "HEAD").split()
    assert sorted(shipped) == ["NOTES.md", "value.txt"]
