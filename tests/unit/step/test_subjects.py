"""The commit-subject grammar: the closed set of
turn and routing subjects, everything else a boundary, and render/parse round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gtd.step.subjects import (
    ACTORS,
    GATES,
    ROUTES,
    Boundary,
    Routing,
    Subject,
    Turn,
    parse_subject,
    reviewing_subject,
    routing_subject,
    turn_subject,
)

HEX = "0123456789abcdef" * 2 + "01234567"  # 40 hex digits


@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize("gate", GATES)
def test_every_turn_gate_parses(actor: str, gate: str) -> None:
    assert parse_subject(f"gtd({actor}): {gate}") == Turn(actor, gate)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("subject", "route"),
    [
        ("gtd: grilled", "grilled"),
        ("gtd: planning", "planning"),
        ("gtd: tests green", "tests green"),
        ("gtd: errors", "errors"),
        ("gtd: package done", "package done"),
        ("gtd: awaiting review", "awaiting review"),
        ("gtd: review feedback", "review feedback"),
        ("gtd: done", "done"),
        ("gtd: squash template", "squash template"),
        ("gtd: health-check", "health-check"),
        ("gtd: health-fix", "health-fix"),
    ],
)
def test_every_exact_routing_subject_parses(subject: str, route: str) -> None:
    assert parse_subject(subject) == Routing(route)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("subject", "sha"),
    [
        (f"gtd: reviewing {HEX}", HEX),
        (f"gtd: reviewing {HEX.upper()}", HEX),
    ],
)
def test_reviewing_anchor_carries_its_hash(subject: str, sha: str) -> None:
    assert parse_subject(subject) == Routing("reviewing", sha)


@pytest.mark.parametrize(
    "subject",
    [
        # unknown gates of a well-formed turn
        "gtd(agent): planning",
        "gtd(human): idle",
        "gtd(agent): testing",
        "gtd(agent): await-review",
        # 1.x subjects
        "gtd: new task",
        "gtd: transport",
        "gtd: grilling",
        "gtd: building",
        "gtd: feedback",
        "gtd: reviewing",
        # near misses: the grammar is exact
        f"gtd: reviewing {HEX[:39]}",
        f"gtd: reviewing {HEX}0",
        f"gtd: reviewing {HEX[:39]}g",
        "gtd:  done",
        "gtd: Done",
        "GTD: done",
        "gtd: done!",
        "gtd(Human): grilling",
        "gtd(robot): building",
        "gtd(agent):grilling",
        "gtd(agent): grilling extra",
        "gtd (agent): grilling",
        # ordinary commits
        "chore: init",
        "feat: shipped",
        "",
    ],
)
def test_everything_else_is_a_boundary(subject: str) -> None:
    assert parse_subject(subject) == Boundary(subject.strip())


@pytest.mark.parametrize(
    ("subject", "parsed"),
    [
        ("  gtd: done  ", Routing("done")),
        ("\tgtd(agent): building\n", Turn("agent", "building")),
    ],
)
def test_subject_is_trimmed(subject: str, parsed: Subject) -> None:
    assert parse_subject(subject) == parsed


def test_renderers_spell_the_grammar() -> None:
    assert turn_subject("human", "escalate") == "gtd(human): escalate"
    assert routing_subject("tests green") == "gtd: tests green"
    assert reviewing_subject(HEX.upper()) == f"gtd: reviewing {HEX}"
    assert Routing("reviewing", HEX).render() == f"gtd: reviewing {HEX}"
    assert Turn("agent", "agentic-review").render() == "gtd(agent): agentic-review"


@pytest.mark.parametrize(
    "bad",
    [
        lambda: routing_subject("reviewing"),
        lambda: reviewing_subject("abc"),
        lambda: Routing("reviewing"),
        lambda: Routing("done", HEX),
        lambda: Routing("reviewing", "xyz"),
    ],
)
def test_renderers_refuse_malformed_values(bad: object) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - any ValueError is the contract
        bad()  # type: ignore[operator]


SUBJECTS = st.one_of(
    st.builds(Turn, st.sampled_from(ACTORS), st.sampled_from(GATES)),
    # Hypothesis treats every NamedTuple field as required: pin sha to None.
    st.builds(Routing, st.sampled_from([r for r in ROUTES if r != "reviewing"]), st.none()),
    st.builds(
        lambda h: Routing("reviewing", h), st.text("0123456789abcdef", min_size=40, max_size=40)
    ),
)


@given(SUBJECTS)
def test_parse_inverts_render(subject: Turn | Routing) -> None:
    assert parse_subject(subject.render()) == subject


@given(st.text())
def test_arbitrary_text_is_a_rendering_or_a_boundary(text: str) -> None:
    parsed = parse_subject(text)
    if isinstance(parsed, Boundary):
        assert parsed.subject == text.strip()
    else:
        # Exact, except that an anchor's hash is normalised to lower case.
        assert parsed.render().lower() == text.strip().lower()
