"""``gtd lsp``: a stdio language server over the steering files' formats.

For ``.gtd/TODO.md`` (open questions) and ``.gtd/REVIEW.md`` (checkbox review) it
publishes the findings of the same parsers ``gtd validate`` runs as diagnostics —
so a file the validator accepts shows none — serves document symbols (questions;
chunks with their pointers), offers code actions to tick/untick one pointer or a
whole chunk, and registers ``gtd.openSteeringFile``, which asks the editor to show
the steering file the repository's current state is about — step mode's state ↔
file association, resolved in-process exactly as ``gtd status --json`` reports its
``file`` (:func:`gtd.step.edge.resting_file`).

Other documents (a project's own ``TODO.md`` at the root, any markdown) get
nothing: the server keys on the file name inside a ``.gtd`` directory.

Everything here is conversion between gtd.steering values and LSP values; the
server never writes a file itself — edits go back to the editor as WorkspaceEdits.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import PositionCodec

from gtd import __version__
from gtd.steering import Finding, Kind, check, kind_of
from gtd.steering.findings import split_lines
from gtd.steering.questions import parse_questions
from gtd.steering.review import parse_review, toggle_actions

OPEN_STEERING_FILE = "gtd.openSteeringFile"
SOURCE = "gtd"

logger = logging.getLogger(__name__)


def steering_kind(path: str | PurePath) -> Kind | None:
    """The format of a document the server serves: TODO.md or REVIEW.md in ``.gtd/``."""
    pure = PurePath(path)
    return kind_of(pure) if pure.parent.name == ".gtd" else None


def repo_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.git`` (the workspace
    may be a folder inside the repository; step mode runs from its root)."""
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def steering_target(start: Path) -> tuple[Path | None, str]:
    """The steering file to open for the repository at or above ``start`` — the
    file of its current resting state, as ``gtd status --json`` names it — and, when
    there is none to open, why (naming the state, as gtd 2.x did)."""
    root = repo_root(start)
    if root is None:
        return None, f"gtd: {start} is not inside a git repository"
    from gtd.errors import GtdError
    from gtd.step.edge import resting_file

    try:
        resolution, found = resting_file(root)
    except GtdError as exc:
        return None, f"gtd: {exc.render()}"
    if found is None:
        what = "mid-chain" if resolution.pending else "resting"
        return None, f"gtd: {resolution.state} ({what}) has no steering file"
    target = root / found.path
    if not target.is_file():
        return None, f"gtd: {resolution.state} is about {found.path}, which does not exist yet"
    return target, ""


# -- pure conversions ---------------------------------------------------------------


def _line(lines: Sequence[str], number: int) -> str:
    return lines[number - 1] if 0 < number <= len(lines) else ""


def _pos(codec: PositionCodec, lines: Sequence[str], number: int, column: int) -> types.Position:
    """1-based line and 0-based Python column → an LSP position in client units."""
    text = _line(lines, number)
    column = max(0, min(column, len(text)))
    return types.Position(line=max(0, number - 1), character=codec.client_num_units(text[:column]))


def _whole(codec: PositionCodec, lines: Sequence[str], first: int, last: int) -> types.Range:
    return types.Range(
        start=_pos(codec, lines, first, 0),
        end=_pos(codec, lines, last, len(_line(lines, last))),
    )


def diagnostic(codec: PositionCodec, lines: Sequence[str], finding: Finding) -> types.Diagnostic:
    text = _line(lines, finding.line)
    start = finding.start if finding.start is not None else 0
    end = finding.end if finding.end is not None else len(text)
    severity = (
        types.DiagnosticSeverity.Warning
        if finding.severity == "warning"
        else types.DiagnosticSeverity.Error
    )
    return types.Diagnostic(
        range=types.Range(
            start=_pos(codec, lines, finding.line, start),
            end=_pos(codec, lines, finding.line, max(start, end)),
        ),
        message=finding.message,
        severity=severity,
        source=SOURCE,
    )


def diagnostics(codec: PositionCodec, kind: Kind, text: str) -> list[types.Diagnostic]:
    lines = split_lines(text)
    return [diagnostic(codec, lines, f) for f in check(kind, text)]


