"""The plugin is its entry point and the parts beside it: every part is loaded,
under a private package name, and the plugin's check of its own code covers
each of them. The entry point's code (plugin/entry.py) runs in the entry
module's namespace, whose file holds no literal hypothesis collects."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gtd.auto.ratchet import pytest_report

FOLDER = Path(pytest_report.__file__).parent / "plugin"
# entry.py: the entry module's own code, run in its namespace, not a part
PARTS = sorted(p.stem for p in FOLDER.glob("*.py") if p.stem not in ("__init__", "entry"))


@pytest.fixture
def plugin() -> ModuleType:
    """The plugin loaded the way its entry point loads it: by path."""
    spec = importlib.util.spec_from_file_location("gtd_ratchet_report", pytest_report.__file__)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_part_is_loaded_under_the_private_package(plugin: ModuleType) -> None:
    assert sorted(plugin._PARTS) == PARTS
    for part in PARTS:
        module = plugin._LOADED[part]
        assert module.__name__ == f"_gtd_ratchet_plugin.{part}"
        assert Path(module.__spec__.origin) == FOLDER / f"{part}.py"
        # No file once loaded: hypothesis takes the literals of every module with
        # a file outside site-packages for the project's own and draws from them.
        assert not hasattr(module, "__file__")
    assert plugin.Recorder.__module__ == "_gtd_ratchet_plugin.recorder"
    assert "_gtd_ratchet_plugin" not in sys.modules  # no package module: no folder to search


@pytest.mark.parametrize("part", PARTS)
def test_the_own_check_sees_a_name_added_or_rebound_in_any_part(
    plugin: ModuleType, part: str
) -> None:
    check = plugin.Recorder._own_check
    assert check() == []
    namespace = vars(plugin._LOADED[part])
    key = next(k for k in namespace if not k.startswith("__"))
    kept = namespace[key]
    namespace[key] = object()
    namespace["_rt_added"] = 1
    try:
        assert {(key, "rebound"), ("_rt_added", "added")} <= set(check())
    finally:
        namespace[key] = kept
        del namespace["_rt_added"]
    assert check() == []


def test_the_own_check_sees_a_method_or_its_code_replaced_in_a_part(plugin: ModuleType) -> None:
    check = plugin.Recorder._own_check
    values = type(plugin._VALUES)
    changed = values.changed
    code = changed.__code__
    try:
        values.changed = lambda self: []
        assert ("Values.changed", "rebound") in check()
        values.changed = changed
        changed.__code__ = (lambda self: []).__code__
        assert ("Values.changed", "its code or defaults replaced") in check()
    finally:
        changed.__code__ = code
        values.changed = changed
    assert check() == []


def test_hypothesis_takes_no_literal_from_the_entry_module(plugin: ModuleType) -> None:
    """The entry module keeps its file (the baseline records it as the plugin's),
    so hypothesis reads it as the project's own code where the helper is not
    under site-packages: asked as hypothesis asks, it holds no literal."""
    constants_ast = pytest.importorskip("hypothesis.internal.constants_ast")
    assert plugin.__file__ == pytest_report.__file__
    assert constants_ast.is_local_module_file(plugin.__file__)  # (an editable checkout)
    assert len(constants_ast.constants_from_module(plugin)) == 0
    # ... and its code, with its literals, is where hypothesis does not look.
    body = (FOLDER / "entry.py").read_text(encoding="utf-8")
    assert len(constants_ast._constants_from_source(body, limit=True)) > 20
    assert plugin.pytest_configure.__code__.co_filename == str(FOLDER / "entry.py")
    assert plugin.pytest_configure.__module__ == plugin.__name__
    assert all(
        getattr(m, "__file__", None) != str(FOLDER / "entry.py") for m in sys.modules.values()
    )
