"""The validation loop and the state ↔ file association in the pure core, and the
prompts that state the formats (docs/step-mode.md, "The validation loop";
steering-files.md)."""

from __future__ import annotations

import re

import pytest

import gtd.steering.questions as questions_module
import gtd.steering.review as review_module
from gtd.step.actions import MakeCommit
from gtd.step.events import FormatFinding, WorkingTree
from gtd.step.machine import Resolution
from gtd.step.prompts import findings_section, render
from gtd.step.states import DRAFTED, STATES, SteeringFile, steering_file
from gtd.step.steering import ERRORS, FEEDBACK, HEALTH, REVIEW, SQUASH_MSG, TODO
from tests.unit.step.build import history, run, tree

TODO_BAD = FormatFinding(TODO, 9, "question 'Q': the first line must be ...")
TODO_WARN = FormatFinding(TODO, 3, "stray", warning=True)
REVIEW_BAD = FormatFinding(REVIEW, 1, "the first non-blank line must be '# Review: <hash>'")

GRILLING = history("chore: init", ("gtd(human): grilling", "A idea.md"))
REVIEWING = history("chore: init", "gtd: reviewing " + "a" * 40)


def _with(t: WorkingTree, *findings: FormatFinding) -> WorkingTree:
    return t._replace(format_findings=findings)


def test_finding_renders_like_gtd_validate() -> None:
    assert TODO_BAD.render() == ".gtd/TODO.md:9: question 'Q': the first line must be ..."
    assert TODO_WARN.render() == ".gtd/TODO.md:3: stray (warning)"


def test_a_malformed_grilling_draft_is_refused_naming_every_finding() -> None:
    t = _with(tree("TODO", dirty="A TODO"), TODO_WARN, TODO_BAD)
    r = run(GRILLING, t, invoker="agent")
    assert (r.state, r.actor, r.decision, r.action) == ("grilling", "agent", "malformed", None)
    assert r.refusal is not None
    assert r.refusal.startswith(
        "grilling: .gtd/TODO.md breaks its format (2 findings), so the agent's turn is "
        "not captured — fix every finding, then run `gtd step-agent` again:\n"
    )
    assert r.refusal.endswith(f"\n{TODO_WARN.render()}\n{TODO_BAD.render()}")
    assert r.findings == (TODO_WARN, TODO_BAD)


def test_a_valid_grilling_draft_is_captured() -> None:
    r = run(GRILLING, tree("TODO", dirty="A TODO"), invoker="agent")
    assert (r.decision, r.action, r.findings) == (
        "capture",
        MakeCommit("gtd(agent): grilling"),
        (),
    )


def test_the_report_carries_the_findings_for_the_next_prompt() -> None:
    t = _with(tree("TODO", dirty="A TODO"), TODO_BAD)
    r = run(GRILLING, t)
    assert (r.state, r.actor, r.decision, r.findings) == (
        "grilling",
        "agent",
        "report",
        (TODO_BAD,),
    )
    # The human is refused out of turn, as ever — and still sees what blocks the agent.
    human = run(GRILLING, t, invoker="human")
    assert human.decision == "refusal"
    assert human.findings == (TODO_BAD,)


def test_only_the_drafted_files_findings_block() -> None:
    # A REVIEW.md finding at grilling is not the grilling draft (and the illegal
    # combination rules keep REVIEW.md away from grilling anyway).
    t = _with(tree("TODO", dirty="A TODO"), REVIEW_BAD)
    r = run(GRILLING, t, invoker="agent")
    assert (r.decision, r.findings) == ("capture", ())


def test_a_malformed_review_draft_is_refused() -> None:
    t = _with(tree("REVIEW", dirty="A REVIEW"), REVIEW_BAD)
    r = run(REVIEWING, t, invoker="agent")
    assert (r.state, r.decision, r.action) == ("review", "malformed", None)
    assert r.refusal is not None
    assert REVIEW_BAD.render() in r.refusal
    fixed = run(REVIEWING, tree("REVIEW", dirty="A REVIEW"), invoker="agent")
    assert fixed.action == MakeCommit("gtd(agent): review")


