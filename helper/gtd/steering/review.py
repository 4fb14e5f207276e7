"""The checkbox review format of ``.gtd/REVIEW.md``, as values. Pure: text in, values
out.

The format (gtd 3.0 notes, "Steering-file formats")::

    # Review: <short-hash>

    <!-- base: <hash> -->

    ## <Chunk title>

    What this chunk changes and why.

    - [ ] ./path/to/file.py#42 — note
    - [x] ./other/file.py

- The first non-blank line is ``# Review: <hash>``.
- A ``<!-- base: <hash> -->`` line appears somewhere.
- At least one ``## <title>`` chunk, with a non-empty title; a chunk runs to the
  next heading of level 1 or 2.
- Every chunk has at least one pointer, and every line in a chunk that looks like
  a checkbox item (``- [ ]``, ``* [x]``, ``- []``...) must be a pointer of the exact
  shape ``- [ ] ./path#line — note``:
  ``^-\\s*\\[([ xX])\\]\\s*(\\./\\S+?)(?:#(\\d+))?(?:\\s*[—-]+\\s*(.*))?$``
  (matched against the line without its indentation).

Which lines are pointers is decided by that expression alone. What a pointer's
path is, is read more carefully than the expression's lazy group would: the path
is the whole whitespace-delimited token after the box, so ``./gen-docs.py#3`` is
the file ``./gen-docs.py``, line 3, not ``./gen`` with the note ``docs.py#3``.
An em dash glued to the token (``./a.py—note``) still separates the note.

Headings, pointers and the header inside fenced code blocks are examples, not
structure. This module and its unit tests are the format's specification;
``gtd validate`` and the language server both call :func:`parse_review`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gtd.steering.findings import FenceTracker, Finding, heading, split_lines

HEADER = re.compile(r"^#\s+Review:\s*(\S+)\s*$")
BASE = re.compile(r"^<!--\s*base:\s*(\S+)\s*-->$")
POINTER = re.compile(r"^-\s*\[([ xX])\]\s*(\./\S+?)(?:#(\d+))?(?:\s*[—-]+\s*(.*))?$")
# Anything a human or agent meant as a checkbox item: a list marker and a box of
# at most one character. ``- [a link](x)`` is prose, not an attempt at a pointer.
_CHECKBOX_LIKE = re.compile(r"^[-*+]\s*\[[^\]]?\]")
_TOKEN_LINE = re.compile(r"^(.*)#(\d+)$")
_NOTE_DASH = re.compile(r"^[—-]+\s*")


@dataclass(frozen=True)
class Pointer:
    path: str  # as written, "./"-relative
    line: int | None  # the ``#line`` the pointer names, if any
    note: str | None
    ticked: bool
    source_line: int  # where the pointer is in REVIEW.md, 1-based
    box: int  # 0-based column of the character inside ``[ ]`` on that line


@dataclass(frozen=True)
class Chunk:
    title: str
    line: int  # the ``##`` heading, 1-based
    end_line: int  # the chunk's last line, 1-based
    pointers: tuple[Pointer, ...]
    description: str

    @property
    def ticked(self) -> bool:
        return bool(self.pointers) and all(p.ticked for p in self.pointers)


@dataclass(frozen=True)
class ReviewDoc:
    short_hash: str | None
    base: str | None
    chunks: tuple[Chunk, ...]
    findings: tuple[Finding, ...]

    @property
    def valid(self) -> bool:
        return not self.findings

    @property
    def pointers(self) -> tuple[Pointer, ...]:
        return tuple(p for c in self.chunks for p in c.pointers)

    @property
    def unticked(self) -> tuple[Pointer, ...]:
        return tuple(p for p in self.pointers if not p.ticked)

    def chunk_at(self, line: int) -> Chunk | None:
        """The chunk whose heading or body holds ``line`` (1-based)."""
        for chunk in self.chunks:
            if chunk.line <= line <= chunk.end_line:
                return chunk
        return None

    def pointer_at(self, line: int) -> Pointer | None:
        for pointer in self.pointers:
            if pointer.source_line == line:
                return pointer
        return None


def _pointer(line: str, number: int) -> Pointer | None:
    body = line.strip()
    match = POINTER.match(body)
    if match is None:
        return None
    indent = len(line) - len(line.lstrip())
    rest = body[body.index("]") + 1 :].lstrip()
    parts = rest.split(None, 1)
    token, note = parts[0], parts[1] if len(parts) > 1 else ""
    cut = token.find("—", 3)
    if cut > 0:
        token, note = token[:cut], f"{token[cut:]} {note}"
    number_match = _TOKEN_LINE.match(token)
    path = number_match.group(1) if number_match and len(number_match.group(1)) > 2 else token
    pointed = int(number_match.group(2)) if number_match and path != token else None
    note = _NOTE_DASH.sub("", note.strip()).strip()
    return Pointer(
        path=path,
        line=pointed,
        note=note or None,
        ticked=match.group(1) != " ",
        source_line=number,
        box=indent + body.index("[") + 1,
    )


def _malformed(line: str, number: int) -> Finding:
    """Why a checkbox-like line in a chunk is not a pointer, spanning the line."""
    body = line.strip()
    indent = len(line) - len(line.lstrip())

    def finding(message: str) -> Finding:
        return Finding(number, message, start=indent, end=indent + len(body))

    if not body.startswith("-"):
        return finding("a pointer starts with '- ' (a hyphen), not '*' or '+'")
    box = body[body.index("[") : body.index("]") + 1]
    if box not in ("[ ]", "[x]", "[X]"):
        return finding(f"checkbox '{box}' must be '[ ]' or '[x]'")
    rest = body[body.index("]") + 1 :].strip()
    if not rest:
        return finding("pointer has no path: write '- [ ] ./path/to/file#line — note'")
    token = rest.split()[0]
    if not token.startswith("./") or token == "./":
        return finding(f"pointer path '{token}' must start with './' (relative to the repo root)")
    return finding("malformed pointer: after the path only '#<line>' and '— <note>' may follow")


@dataclass
class _Open:
    title: str
    line: int
    last: int
    pointers: list[Pointer]
    prose: list[str]


def parse_review(text: str) -> ReviewDoc:
    """Parse REVIEW.md. Total: any text gives a result, never an exception."""
    lines = split_lines(text)
    findings: list[Finding] = []
    chunks: list[Chunk] = []

    short_hash: str | None = None
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        findings.append(Finding(1, "REVIEW.md is empty: the first line must be '# Review: <hash>'"))
    else:
        header = HEADER.match(lines[first].strip())
        if header is None:
            findings.append(
                Finding(
                    first + 1,
                    "the first line must be '# Review: <hash>'",
                    start=0,
                    end=len(lines[first]),
                )
            )
        else:
            short_hash = header.group(1)

    fences = FenceTracker()
    base: str | None = None
    current: _Open | None = None

    def close(c: _Open | None) -> None:
        if c is None:
            return
        if not c.pointers:
            findings.append(
                Finding(
                    c.line,
                    f"chunk '{c.title}' has no pointer: add '- [ ] ./path/to/file#line — note'",
                )
            )
        chunks.append(Chunk(c.title, c.line, c.last, tuple(c.pointers), " ".join(c.prose)))

    for index, line in enumerate(lines):
        number = index + 1
        if fences.step(line):
            if current is not None:
                current.last = number
            continue
        stripped = line.strip()
        if base is None and stripped.startswith("<!--"):
            found_base = BASE.match(stripped)
            if found_base:
                base = found_base.group(1)
                continue
        found = heading(line)
        if found is not None and found[0] <= 2:
            close(current)
            current = None
            level, title = found
            if level == 2:
                if title:
                    current = _Open(title, number, number, [], [])
                else:
                    findings.append(
                        Finding(number, "chunk heading '##' has no title", start=0, end=len(line))
                    )
            continue
        if not stripped:
            continue
        if current is not None:
            current.last = number
        if stripped[0] in "-*+" and _CHECKBOX_LIKE.match(stripped):
            pointer = _pointer(line, number)
            if pointer is None:
                findings.append(_malformed(line, number))
            elif current is None:
                findings.append(
                    Finding(
                        number,
                        "pointer outside any '##' chunk is never reviewed: move it under a chunk",
                        severity="warning",
                        start=0,
                        end=len(line),
                    )
                )
            else:
                current.pointers.append(pointer)
        elif current is not None:
            current.prose.append(stripped)
    close(current)

    if base is None:
        findings.append(
            Finding(first + 1 if first is not None else 1, "missing '<!-- base: <hash> -->' line")
        )
    if not chunks:
        findings.append(
            Finding(
                first + 1 if first is not None else 1,
                "no '## <title>' chunk: a review has at least one chunk with pointers",
            )
        )
    findings.sort(key=lambda f: f.line)
    return ReviewDoc(short_hash, base, tuple(chunks), tuple(findings))


@dataclass(frozen=True)
class BoxEdit:
    """Replace the one character inside a pointer's ``[ ]`` at (line, column)."""

    line: int  # 1-based
    column: int  # 0-based
    text: str  # "x" or " "


