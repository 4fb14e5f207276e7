"""The language server for the steering files (``gtd lsp``). Importing this package
costs nothing; pygls and lsprotocol load only in :mod:`gtd.lsp.server`."""