def test_an_agent_review_head_does_not_commit_a_malformed_draft() -> None:
    # The agent's turn was captured without REVIEW.md; a malformed one written since
    # must not ride into `gtd: awaiting review`.
    commits = [*REVIEWING, *history("gtd(agent): review", start=3)]
    bad = _with(tree("REVIEW", dirty="A REVIEW"), REVIEW_BAD)
    r = run(commits, bad, invoker="agent")
    assert (r.state, r.actor, r.decision) == ("review", "agent", "malformed")
    good = run(commits, tree("REVIEW", dirty="A REVIEW"), invoker="agent")
    assert (good.decision, good.action) == ("mid-chain", MakeCommit("gtd: awaiting review"))


def test_human_turns_are_never_refused_for_format() -> None:
    commits = [*REVIEWING, *history(("gtd(agent): review", "A REVIEW"), start=3)]
    commits += history("gtd: awaiting review", start=4)
    t = _with(tree("REVIEW", dirty="M REVIEW"), REVIEW_BAD)
    r = run(commits, t, invoker="human")
    assert (r.state, r.decision, r.action) == (
        "await-review",
        "capture",
        MakeCommit("gtd(human): review"),
    )
    assert r.findings == ()  # the human is awaited: nothing to hand back


# -- the state <-> file association ------------------------------------------------


def test_the_association_table() -> None:
    table = {state: steering_file(state) for state in STATES}
    assert table == {
        "grilling": SteeringFile(TODO, "qa"),
        "grilled": SteeringFile(TODO, "qa"),
        "planning": None,
        "building": None,
        "testing": None,
        "fixing": SteeringFile(FEEDBACK),
        "escalate": SteeringFile(ERRORS),
        "agentic-review": None,
        "close-package": None,
        "review": SteeringFile(REVIEW, "review"),
        "await-review": SteeringFile(REVIEW, "review"),
        "done": None,
        "squashing": SteeringFile(SQUASH_MSG),
        "idle": None,
        "health-check": None,
        "health-fixing": SteeringFile(HEALTH),
    }
    assert all(steering_file(state) is not None for state in DRAFTED)
    assert {steering_file(s).path for s in DRAFTED} == set(DRAFTED.values())  # type: ignore[union-attr]


def test_resolution_names_the_file_only_at_a_rest() -> None:
    rest = run(GRILLING, tree("TODO", dirty="A TODO"))
    assert rest.steering_file == SteeringFile(TODO, "qa")
    # The human's empty answer turn is mid-chain (`gtd: grilled` next): no rest.
    commits = [
        *GRILLING,
        *history(("gtd(agent): grilling", "A TODO"), "gtd(human): grilling", start=3),
    ]
    pending = run(commits, tree("TODO"))
    assert pending.pending
    assert pending.steering_file is None
    assert run(commits, tree("TODO"), invoker="agent").steering_file is None
    assert Resolution("idle", "human", "report").steering_file is None


# -- the prompts state the formats ---------------------------------------------------


def _rules(doc: str | None) -> list[str]:
    """The bullet list right after the docstring's format heading, one string a
    rule, with RST ``literals`` turned into markdown `literals`."""
    assert doc is not None
    block = doc.split("\n\n- ", 1)[1].split("\n\n", 1)[0]
    return [_norm(item) for item in ("- " + block).split("\n- ")]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("``", "`")).strip().removeprefix("- ")


def _context(name: str) -> dict[str, str]:
    keys = (
        "state actor intro model test_command todo_section review_base diff_title diff "
        "tail format_findings head_short notes_step"
    )
    return {key: f"<{key}>" for key in keys.split()}


@pytest.mark.parametrize(
    ("template", "module"),
    [("grilling-agent", questions_module), ("review", review_module)],
)
def test_the_drafting_prompts_quote_the_format_rules(template: str, module: object) -> None:
    prompt = _norm(render(template, _context(template)))
    rules = _rules(module.__doc__)
    assert len(rules) >= 3
    for rule in rules:
        assert rule in prompt, rule


def test_the_review_prompt_pins_header_and_base() -> None:
    ctx = _context("review") | {"head_short": "abc1234", "review_base": "f" * 40}
    prompt = render("review", ctx)
    assert "# Review: abc1234\n" in prompt
    assert f"<!-- base: {'f' * 40} -->" in prompt


def test_the_findings_section() -> None:
    r = Resolution("grilling", "agent", "report", findings=(TODO_BAD, TODO_WARN))
    section = findings_section(r)
    assert section.startswith("## Fix the format first\n")
    assert f"\n{TODO_BAD.render()}\n{TODO_WARN.render()}\n" in section
    assert findings_section(Resolution("grilling", "agent", "report")) == ""
