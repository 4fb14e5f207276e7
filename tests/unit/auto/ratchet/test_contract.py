"""The plugin and the helper read one contract: the same file, the same names, the
same vocabulary in the same order."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gtd.auto.ratchet import contract, model, pytest_report, results


@pytest.fixture(scope="module")
def plugin() -> ModuleType:
    """The plugin loaded the way its entry point loads it: by path, under its own
    name, outside the gtd package."""
    spec = importlib.util.spec_from_file_location("gtd_ratchet_report", pytest_report.__file__)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "gtd_ratchet_report" not in sys.modules
    return module


def test_the_plugin_loads_the_contract_file_the_helper_imports(plugin: ModuleType) -> None:
    assert Path(plugin.C.__file__) == Path(contract.__file__)
    assert plugin.C is not contract  # its own load: it cannot import gtd
    names = [n for n in vars(contract) if n.isupper()]
    assert names
    assert {n: getattr(plugin.C, n) for n in names} == {n: getattr(contract, n) for n in names}


def test_the_contract_imports_nothing() -> None:
    import ast

    tree = ast.parse(Path(contract.__file__).read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]


def test_outcomes_kinds_and_ranks_agree() -> None:
    assert model.OUTCOMES == contract.OUTCOMES
    assert results.ITEM_KINDS == contract.ITEM_KINDS
    assert [model.rank(o) for o in model.OUTCOMES] == list(range(len(model.OUTCOMES)))


def test_the_plugin_without_settings_does_nothing(plugin: ModuleType) -> None:
    # Not started by the helper (the environment names no settings): no state, no
    # import watch, nothing registered at configure.
    assert plugin._STATE is None
    assert not [f for f in sys.meta_path if type(f).__name__ == "ImportWatch"]
