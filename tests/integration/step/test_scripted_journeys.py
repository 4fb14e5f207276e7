"""Step journeys with scripted checks, and the same journeys in gtd 2.x mode, in real
repositories through the real CLI: the exact first-parent subject sequence each
leaves behind (docs/step-mode.md, "Scripted checks"). In scripted mode every check
is run the way a driver runs it — ``gtd run``, or the script ``gtd next`` prints
piped to bash and then ``gtd step check`` — and is then a ``gtd(check): <label>``
turn carrying a ``Gtd-Counters`` trailer."""

from __future__ import annotations

import json
import subprocess
from typing import Literal

import pytest

from tests.integration.step.conftest import StepRepo

TODO = (
    "# Plan\n\nSet value.txt to ok.\n\n"
    "## Open Questions\n\n### Spelling?\n\nSuggested default: ok\n"
)
TASK = "# Task\n\nWrite ok into value.txt.\n\n- [ ] value.txt says ok\n"
RECORD = (
    "# Review: value\n\n<!-- base: abc -->\n\n## The value\n\n- [ ] ./value.txt#1 — the new value\n"
)
Mode = Literal["inline", "scripted"]
# `inline` (gtd 2.x mode, set explicitly) runs in the slow set: test_journeys.py keeps
# the same journeys in that mode (red, fix, green; the cap's escalation; the idle
# health check) in the quick loop.
MODES = (pytest.param("inline", marks=pytest.mark.slow), "scripted")
PREFIX = [
    "chore: init",
    "chore: mode",
    "gtd(human): grilling",
    "gtd(agent): grilling",
    "gtd(human): grilling",
    "gtd: grilled",
    "gtd(agent): grilled",
    "gtd: planning",
]


def _mode(r: StepRepo, mode: Mode, **extra: object) -> None:
    r.config(checks=mode, **extra)
    r.commit_all("chore: mode")


def _to_building(r: StepRepo) -> None:
    r.write("idea.md", "make the value ok\n")
    r.ok("step")
    r.write(".gtd/TODO.md", TODO)
    r.ok("step-agent")
    r.ok("step")
    r.write(".gtd/01-value/01-task.md", TASK)
    r.ok("step-agent")


def _check(r: StepRepo, mode: Mode, via: Literal["run", "script"] = "run") -> list[str]:
    """In scripted mode, run the awaited check as a driver does; the commits made."""
    if mode == "inline":
        return []
    if via == "run":
        return r.ok("run").committed
    script = r.ok("next").stdout
    assert script.startswith("#!/usr/bin/env bash\n")
    subprocess.run(["bash"], input=script, text=True, cwd=r.path, check=True, timeout=120)
    return r.ok("step", "check").committed


def _trailers(r: StepRepo) -> dict[str, str]:
    """Subject → Gtd-Counters trailer of every check turn on the branch."""
    raw = r.git("log", "--format=%s%x1f%(trailers:key=Gtd-Counters,valueonly)%x1e")
    out: dict[str, str] = {}
    for record in raw.split("\x1e"):
        subject, _, trailer = record.strip().partition("\x1f")
        if subject.startswith("gtd(check): "):
            out.setdefault(subject, trailer.strip())
    return out


@pytest.mark.parametrize("mode", MODES)
def test_red_fix_green_review(step_repo: StepRepo, mode: Mode) -> None:
    r = step_repo
    _mode(r, mode, squash=False)
    _to_building(r)
    r.write("value.txt", "almost\n")
    out = r.ok("step-agent")
    if mode == "scripted":
        assert out.committed == ["gtd(agent): building", "gtd: testing"]
        assert out.stdout.endswith("state: testing\n")
        assert _check(r, mode, "script") == ["gtd(check): test-failed"]
    else:
        assert out.committed == ["gtd(agent): building", "gtd: errors"]
    assert "FAILED test_value" in r.read(".gtd/FEEDBACK.md")
    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["actor"]) == ("fixing", "agent")
    assert "FAILED test_value" in nxt["prompt"]
    r.write("value.txt", "ok\n")
    r.ok("step-agent")
    assert _check(r, mode) in ([], ["gtd(check): agentic-review"])
    r.write(".gtd/FEEDBACK.md", "")
    assert r.ok("step-agent").committed == ["gtd(agent): agentic-review", "gtd: package done"]
    r.write(".gtd/REVIEW.md", RECORD)
    assert r.ok("step-agent").committed == ["gtd(agent): review", "gtd: awaiting review"]
    assert r.ok("step").committed == ["gtd(human): review", "gtd: done"]
    middle = {
        "inline": [
            "gtd(agent): building",
            "gtd: errors",
            "gtd(agent): fixing",
            "gtd: tests green",
        ],
        "scripted": [
            "gtd(agent): building",
            "gtd: testing",
            "gtd(check): test-failed",
            "gtd(agent): fixing",
            "gtd: testing",
            "gtd(check): agentic-review",
        ],
    }[mode]
    assert r.first_parent() == [
        *PREFIX,
        *middle,
        "gtd(agent): agentic-review",
        "gtd: package done",
        "gtd(agent): review",
        "gtd: awaiting review",
        "gtd(human): review",
        "gtd: done",
    ]
    if mode == "scripted":
        assert _trailers(r) == {
            "gtd(check): test-failed": "t=1 r=0 h=0",
            "gtd(check): agentic-review": "t=1 r=0 h=0",
        }
    assert r.status() == ""


