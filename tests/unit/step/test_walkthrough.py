"""Whole workflows through the pure core, with :mod:`tests.unit.step.sim` as the
edge: the README's walkthroughs, commit by commit."""

from __future__ import annotations

from gtd.step.settings import StepConfig
from gtd.step.steering import ERRORS, FEEDBACK, REVIEW, SQUASH_MSG, TODO
from tests.unit.step.sim import Sim

RECORD = "# Review: feature\n<!-- base: abc -->\n## Chunk\n- [ ] ./src/a.py#1 — look\n"
FLIPPED = RECORD.replace("- [ ]", "- [x]")


def test_full_cycle_with_squash() -> None:
    sim = Sim(tests=[False, True, True, True, True, True])
    sim.files["idea.md"] = "make a and b\n"
    assert sim.step("agent").refusal == "idle awaits a human turn — run `gtd step`"
    out = sim.step("human")
    assert (out.commits, out.state) == (["gtd(human): grilling"], "grilling")
    assert sim.resolve().actor == "agent"
    assert sim.step("human").refusal == "grilling awaits an agent turn — run `gtd step-agent`"

    assert sim.step("agent").commits == []  # inert: the agent has not acted yet
    sim.files[TODO] = "# Plan\n## Open Questions\n### Name?\nSuggested default: a\n"
    out = sim.step("agent")
    assert (out.commits, out.state) == (["gtd(agent): grilling"], "grilling")
    assert sim.resolve().actor == "human"

    out = sim.step("human")  # accept the defaults
    assert (out.commits, out.state) == (["gtd(human): grilling", "gtd: grilled"], "grilled")

    sim.files[".gtd/01-a/01-task.md"] = "- [ ] a\n"
    sim.files[".gtd/02-b/01-task.md"] = "- [ ] b\n"
    out = sim.step("agent")
    assert (out.commits, out.state) == (["gtd(agent): grilled", "gtd: planning"], "building")
    assert TODO not in sim.files
    assert sim.resolve().package is not None

    sim.files["src/a.py"] = "a = 1\n"
    out = sim.step("agent")  # red
    assert (out.commits, out.state) == (["gtd(agent): building", "gtd: errors"], "fixing")
    assert FEEDBACK in sim.files

    sim.files["src/a.py"] = "a = 2\n"
    out = sim.step("agent")  # green
    assert (out.commits, out.state) == (
        ["gtd(agent): fixing", "gtd: tests green"],
        "agentic-review",
    )
    assert FEEDBACK not in sim.files

    sim.files[FEEDBACK] = ""  # approve
    out = sim.step("agent")
    assert (out.commits, out.state) == (
        ["gtd(agent): agentic-review", "gtd: package done"],
        "building",
    )
    assert sorted(p for p in sim.files if p.startswith(".gtd/")) == [".gtd/02-b/01-task.md"]

    sim.files["src/b.py"] = "b = 1\n"
    assert sim.step("agent").commits == ["gtd(agent): building", "gtd: tests green"]
    sim.files[FEEDBACK] = "rename b\n"
    out = sim.step("agent")
    assert (out.commits, out.state) == (["gtd(agent): agentic-review"], "fixing")
    sim.files["src/b.py"] = "bee = 1\n"
    assert sim.step("agent").commits == ["gtd(agent): fixing", "gtd: tests green"]
    sim.files[FEEDBACK] = "\n"
    out = sim.step("agent")
    assert (out.commits, out.state) == (
        ["gtd(agent): agentic-review", "gtd: package done"],
        "review",
    )

    sim.files[REVIEW] = RECORD
    out = sim.step("agent")
    assert (out.commits, out.state) == (
        ["gtd(agent): review", "gtd: awaiting review"],
        "await-review",
    )
    assert sim.step("agent").refusal == "await-review awaits a human turn — run `gtd step`"

    sim.files[REVIEW] = FLIPPED
    out = sim.step("human")
    assert (out.commits, out.state) == (
        ["gtd(human): review", "gtd: done", "gtd: squash template"],
        "squashing",
    )
    assert sim.step("agent").commits == []  # template unchanged: inert
    sim.files[SQUASH_MSG] = "feat: add a and b\n\nDecisions: name is a.\n"
    out = sim.step("agent")
    assert (out.commits, out.state) == (["gtd(agent): squashing", "feat: add a and b"], "idle")
    assert sim.subjects == ["chore: init", "feat: add a and b"]
    assert sim.files == {
        "README.md": "hello\n",
        "idea.md": "make a and b\n",
        "src/a.py": "a = 2\n",
        "src/b.py": "bee = 1\n",
    }

    out = sim.step("human")  # idle: a green health check, zero commits
    assert (out.commits, out.state, out.refusal) == ([], "idle", None)
    assert sim.step("human").commits == []


