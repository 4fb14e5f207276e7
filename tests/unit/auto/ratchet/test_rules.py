"""The implementer's rules live in one place: every protected category the code
decides has words, every name the code protects is in the words of its category,
the briefs render them, and the agent definition points to them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from gtd.auto import brief
from gtd.auto.plan import Task
from gtd.auto.ratchet import invocation, protect, rules, sections
from gtd.auto.ratchet.rules import Category
from gtd.templates import template


def _categories() -> tuple[Category, ...]:
    """The names of the Category Literal, read from the source: the type checker
    alone sees the Literal (under TYPE_CHECKING), and no list of them exists at run time."""
    tree = ast.parse(Path(rules.__file__).read_text(encoding="utf-8"))
    literal = next(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["Category"]
        and isinstance(node.value, ast.Subscript)
    )
    assert isinstance(literal.slice, ast.Tuple)
    return tuple(ast.literal_eval(element) for element in literal.slice.elts)


CATEGORIES = _categories()

ROOT = Path(__file__).resolve().parents[4]


def code_names() -> dict[Category, set[str]]:
    """What the code protects, per category, as the words must spell it."""

    def ini(names: tuple[str, ...]) -> set[str]:
        return {f"[{n}]" for n in names}

    return {
        "plan": {"PLAN.md", ".deepflow/", "config.yaml"},
        "conftest": {protect.CONFTEST},
        "pytest-config": {
            *protect.PYTEST_FILES,
            *sections.PYPROJECT_PYTEST,
            *(s for names in sections.INI_PYTEST.values() for s in ini(names)),
            *sections.INI_PYTEST,  # the files those sections are in
            "pyproject.toml",
        },
        "js-config": {
            *(p + "*" for p in protect.JS_CONFIG_PREFIXES),
            *sections.PACKAGE_TEST_KEYS,
            "package.json",
        },
        "task-runner": {
            *protect.RUNNER_FILES_TOP,
            *protect.MAKE_FILES,
            "*" + protect.MAKE_SUFFIX,
            *(s for names in sections.INI_TOX.values() for s in ini(names)),
            *sections.runner_table_names(),
            *sections.PACKAGE_RUNNER_KEYS,
        },
        "shared-config": set(protect.SHARED_FILES),
        "test-folder": {f"{d}/" for d in (*protect.TEST_DIRS, *protect.TOP_TEST_DIRS)},
        "named": set(invocation.CONFIG_OPTIONS),
        "snapshot-test": {"test_*.py", "doctest"},
        "declared": {"ratchet.protect"},
    }


def spelled(words: str) -> set[str]:
    """The `code spans` of a rule, and its plain words."""
    return set(re.findall(r"`([^`]+)`", words)) | set(re.findall(r"[\w-]+", words))


def test_every_category_has_words_and_a_reason() -> None:
    categories = set(CATEGORIES)
    assert set(rules.WORDS) == categories
    assert set(rules.WHY) == categories
    # (golden data a project declares is told after the others, where it has any)
    assert set(rules.TASK_ORDER) == categories - {"declared"}
    assert set(code_names()) == categories


@pytest.mark.parametrize("category", CATEGORIES)
def test_every_protected_name_is_in_the_words(category: Category) -> None:
    missing = code_names()[category] - spelled(rules.WORDS[category])
    assert not missing, f"{category}: the rules do not mention {sorted(missing)}"


def test_protection_answers_only_with_categories_that_have_words() -> None:
    paths = [
        "PLAN.md", "conftest.py", "pytest.ini", "jest.config.js", "pyproject.toml",
        "Makefile", "run.sh", "tests/data.json", "src/test_x.py",
    ]  # fmt: skip
    got = protection_categories([*paths, "fixtures/new.json"])
    assert got == set(CATEGORIES)


def protection_categories(paths: list[str]) -> set[str]:
    answer = protect.protection(
        paths, ["make", "sh run.sh"], snapshot_tests={"src/test_x.py"}, patterns=["fixtures/"]
    )
    return {p.category for p in answer.values()}


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_task_brief_renders_every_rule() -> None:
    task = Task(
        id="T1", title="mul", status="todo", line=3, files=("calc.py",), blocked_by=(),
        spike=False, spec=None, commit=None, text="- [ ] **T1**: mul",
    )  # fmt: skip
    text = brief.render_task(
        template("brief.md"), cycle=3, task=task, failures=[], learnings=[], test_command="pytest"
    )
    rules_part = _flat(text.split("## Rules", 1)[1])
    for words in (rules.GIT, *(rules.WORDS[c] for c in rules.TASK_ORDER)):
        assert _flat(words) in rules_part
    assert "ratchet.protect" not in rules_part  # told only where a project declares any
    assert "`pytest`" in rules_part
    assert "$" not in text  # every placeholder filled


def test_declared_patterns_are_told_only_where_a_project_has_any() -> None:
    plain = rules.task_rules()
    told = rules.task_rules(("fixtures/", "*.golden"))
    assert "golden data" not in plain
    assert "`fixtures/`, `*.golden` (`ratchet.protect`" in _flat(told)
    assert _flat(plain.split("- Every existing test")[0]) in _flat(told)


def test_the_bootstrap_brief_renders_the_shared_rules() -> None:
    text = brief.render_bootstrap(
        template("brief-bootstrap.md"), cycle=1, files=["calc.py"], test_command="pytest"
    )
    flat = _flat(text)
    assert _flat(rules.GIT) in flat
    assert _flat(rules.WORDS["plan"]) in flat
    assert "$" not in text


def test_rendered_rules_never_break_a_code_span() -> None:
    for line in rules.task_rules().splitlines():
        assert line.count("`") % 2 == 0, line
        assert len(line) <= 80 or " " not in line.strip()[2:], line


def test_the_agent_definition_points_to_the_brief_and_repeats_no_rule() -> None:
    text = (ROOT / "agents/implementer.md").read_text(encoding="utf-8")
    body = text.split("---", 2)[2]
    assert "**Rules**" in body
    repeated = {
        name
        for names in code_names().values()
        for name in names
        # the brief's own path names .deepflow/: that is where to read, not a rule
        if len(name) > 3 and name in body and name not in (".deepflow/", "config.yaml")
    }
    assert not repeated, f"agents/implementer.md repeats the rules: {sorted(repeated)}"
    assert "git commit" not in body
    assert "PLAN.md" not in body


def test_the_templates_hold_no_rule_of_their_own() -> None:
    for name in ("brief.md", "brief-bootstrap.md"):
        text = template(name)
        assert "{{ rules }}" in text
        assert "git commit" not in text, name
        assert "conftest" not in text, name
