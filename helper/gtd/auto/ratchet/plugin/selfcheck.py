"""The plugin's check of its own code.

The code under test runs in this process and can find the plugin (its modules
hold the records) and take its checks apart before it changes what the tests
read: a method of a record class replaced, a function of a module rebound,
the code of one of its functions swapped. Every module's names, its classes'
own entries and its functions' code and defaults are taken once the plugin is
made, and compared first thing at the session's end; the check's own helpers
are bound in its closure, and it is reached through a name of the recorder's
class, which the identities watch. Code that takes this check apart too, and
the identities with it, is beyond it (docs/threat-model.md, "What it cannot
guarantee")."""

from __future__ import annotations

from operator import is_ as _is
from types import FunctionType
from typing import TYPE_CHECKING, Any

from .shapes import _function_state
from .terms import MISSING as _MISSING

if TYPE_CHECKING:
    from collections.abc import Callable


def made(
    modules: list[tuple[dict[str, Any], str]], owner: type
) -> Callable[[], list[tuple[str, str]]]:
    """The check over ``modules`` (each: its namespace, its module name), set as
    ``owner._own_check`` before anything is taken (so that name is taken too).
    Names are reported as the plugin's, whichever part holds them (the
    baseline's evidence names them so too)."""
    missing = _MISSING
    same = _is
    state_of = _function_state

    def _own_check() -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for here, first in spaces:
            out += [(k, "rebound") for k, v in first.items() if here.get(k, missing) is not v]
            out += [(k, "added") for k in list(here) if k not in first]
        for label, (cls, entries) in classes.items():
            now = vars(cls)
            out += [
                (f"{label}.{k}", "rebound")
                for k, v in entries.items()
                if now.get(k, missing) is not v
            ]
            out += [(f"{label}.{k}", "added") for k in list(now) if k not in entries]
        for function, state in zip(functions, states):  # noqa: B905 (3.7's zip)
            if not all(map(same, state_of(function), state)):
                out.append((function.__qualname__, "its code or defaults replaced"))
        return out

    owner._own_check = staticmethod(_own_check)  # type: ignore[attr-defined]
    spaces = [(here, dict(here)) for here, _ in modules]
    classes: dict[str, tuple[type, dict[str, object]]] = {}
    functions: list[Any] = []
    for (_, first), (_, name) in zip(spaces, modules):  # noqa: B905
        for k, v in first.items():
            if isinstance(v, type) and v.__module__ == name:
                classes[k] = (v, dict(vars(v)))
            elif type(v) is FunctionType and v.__module__ == name:
                functions.append(v)
    for _, entries in classes.values():
        for value in entries.values():
            if type(value) is FunctionType:
                # (most entries: a plain method, taken as it is; the getattr below
                # would raise and catch AttributeError twice for each, ~0.5 M
                # instructions a run)
                functions.append(value)
                continue
            inner = getattr(value, "__func__", None) or getattr(value, "fget", None) or value
            if type(inner) is FunctionType:
                functions.append(inner)
    functions.append(_own_check)
    states = [state_of(function) for function in functions]
    return _own_check
