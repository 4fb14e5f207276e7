"""gtd.auto.headless: how an agent's end is recorded (exit status, output tail)."""

from __future__ import annotations

import os
from pathlib import Path

from gtd import proc
from gtd.auto import headless


def result(code: int, out: str = "", err: str = "", *, timed_out: bool = False) -> proc.Result:
    return proc.Result(("agent",), code, out, err, 1.0, timed_out=timed_out)


def test_exit_status_as_a_shell_reports_it() -> None:
    assert headless.agent_status(result(0)) == 0
    assert headless.agent_status(result(3)) == 3
    assert headless.agent_status(result(-9)) == 137  # killed by SIGKILL
    assert headless.agent_status(result(-15, timed_out=True)) == headless.AGENT_TIMED_OUT == 124


def test_the_tail_is_kept_only_when_the_agent_failed() -> None:
    assert headless.agent_tail(result(0, "fine", "warnings"), 45) is None
    assert headless.agent_tail(result(3, "thinking\n", "oops\n"), 45) == "oops"
    # Nothing on stderr: the end of stdout says why.
    assert headless.agent_tail(result(2, "a\nb\nerror: no API key\n\n"), 45) == (
        "a\nb\nerror: no API key"
    )
    assert headless.agent_tail(result(1), 45) == "(no output)"
    timed = headless.agent_tail(result(-15, "half way", timed_out=True), 45)
    assert timed == "(the agent timed out after 45 min)\nhalf way"


def test_the_tail_is_short() -> None:
    err = "".join(f"line {n}\n" for n in range(1, 101))
    tail = headless.agent_tail(result(1, "", err), 45)
    assert tail is not None
    assert tail.splitlines() == [f"line {n}" for n in range(81, 101)]
    huge = headless.agent_tail(result(1, "", "x" * 10_000), 45)
    assert huge is not None
    assert len(huge) == headless.TAIL_CHARS


def test_agent_logs_are_one_per_cycle() -> None:
    assert headless.agent_log(7) == ".deepflow/agent-logs/cycle-7.log"


def test_old_logs_of_agents_that_succeeded_are_pruned(tmp_path: Path) -> None:
    for n in range(1, 106):
        status = 3 if n in (2, 50) else 0
        (tmp_path / f"cycle-{n}.log").write_text(f"$ agent\nexit {status}\n--- stdout\nwork\n")
    (tmp_path / "cycle-1.log.keep").write_text("exit 0\n")  # not a log of ours
    (tmp_path / "cycle-3.log").write_text("$ agent\n(agent timed out)\nexit 124\n--- stdout\n")
    removed = headless.prune_logs(tmp_path, newest=105, keep=100)
    assert sorted(p.name for p in removed) == ["cycle-1.log", "cycle-4.log", "cycle-5.log"]
    left = {p.name for p in tmp_path.iterdir()}
    assert {"cycle-2.log", "cycle-3.log", "cycle-6.log", "cycle-50.log", "cycle-1.log.keep"} <= left
    assert len(left) == 105 + 1 - 3


def test_pruning_passes_over_a_named_pipe_with_a_logs_name(tmp_path: Path) -> None:
    """Its first lines are read to see how the agent ended: a pipe there (the agent's
    doing) would keep `gtd loop` waiting for a writer forever."""
    os.mkfifo(tmp_path / "cycle-1.log")
    (tmp_path / "cycle-2.log").write_text("$ agent\nexit 0\n--- stdout\n" + "x" * 100_000)
    removed = headless.prune_logs(tmp_path, newest=105, keep=100)
    assert [p.name for p in removed] == ["cycle-2.log"]
    assert (tmp_path / "cycle-1.log").exists()
