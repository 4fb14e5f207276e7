"""The demo's scripted implementer without the loop: it reads the briefs gtd renders,
picks its attempt from the brief alone, checks a file before it writes it, and its
attempts chain from the shipped sample to the final cart.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gtd.auto.brief import render_task
from gtd.auto.plan import parse
from gtd.demo import implementer
from gtd.demo.implementer import Attempt, ScriptError, Write, apply, choose, script
from gtd.demo.project import SAMPLE_DIR, sample_files
from gtd.templates import template

PLAN = parse((SAMPLE_DIR / "PLAN.md").read_text(encoding="utf-8"))


def brief(task_id: str, cycle: int = 1, failures: tuple[tuple[int, str], ...] = ()) -> str:
    """The brief `gtd cycle begin` gives the agent for this task of the sample plan."""
    [task] = [t for t in PLAN.tasks if t.id == task_id]
    return render_task(
        template("brief.md"),
        cycle=cycle,
        task=task,
        failures=failures,
        learnings=(),
        test_command="python -m pytest",
    )


def write_sample(root: Path) -> None:
    for rel, text in sample_files().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_the_scripted_cart_starts_as_the_shipped_sample() -> None:
    assert implementer.cart_py() == (SAMPLE_DIR / "cart.py").read_text(encoding="utf-8")


def test_the_script_covers_every_task_of_the_sample_plan_in_order() -> None:
    assert list(script()) == [t.id for t in PLAN.tasks]
    # one attempt broken by a failing test, one by a weakened snapshot test, the
    # rest passing: six cycles
    assert implementer.expected() == [
        ("T1", None),
        ("T2", "tests failed"),
        ("T2", None),
        ("T3", "a protected test was changed: tests/test_cart.py::"),
        ("T3", None),
        ("T4", None),
    ]
    # Inside Claude Code the guard refuses the edit to the protected test; the
    # code alone then fails it.
    inside = implementer.expected(in_claude=True)
    assert inside[3] == ("T3", "tests failed")
    assert inside[:3] + inside[4:] == implementer.expected()[:3] + implementer.expected()[4:]
    assert implementer.guarded_paths() == {"tests/test_cart.py"}


def test_a_first_brief_gets_the_first_attempt_and_a_brief_with_a_revert_the_next() -> None:
    task, first = choose(brief("T2", cycle=2))
    assert task == "T2"
    assert first == script()["T2"][0]
    failed = ((2, "tests failed: 1 of 11 (tests/test_cart.py::test_x)"),)
    task, second = choose(brief("T2", cycle=3, failures=failed))
    assert second == script()["T2"][1]
    assert second.refused is None


def test_a_brief_the_script_cannot_answer_is_refused() -> None:
    with pytest.raises(ScriptError, match="no `# Cycle N"):
        choose("Do something.")
    three = tuple((n, "tests failed") for n in (2, 3, 4))
    with pytest.raises(ScriptError, match="no attempt at T2 left after 3 reverted"):
        choose(brief("T2", cycle=5, failures=three))
    with pytest.raises(ScriptError, match="no attempt at T9"):
        choose(brief("T1").replace("T1:", "T9:", 1))


def test_the_attempts_chain_from_the_sample_to_the_final_cart(tmp_path: Path) -> None:
    """Each attempt applies to the tree the passing attempts before it left (a
    reverted one leaves nothing behind), which is what the night does."""
    repo, scratch = tmp_path / "repo", tmp_path / "scratch"
    write_sample(repo)
    for attempts in script().values():
        for attempt in attempts:
            if attempt.refused is not None:
                shutil.copytree(repo, scratch)
                apply(scratch, attempt)
                shutil.rmtree(scratch)
            else:
                apply(repo, attempt)
    assert (repo / "cart.py").read_text() == implementer.final_cart()
    compile(implementer.final_cart(), "cart.py", "exec")


def test_a_file_other_than_the_script_expects_stops_the_attempt_before_any_write(
    tmp_path: Path,
) -> None:
    write_sample(tmp_path)
    (tmp_path / "cart.py").write_text("# someone else's cart\n")
    [attempt] = script()["T1"]
    with pytest.raises(ScriptError, match=r"cart\.py is not as the script expects"):
        apply(tmp_path, attempt)
    assert not (tmp_path / "tests" / "test_remove.py").exists()
    new = Attempt("x", (Write("tests/test_cart.py", "", None),))
    with pytest.raises(ScriptError, match=r"tests/test_cart\.py is not as the script expects"):
        apply(tmp_path, new)


def test_as_an_agent_process_it_reads_the_brief_on_stdin_and_works_in_its_cwd(
    tmp_path: Path,
) -> None:
    write_sample(tmp_path)
    agent = [sys.executable, "-m", "gtd.demo.implementer"]
    res = subprocess.run(
        agent, cwd=tmp_path, input=brief("T1"), capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("T1: Added Cart.remove(name, qty=1)")
    assert "def remove(self" in (tmp_path / "cart.py").read_text()
    assert (tmp_path / "tests" / "test_remove.py").is_file()
    again = subprocess.run(
        agent, cwd=tmp_path, input=brief("T1"), capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 1
    assert "scripted implementer: cart.py is not as the script expects" in again.stderr