@dataclass(frozen=True)
class ToggleAction:
    title: str
    edits: tuple[BoxEdit, ...]


def _label(pointer: Pointer) -> str:
    return pointer.path if pointer.line is None else f"{pointer.path}#{pointer.line}"


def toggle_actions(doc: ReviewDoc, line: int) -> tuple[ToggleAction, ...]:
    """The tick/untick actions offered at ``line`` (1-based): the pointer on that
    line, if any, and the whole chunk around it — ticking every unticked pointer,
    or unticking all when every one is already ticked."""
    actions: list[ToggleAction] = []
    pointer = doc.pointer_at(line)
    if pointer is not None:
        verb, mark = ("Untick", " ") if pointer.ticked else ("Tick", "x")
        edit = BoxEdit(pointer.source_line, pointer.box, mark)
        actions.append(ToggleAction(f"{verb} {_label(pointer)}", (edit,)))
    chunk = doc.chunk_at(line)
    if chunk is not None and chunk.pointers:
        if chunk.ticked:
            title, mark, targets = f"Untick all in '{chunk.title}'", " ", chunk.pointers
        else:
            unticked = tuple(p for p in chunk.pointers if not p.ticked)
            title, mark, targets = f"Tick all in '{chunk.title}'", "x", unticked
        edits = tuple(BoxEdit(p.source_line, p.box, mark) for p in targets)
        actions.append(ToggleAction(title, edits))
    return tuple(actions)
