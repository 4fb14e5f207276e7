"""The diff reader: cheats a test run cannot see, found by reading what the agent
wrote. Pure core: sources in, findings out (no IO, no subprocess, no clock).

A test run judges behaviour on the tests' own inputs, so code that special-cases
those inputs, a value whose ``__eq__`` always agrees, a function right only for its
first calls, or code that behaves differently when it sees it is under test all
pass it by construction (ImpossibleBench's cheats). The reader parses each changed
Python file of the candidate (the AST, never the text) and reports each such
construct on the lines the change added, as a :class:`Finding` naming
``file:line``, the pattern and a one-line why.

- :mod:`gtd.auto.diffread.patterns`: the patterns, their default actions and why;
- :mod:`gtd.auto.diffread.lines`: which lines of a file the change added;
- :mod:`gtd.auto.diffread.tests_seen`: what the snapshot's tests feed the code;
- :mod:`gtd.auto.diffread.reader`: the AST walk that finds them.

Nothing is imported here: the config reads :mod:`patterns` on every tick, and the
reader's imports (``ast``, ``difflib``) are paid only by the cycle's check.
"""
