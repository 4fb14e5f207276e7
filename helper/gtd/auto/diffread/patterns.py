"""The patterns the diff reader knows, what each one means, and what a cycle does
with it by default (``ratchet.diff_reader`` in the config overrides per pattern).

The defaults: ``refuse`` where the construct has no ordinary use in product code
that a cycle's task would add (code that asks whether it runs under a test, an
equality that always agrees, a standard or test library patched from product
code, product code that reads the test files, a process that ends itself past
the test runner's back); ``flag`` where a legitimate twin exists that the reader
cannot always tell apart (a table of values that happens to hold the tests'
inputs and answers, a counter a branch reads). A flagged cycle commits and is
listed for a person to look at; a refused one is reverted with the finding as
its reason.
"""

from __future__ import annotations

from gtd.tuples import NamedTuple

REFUSE = "refuse"
FLAG = "flag"
OFF = "off"
ACTIONS = (REFUSE, FLAG, OFF)


class Pattern(NamedTuple):
    name: str
    action: str  # the default: REFUSE or FLAG
    summary: str  # what it is, for the docs and `gtd doctor`


PATTERNS: dict[str, Pattern] = {
    p.name: p
    for p in (
        Pattern(
            "test-sniffing",
            REFUSE,
            "product code that asks whether it runs under a test (environment, "
            "sys.modules, sys.argv, the caller's frame)",
        ),
        Pattern(
            "constant-equality",
            REFUSE,
            "a comparison method (__eq__, __lt__ ...) that returns a constant",
        ),
        Pattern(
            "test-answers",
            FLAG,
            "a snapshot test's own input mapped to its expected answer in product code",
        ),
        Pattern(
            "call-counting",
            FLAG,
            "a branch on how many times product code was called (module or function state)",
        ),
        Pattern(
            "patched-library",
            REFUSE,
            "product code that replaces an attribute of a standard or test library",
        ),
        Pattern(
            "exit-control",
            REFUSE,
            "os._exit, or an exit handler that ends or kills the process",
        ),
        Pattern(
            "test-constants",
            REFUSE,
            "a product value the snapshot's assertions read, changed (a tolerance widened)",
        ),
        Pattern(
            "package-path",
            REFUSE,
            "a package's __path__, sys.meta_path or sys.path_hooks changed: imports redirected",
        ),
        Pattern(
            "sys-path",
            FLAG,
            "sys.path changed from product code: an import may find another module",
        ),
        Pattern(
            "reads-tests",
            REFUSE,
            "product code that opens or names a test file",
        ),
    )
}


class Finding(NamedTuple):
    path: str
    line: int
    pattern: str
    why: str

    def text(self) -> str:
        """``pkg/calc.py:12: test-sniffing: reads PYTEST_CURRENT_TEST``."""
        return f"{self.path}:{self.line}: {self.pattern}: {self.why}"


def actions(overrides: dict[str, str] | None) -> dict[str, str]:
    """Each pattern's action: the default, or the config's override."""
    chosen = {name: p.action for name, p in PATTERNS.items()}
    for name, action in (overrides or {}).items():
        if name in chosen and action in ACTIONS:
            chosen[name] = action
    return chosen
