"""The exit codes of every `gtd` command and of `gtd loop`: one table, named here and
documented in docs/errors.md (a test checks the two agree).

2 is the command line's own mistake, found before anything runs (the convention of
click and of the shell's builtins), except where gtd 2.x's contract says 1: bare
`gtd` and step mode's commands (docs/step-mode.md). 3 is kept for a bug in gtd
alone (the pre-commit convention: a script or CI job can tell "the helper crashed"
from every outcome the loop meant), so the loop's own stops that want a person,
halted and blocked, have codes of their own.
"""

from __future__ import annotations

EXIT_DONE = 0  # the command did its job; the loop: complete, or --max-cycles reached
EXIT_STUCK = 1  # a mistake gtd can name, or the loop cannot go on until a person acts
EXIT_USAGE = 2  # the command line itself: an unknown command or option, a bad value
EXIT_BUG = 3  # an exception nobody planned for: a crash log is written
EXIT_BLOCKED = 4  # the loop: every remaining task waits on an unfinished blocker
EXIT_HALTED = 5  # the loop: the circuit breaker tripped, or a forced halt
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT), as a shell reports it (128 + 2)
