"""The code that runs inside the user's test interpreter — the reporting plugin,
its contract, the held run's gate and the unittest runner — is written for Python 3.7 and later
(the plugin's docstring), whatever Python the helper itself needs: its grammar
and the few newer calls a helper-side habit would bring in."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gtd.auto.ratchet import gate, unittest_channel

RATCHET = Path(__file__).resolve().parents[2] / "helper" / "gtd" / "auto" / "ratchet"
SOURCES = {
    "pytest_report.py": (RATCHET / "pytest_report.py").read_text(encoding="utf-8"),
    "contract.py": (RATCHET / "contract.py").read_text(encoding="utf-8"),
    "the gate's sitecustomize": gate.SOURCE,
    "unittest_report.py": (RATCHET / "unittest_report.py").read_text(encoding="utf-8"),
    "unittest_guard.py": (RATCHET / "unittest_guard.py").read_text(encoding="utf-8"),
    "in_process.py": (RATCHET / "in_process.py").read_text(encoding="utf-8"),
    "the unittest runner's boot line": unittest_channel.BOOT,
    # the plugin's parts, which it loads beside it
    **{
        f"plugin/{path.name}": path.read_text(encoding="utf-8")
        for path in sorted((RATCHET / "plugin").glob("*.py"))
    },
}
# Methods and keywords of later Pythons: str.removeprefix/removesuffix (3.9),
# zip(strict=) (3.10), int.bit_count (3.10).
NEWER_METHODS = {"removeprefix", "removesuffix", "bit_count"}


@pytest.mark.parametrize("name", list(SOURCES))
def test_the_code_in_the_test_interpreter_is_python_37(name: str) -> None:
    tree = ast.parse(SOURCES[name], feature_version=(3, 7))
    newer = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in NEWER_METHODS:
            newer.append(f"line {node.lineno}: .{func.attr}()")
        strict = any(k.arg == "strict" for k in node.keywords)
        if isinstance(func, ast.Name) and func.id == "zip" and strict:
            newer.append(f"line {node.lineno}: zip(strict=...)")
    assert newer == [], f"{name} uses what Python 3.7 lacks: {newer}"


def test_a_call_python_37_lacks_is_found() -> None:
    """The check above can fail: a source with the newer calls is caught."""
    tree = ast.parse("zip(a, b, strict=True)\n'x'.removeprefix('y')\n", feature_version=(3, 7))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert any(any(k.arg == "strict" for k in c.keywords) for c in calls)
    assert any(isinstance(c.func, ast.Attribute) and c.func.attr in NEWER_METHODS for c in calls)
    with pytest.raises(SyntaxError):
        ast.parse("if (n := 1):\n    pass\n", feature_version=(3, 7))
