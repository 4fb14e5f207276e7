"""The wave's choice (gtd.auto.wave): examples for each rule, and hypothesis
properties over generated plans: no two tasks of a wave (or a wave and what is in
flight) are ordered by a Blocked by path, named files never overlap, plan order
holds, and N = 1 is exactly today's `plan.pick`."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gtd.auto import budget, next_task
from gtd.auto.budget import Ceiling
from gtd.auto.memory import CycleRecord
from gtd.auto.next_task import pick
from gtd.auto.plan import Plan, Task, parse
from gtd.auto.usage import Usage
from gtd.auto.wave import affordable, choose


def _plan(*rows: tuple[str, str, str, str]) -> Plan:
    """(id, box, blocked by, files) per task."""
    lines = ["# Plan", ""]
    for tid, box, blocked, files in rows:
        lines.append(f"- [{box}] **{tid}**: task {tid}" + (" ✓ (abc1234)" if box == "x" else ""))
        if files:
            lines.append(f"  - Files: {files}")
        lines.append(f"  - Blocked by: {blocked or 'none'}")
    plan = parse("\n".join(lines) + "\n")
    assert all(p.message.startswith("dependency cycle") for p in plan.problems), plan.problems
    return plan


def _ids(plan: Plan, n: int, **kw: Any) -> list[str]:
    return [t.id for t in choose(plan, n, **kw).tasks]


def test_independent_tasks_fill_the_wave_in_plan_order() -> None:
    plan = _plan(*((f"T{i}", " ", "", "") for i in range(1, 7)))
    assert _ids(plan, 3) == ["T1", "T2", "T3"]
    wave = choose(plan, 3)
    assert [(t.id, why) for t, why in wave.held] == [("T4", "full"), ("T5", "full"), ("T6", "full")]
    assert wave.pick == pick(plan)


def test_a_task_waiting_on_an_open_one_is_not_ready() -> None:
    plan = _plan(("T1", " ", "", ""), ("T2", " ", "T1", ""), ("T3", " ", "", ""))
    assert _ids(plan, 3) == ["T1", "T3"]


def test_a_path_through_a_task_ticked_by_hand_still_orders_the_pair() -> None:
    # T3 waits on T2 (done by hand) which waits on T1 (open): T1 and T3 are both
    # ready, yet the plan orders them through T2.
    plan = _plan(("T1", " ", "", ""), ("T2", "x", "T1", ""), ("T3", " ", "T2", ""))
    wave = choose(plan, 3)
    assert [t.id for t in wave.tasks] == ["T1"]
    assert [(t.id, why) for t, why in wave.held] == [("T3", "depends")]


def test_the_path_counts_in_either_direction() -> None:
    # T1 (open, ready) is blocked by T2 (done), which is blocked by T3 (open, ready):
    # T3 comes later in the plan but T1 depends on it.
    plan = _plan(("T1", " ", "T2", ""), ("T2", "x", "T3", ""), ("T3", " ", "", ""))
    assert _ids(plan, 2) == ["T1"]


def test_named_files_must_be_disjoint() -> None:
    plan = _plan(
        ("T1", " ", "", "src/a.py, tests/test_a.py"),
        ("T2", " ", "", "src/a.py"),
        ("T3", " ", "", "src/b.py"),
        ("T4", " ", "", ""),
    )
    wave = choose(plan, 4)
    assert [t.id for t in wave.tasks] == ["T1", "T3", "T4"]
    assert [(t.id, why) for t, why in wave.held] == [("T2", "files")]


def test_a_folder_overlaps_the_files_inside_it() -> None:
    plan = _plan(
        ("T1", " ", "", "src/"), ("T2", " ", "", "./src/deep/x.py"), ("T3", " ", "", "srcx.py")
    )
    assert _ids(plan, 3) == ["T1", "T3"]


def test_files_given_by_the_caller_replace_the_plans_line() -> None:
    plan = _plan(("T1", " ", "", "a.py"), ("T2", " ", "", "b.py"))
    assert _ids(plan, 2) == ["T1", "T2"]
    assert _ids(plan, 2, files={"T2": ["a.py"]}) == ["T1"]
    assert _ids(plan, 2, files={"T1": [], "T2": ["a.py"]}) == ["T1", "T2"]


def test_tasks_in_flight_are_skipped_and_constrain_the_rest() -> None:
    plan = _plan(
        ("T1", " ", "", "a.py"),
        ("T2", " ", "", "a.py"),
        ("T3", " ", "", "b.py"),
        ("T4", " ", "", ""),
    )
    wave = choose(plan, 2, busy={"T1"})
    assert [t.id for t in wave.tasks] == ["T3", "T4"]
    assert dict((t.id, why) for t, why in wave.held) == {"T1": "busy", "T2": "files"}
    assert wave.pick.task is not None
    assert wave.pick.task.id == "T3"


def test_everything_ready_is_in_flight_leaves_the_serial_choice_and_no_task() -> None:
    plan = _plan(("T1", " ", "", ""), ("T2", " ", "T1", ""))
    wave = choose(plan, 3, busy={"T1"})
    assert wave.tasks == ()
    assert wave.pick == pick(plan)


def test_a_requeued_task_runs_only_first_in_its_wave() -> None:
    plan = _plan(*((f"T{i}", " ", "", "") for i in range(1, 5)))
    assert _ids(plan, 3, alone={"T2"}) == ["T1", "T3", "T4"]
    assert _ids(plan, 3, alone={"T1"}) == ["T1"]


def test_blocked_and_complete_plans_answer_as_pick() -> None:
    blocked = _plan(("T1", "~", "", ""), ("T2", " ", "T1", ""))
    assert choose(blocked, 3).tasks == ()
    assert choose(blocked, 3).pick == pick(blocked)
    assert choose(blocked, 3).pick.kind == "blocked"
    complete = _plan(("T1", "x", "", ""))
    assert choose(complete, 2).pick.kind == "complete"
    assert choose(complete, 2).tasks == ()


def test_a_dependency_cycle_does_not_hang_the_choice() -> None:
    plan = _plan(("T1", " ", "T2", ""), ("T2", " ", "T1", ""), ("T3", " ", "", ""))
    assert _ids(plan, 3) == ["T3"]


@pytest.mark.parametrize("n", [0, -1])
def test_a_wave_holds_at_least_one_task(n: int) -> None:
    with pytest.raises(ValueError, match="at least one"):
        choose(_plan(("T1", " ", "", "")), n)


# -- properties ------------------------------------------------------------------------

_FILES = ["a.py", "src/b.py", "src/", "c/d.ts", "README.md", "tests/t.py"]


@st.composite
def generated(draw: st.DrawFn) -> Plan:
    """A plan text (parsed, as the loop reads it): any statuses, blockers in both
    directions (cycles included), files from a small pool so they collide."""
    count = draw(st.integers(1, 14))
    lines = ["# Plan", ""]
    for i in range(1, count + 1):
        box = draw(st.sampled_from([" ", " ", " ", "x", "~"]))
        lines.append(f"- [{box}] **T{i}**: task {i}" + (" ✓ (abc1234)" if box == "x" else ""))
        named = draw(st.lists(st.sampled_from(_FILES), max_size=2, unique=True))
        if named:
            lines.append(f"  - Files: {', '.join(named)}")
        blockers = draw(st.lists(st.integers(1, count), max_size=3, unique=True))
        lines.append(f"  - Blocked by: {', '.join(f'T{b}' for b in blockers) or 'none'}")
    return parse("\n".join(lines) + "\n")


def _clash(t1: Task, t2: Task) -> set[tuple[str, str]]:
    def under(f: str, g: str) -> bool:
        return f.startswith(g.rstrip("/") + "/")

    return {(f, g) for f in t1.files for g in t2.files if f == g or under(f, g) or under(g, f)}


def _path(plan: Plan, a: str, b: str) -> bool:
    """Whether ``a`` waits on ``b`` through any chain of Blocked by (a plain
    search, independent of the module's)."""
    edges = {t.id: t.blocked_by for t in plan.tasks}
    seen, todo = set(), list(edges.get(a, ()))
    while todo:
        node = todo.pop()
        if node == b:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return False


@settings(max_examples=150, deadline=None)
@given(generated(), st.integers(1, 5), st.data())
def test_a_wave_is_unordered_disjoint_ready_and_in_plan_order(
    plan: Plan, n: int, data: Any
) -> None:
    ids = [t.id for t in plan.tasks]
    todo = [t.id for t in plan.pending]
    busy = set(data.draw(st.lists(st.sampled_from(todo), max_size=2))) if todo else set()
    wave = choose(plan, n, busy=busy)
    chosen = [t.id for t in wave.tasks]
    done = {t.id for t in plan.tasks if t.status == "done"}
    assert len(chosen) <= n
    assert len(set(chosen)) == len(chosen)
    assert chosen == [i for i in ids if i in chosen]  # plan order
    for task in wave.tasks:
        assert task.status == "todo"
        assert set(task.blocked_by) <= done
        assert task.id not in busy
    together = [*chosen, *busy]
    for a in together:
        for b in together:
            if a != b and not (a in busy and b in busy):
                assert not _path(plan, a, b), (a, b)
    for i, t1 in enumerate(wave.tasks):
        for t2 in [*wave.tasks[i + 1 :], *(plan.get(b) for b in busy)]:
            assert t2 is not None
            clash = _clash(t1, t2)
            assert not clash, (t1.id, t2.id, clash)


@settings(max_examples=150, deadline=None)
@given(generated(), st.integers(1, 5))
def test_a_wave_is_as_full_as_the_rules_allow(plan: Plan, n: int) -> None:
    """Maximal, greedily in plan order: every ready task left out has its reason,
    and the reason holds."""
    wave = choose(plan, n)
    done = {t.id for t in plan.tasks if t.status == "done"}
    ready = [t for t in plan.pending if set(t.blocked_by) <= done]
    held = {t.id: why for t, why in wave.held}
    assert {t.id for t in wave.tasks} | set(held) == {t.id for t in ready}
    for task in ready:
        why = held.get(task.id)
        if why is None:
            continue
        earlier = [t for t in wave.tasks if t.line < task.line]
        if why == "full":
            assert len(earlier) == n
        elif why == "depends":
            assert any(_path(plan, task.id, t.id) or _path(plan, t.id, task.id) for t in earlier)
        else:
            assert why == "files"
            assert any(_clash(task, t) for t in earlier)


@settings(max_examples=150, deadline=None)
@given(generated())
def test_one_at_a_time_is_todays_plan_next(plan: Plan) -> None:
    wave = choose(plan, 1)
    today = pick(plan)
    assert wave.pick == today
    assert wave.tasks == ((today.task,) if today.task is not None else ())
    # What `gtd plan next --json` and `begin` answer from it is the same too.
    assert next_task.answer(plan, wave.pick) == next_task.answer(plan, today)


@settings(max_examples=100, deadline=None)
@given(generated(), st.integers(2, 5))
def test_a_wave_starts_with_todays_choice(plan: Plan, n: int) -> None:
    """The first task of any wave is the one a serial loop would run now: a wave
    never delays the task next in line."""
    wave = choose(plan, n)
    assert wave.pick == pick(plan)
    if wave.tasks:
        assert wave.tasks[0] == pick(plan).task


# -- the budget ------------------------------------------------------------------------


def _cycle(n: int, task: str, usd: float, tokens: int = 0) -> CycleRecord:
    return CycleRecord(
        cycle=n, task=task, title=task, status="passed", commit="abc1234", reason=None,
        at="2026-01-15T10:00:00Z", tests_passed=None, tests_total=None, build_ok=None,
        usage=Usage(input=tokens, usd=usd, models=("m",)),
    )  # fmt: skip


def test_a_wave_starts_only_what_the_budget_expects_to_afford() -> None:
    # Spent $3 over three cycles: $1 expected for a task never tried.
    history = [_cycle(1, "T1", 1.0), _cycle(2, "T2", 1.0), _cycle(3, "T3", 1.0)]
    tasks = ["T4", "T5", "T6"]
    assert affordable(history, Ceiling(10.0, None, 0.8), tasks) == 3
    assert affordable(history, Ceiling(5.0, None, 0.8), tasks) == 2
    assert affordable(history, Ceiling(4.0, None, 0.8), tasks) == 1
    assert affordable(history, Ceiling(3.5, None, 0.8), tasks) == 0  # decide halts the first
    assert affordable(history, Ceiling(None, None, 0.8), []) == 0


def test_a_task_costs_what_it_cost_before() -> None:
    # T9 cost $4 last time: it is expected to cost that again, not the night's $2.
    history = [_cycle(1, "T9", 4.0), _cycle(2, "T1", 0.0)]
    assert affordable(history, Ceiling(10.0, None, 0.8), ["T2", "T9"]) == 2
    assert affordable(history, Ceiling(9.0, None, 0.8), ["T2", "T9"]) == 1


def test_tokens_are_a_ceiling_of_their_own() -> None:
    history = [_cycle(1, "T1", 0.0, 1000)]
    assert affordable(history, Ceiling(None, 3500, 0.8), ["T2", "T3", "T4"]) == 2


def test_with_nothing_spent_yet_the_wave_starts_whole() -> None:
    assert affordable([], Ceiling(1.0, None, 0.8), ["T1", "T2", "T3"]) == 3


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(0, 5, allow_nan=False), max_size=6),
    st.floats(0.5, 30, allow_nan=False),
    st.integers(1, 5),
)
def test_the_first_task_is_decided_as_today(costs: list[float], limit: float, n: int) -> None:
    history = [_cycle(i + 1, f"T{i + 1}", c) for i, c in enumerate(costs)]
    tasks = [f"T{100 + i}" for i in range(n)]
    ceiling = Ceiling(limit, None, 0.8)
    got = affordable(history, ceiling, tasks)
    assert (got >= 1) == (budget.decide(history, ceiling, tasks[0]).halt is None)
    assert 0 <= got <= n
    # Monotone: a higher ceiling never starts fewer.
    assert affordable(history, Ceiling(limit * 2, None, 0.8), tasks) >= got
