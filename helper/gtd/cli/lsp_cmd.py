"""`gtd lsp`: the steering files' language server on stdin/stdout. pygls is
imported here, never at CLI start-up (docs/performance.md, "What keeps start-up
fast")."""

from __future__ import annotations


def lsp() -> int:
    from gtd.lsp.server import serve

    return serve()
