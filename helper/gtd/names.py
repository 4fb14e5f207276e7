"""File names that are not UTF-8. git's output is read byte for byte (see
``proc.run(names=True)``): a byte that is not UTF-8 becomes the lone surrogate
U+DC80..U+DCFF that ``os.fsdecode`` makes of it, so the name handed back to git or
to the os functions names the same file again. Such a str cannot be encoded as
UTF-8 as it is; whatever the helper writes or prints goes through one of these."""

from __future__ import annotations

# Each byte 0x80..0xff that was not UTF-8, shown as Python and `git -c
# core.quotePath` people read it: \xe9. In JSON text the backslash is escaped.
_SHOWN = {0xDC00 + byte: f"\\x{byte:02x}" for byte in range(0x80, 0x100)}
_SHOWN_IN_JSON = {code: "\\" + shown for code, shown in _SHOWN.items()}


def readable(text: str) -> str:
    """``text`` for people: each byte that was not UTF-8 as ``\\xNN``."""
    return text if _encodes(text) else _rest(text.translate(_SHOWN))


def readable_json(text: str) -> str:
    """JSON text (``ensure_ascii=False``) for people and tools: a byte that was not
    UTF-8, inside a string, becomes the four characters ``\\xNN`` of that string."""
    return text if _encodes(text) else _rest(text.translate(_SHOWN_IN_JSON))


# Every character that ends a line for some reader (a model reading `key: value`
# lines included) or moves the cursor: C0 and C1 controls, DEL, and Unicode's line
# and paragraph separators.
_BREAKS = {
    **{code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))},
    0x09: "\\t",
    0x0A: "\\n",
    0x0D: "\\r",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def one_line(text: str) -> str:
    """``text`` kept on one line: each control character or line separator as its
    escape (``\\n``, ``\\x1b``). A file name or test id the agent chose reaches
    the answers the loop reads as ``key: value`` lines; with a line break in it,
    it would add lines of its own (``status: complete``)."""
    return text.translate(_BREAKS)


_TERMINAL = {code: shown for code, shown in _BREAKS.items() if code not in (0x09, 0x0A)}


def for_terminal(text: str) -> str:
    """``text`` with its lines and tabs kept and every other control character
    escaped: a file name the agent chose, printed in a person's terminal, cannot
    move the cursor, clear the screen or rewrite a line already shown
    (``\\x1b[2J``, a carriage return)."""
    return text.translate(_TERMINAL)


def json_bytes(text: str) -> bytes:
    """JSON text the helper reads back (state, records) as UTF-8: a lone surrogate
    is written as its ``\\udcNN`` escape, which ``json.loads`` turns into the very
    same str (the name of the same file). Anything else is unchanged."""
    return text.encode("utf-8", "backslashreplace")


def unsafe_name(rel: str) -> str | None:
    """Why ``rel``, a repository-relative name from git's output, names no file of
    the working tree a tool may act on (a few words); None when it may.

    git checks no hash of a folder's tree object it reads, so a forged one can list
    any name, and git's diffs and listings then carry it: ``inventory/../build``
    is a person's ignored folder, ``inventory/../../x`` a file beside the
    repository, ``x/.git/config`` a repository's own files. git itself never
    records such a name (nor an absolute one, nor an empty component). One slash at
    the end is git's mark of a folder in its listings (`status`, `ls-files
    --directory`)."""
    if not rel or rel.startswith("/"):
        return "not a relative path"
    for part in rel.removesuffix("/").split("/"):
        if part in (".", ".."):
            return f"a {part!r} component"
        if not part:
            return "an empty component"
        if part.lower() == ".git":
            return "inside a git directory"
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _rest(text: str) -> str:
    """Any other lone surrogate (not one of git's bytes) as its ``\\udNNN`` escape,
    valid in JSON and visible in text."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
