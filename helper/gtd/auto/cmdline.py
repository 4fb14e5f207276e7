"""A shell command line read as the text guard needs it: its simple commands, each
with its words and its redirections, and nothing guessed.

The guard (gtd.auto.guard) may refuse only what it decides exactly: a word that
is not a plain literal (a glob, a variable, a command substitution) is marked so
and never matched, and what this reader cannot read at all (unbalanced quotes)
is no command. A refusal of ordinary work costs a whole cycle; a write this
misses is the operating system's to refuse (Claude Code's sandbox) and the
ratchet's to revert.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z0-9_.-]+)\2")
_SEPARATOR = set(";&|()")
_NOT_LITERAL = set("$`*?[]{}\\")
# Words that run the next word as the command (their options skipped).
_PREFIXES = frozenset({"env", "command", "exec", "nohup", "time", "sudo", "nice", "builtin"})


@dataclass
class Simple:
    """One simple command: its words (unquoted; None for a word that is not a
    plain literal) and its redirections as (operator, target)."""

    words: list[str | None] = field(default_factory=list)
    redirects: list[tuple[str, str | None]] = field(default_factory=list)

    @property
    def name(self) -> str | None:
        """The command's name, past variable assignments and wrappers such as
        ``env`` or ``sudo``; None if not a plain literal."""
        rest = self.args_from(0)
        return rest[0] if rest else None

    def args_from(self, start: int) -> list[str | None]:
        words = self.words[start:]
        i = 0
        while i < len(words):
            word = words[i]
            if word is not None and "=" in word and not word.startswith(("-", "=")):
                i += 1  # FOO=bar before the command
            elif word is not None and word.rsplit("/", 1)[-1] in _PREFIXES:
                i += 1
                while i < len(words) and (words[i] or "").startswith("-"):
                    i += 1
            else:
                break
        return words[i:]

    @property
    def args(self) -> list[str | None]:
        """The words after the command's name."""
        return self.args_from(0)[1:]


def parse(text: str) -> list[Simple]:
    """The simple commands of ``text`` (a Bash tool's command); [] when it cannot
    be read."""
    lexer = shlex.shlex(_flatten(text), posix=False, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: nothing is decided
        return []
    out: list[Simple] = [Simple()]
    pending: str | None = None  # a redirection operator waiting for its word
    for token in tokens:
        if pending is not None:
            if pending != "skip":
                out[-1].redirects.append((pending, _literal(token)))
            pending = None
        elif set(token) <= _SEPARATOR | set("<>"):
            if "<" not in token and ">" not in token:
                out.append(Simple())
            elif token.endswith("&") or token.startswith("<<"):
                pending = "skip"  # `2>&1` names a descriptor; `<<EOF` a delimiter
            else:
                pending = token
        else:
            out[-1].words.append(_literal(token))
    return [s for s in out if s.words or s.redirects]


def writes(op: str) -> bool:
    """Whether a redirection operator opens its target for writing."""
    return ">" in op


def _literal(token: str) -> str | None:
    """The word as the shell would pass it, if it is a plain literal."""
    if any(c in _NOT_LITERAL for c in token):
        return None
    if token.startswith("'") and token.endswith("'") and len(token) >= 2:
        return token[1:-1]
    plain = token.replace('"', "").replace("'", "")
    return plain


def _flatten(text: str) -> str:
    """One line: continuation lines joined, here-document bodies dropped (their
    lines are data, not commands), other newlines made command separators."""
    text = text.replace("\\\n", " ")
    lines = text.split("\n")
    kept: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        kept.append(line)
        i += 1
        for dash, _, word in _HEREDOC.findall(line):
            while i < len(lines):
                body = lines[i].lstrip("\t") if dash else lines[i]
                i += 1
                if body == word:
                    break
    return " ; ".join(kept)
