"""Type hints without ``import typing`` at run time.

`import typing` costs 11.7 M instructions (~3.7 ms on the reference machine) in
every process that loads it, and the commands that run most often — `gtd cycle
begin` every tick, the pre-tool-use hook on every tool call, `gtd ratchet run`,
measured against the bare test command — need nothing of it at run time. So the
modules they load import typing's names only for the type checker::

    TYPE_CHECKING = False  # typing's own to the type checker (see gtd.hints)
    if TYPE_CHECKING:
        from typing import Any, Literal

        Outcome = Literal["passed", "failed"]
    else:
        Outcome = str  # what other modules import at run time

mypy reads a module's own ``TYPE_CHECKING`` as typing's, and with ``from
__future__ import annotations`` no annotation is evaluated. The one name needed
at run time is :func:`cast`, here. tests/integration/test_fast_imports.py checks that those
commands never load typing."""

from __future__ import annotations

__all__ = ["cast"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import cast
else:

    def cast(_kind: object, value: object) -> object:
        """typing.cast: ``value`` itself, which the type checker takes as ``_kind``."""
        return value