def start_building(sim: Sim, packages: int = 1) -> None:
    sim.files["idea.md"] = "x\n"
    sim.step("human")
    sim.files[TODO] = "# Plan\n"
    sim.step("agent")
    sim.step("human")
    for n in range(1, packages + 1):
        sim.files[f".gtd/0{n}-p/01-task.md"] = "- [ ] t\n"
    assert sim.step("agent").state == "building"


def test_squash_off_rests_at_done_and_a_new_idea_starts_from_there() -> None:
    sim = Sim(config=StepConfig(squash=False, agentic_review=False), tests=[True])
    start_building(sim)
    sim.files["src/a.py"] = "a\n"
    out = sim.step("agent")  # force-approve closes the package in the same chain
    assert out.commits == [
        "gtd(agent): building",
        "gtd: tests green",
        "gtd: package done",
    ]
    assert out.state == "review"
    sim.files[REVIEW] = RECORD
    sim.step("agent")
    out = sim.step("human")  # clean approval
    assert (out.commits, out.state) == (["gtd(human): review", "gtd: done"], "idle")
    sim.files["next.md"] = "another idea\n"
    assert sim.step("human").commits == ["gtd(human): grilling"]


def test_escalation_and_budget_reset() -> None:
    sim = Sim(config=StepConfig(fix_attempt_cap=1), tests=[False, False, True])
    start_building(sim)
    sim.files["src/a.py"] = "bug\n"
    assert sim.step("agent").state == "fixing"
    sim.files["src/a.py"] = "still bug\n"
    out = sim.step("agent")
    assert (out.commits, out.state) == (["gtd(agent): fixing", "gtd: errors"], "escalate")
    assert ERRORS in sim.files
    assert FEEDBACK not in sim.files
    assert sim.step("agent").refusal == "escalate awaits a human turn — run `gtd step`"
    # A clean step without deleting ERRORS.md changes nothing: no empty turn.
    assert sim.step("human").commits == []
    sim.files["src/a.py"] = "human attempt\n"  # code edits alone are captured, still escalate
    out = sim.step("human")
    assert (out.commits, out.state) == (["gtd(human): escalate"], "escalate")
    assert sim.step("human").commits == []
    del sim.files[ERRORS]
    out = sim.step("human")
    assert (out.commits, out.state) == (
        ["gtd(human): escalate", "gtd: tests green"],
        "agentic-review",
    )


def test_escalation_resumes_after_deleting_errors() -> None:
    sim = Sim(config=StepConfig(fix_attempt_cap=0), tests=[False, True])
    start_building(sim)
    sim.files["src/a.py"] = "bug\n"
    out = sim.step("agent")
    assert (out.commits, out.state) == (["gtd(agent): building", "gtd: errors"], "escalate")
    del sim.files[ERRORS]
    sim.files["src/a.py"] = "fixed by hand\n"
    out = sim.step("human")
    assert (out.commits, out.state) == (
        ["gtd(human): escalate", "gtd: tests green"],
        "agentic-review",
    )
    assert sim.resolve().counters.test_fix == 0


def test_review_feedback_regrills_and_squashes_the_whole_cycle() -> None:
    sim = Sim(tests=[True, True])
    start_building(sim)
    sim.files["src/a.py"] = "a\n"
    sim.step("agent")
    sim.files[FEEDBACK] = ""
    assert sim.step("agent").state == "review"
    sim.files[REVIEW] = RECORD
    sim.step("agent")
    sim.files[REVIEW] = RECORD + "\nPlease rename a.\n"
    out = sim.step("human")
    assert (out.commits, out.state) == (["gtd(human): review", "gtd: review feedback"], "grilling")
    assert sim.resolve().actor == "agent"
    sim.files[TODO] = "# Plan: rename\n"
    sim.step("agent")
    assert sim.step("human").state == "grilled"
    sim.files[".gtd/01-rename/01-task.md"] = "- [ ] rename\n"
    sim.step("agent")
    sim.files["src/a.py"] = "renamed\n"
    sim.step("agent")
    sim.files[FEEDBACK] = ""
    assert sim.step("agent").state == "review"
    last_awaiting = [c for c in sim.commits if c.subject == "gtd: awaiting review"][-1]
    assert sim.resolve().review_base == last_awaiting.sha
    sim.files[REVIEW] = RECORD
    sim.step("agent")
    assert sim.step("human").state == "squashing"
    sim.files[SQUASH_MSG] = "feat: a, renamed\n"
    sim.step("agent")
    assert sim.subjects == ["chore: init", "feat: a, renamed"]


