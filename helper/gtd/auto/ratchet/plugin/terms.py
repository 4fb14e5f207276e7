"""The contract's names, as the plugin reads them: contract.py beside the plugin,
loaded by path (the plugin cannot import gtd), and the sentinel every part
compares with."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any


def _load_contract() -> Any:
    """contract.py from the folder above this part's: the same names the helper
    imports."""
    import importlib.util

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location(
        "gtd_ratchet_contract", os.path.join(here, "contract.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:  # the type checker reads the helper's module; pytest, the file
    from gtd.auto.ratchet import contract as C
else:
    C = _load_contract()

MISSING = object()  # "no such entry", where None is a value

__all__ = ["MISSING", "C"]
