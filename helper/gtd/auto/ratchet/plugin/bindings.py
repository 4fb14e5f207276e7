"""The names a module's own import statements bind, read from its code's raw
instructions: what the values watch checks against what they import."""

from __future__ import annotations

from types import CodeType
from typing import Any


def _ops() -> dict[str, int]:
    import opcode  # (loaded with pytest: inspect imports dis, dis opcode)

    return {k: v for k, v in opcode.opmap.items() if k.isupper()}


_OPS = _ops()
_IMPORT_NAME = _OPS["IMPORT_NAME"]
_IMPORT_FROM = _OPS["IMPORT_FROM"]
_EXTENDED_ARG = _OPS["EXTENDED_ARG"]
_CACHE = _OPS.get("CACHE", -1)  # (3.11 and later: inline caches, zeros in co_code)
_STORES = frozenset(
    _OPS[k] for k in ("STORE_NAME", "STORE_GLOBAL", "DELETE_NAME", "DELETE_GLOBAL") if k in _OPS
)
_SHUFFLES = frozenset(_OPS[k] for k in ("SWAP", "ROT_TWO", "POP_TOP") if k in _OPS)
_LOAD_CONST = _OPS["LOAD_CONST"]
_LOAD_SMALL_INT = _OPS.get("LOAD_SMALL_INT", -1)  # (3.14: an import's level)


def _imported_name(
    statement: tuple[str, int, tuple[str, ...] | None, str | None, str], package: str
) -> tuple[str, str | None] | None:
    """The module an import statement (:func:`_import_bindings`) reads and the
    attribute of it the name is bound to (None: the module itself), relative
    imports resolved against ``package``; None where it cannot be resolved."""
    target, level, fromlist, attribute, _ = statement
    if level:
        parts = package.rsplit(".", level - 1) if package else []
        if len(parts) < level:
            return None
        target = f"{parts[0]}.{target}" if target else parts[0]
    if fromlist is None:  # `import a.b` binds a; `import a.b as c`, a.b
        return (target if attribute else target.partition(".")[0]), None
    return target, attribute


def _import_bindings(
    code: CodeType,
) -> list[tuple[str, int, tuple[str, ...] | None, str | None, str]]:
    """The names a module's own import statements bind at its top level, each
    as (module, level, fromlist, attribute or None, bound name): ``from a import
    b as c`` is ("a", 0, ("b",), "b", "c"), ``import a.b as c`` ("a.b", 0, None,
    "b", "c"), ``import a.b`` ("a.b", 0, None, None, "a"). Only a name nothing
    else at the top level stores or deletes (an ``except ImportError`` fallback
    binds it twice), and none before a ``from m import *``. Read from the raw
    instructions (~10 microseconds a test module; :mod:`dis` takes ~90 for the
    smallest): an instruction this does not know ends the statement unread."""
    raw = code.co_code
    ops = raw[0::2]
    out: list[tuple[str, int, tuple[str, ...] | None, str | None, str]] = []
    at = ops.find(_IMPORT_NAME)
    if at < 0:
        return out
    args: Any = raw[1::2]
    if ops.find(_EXTENDED_ARG) >= 0:  # (past 255 names or constants: rarely)
        args = _wide_args(ops, args)
    names = code.co_names
    stores: dict[str, int] = {}
    for op in _STORES:
        i = ops.find(op)
        while i >= 0:
            key = names[args[i]]
            stores[key] = stores.get(key, 0) + 1
            i = ops.find(op, i + 1)
    consts = code.co_consts
    while at >= 0:
        # (what precedes an IMPORT_NAME: its level, then its fromlist, each a
        # constant; EXTENDED_ARG prefixes of its own or the fromlist's skipped)
        i = at - 1
        while i >= 0 and ops[i] == _EXTENDED_ARG:
            i -= 1
        j = i - 1
        while j >= 0 and ops[j] == _EXTENDED_ARG:
            j -= 1
        if j >= 0 and ops[i] == _LOAD_CONST:
            fromlist = consts[args[i]]
            op = ops[j]
            level = (
                consts[args[j]] if op == _LOAD_CONST else args[j] if op == _LOAD_SMALL_INT else None
            )
            if fromlist == ("*",):
                out.clear()  # it may bind any name again
            elif type(level) is int and (fromlist is None or type(fromlist) is tuple):
                statement = (names[args[at]], level, fromlist)
                _import_statement(ops, args, names, at, statement, stores, out)
        at = ops.find(_IMPORT_NAME, at + 1)
    return out


def _wide_args(ops: bytes, args: bytes) -> list[int]:
    """Each instruction's argument with its EXTENDED_ARG prefixes applied."""
    out = list(args)
    for i in range(1, len(ops)):
        if ops[i - 1] == _EXTENDED_ARG:
            out[i] |= out[i - 1] << 8
    return out


def _import_statement(
    ops: bytes,
    args: Any,
    names: tuple[str, ...],
    at: int,
    statement: tuple[str, int, tuple[str, ...] | None],
    stores: dict[str, int],
    out: list[tuple[str, int, tuple[str, ...] | None, str | None, str]],
) -> None:
    """The names one import statement (its IMPORT_NAME at ``at``) binds, into
    ``out``: what follows is IMPORT_FROM and a store per name (``from``), a store
    (``import a.b``) or IMPORT_FROMs with shuffles and a store (``import a.b.c as
    d``)."""
    target, level, fromlist = statement
    attribute: str | None = None
    end = len(ops)
    i = at + 1
    while i < end:
        op = ops[i]
        if op == _IMPORT_FROM:
            attribute = names[args[i]]
        elif op in _STORES:
            bound = names[args[i]]
            if stores.get(bound) == 1:
                out.append((target, level, fromlist, attribute, bound))
            if fromlist is None:
                return
            attribute = None
        elif op not in (_EXTENDED_ARG, _CACHE) and not (
            fromlist is None and attribute is not None and op in _SHUFFLES
        ):
            return
        i += 1