def symbols(codec: PositionCodec, kind: Kind, text: str) -> list[types.DocumentSymbol]:
    lines = split_lines(text)
    result: list[types.DocumentSymbol] = []
    if kind == "qa":
        for q in parse_questions(text).questions:
            result.append(
                types.DocumentSymbol(
                    name=f"{q.title} [{q.status}]",
                    detail=q.text,
                    kind=types.SymbolKind.Key,
                    range=_whole(codec, lines, q.line, max(q.line, q.end_line)),
                    selection_range=_whole(codec, lines, q.line, q.line),
                )
            )
        return result
    for chunk in parse_review(text).chunks:
        children = [
            types.DocumentSymbol(
                name=("[x] " if p.ticked else "[ ] ")
                + (p.path if p.line is None else f"{p.path}#{p.line}"),
                detail=p.note,
                kind=types.SymbolKind.File,
                range=_whole(codec, lines, p.source_line, p.source_line),
                selection_range=_whole(codec, lines, p.source_line, p.source_line),
            )
            for p in chunk.pointers
        ]
        ticked = sum(p.ticked for p in chunk.pointers)
        result.append(
            types.DocumentSymbol(
                name=f"{chunk.title} ({ticked}/{len(chunk.pointers)})",
                kind=types.SymbolKind.Namespace,
                range=_whole(codec, lines, chunk.line, max(chunk.line, chunk.end_line)),
                selection_range=_whole(codec, lines, chunk.line, chunk.line),
                children=children,
            )
        )
    return result


def code_actions(codec: PositionCodec, uri: str, text: str, line0: int) -> list[types.CodeAction]:
    """Tick/untick actions at 0-based ``line0`` of a REVIEW.md."""
    lines = split_lines(text)
    actions: list[types.CodeAction] = []
    for action in toggle_actions(parse_review(text), line0 + 1):
        edits = [
            types.TextEdit(
                range=types.Range(
                    start=_pos(codec, lines, e.line, e.column),
                    end=_pos(codec, lines, e.line, e.column + 1),
                ),
                new_text=e.text,
            )
            for e in action.edits
        ]
        actions.append(
            types.CodeAction(
                title=action.title,
                kind=types.CodeActionKind.RefactorRewrite,
                edit=types.WorkspaceEdit(changes={uri: edits}),
            )
        )
    return actions


# -- the server ---------------------------------------------------------------------


def _document(ls: LanguageServer, uri: str) -> tuple[Kind, str] | None:
    """The kind and current text of a steering document, or None for anything else
    (another file, a URI that is not a file, a file that vanished)."""
    path = to_fs_path(uri)
    if path is None:
        return None
    kind = steering_kind(path)
    if kind is None:
        return None
    try:
        return kind, ls.workspace.get_text_document(uri).source
    except (OSError, UnicodeDecodeError):
        return None


def _publish(ls: LanguageServer, uri: str) -> None:
    found = _document(ls, uri)
    if found is None:
        return
    kind, text = found
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diagnostics(ls.workspace.position_codec, kind, text)
        )
    )


def _root(ls: LanguageServer) -> Path:
    try:
        root = ls.workspace.root_path
    except RuntimeError:  # no workspace yet (request before initialize)
        root = None
    return Path(root) if root else Path.cwd()


class _Protocol(LanguageServerProtocol):
    """pygls drops a request whose params do not deserialise without answering it,
    leaving the client waiting forever; answer it with the JSON-RPC error instead."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "method" in data and isinstance(data.get("id"), (int, str)):
                self._send_response(data["id"], error=types.ResponseError(exc.code, exc.message))
            # A value handle_message ignores (it logs an unknown message).
            return types.ResponseErrorMessage(id=None, jsonrpc="invalid")


def build() -> LanguageServer:
    server = LanguageServer("gtd", __version__, protocol_cls=_Protocol)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def _did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        _publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def _did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        _publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def _did_save(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        _publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def _did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = to_fs_path(uri)
        if path is not None and steering_kind(path) is not None:
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def _symbols(
        ls: LanguageServer, params: types.DocumentSymbolParams
    ) -> list[types.DocumentSymbol]:
        found = _document(ls, params.text_document.uri)
        if found is None:
            return []
        return symbols(ls.workspace.position_codec, *found)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.RefactorRewrite]),
    )
    def _actions(ls: LanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        found = _document(ls, uri)
        if found is None or found[0] != "review":
            return []
        return code_actions(ls.workspace.position_codec, uri, found[1], params.range.start.line)

    @server.command(OPEN_STEERING_FILE)
    def _open_steering_file(ls: LanguageServer, *args: Any) -> str | None:
        target, why = steering_target(_root(ls))
        if target is None:
            ls.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Info, message=why)
            )
            return None
        uri: str | None = from_fs_path(str(target))
        if uri is None:
            return None
        # Not awaited: a client without window/showDocument must not hang the command.
        ls.window_show_document(types.ShowDocumentParams(uri=uri, take_focus=True))
        return uri

    return server


def serve() -> int:
    build().start_io()
    return 0
