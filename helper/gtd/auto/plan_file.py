"""The PLAN.md edge: read it from the repository root and turn every way that can
fail into an InputError the CLI prints as one clear message."""

from __future__ import annotations

from pathlib import Path

from gtd.auto.plan import Plan, parse
from gtd.errors import InputError
from gtd.fsio import read_bytes
from gtd.paths import PLAN

_MISSING_HINT = "write a plan first: /gtd:auto plans one, or see the PLAN.md format skill"


def read(root: Path) -> str:
    """The text of ``root/PLAN.md`` exactly as stored. Bytes are decoded without
    newline translation and the BOM is kept, so a tick written back changes only
    the ticked line (plan.parse and plan_tick.tick both tolerate the BOM)."""
    path = root / PLAN
    try:
        data = read_bytes(path)  # a named pipe there must not block the loop
    except FileNotFoundError:
        raise InputError(PLAN, "not found", hint=_MISSING_HINT) from None
    except IsADirectoryError:
        raise InputError(PLAN, "is a directory, not a file") from None
    except OSError as exc:
        raise InputError(PLAN, f"cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            PLAN,
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            line=line,
            hint="save the file as UTF-8",
        ) from None


def load(root: Path) -> tuple[str, Plan]:
    """The stored text and its parsed plan, problems included (for `gtd plan check`)."""
    text = read(root)
    return text, parse(text)


def load_valid(root: Path) -> tuple[str, Plan]:
    """Like load, but a plan with any problem is an InputError listing all of them,
    one ``PLAN.md:<line>: <message>`` per line, so the author can fix them at once."""
    text, plan = load(root)
    if plan.problems:
        first, *rest = plan.problems
        message = first.message + "".join(f"\n{PLAN}:{p.line}: {p.message}" for p in rest)
        raise InputError(
            PLAN,
            message,
            line=first.line,
            hint="fix PLAN.md, then run `gtd plan check`",
        )
    return text, plan
