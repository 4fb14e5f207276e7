"""gtd: the deterministic half of the gtd pack (auto mode and step mode)."""

from __future__ import annotations

import sys

__version__ = "0.1.0"


def _pathlib_without_urllib() -> None:
    """Import pathlib without ``urllib.parse`` (and the ``ipaddress`` it imports):
    10.5 M instructions, ~6 ms on the reference machine, in every process of the
    helper (`cycle begin` each tick, the hook on each tool call, `ratchet run`
    before its tests can start), for the one function pathlib takes from it,
    used only by ``Path.as_uri``. pathlib binds a stand-in that loads the real
    module on first use; the stand-in leaves ``sys.modules`` at once, so any
    later ``import urllib.parse`` loads the real one as usual. Nothing is done
    where either is loaded already (inside pytest, say)."""
    modules = sys.modules
    if "pathlib" in modules or "urllib.parse" in modules:
        return
    stand_in = type(sys)("urllib.parse")

    def quote_from_bytes(bs: bytes, safe: str = "/") -> str:
        from urllib.parse import quote_from_bytes as real

        return real(bs, safe)

    stand_in.quote_from_bytes = quote_from_bytes  # type: ignore[attr-defined]
    modules["urllib.parse"] = stand_in
    try:
        import pathlib  # noqa: F401
    finally:
        if modules.get("urllib.parse") is stand_in:
            del modules["urllib.parse"]


def _held_run_first() -> None:
    """`gtd ratchet run` starts its test process here, before the package loads
    anything else (gtd.auto.ratchet.early): ~60 ms sooner on the reference
    machine, all of it off the ratchet's overhead. One look at ``sys.argv`` for
    every other command and every other importer."""
    argv: list[str] = getattr(sys, "argv", [])
    if len(argv) > 2 and argv[1] == "ratchet" and argv[2] == "run":
        from gtd.auto.ratchet import early

        if early.wanted(argv, getattr(sys, "orig_argv", [])):
            early.start()


_held_run_first()
_pathlib_without_urllib()
