"""The edge's pure pieces: log and status parsing, config validation and merging,
prompt rendering (every template, the pinned tail only in plain agent prompts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.git_parse import parse_status_v2
from gtd.step.config_file import ConfigError, config_files, load_step_config, parse_config
from gtd.step.events import Change
from gtd.step.gather import changes_from_status, parse_log
from gtd.step.prompts import NO_PROMPT_STATES, model_for, render, template_name
from gtd.step.settings import StepConfig
from gtd.step.states import STATES

A, B, C = "a" * 40, "b" * 40, "c" * 40
TAIL = (
    "Finish your turn by running `gtd step-agent`. Then run `gtd next` and follow\n"
    "its output — repeat this cycle as long as the output is addressed to you (the\n"
    "agent); when it awaits the human, stop and hand off.\n"
)


def test_parse_log_oldest_first_with_changes() -> None:
    raw = (
        f"\x1e{C} {B}\x1fgtd(agent): building\x00\nA\x00src/x.py\x00D\x00.gtd/ERRORS.md\x00"
        f"\x1e{B} {A}\x1fgtd: planning\x00"
        f"\x1e{A}\x1fchore: init\x00\nM\x00README.md\x00T\x00link\x00"
    )
    commits = parse_log(raw)
    assert [c.subject for c in commits] == ["chore: init", "gtd: planning", "gtd(agent): building"]
    assert commits[0].parent is None
    assert commits[2].parent == B
    assert commits[0].changes == (Change("M", "README.md"), Change("M", "link"))
    assert commits[1].is_empty
    assert commits[2].changes == (Change("A", "src/x.py"), Change("D", ".gtd/ERRORS.md"))


def test_changes_from_status(tmp_path: Path) -> None:
    (tmp_path / "new.md").write_text("x")
    (tmp_path / "mod.py").write_text("x")
    z = "0" * 40
    raw = (
        "? new.md\x00"
        f"1 .M N... 100644 100644 100644 {z} {z} mod.py\x00"
        f"1 .D N... 100644 100644 000000 {z} {z} gone.md\x00"
        f"1 AD N... 000000 100644 000000 {z} {z} added-then-removed\x00"
    )
    assert changes_from_status(list(parse_status_v2(raw).entries), tmp_path) == (
        Change("A", "new.md"),
        Change("M", "mod.py"),
        Change("D", "gone.md"),
    )


def test_parse_config_defaults_and_values() -> None:
    assert parse_config({"$schema": "x"}) == StepConfig()
    config = parse_config(
        {"testCommand": "pytest -q", "fixAttemptCap": 0, "models": {"states": {"clean": "m"}}}
    )
    assert (config.test_command, config.fix_attempt_cap) == ("pytest -q", 0)
    assert model_for("review", config) == "m"
    assert model_for("building", config) == config.models.execution


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"x": 1}, "Invalid gtd config: x: unknown key"),
        ({"fixAttemptCap": True}, "Invalid gtd config: fixAttemptCap: expected an integer"),
        ({"reviewThreshold": 0}, "Invalid gtd config: reviewThreshold: must be ≥ 1, got 0"),
        ({"agenticReview": 1}, "Invalid gtd config: agenticReview: expected true or false"),
        ({"testCommand": ""}, "Invalid gtd config: testCommand: expected a non-empty string"),
        ({"models": {"fast": "m"}}, "Invalid gtd config: models.fast: unknown key"),
        ({"models": {"states": {"idle": "m"}}}, "Invalid gtd config: models.states.idle"),
    ],
)
def test_parse_config_rejects(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    assert info.value.message.startswith(message)


def test_lookup_stops_at_home_and_inner_wins(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = home / "work" / "repo"
    repo.mkdir(parents=True)
    (tmp_path / ".gtdrc.json").write_text('{"squash": false}')  # above HOME: ignored
    (home / ".gtdrc").write_text("fixAttemptCap: 5\nmodels:\n  planning: outer\n")
    (repo / "gtd.config.json").write_text('{"fixAttemptCap": 1, "models": {"execution": "e"}}')
    assert config_files(repo, home) == [repo / "gtd.config.json", home / ".gtdrc"]
    config, _ = load_step_config(repo, home)
    assert (config.fix_attempt_cap, config.squash) == (1, True)
    assert (config.models.planning, config.models.execution) == ("outer", "e")


def _context(name: str, tail: str) -> dict[str, str]:
    keys = (
        "state actor intro model test_command todo_section review_base diff_title diff "
        "feedback_title feedback_path feedback package package_tasks plan_section cycle_log "
        "format_findings head_short notes_step"
    )
    ctx = {key: f"<{key}>" for key in keys.split()}
    ctx["tail"] = tail
    return ctx


@pytest.mark.parametrize("state", [s for s in STATES if s not in NO_PROMPT_STATES])
@pytest.mark.parametrize("actor", ["agent", "human"])
def test_every_template_renders(state: str, actor: str) -> None:
    name = template_name(state, actor)  # type: ignore[arg-type]
    plain = render(name, _context(name, TAIL.rstrip("\n") if actor == "agent" else ""))
    assert plain.endswith("\n")
    assert not plain.endswith("\n\n")
    assert "\n\n\n\n" not in plain
    assert "{{" not in plain
    if actor == "agent" and name not in ("grilling-human", "await-review", "escalate", "idle"):
        assert plain.endswith(TAIL)
    as_json = render(name, _context(name, ""))
    assert "Finish your turn" not in as_json


def test_edge_only_states_have_no_template() -> None:
    for state in NO_PROMPT_STATES:
        with pytest.raises(ValueError, match="renders no prompt"):
            template_name(state, "agent")


def test_actions_of_different_kinds_never_compare_equal() -> None:
    from gtd.step.actions import ClosePackage, Squash

    # Typed as a plain object: the point is what == does across kinds at run time,
    # a comparison the type checker already rules out for the precise types.
    close: object = ClosePackage("x")
    assert close != Squash("x")
