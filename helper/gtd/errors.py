"""The one error hierarchy. The CLI maps every GtdError to a message and an exit code
in a single place (gtd.cli.main); anything else escaping is a bug: it exits 3 after
writing a crash log with the traceback (gtd.cli.crash, docs/errors.md)."""

from __future__ import annotations

from pathlib import Path


class GtdError(Exception):
    """A failure the user can act on. ``hint`` says what to do about it. The CLI
    prints ``gtd: <message>`` and exits with ``exit_code``; ``raw``: the message
    carries its own prefix (step mode's ``gtd <command>: ...``, the 2.x contract)."""

    exit_code = 1
    raw = False

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class InputError(GtdError):
    """A file the user (or an agent) wrote is malformed. Carries file and line."""

    def __init__(
        self, path: str | Path, message: str, line: int | None = None, hint: str | None = None
    ) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}", hint)
        self.path = str(path)
        self.line = line


class RepoError(GtdError):
    """The invocation context is wrong: not a git repository, not its root, no commits."""


class GitError(GtdError):
    """A git command failed unexpectedly."""


class UnaddableFiles(GitError):
    """Files of the working tree git cannot add (a named pipe where a file was, a
    file it may not read): ``paths``, repository-relative."""

    def __init__(self, paths: list[str]) -> None:
        from gtd.names import readable

        shown = ", ".join(readable(p) for p in paths[:5]) + (", …" if len(paths) > 5 else "")
        super().__init__(
            f"not a file git can add (a named pipe, a socket, or unreadable): {shown}",
            "replace it with a regular file, or remove it",
        )
        self.paths = paths


class IndexUnreadable(GitError):
    """git cannot read its index (``index``: the file, as git named it)."""

    def __init__(self, index: str, said: str) -> None:
        super().__init__(
            f"git cannot read its index ({index}): {said}",
            "rebuild it from HEAD with `git read-tree HEAD` (the working tree is left "
            "as it is; only what was staged is lost), then run the command again",
        )
        self.index = index


class GitBlocked(GitError):
    """git waited, and would have waited forever, on a named pipe in a place where it
    reads a file (a `.gitignore`, `.git/packed-refs`): stopped. ``paths``, absolute,
    are the pipes found there (maybe none, when none could be found)."""

    def __init__(self, command: str, paths: list[str]) -> None:
        from gtd.names import readable

        if paths:
            shown = ", ".join(readable(p) for p in paths[:5]) + (", …" if len(paths) > 5 else "")
            super().__init__(
                f"git waited forever reading a named pipe where it reads a file: {shown}",
                f"remove it (`rm {readable(paths[0])}`), then run again",
            )
        else:
            super().__init__(
                f"`git {command}` waited forever on a named pipe",
                "find it (`find . -type p`) where git reads a file (a .gitignore, "
                ".gitattributes, .git/config), remove it, then run again",
            )
        self.paths = paths
        self.command = command


class StateError(GtdError):
    """Helper-owned state is inconsistent in a way we refuse to guess about."""


class LockTimeout(GtdError):
    """Another gtd process holds the state lock for too long."""


class CommitBlocked(GtdError):
    """git refused to write a passed cycle's commit (a signing program, the
    identity): the work waits in the journal until a person fixes it."""