@pytest.mark.parametrize("mode", MODES)
def test_escalation_at_the_cap(step_repo: StepRepo, mode: Mode) -> None:
    r = step_repo
    _mode(r, mode, fixAttemptCap=1, agenticReview=False)
    _to_building(r)
    start = len(r.first_parent())
    r.write("value.txt", "almost\n")
    r.ok("step-agent")
    _check(r, mode)
    r.write("value.txt", "still not\n")
    r.ok("step-agent")
    _check(r, mode, "script")
    nxt = r.ok("next", "--json").json
    assert (nxt["state"], nxt["actor"]) == ("escalate", "human")
    assert "FAILED test_value" in r.read(".gtd/ERRORS.md")
    assert not r.exists(".gtd/FEEDBACK.md")
    if mode == "scripted":
        assert "gtd run" in nxt["prompt"]  # the re-test is the check's turn
    assert r.gtd("step-agent").code == 1
    # The human fixes the code and gives the agent a fresh budget.
    r.write("value.txt", "ok\n")
    r.remove(".gtd/ERRORS.md")
    r.ok("step")
    _check(r, mode)
    assert r.ok("status", "--json").json["state"] == "review"
    sequence = {
        "inline": [
            "gtd(agent): building",
            "gtd: errors",
            "gtd(agent): fixing",
            "gtd: errors",
            "gtd(human): escalate",
            "gtd: tests green",
            "gtd: package done",
        ],
        "scripted": [
            "gtd(agent): building",
            "gtd: testing",
            "gtd(check): test-failed",
            "gtd(agent): fixing",
            "gtd: testing",
            "gtd(check): escalated",
            "gtd(human): escalate",
            "gtd: testing",
            "gtd(check): close-package-approved",
            "gtd: package done",
        ],
    }[mode]
    assert r.first_parent()[start:] == sequence
    if mode == "scripted":
        assert _trailers(r) == {
            "gtd(check): test-failed": "t=1 r=0 h=0",
            "gtd(check): escalated": "t=2 r=0 h=0",
            "gtd(check): close-package-approved": "t=0 r=0 h=0",  # ERRORS.md deleted: reset
        }


@pytest.mark.parametrize("mode", MODES)
def test_health_check_at_idle(step_repo: StepRepo, mode: Mode) -> None:
    r = step_repo
    _mode(r, mode)
    out = r.ok("step")  # idle, clean: the human's step runs the health check
    first = "gtd(check): health-failed" if mode == "scripted" else "gtd: health-check"
    assert out.committed == [first]
    assert out.stdout.endswith("state: health-fixing\n")
    assert "FAILED test_value" in r.read(".gtd/HEALTH.md")
    r.write("value.txt", "ok\n")
    out = r.ok("step-agent")
    if mode == "scripted":
        assert out.committed == ["gtd(agent): health-fixing", "gtd: health-fix"]
        assert out.stdout.endswith("state: health-check\n")
        nxt = r.ok("next", "--json").json
        assert (nxt["state"], nxt["actor"], nxt["kind"]) == ("health-check", "check", "scripted")
        assert _check(r, mode) == ["gtd(check): tests-green", "gtd: squash template"]
    else:
        assert out.committed == [
            "gtd(agent): health-fixing",
            "gtd: health-fix",
            "gtd: tests green",
            "gtd: squash template",
        ]
    r.write(".gtd/SQUASH_MSG.md", "fix: make the suite green again\n")
    r.ok("step-agent")
    assert r.first_parent() == ["chore: init", "chore: mode", "fix: make the suite green again"]
    # Green at idle: zero commits — from the human's step, and from a check turn.
    assert r.ok("step").committed == []
    if mode == "scripted":
        assert r.ok("run").committed == []
        assert r.ok("step", "check").committed == []
    assert r.first_parent()[-1] == "fix: make the suite green again"
    assert r.status() == ""


