"""The suite's property tests keep the loaded-machine profile of tests/conftest.py:
no deadline and no `too_slow` health check. A test's own `@settings` inherits
both, unless it names them: an explicit `suppress_health_check` list replaces the
profile's (it does not add to it), and an explicit deadline replaces None."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def _settings_calls() -> list[tuple[str, ast.Call]]:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "settings(" not in text and "register_profile(" not in text:
            continue  # parsed only where a call can be (the whole suite: ~2.5 s)
        tree = ast.parse(text, str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else None
            name = node.func.id if isinstance(node.func, ast.Name) else name
            if name in ("settings", "register_profile"):
                found.append((f"{path.relative_to(TESTS.parent)}:{node.lineno}", node))
    return found


def _problems(call: ast.Call) -> list[str]:
    problems = []
    for keyword in call.keywords:
        if keyword.arg == "deadline" and not (
            isinstance(keyword.value, ast.Constant) and keyword.value.value is None
        ):
            problems.append("a deadline other than None")
        if keyword.arg == "suppress_health_check":
            names = {n.attr for n in ast.walk(keyword.value) if isinstance(n, ast.Attribute)} | {
                n.id for n in ast.walk(keyword.value) if isinstance(n, ast.Name)
            }
            if "too_slow" not in names and "all" not in names:
                problems.append("a suppress_health_check list without too_slow")
    return problems


def test_no_property_test_brings_back_a_deadline_or_the_too_slow_check() -> None:
    calls = _settings_calls()
    assert len(calls) > 10  # the walk finds the suite's settings
    found = [f"{where}: {p}" for where, call in calls for p in _problems(call)]
    assert found == []


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("settings(deadline=200)", "a deadline other than None"),
        (
            "settings(suppress_health_check=[HealthCheck.function_scoped_fixture])",
            "a suppress_health_check list without too_slow",
        ),
    ],
)
def test_the_check_finds_what_it_looks_for(source: str, problem: str) -> None:
    call = ast.parse(source, mode="eval").body
    assert isinstance(call, ast.Call)
    assert _problems(call) == [problem]
    fixed = source.replace("deadline=200", "deadline=None").replace(
        "function_scoped_fixture]", "function_scoped_fixture, HealthCheck.too_slow]"
    )
    fixed_call = ast.parse(fixed, mode="eval").body
    assert isinstance(fixed_call, ast.Call)
    assert _problems(fixed_call) == []
