"""The contract's names, as the plugin reads them: contract.py beside the plugin,
loaded by path (the plugin cannot import gtd); in_process.py beside it too, the
parts the plugin shares with the unittest runner (the channel back to the
helper, the redirect to the room); and the sentinel every part compares with."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any


def _load(file: str, name: str) -> Any:
    """``file`` from the folder above this part's: contract.py holds the same
    names the helper imports."""
    import importlib.util

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location(name, os.path.join(here, file))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:  # the type checker reads the helper's modules; pytest, the files
    from gtd.auto.ratchet import contract as C
    from gtd.auto.ratchet import in_process as P
else:
    C = _load("contract.py", "gtd_ratchet_contract")
    P = _load("in_process.py", "gtd_ratchet_in_process")

MISSING = object()  # "no such entry", where None is a value

__all__ = ["MISSING", "C", "P"]
