"""The PLAN.md core: parsing, problems, picking and ticking, table-driven, plus
hypothesis properties for the invariants the cycle engine relies on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gtd.auto.next_task import pick
from gtd.auto.plan import Plan, Problem, Task, parse
from gtd.auto.plan_tick import tick


def one(text: str) -> Task:
    plan = parse(text)
    assert len(plan.tasks) == 1, plan.tasks
    return plan.tasks[0]


# -- parsing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "- [ ] **T3**: Build the API\n  - Files: a.py, b/c.py\n  - Blocked by: T1, T2\n",
            {
                "id": "T3",
                "title": "Build the API",
                "status": "todo",
                "line": 1,
                "files": ("a.py", "b/c.py"),
                "blocked_by": ("T1", "T2"),
                "spike": False,
                "commit": None,
            },
            id="basic",
        ),
        pytest.param(
            "- [ ] **T1**: First\n  - Blocked by: none\n", {"blocked_by": ()}, id="blocked-none"
        ),
        pytest.param("- [ ] **T1**: First\n  - Blocked by: None\n", {"blocked_by": ()}, id="None"),
        pytest.param("- [ ] **T1**: First\n", {"blocked_by": (), "files": ()}, id="no-subbullets"),
        pytest.param(
            "- [x] **T3**: Done thing ✓ (abc1234)\n",
            {"status": "done", "title": "Done thing", "commit": "abc1234"},
            id="done-with-hash",
        ),
        pytest.param(
            "- [x] **T3**: Done thing\n",
            {"status": "done", "title": "Done thing", "commit": None},
            id="done-without-hash",
        ),
        pytest.param("- [X] **T3**: Done\n", {"status": "done"}, id="capital-X"),
        pytest.param("- [~] **T3**: Dropped\n", {"status": "skipped"}, id="skipped"),
        pytest.param(
            "- [ ] **T1** [SPIKE]: Try streaming\n",
            {"spike": True, "title": "Try streaming"},
            id="spike-tag",
        ),
        pytest.param(
            "- [ ] **T1**: Try streaming (spike)\n",
            {"spike": True, "title": "Try streaming"},
            id="spike-paren",
        ),
        pytest.param(
            "- [ ] **T1**: (Spike) try it\n", {"spike": True, "title": "try it"}, id="spike-case"
        ),
        pytest.param("* [ ] **T2**: Star bullet\n", {"id": "T2"}, id="star-bullet"),
        pytest.param("+ [ ] **T2**: Plus bullet\n", {"id": "T2"}, id="plus-bullet"),
        pytest.param("1. [ ] **T2**: Ordered\n", {"id": "T2"}, id="ordered"),
        pytest.param("- [ ] **T2** No colon\n", {"title": "No colon"}, id="no-colon"),
        pytest.param("- [ ] **T2:** Colon in bold\n", {"title": "Colon in bold"}, id="colon-bold"),
        pytest.param("- [ ] **t7**: Lower\n", {"id": "T7"}, id="lowercase-id"),
        pytest.param(
            "- [ ] **T2**: Bold keys\n  - **Files:** a.py\n  - **Blocked by**: t1\n",
            {"files": ("a.py",), "blocked_by": ("T1",)},
            id="bold-keys",
        ),
        pytest.param(
            "- [ ] **T2**: Nested files\n  - Files:\n    - `a.py`\n    - b.py (new)\n"
            "  - Blocked by: none\n",
            {"files": ("a.py", "b.py"), "blocked_by": ()},
            id="nested-files",
        ),
        pytest.param(
            "- [ ] **T2**: Decorated\n  - Files: `src/a.py` (new), src/b.py\n",
            {"files": ("src/a.py", "src/b.py")},
            id="backticks-and-remarks",
        ),
        pytest.param(
            "- [ ] **T4**: Remarks\n  - Blocked by: T2 (schema), T3\n",
            {"blocked_by": ("T2", "T3")},
            id="blocker-remarks",
        ),
        pytest.param(
            "- [ ] **T4**: Spaces\n  - Blocked by: T2 T3 and T1; T2\n",
            {"blocked_by": ("T2", "T3", "T1")},
            id="blocker-separators-dedup",
        ),
        pytest.param(
            "- [ ] **T2**: Other keys\n  - Type: spike\n  - Hypothesis: it works\n"
            "  - Files: x.py\n",
            {"files": ("x.py",)},
            id="other-keys-tolerated",
        ),
        pytest.param(
            "- [ ] **T2**: Tabs\n\t- Files: x.py\n\t- Blocked by: T1\n",
            {"files": ("x.py",), "blocked_by": ("T1",)},
            id="tab-indent",
        ),
        pytest.param(
            "- [ ] **T2**: Windows\r\n  - Files: x.py\r\n  - Blocked by: T1\r\n",
            {"title": "Windows", "files": ("x.py",), "blocked_by": ("T1",)},
            id="crlf",
        ),
        pytest.param("\ufeff- [ ] **T2**: BOM first\n", {"line": 1, "id": "T2"}, id="bom"),
        pytest.param(
            "## Tasks\n\n### upload-spec\n\n- [ ] **T1**: Under spec\n",
            {"spec": "upload-spec", "line": 5},
            id="spec-heading",
        ),
        pytest.param("- [ ] **T1**: No heading\n", {"spec": None}, id="no-spec"),
        pytest.param(
            "### old\n\n## Other\n\n- [ ] **T1**: After h2\n", {"spec": None}, id="h2-resets-spec"
        ),
        pytest.param(
            "### s ###\n- [ ] **T1**: Closed heading\n", {"spec": "s"}, id="closed-heading"
        ),
    ],
)
def test_parse_task(text: str, expected: dict[str, Any]) -> None:
    task = one(text)
    for key, value in expected.items():
        assert getattr(task, key) == value, key
    # One-task snippets name blockers that are not in them; nothing else may be wrong.
    assert [p for p in parse(text).problems if "unknown task" not in p.message] == []


@pytest.mark.parametrize(
    ("text", "block"),
    [
        pytest.param(
            "- [ ] **T1**: A\n  - Files: a.py\n  Free text.\n\n- [ ] **T2**: B\n",
            "- [ ] **T1**: A\n  - Files: a.py\n  Free text.",
            id="sub-bullets-and-text",
        ),
        pytest.param(
            "- [ ] **T1**: A\n  - Files: a.py\n\n  More after a blank.\n\nOutside.\n",
            "- [ ] **T1**: A\n  - Files: a.py\n\n  More after a blank.",
            id="blank-then-indented",
        ),
        pytest.param(
            "- [ ] **T1**: A\nlazy continuation\n- [ ] other\n",
            "- [ ] **T1**: A\nlazy continuation",
            id="lazy-continuation",
        ),
        pytest.param(
            "- [ ] **T1**: A\n  - Files: a.py\n### next spec\n",
            "- [ ] **T1**: A\n  - Files: a.py",
            id="heading-ends",
        ),
        pytest.param(
            "- [ ] **T1**: A\r\n  - Files: a.py\r\n",
            "- [ ] **T1**: A\n  - Files: a.py",
            id="crlf-normalised",
        ),
        pytest.param(
            "- [ ] **T1**: A\n  ```\n  - Blocked by: T9\n  ```\n",
            "- [ ] **T1**: A\n  ```\n  - Blocked by: T9\n  ```",
            id="fence-inside",
        ),
    ],
)
def test_task_text_block(text: str, block: str) -> None:
    plan = parse(text)
    assert plan.tasks[0].text == block
    assert plan.tasks[0].blocked_by == ()  # a Blocked by inside a fence is an example


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        pytest.param(
            "## Spec Gaps\n- [ ] specs/a.md: unclear\n- [ ] T1: a gap note\n\n"
            "## Tasks\n- [ ] **T2**: real\n",
            ["T2"],
            id="spec-gaps",
        ),
        pytest.param(
            "- [ ] write docs\n- [x] review\n- [ ] **T5**: real\n", ["T5"], id="other-checkboxes"
        ),
        pytest.param(
            "```markdown\n- [ ] **T1**: example\n```\n- [ ] **T2**: real\n",
            ["T2"],
            id="fenced-example",
        ),
        pytest.param("- **T1**: no checkbox\n- [ ] **T2**: real\n", ["T2"], id="no-checkbox"),
        pytest.param(
            "- [ ] **T1**: a\n  - [ ] **T2**: nested task\n", ["T1", "T2"], id="nested-task"
        ),
    ],
)
def test_only_bold_id_checkboxes_are_tasks(text: str, ids: list[str]) -> None:
    plan = parse(text)
    assert [t.id for t in plan.tasks] == ids
    assert plan.problems == ()


def test_plan_title_get_and_pending() -> None:
    plan = parse(
        "# Plan: uploads\n\n# Second title\n- [x] **T1**: a ✓ (abc1234)\n- [ ] **T2**: b\n"
        "- [~] **T3**: c\n- [ ] **T4**: d\n"
    )
    assert plan.title == "Plan: uploads"
    assert plan.get("T2") is not None
    assert plan.get("T9") is None
    assert [t.id for t in plan.pending] == ["T2", "T4"]
    assert parse("- [ ] **T1**: a\n").title is None


def test_realistic_deepflow_plan() -> None:
    text = """# Plan

