"""Tokens from Claude Code's transcripts: what a cycle's turns used, in a session.

Claude Code 2.1.332 writes each conversation as JSON lines under its config folder
(``$CLAUDE_CONFIG_DIR`` or ``~/.claude``): the session's own at
``projects/<dir>/<session>.jsonl``, each subagent's at
``projects/<dir>/<session>/subagents/agent-<id>.jsonl`` beside an
``agent-<id>.meta.json`` that names its ``agentType`` (``gtd:implementer``,
``gtd:reviewer``). Every assistant entry carries the API's ``message.id``,
``model`` and ``usage`` (input, output, cache creation, cache read) and a UTC
``timestamp``; a message of several content blocks is written as one entry per
block, each with the whole message's usage, so entries are counted once per
message id. API errors (``isApiErrorMessage``) and Claude Code's own synthetic
turns (model ``<synthetic>``) spent nothing and are left out.

:func:`tokens_by_model` is pure (lines in, counts out); the rest reads files.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from gtd.auto.harness import _epoch, config_dir
from gtd.auto.prices import Tokens
from gtd.tuples import NamedTuple

_STAMP = re.compile(r'"timestamp":\s*"([^"]+)"')
_CHUNK = 256 * 1024  # read backwards from the end in chunks this size, doubling
SYNTHETIC = "<synthetic>"


class Message(NamedTuple):
    model: str
    tokens: Tokens
    at: float  # epoch seconds


def messages(lines: Iterable[str]) -> dict[str, Message]:
    """The assistant messages of a transcript by id (one per message, however
    many entries its content blocks took; the last entry's usage wins)."""
    out: dict[str, Message] = {}
    for line in lines:
        if '"assistant"' not in line or '"usage"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut by a write in progress
        if not isinstance(entry, dict) or entry.get("type") != "assistant":
            continue
        if entry.get("isApiErrorMessage"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        usage = message.get("usage")
        model = message.get("model")
        if not isinstance(usage, dict) or not isinstance(model, str) or model == SYNTHETIC:
            continue
        key = message.get("id") or entry.get("uuid")
        if not isinstance(key, str):
            continue
        out[key] = Message(model, _tokens(usage), _epoch(entry.get("timestamp")))
    return out


def _count(usage: Mapping[str, object], name: str) -> int:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _tokens(usage: Mapping[str, object]) -> Tokens:
    return Tokens(
        _count(usage, "input_tokens"),
        _count(usage, "output_tokens"),
        _count(usage, "cache_creation_input_tokens"),
        _count(usage, "cache_read_input_tokens"),
    )


def tokens_by_model(
    found: Mapping[str, Message], since: float, until: float | None = None
) -> dict[str, Tokens]:
    """The tokens of the messages written from ``since`` to ``until``, per model
    (models in the order they first spoke)."""
    out: dict[str, Tokens] = {}
    for msg in sorted(found.values(), key=lambda m: m.at):
        if msg.at < since or (until is not None and msg.at > until):
            continue
        out[msg.model] = out.get(msg.model, Tokens()).plus(msg.tokens)
    return out


def share(found: Mapping[str, Tokens], n: int, index: int) -> dict[str, Tokens]:
    """The ``index``-th of ``n`` shares of ``found``: each count divided evenly,
    the remainder a token each to the first shares, so the ``n`` shares add up
    to exactly ``found`` (a wave's tick turns, charged to each of its tasks)."""
    out: dict[str, Tokens] = {}
    for model, tokens in found.items():
        parts = (divmod(count, n) for count in tokens)
        out[model] = Tokens(*(q + (1 if index < r else 0) for q, r in parts))
    return {m: t for m, t in out.items() if any(t)}


def merged(*parts: Mapping[str, Tokens]) -> dict[str, Tokens]:
    out: dict[str, Tokens] = {}
    for part in parts:
        for model, tokens in part.items():
            out[model] = out.get(model, Tokens()).plus(tokens)
    return out


# -- the files ------------------------------------------------------------------------


class Files(NamedTuple):
    """A session's transcripts: its own, and its subagents' as (agent type, path)."""

    main: Path | None
    agents: tuple[tuple[str, Path], ...]


def session_files(session: str, since: float, base: Path | None = None) -> Files:
    """The transcripts of Claude Code session ``session``; subagents' only where
    written to since ``since`` (older ones belong to earlier cycles)."""
    projects = (base or config_dir()) / "projects"
    try:
        folders = sorted(projects / name for name in os.listdir(projects))
    except OSError:
        return Files(None, ())
    main: Path | None = None
    agents: list[tuple[str, Path]] = []
    for folder in folders:
        own = folder / f"{session}.jsonl"
        if own.is_file():
            main = own
        sub = folder / session / "subagents"
        try:
            names = sorted(os.listdir(sub))
        except OSError:
            continue
        for name in names:
            if not (name.startswith("agent-") and name.endswith(".jsonl")):
                continue
            path = sub / name
            try:
                if path.stat().st_mtime < since:
                    continue
            except OSError:
                continue
            agents.append((_agent_type(path), path))
    return Files(main, tuple(agents))


def _agent_type(path: Path) -> str:
    meta = path.with_name(path.name[: -len(".jsonl")] + ".meta.json")
    try:
        data = json.loads(meta.read_text("utf-8"))
    except (OSError, ValueError):
        return ""
    kind = data.get("agentType") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) else ""


def lines_since(path: Path, since: float) -> list[str]:
    """The lines of ``path`` from about ``since`` on: read backwards from the end,
    a chunk at a time, until a chunk starts before ``since`` (a night's transcript
    grows to many megabytes; a cycle is its last few hundred kilobytes)."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            want = _CHUNK
            while True:
                start = max(0, size - want)
                handle.seek(start)
                raw = handle.read(size - start)
                lines = raw.decode("utf-8", "replace").splitlines()
                if start > 0:
                    lines = lines[1:]  # the first may be cut
                if start == 0 or _first_time(lines) < since:
                    return lines
                want *= 2
    except OSError:
        return []


def _first_time(lines: list[str]) -> float:
    """The timestamp of the first line that has one (inf: none has)."""
    for line in lines:
        found = _STAMP.search(line)
        if found is not None:
            at = _epoch(found.group(1))
            if at:
                return at
    return float("inf")