def test_threshold_force_approves_after_the_last_findings_round_is_fixed() -> None:
    sim = Sim(config=StepConfig(review_threshold=1), tests=[True, True])
    start_building(sim)
    sim.files["src/a.py"] = "a\n"
    sim.step("agent")
    sim.files[FEEDBACK] = "nit\n"
    assert sim.step("agent").state == "fixing"
    sim.files["src/a.py"] = "a!\n"
    out = sim.step("agent")
    assert out.commits == [
        "gtd(agent): fixing",
        "gtd: tests green",
        "gtd: package done",
    ]


def test_health_fix_cycle_with_squash() -> None:
    sim = Sim(tests=[False, True])
    sim.commit("feat: shipped")
    out = sim.step("human")
    assert (out.commits, out.state) == (["gtd: health-check"], "health-fixing")
    assert sim.step("human").refusal == "health-fixing awaits an agent turn — run `gtd step-agent`"
    sim.files["src/a.py"] = "repaired\n"
    out = sim.step("agent")
    assert out.commits == [
        "gtd(agent): health-fixing",
        "gtd: health-fix",
        "gtd: tests green",
        "gtd: squash template",
    ]
    assert out.state == "squashing"
    sim.files[SQUASH_MSG] = "fix: repair the suite\n"
    sim.step("agent")
    assert sim.subjects == ["chore: init", "feat: shipped", "fix: repair the suite"]


def test_health_budget_of_one_escalates_in_the_first_chain() -> None:
    sim = Sim(config=StepConfig(fix_attempt_cap=1), tests=[False, False])
    out = sim.step("human")
    assert (out.commits, out.state) == (["gtd: health-check", "gtd: health-check"], "escalate")
    assert sim.step("human").commits == []  # clean, ERRORS.md kept: nothing to capture
    sim.files["notes.md"] = "looked into it\n"
    assert sim.step("human").commits == ["gtd(human): escalate"]  # still legal afterwards
    assert sim.resolve().state == "escalate"


def test_health_fix_without_squash_settles_idle() -> None:
    sim = Sim(config=StepConfig(squash=False), tests=[False, True, True])
    sim.step("human")
    out = sim.step("agent")  # an empty turn is meaningful here: maybe environmental
    assert out.commits == ["gtd(agent): health-fixing", "gtd: health-fix"]
    assert out.state == "idle"
    assert sim.step("human").commits == []


def test_health_escalation_and_recovery() -> None:
    sim = Sim(config=StepConfig(fix_attempt_cap=2), tests=[False, False, False, True])
    out = sim.step("human")
    assert (out.commits, out.state) == (["gtd: health-check"], "health-fixing")
    out = sim.step("agent")
    # The fix fails; that check spends the budget, so the same chain re-checks at the
    # cap at once (turn-taking 4) and escalates.
    assert out.commits == [
        "gtd(agent): health-fixing",
        "gtd: health-fix",
        "gtd: health-check",
        "gtd: health-check",
    ]
    assert out.state == "escalate"
    assert ERRORS in sim.files
    assert sim.step("agent").refusal == "escalate awaits a human turn — run `gtd step`"
    del sim.files[ERRORS]
    out = sim.step("human")
    assert out.commits == [
        "gtd(human): escalate",
        "gtd: tests green",
        "gtd: squash template",
    ]
    sim.files[SQUASH_MSG] = "fix: flaky suite\n"
    sim.step("agent")
    assert sim.subjects == ["chore: init", "fix: flaky suite"]


def test_ad_hoc_review_anchor() -> None:
    sim = Sim()
    sim.files["src/a.py"] = "a\n"
    sim.commit("feat: a")
    base = sim.commits[0].sha
    sim.commit(f"gtd: reviewing {base}")
    assert (sim.resolve().state, sim.resolve().review_base) == ("review", base)
    sim.files[REVIEW] = RECORD
    sim.step("agent")
    out = sim.step("human")
    assert out.commits == ["gtd(human): review", "gtd: done", "gtd: squash template"]
    sim.files[SQUASH_MSG] = "review: a\n"
    sim.step("agent")
    assert sim.subjects == ["chore: init", "feat: a", "review: a"]


def test_amended_package_files_rest_at_planning_and_the_agent_builds() -> None:
    sim = Sim(config=StepConfig(agentic_review=False), tests=[True, True])
    start_building(sim, packages=2)
    sim.files["src/a.py"] = "a\n"
    assert sim.step("agent").state == "building"  # package 01 closed, 02 left
    sim.files[".gtd/02-p/01-task.md"] += "- [ ] also handle empty input\n"  # the human amends
    assert sim.resolve().state == "planning"
    assert sim.step("human").refusal == "planning awaits an agent turn — run `gtd step-agent`"
    sim.files["src/b.py"] = "b\n"
    out = sim.step("agent")
    assert out.commits[:2] == ["gtd(agent): building", "gtd: tests green"]