Generated: 2025-01-15

## Summary

| Metric | Count |
|--------|-------|
| Tasks  | 3     |

## Spec Gaps

- [ ] `specs/upload.md`: retry policy unspecified

## Tasks

### doing-upload

- [x] **T1** [SPIKE]: Validate streaming upload ✓ (a1b2c3d)
  - Type: spike
  - Hypothesis: streaming keeps memory flat
  - Files: .deepflow/experiments/upload--streaming--active.md
  - Blocked by: none

- [ ] **T2**: Create upload endpoint
  - Files: src/api/upload.ts, src/api/index.ts
  - Blocked by: T1

- [ ] **T3**: Add progress events
  - Files: src/api/progress.ts
  - Blocked by: T2
"""
    plan = parse(text)
    assert plan.problems == ()
    assert plan.title == "Plan"
    assert [(t.id, t.status, t.spec) for t in plan.tasks] == [
        ("T1", "done", "doing-upload"),
        ("T2", "todo", "doing-upload"),
        ("T3", "todo", "doing-upload"),
    ]
    t1 = plan.tasks[0]
    assert (t1.spike, t1.commit, t1.title) == (True, "a1b2c3d", "Validate streaming upload")
    assert plan.tasks[1].files == ("src/api/upload.ts", "src/api/index.ts")
    chosen = pick(plan)
    assert chosen.kind == "task"
    assert chosen.task is not None
    assert chosen.task.id == "T2"


# -- problems --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "- [ ] **T1**: a\n- [ ] **T2**: b\n- [ ] **T1**: c\n",
            [(3, "duplicate task id T1 (first at line 1)")],
            id="duplicate",
        ),
        pytest.param(
            "- [ ] **T1**: a\n  - Files: x.py\n  - Blocked by: T9\n",
            [(3, "T1: blocked by unknown task T9")],
            id="unknown-blocker",
        ),
        pytest.param(
            "- [ ] **T1**: a\n  - Blocked by: T2\n- [ ] **T2**: b\n  - Blocked by: T1\n",
            [(2, "dependency cycle: T1 → T2 → T1")],
            id="cycle-2",
        ),
        pytest.param(
            "- [ ] **T1**: a\n  - Blocked by: T1\n",
            [(2, "dependency cycle: T1 → T1")],
            id="self-cycle",
        ),
        pytest.param(
            "- [ ] **T1**: a\n- [ ] **T2**: b\n  - Blocked by: T4\n- [ ] **T3**: c\n"
            "  - Blocked by: T2\n- [ ] **T4**: d\n  - Blocked by: T3\n",
            [(3, "dependency cycle: T2 → T4 → T3 → T2")],
            id="cycle-3-rotated-to-first-in-plan",
        ),
        pytest.param("- [ ] **T1**:\n", [(1, "T1: task has no title")], id="no-title"),
        pytest.param(
            "- [ ] **T1** [SPIKE]:\n", [(1, "T1: task has no title")], id="only-a-tag-no-title"
        ),
        pytest.param(
            "- [ ] **T1**: a\n- [ ] **T2**: b\n  - Blocked by: the API team\n",
            [
                (
                    3,
                    "T2: malformed Blocked by line: 'the', 'API', 'team' is not a task id "
                    "(write ids like T1, T2 or none)",
                )
            ],
            id="malformed-blocked-by",
        ),
        pytest.param(
            "- [ ] **T1**: a\n- [ ] **T2**: b\n  - Blocked by:\n",
            [(3, "T2: empty Blocked by line (write task ids or none)")],
            id="empty-blocked-by",
        ),
        pytest.param(
            "- [-] **T1**: a\n",
            [(1, "T1: unknown checkbox [-] (use [ ], [x] or [~])")],
            id="unknown-box",
        ),
        pytest.param(
            "- [ ] **T1**: a\n- [ ] T2: not bold\n",
            [(2, "checkbox names T2 but is not a task: write the id in bold, - [ ] **T2**: title")],
            id="id-not-bold",
        ),
        pytest.param(
            "# Plan\n\n- [ ] something\n",
            [(1, "no tasks found (a task looks like - [ ] **T1**: title)")],
            id="no-tasks",
        ),
        pytest.param(
            "", [(1, "no tasks found (a task looks like - [ ] **T1**: title)")], id="empty"
        ),
        pytest.param("- [x] **T1**: done, no hash\n", [], id="done-without-hash-is-fine"),
        pytest.param(
            "- [~] **T1**: a\n- [ ] **T2**: b\n  - Blocked by: T1\n", [], id="skipped-blocker-ok"
        ),
        pytest.param(
            "- [ ] **T1**:\n  - Blocked by: T7\n- [ ] **T1**: again\n",
            [
                (1, "T1: task has no title"),
                (2, "T1: blocked by unknown task T7"),
                (3, "duplicate task id T1 (first at line 1)"),
            ],
            id="several-sorted-by-line",
        ),
    ],
)
def test_problems(text: str, expected: list[tuple[int, str]]) -> None:
    assert parse(text).problems == tuple(Problem(line, msg) for line, msg in expected)


NOT_A_TASK = "checkbox names T2 but is not a task: write the id in bold, - [ ] **T2**: title"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("- [ ] **T1**: a\n- [ ] **T2*: b\n", [(2, NOT_A_TASK)], id="half-bold"),
        pytest.param("- [ ] **T1**: a\n- [ ] *T2*: b\n", [(2, NOT_A_TASK)], id="italic"),
        pytest.param("- [ ] **T1**: a\n- [ ] __T2__: b\n", [(2, NOT_A_TASK)], id="underscores"),
        pytest.param("- [ ] **T1**: a\n- [ ] **T 2**: b\n", [(2, NOT_A_TASK)], id="space-in-id"),
        pytest.param("- [ ] **T1**: a\n- [ ] Task 2: b\n", [(2, NOT_A_TASK)], id="task-word"),
        pytest.param("- [ ] **T1**: a\n-[ ] **T2**: b\n", [(2, NOT_A_TASK)], id="no-space"),
        pytest.param("- [ ] **T1**: a\n- [  ] **T2**: b\n", [(2, NOT_A_TASK)], id="wide-box"),
        pytest.param(
            "- [ ] **T1**: a\n  - Files: a.py\n  - [ ] **T2*: nested\n",
            [(3, NOT_A_TASK)],
            id="inside-a-task-block",
        ),
        pytest.param(
            "- [ ] **T1**: a\n- [ ] **T\u0662**: b\n",
            [(2, "checkbox names T\u0662 but is not a task: ids use the digits 0-9")],
            id="non-ascii-digit",
        ),
        pytest.param(
            "- [ ] **T1**: a\n- [ ] **T2**: b\n  - Blockd by: T1\n",
            [(3, "T2: unknown field 'Blockd by': did you mean 'Blocked by'?")],
            id="misspelt-blocked-by",
        ),
        pytest.param(
            "- [ ] **T1**: a\n- [ ] **T2**: b\nBlokced by: T1\n",
            [(3, "T2: unknown field 'Blokced by': did you mean 'Blocked by'?")],
            id="misspelt-lazy-line",
        ),
        pytest.param(
            "- [ ] **T1**: a\n- [ ] **T2**: b\n  - Blocked by T1\n",
            [(3, "T2: Blocked by without a colon is not read: write `Blocked by: T1`")],
            id="blocked-by-without-colon",
        ),
        pytest.param(
            "- [ ] **T1**: a\n- [ ] **T2**: b\n  - Depends on: T1\n",
            [(3, "T2: unknown field 'Depends on': did you mean 'Blocked by'?")],
            id="synonym",
        ),
        pytest.param(
            "- [ ] **T1**: a\n  - **Fils:** a.py\n",
            [(2, "T1: unknown field 'Fils': did you mean 'Files'?")],
            id="misspelt-files-bold",
        ),
        pytest.param(
            "- [ ] **T1**: a\n  - Type: spike\n    - Blcked by: T1\n",
            [(3, "T1: unknown field 'Blcked by': did you mean 'Blocked by'?")],
            id="misspelt-deeper",
        ),
        pytest.param(
            "- [ ] **T1**: a\n  - Hypothsis: it streams\n",
            [(2, "T1: unknown field 'Hypothsis': did you mean 'Hypothesis'?")],
            id="misspelt-note",
        ),
        pytest.param(
            "- [ ] **T1**: a\n  - Edge case: empty input\n",
            [
                (
                    2,
                    "T1: unknown field 'Edge case' (the loop reads Files and Blocked by; "
                    "notes: Type, Hypothesis, Method, Success criteria, Time-box, Impact, "
                    "Model, Effort, Optimize, Integration ACs, Steps, Acceptance, Acceptance "
                    "criteria, Done when, Notes, Note, Tests, Context, Details, Risk, Goal, "
                    "Spec, See, Why): use one of these or write the line without the colon",
                )
            ],
            id="unknown-field",
        ),
        pytest.param(
            "- [ ] **T1**: a\n- [ ] **T2**: b\n\n- Blocked by: T1\n",
            [(4, "Blocked by is not under a task (not read): indent it under its task")],
            id="field-left-outside",
        ),
        pytest.param(
            "- [ ] **T1**: a\n\nFiles: a.py\n",
            [(3, "Files is not under a task (not read): indent it under its task")],
            id="files-left-outside",
        ),
        pytest.param(
            "- [ ] **T0**: zero\n", [(1, "T0: task ids are positive: start at T1")], id="T0"
        ),
        pytest.param(
            "- [ ] **T1**: a\n- [ ] **T2**: b | Blocked by: T1\n",
            [
                (
                    2,
                    "T2: Blocked by on the task line is not read: put it on its own line "
                    "under the task, `  - Blocked by: T1`",
                )
            ],
            id="blocked-by-on-the-task-line",
        ),
        pytest.param(
            "# Plan\n\n## Spec Gaps\n\n- [ ] specs/a.md: unclear\n\n### upload\n\n"
            "- [ ] **T1**: Upload\n",
            [
                (
                    9,
                    "T1 is under Spec Gaps (line 3), where checkboxes are notes: it is not "
                    "read as a task; put tasks under their own heading (## Tasks) outside "
                    "Spec Gaps",
                ),
                (1, "no tasks found (a task looks like - [ ] **T1**: title)"),
            ],
            id="task-after-spec-gaps",
        ),
    ],
)
def test_nothing_meant_for_the_loop_is_dropped_silently(
    text: str, expected: list[tuple[int, str]]
) -> None:
    assert sorted(parse(text).problems) == sorted(Problem(n, m) for n, m in expected)


@pytest.mark.parametrize("char", ["\x00", "\x1e", "\x1f", "\x07", "\r", "\x7f", "\x85", "\x9f"])
def test_control_character_in_a_title_is_a_problem(char: str) -> None:
    plan = parse(f"- [ ] **T1**: a{char}b\n")
    assert plan.problems == (
        Problem(
            1,
            f"T1: control character U+{ord(char):04X} in the title "
            "(it would break the commit message): delete it",
        ),
    )


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("- [ ] **T1**: a\tb\n", id="tab-in-title"),
        pytest.param("- [ ] **T1**: a\n- [ ] write docs\n- [ ] T2 review later\n", id="notes"),
        pytest.param("- [ ] **T1**: a\n- [ ] T-shirt sizes: S, M\n", id="t-word"),
        pytest.param(
            "- [ ] **T1** [SPIKE]: a\n  - Type: spike\n  - Success criteria: flat memory\n"
            "  - Time-box: 30 min\n  - Model: opus\n  - Effort: high\n  - Blocked by: none\n",
            id="deepflow-notes",
        ),
        pytest.param(
            "- [ ] **T1**: a\n  - Optimize:\n      metric: wc -l\n      target: 3\n"
            "  - Integration ACs:\n    - End-to-end flow: works\n",
            id="content-of-a-note",
        ),
        pytest.param(
            "- [ ] **T1**: a\n  Why it matters: users wait.\n  - Step 1: do it\n"
            "  - See https://example.com: the spec\n",
            id="prose",
        ),
        pytest.param("- [ ] **T1**: a\n  ```\n  - Blockd by: T9\n  ```\n", id="fenced-example"),
        pytest.param(
            "- [ ] **T1**: a\n\n## Notes\n\n- Files: every task lists them\n",
            id="field-word-in-a-later-section",
        ),
    ],
)
def test_what_is_not_a_problem(text: str) -> None:
    assert parse(text).problems == ()


def test_cycle_through_unrelated_blockers_reported_once() -> None:
    text = (
        "- [ ] **T1**: a\n  - Blocked by: T2\n- [ ] **T2**: b\n  - Blocked by: T3\n"
        "- [ ] **T3**: c\n  - Blocked by: T1\n- [ ] **T4**: d\n  - Blocked by: T1, T3\n"
    )
    cycles = [p.message for p in parse(text).problems]
    assert cycles == ["dependency cycle: T1 → T2 → T3 → T1"]


def test_long_chain_does_not_recurse() -> None:
    # 3000 tasks each blocked by the previous: deeper than Python's recursion limit.
    parts = ["- [ ] **T1**: t\n"]
    parts += [f"- [ ] **T{i}**: t\n  - Blocked by: T{i - 1}\n" for i in range(2, 3001)]
    plan = parse("".join(parts))
    assert plan.problems == ()
    assert len(plan.tasks) == 3000


# -- picking ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "task_id", "blocked"),
    [
        pytest.param("- [ ] **T1**: a\n- [ ] **T2**: b\n", "task", "T1", [], id="first-ready"),
        pytest.param(
            "- [x] **T1**: a\n- [ ] **T2**: b\n  - Blocked by: T1\n",
            "task",
            "T2",
            [],
            id="blocker-done",
        ),
        pytest.param(
            "- [ ] **T1**: a\n  - Blocked by: T3\n- [ ] **T2**: b\n- [ ] **T3**: c\n",
            "task",
            "T2",
            [],
            id="skips-blocked-earlier-task",
        ),
        pytest.param(
            "- [~] **T1**: a\n- [ ] **T2**: b\n  - Blocked by: T1\n",
            "blocked",
            None,
            [("T2", ("T1",))],
            id="skipped-blocker-does-not-satisfy",
        ),
        pytest.param(
            "- [x] **T1**: a\n- [ ] **T2**: b\n  - Blocked by: T1, T3\n- [ ] **T3**: c\n"
            "  - Blocked by: T2\n",
            "blocked",
            None,
            [("T2", ("T3",)), ("T3", ("T2",))],
            id="all-blocked-lists-unfinished-only",
        ),
        pytest.param("- [x] **T1**: a\n- [x] **T2**: b\n", "complete", None, [], id="all-done"),
        pytest.param(
            "- [x] **T1**: a\n- [~] **T2**: b\n", "complete", None, [], id="done-or-skipped"
        ),
    ],
)
def test_pick(
    text: str, kind: str, task_id: str | None, blocked: list[tuple[str, tuple[str, ...]]]
) -> None:
    chosen = pick(parse(text))
    assert chosen.kind == kind
    assert (chosen.task.id if chosen.task else None) == task_id
    assert [(t.id, why) for t, why in chosen.blocked] == blocked


# -- ticking ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "task_id", "expected"),
    [
        pytest.param(
            "# P\n- [ ] **T1**: a\n  - Files: x\n- [ ] **T2**: b\n",
            "T1",
            "# P\n- [x] **T1**: a ✓ (abc1234)\n  - Files: x\n- [ ] **T2**: b\n",
            id="lf",
        ),
        pytest.param(
            "# P\r\n- [ ] **T1**: a\r\n- [ ] **T2**: b\r\n",
            "T2",
            "# P\r\n- [ ] **T1**: a\r\n- [x] **T2**: b ✓ (abc1234)\r\n",
            id="crlf",
        ),
        pytest.param(
            "- [ ] **T1**: a\n- [ ] **T2**: b",
            "T2",
            "- [ ] **T1**: a\n- [x] **T2**: b ✓ (abc1234)",
            id="no-final-newline",
        ),
        pytest.param(
            "\ufeff- [ ] **T1**: a\n", "T1", "\ufeff- [x] **T1**: a ✓ (abc1234)\n", id="bom"
        ),
        pytest.param(
            "- [x] **T1**: a ✓ (0000000)\n",
            "T1",
            "- [x] **T1**: a ✓ (abc1234)\n",
            id="idempotent-replaces-hash",
        ),
        pytest.param("- [~] **T1**: a\n", "T1", "- [x] **T1**: a ✓ (abc1234)\n", id="skipped"),
        pytest.param(
            "- [ ] **T1** [SPIKE]: a  \t\n",
            "T1",
            "- [x] **T1** [SPIKE]: a ✓ (abc1234)\n",
            id="trailing-blanks",
        ),
        pytest.param(
            "  * [ ] **T1**: nested\n", "T1", "  * [x] **T1**: nested ✓ (abc1234)\n", id="star"
        ),
        pytest.param(
            "## Spec Gaps\n- [ ] **T1**: gap\n## Tasks\n- [ ] **T1**: real\n",
            "T1",
            "## Spec Gaps\n- [ ] **T1**: gap\n## Tasks\n- [x] **T1**: real ✓ (abc1234)\n",
            id="not-the-spec-gap",
        ),
    ],
)
def test_tick(text: str, task_id: str, expected: str) -> None:
    assert tick(text, task_id, "abc1234") == expected


def test_tick_result_parses_as_done() -> None:
    text = tick("- [ ] **T1**: a\n- [ ] **T2**: b\n  - Blocked by: T1\n", "T1", "abc1234")
    plan = parse(text)
    t1 = plan.get("T1")
    assert t1 is not None
    assert (t1.status, t1.commit, t1.title) == ("done", "abc1234", "a")
    chosen = pick(plan)
    assert chosen.task is not None
    assert chosen.task.id == "T2"


@pytest.mark.parametrize(
    "text",
    ["- [ ] **T1**: a\n", "```\n- [ ] **T2**: example\n```\n", "## Spec Gaps\n- [ ] **T2**: g\n"],
)
def test_tick_unknown_task_is_key_error(text: str) -> None:
    with pytest.raises(KeyError):
        tick(text, "T2", "abc1234")


@pytest.mark.parametrize("bad", ["", "xyz", "abc 123", "abc1234\n"])
def test_tick_rejects_non_hash(bad: str) -> None:
    with pytest.raises(ValueError, match="not a commit hash"):
        tick("- [ ] **T1**: a\n", "T1", bad)


# -- properties ------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    status: str
    title: str
    blockers: tuple[int, ...]
    files: tuple[str, ...]
    spike: bool


_BOXES = {"todo": " ", "done": "x", "skipped": "~"}
titles = st.text(alphabet="abcdefghij KLMNOP.,-_/", min_size=1, max_size=20).filter(
    lambda s: s.strip().strip(":—–-").strip() != "" and "  " not in s
)
files = st.lists(
    st.sampled_from(["a.py", "src/b.py", "c/d/e.ts", "README.md", "x_y.py"]), max_size=3
)


@st.composite
def plans(draw: st.DrawFn) -> tuple[str, list[Spec]]:
    n = draw(st.integers(min_value=1, max_value=12))
    specs = [
        Spec(
            status=draw(st.sampled_from(list(_BOXES))),
            title=draw(titles).strip().strip(":—–-").strip(),
            blockers=tuple(dict.fromkeys(draw(st.lists(st.integers(1, n), max_size=3)))),
            files=tuple(dict.fromkeys(draw(files))),
            spike=draw(st.booleans()),
        )
        for _ in range(n)
    ]
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    out = ["# Plan", "", "## Spec Gaps", "- [ ] `specs/a.md`: retry policy unspecified", ""]
    out += ["## Tasks", ""]
    for i, spec in enumerate(specs, start=1):
        if draw(st.booleans()):
            out += [f"### spec-{i}", ""]
        tag = " [SPIKE]" if spec.spike else ""
        done = f" ✓ ({i:07x})" if spec.status == "done" else ""
        out.append(f"- [{_BOXES[spec.status]}] **T{i}**{tag}: {spec.title}{done}")
        if spec.files:
            out.append(f"  - Files: {', '.join(spec.files)}")
        blockers = ", ".join(f"T{b}" for b in spec.blockers) or "none"
        out.append(f"  - Blocked by: {blockers}")
        if draw(st.booleans()):
            out.append("  Some free text about the task.")
        if draw(st.booleans()):
            out.append("")
    return eol.join(out) + eol, specs


@settings(max_examples=100, deadline=None)
@given(plans())
def test_parse_recovers_what_was_written(generated: tuple[str, list[Spec]]) -> None:
    text, specs = generated
    plan = parse(text)
    assert [t.id for t in plan.tasks] == [f"T{i}" for i in range(1, len(specs) + 1)]
    for task, spec in zip(plan.tasks, specs, strict=True):
        assert task.status == spec.status
        assert task.title == spec.title
        assert task.files == spec.files
        assert task.blocked_by == tuple(f"T{b}" for b in spec.blockers)
        assert task.spike == spec.spike
        assert text.split("\n")[task.line - 1].rstrip("\r").startswith("- [")
    # Only cycles can be wrong in a generated plan.
    assert all(p.message.startswith("dependency cycle") for p in plan.problems)


@settings(max_examples=100, deadline=None)
@given(plans(), st.data())
def test_tick_changes_exactly_the_task_line(generated: tuple[str, list[Spec]], data: Any) -> None:
    text, specs = generated
    index = data.draw(st.integers(1, len(specs)))
    task_id = f"T{index}"
    ticked = tick(text, task_id, "abc1234")
    before, after = text.split("\n"), ticked.split("\n")
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    line = parse(text).get(task_id)
    assert line is not None
    assert changed == [line.line - 1]
    assert after[line.line - 1].endswith(" ✓ (abc1234)" + ("\r" if "\r\n" in text else ""))
    again = parse(ticked)
    done = again.get(task_id)
    assert done is not None
    assert (done.status, done.commit, done.title) == ("done", "abc1234", specs[index - 1].title)
    others = [t for t in again.tasks if t.id != task_id]
    assert others == [t for t in parse(text).tasks if t.id != task_id]
    assert tick(ticked, task_id, "abc1234") == ticked  # idempotent


def _check_pick(plan: Plan) -> None:
    done = {t.id for t in plan.tasks if t.status == "done"}
    chosen = pick(plan)
    pending = plan.pending
    if chosen.kind == "complete":
        assert pending == ()
        return
    assert pending != ()
    if chosen.kind == "task":
        assert chosen.task is not None
        assert chosen.task.status == "todo"
        assert set(chosen.task.blocked_by) <= done
        earlier = pending[: pending.index(chosen.task)]
        assert all(not set(t.blocked_by) <= done for t in earlier)
    else:
        assert chosen.task is None
        assert [t for t, _ in chosen.blocked] == list(pending)
        for task, unfinished in chosen.blocked:
            assert unfinished
            assert unfinished == tuple(b for b in task.blocked_by if b not in done)


@settings(max_examples=100, deadline=None)
@given(plans())
def test_pick_never_returns_a_task_with_an_unfinished_blocker(
    generated: tuple[str, list[Spec]],
) -> None:
    _check_pick(parse(generated[0]))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=30),
            st.sampled_from(
                [
                    "- [ ] **T1**: a",
                    "- [x] **T2**: b ✓ (abc1234)",
                    "  - Blocked by: T1, T2",
                    "  - Blocked by: ???",
                    "  - Files:",
                    "    - a.py",
                    "## Spec Gaps",
                    "### spec",
                    "```",
                    "- [~] **T1**:",
                    "\ufeff",
                    "",
                ]
            ),
        ),
        max_size=20,
    ),
    st.sampled_from(["\n", "\r\n"]),
)
def test_parse_never_raises(parts: list[str], eol: str) -> None:
    text = eol.join(parts)
    plan = parse(text)
    n_lines = max(1, len(text.split("\n")))
    assert all(1 <= p.line <= n_lines for p in plan.problems)
    _check_pick(plan)
    for task in plan.tasks:
        ticked = tick(text, task.id, "abc1234")
        assert len(ticked.split("\n")) == len(text.split("\n"))