# -- the check's surface -------------------------------------------------------------


def _at_testing(r: StepRepo) -> None:
    _mode(r, "scripted")
    _to_building(r)
    r.write("value.txt", "almost\n")
    assert r.ok("step-agent").committed == ["gtd(agent): building", "gtd: testing"]


def test_next_carries_the_kind_and_the_script(step_repo: StepRepo) -> None:
    r = step_repo
    _at_testing(r)
    nxt = r.ok("next", "--json").json
    plain = r.ok("next").stdout
    assert {k: v for k, v in nxt.items() if k not in ("prompt", "script")} == {
        "state": "testing",
        "actor": "check",
        "pending": False,
        "kind": "scripted",
    }
    assert nxt["script"] == nxt["prompt"] == plain
    assert "'python3' 'check.py'" in plain
    assert r.ok("status").stdout == (
        "State: testing\nAwaits: check\nPredicted commit: (none)\nPredicted state: testing\n"
    )
    refusal = (
        "gtd: testing awaits a check turn — run `gtd run`, or run the script `gtd next` "
        "prints and then `gtd step check`\n"
    )
    for args in (("step",), ("step-agent",), ("step", "agent"), ("step", "human")):
        out = r.gtd(*args)
        assert (out.code, out.stderr) == (1, refusal), args
    out = r.gtd("step", "robot", "--json")
    assert out.code == 1
    assert out.json["state"] == "error"
    assert "unknown actor 'robot'" in out.json["prompt"]
    _check(r, "scripted")
    assert r.ok("next", "--json").json["kind"] == "autonomous"
    refused = r.gtd("step", "check")
    assert (refused.code, refused.stderr) == (
        1,
        "gtd: fixing awaits an agent turn — run `gtd step-agent`\n",
    )


def test_a_stale_script_cannot_steer(step_repo: StepRepo) -> None:
    """A script saved at the first check, run again at the second: the label is
    decided by the counters now (the budget is spent: escalated)."""
    r = step_repo
    _mode(r, "scripted", fixAttemptCap=1)
    _to_building(r)
    r.write("value.txt", "almost\n")
    r.ok("step-agent")
    saved = r.ok("next").stdout
    assert _check(r, "scripted") == ["gtd(check): test-failed"]
    r.write("value.txt", "still not\n")
    r.ok("step-agent")
    subprocess.run(["bash"], input=saved, text=True, cwd=r.path, check=True, timeout=120)
    assert r.ok("step", "check").committed == ["gtd(check): escalated"]
    assert r.exists(".gtd/ERRORS.md")


def test_gtd_run_runs_only_its_own_script(step_repo: StepRepo) -> None:
    r = step_repo
    _at_testing(r)
    # Script-looking text an agent left in the tree is never executed.
    for rel in (".gtd/check.sh", ".gtd/SCRIPT.md", "check.sh", "run-check.sh"):
        r.write(rel, "#!/usr/bin/env bash\ntouch PWNED\n")
    out = r.ok("run", "--json").json
    assert out["commits"] == ["gtd(check): test-failed"]
    assert out["actions"][0] == "run the check script for testing"
    assert not r.exists("PWNED")


def test_gtd_run_refuses_where_no_check_is_awaited(step_repo: StepRepo) -> None:
    r = step_repo
    out = r.gtd("run")
    assert (out.code, out.stderr) == (
        1,
        'gtd run: checks run inline in this repository (set "checks": "scripted" in '
        ".gtdrc.json to run them as the check actor)\n",
    )
    _mode(r, "scripted")
    r.write("idea.md", "x\n")
    out = r.gtd("run", "--json")
    assert out.code == 1
    assert out.json == {
        "state": "error",
        "prompt": "gtd run: idle with uncommitted changes: capture them with `gtd step` "
        "before a health check",
    }
    r.ok("step")
    out = r.gtd("run")
    assert (out.code, out.stderr) == (
        1,
        "gtd run: no check is awaited: grilling awaits an agent turn\n",
    )
    assert r.first_parent()[-1] == "gtd(human): grilling"


def test_the_check_refusal_is_the_same_in_json(step_repo: StepRepo) -> None:
    r = step_repo
    _at_testing(r)
    out = r.gtd("step-agent", "--json")
    assert out.code == 1
    assert json.loads(out.stdout)["prompt"].startswith("testing awaits a check turn")
