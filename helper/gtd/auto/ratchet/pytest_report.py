"""The pytest plugin behind the ratchet's per-test results. Never imported by gtd.

How it loads: for each test run the helper writes, into a fresh directory it puts
on ``PYTHONPATH``, a few-line module with a random name (``gtd_ratchet_<token>``)
and a ``*.dist-info`` declaring that module as the ``pytest11`` entry point
``gtd_ratchet_report``. Any pytest the test command starts (directly, through make
or a shell pipeline) autoloads it, and it loads this file by path from the
installed helper. A file in the repository cannot shadow a module name it cannot
know, and the code that runs is the helper's own, not a copy the tests could edit.

What it does (the contract — environment and line format — is contract.py beside
this file, which both sides read):

- streams one JSON line per test report (and one per collection error or skip)
  into the helper's pipe, or appends them to a file where the pipe was not
  inherited: every outcome but a plain pass at once, passes in batches of a few
  kilobytes or a quarter of a second. Outcomes: passed, xpassed, skipped, xfailed,
  failed (a strict xpass too, as pytest says) and error (a failure in setup,
  teardown or collection); a skip carries its location and reason, an xfail its
  reason;
- reports what pytest collected: each item's node id, file and kind;
- applies a selection the helper asks for (only these files, only these node
  ids): nothing else is collected, and no conftest.py outside it is loaded;
- when asked, loads modules from the room instead of the live repository
  (editable installs of either kind: a path added by a ``.pth``, or setuptools'
  import finder);
- records tamper evidence: pytest internals replaced during the session, plugins
  registered late that can change reports, modules loaded from a forbidden root,
  the conftest files and the interpreter's environment.

Degrades, never breaks: nothing here may fail the user's run. Any internal problem
means a report that is missing or flagged, which the verdict treats as missing
results. Where the plugin does not load (a command that replaces ``PYTHONPATH``,
``python -I``, ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), the ``--junitxml`` the helper
also passes stays in force; where it loads and can write, it switches that off.

How it is made: this module composes the parts in the folder ``plugin/`` beside
it (gtd.auto.ratchet.plugin: settings, sink, selection, provenance, bytecode
guard, values, import watch, identities, outcome watch, recorder, checks, its
own check) into pytest's hooks. It loads each part by path, in the order of
:data:`_PARTS`, under a private package name (``_gtd_ratchet_plugin``), before
the plugin starts anything: the parts are the helper's files as this module is,
and no finder on ``sys.meta_path`` (pytest's assertion rewriter among them) is
asked for them. Each part is handed what it needs; what the process keeps (the
state, provenance, the values watch) is made here.

Runs in the user's test environment: standard library and pytest (6.1 or later)
only, syntax for Python 3.7 and later. Per test it does a dict write and formats
one short line (a write to the pipe for every ~40 passing tests); everything else
happens at start-up, at the end of collection and at the end of the session.

Where its code is: ``plugin/entry.py``, run in this module's namespace (the
hooks, the state and the parts' loading are this module's, as pytest sees
it). This file holds no literal: hypothesis draws part of its examples from
the literals of every loaded module whose file is outside site-packages (it
takes them for the project's own), and this module keeps its file, which the
baseline records as the plugin's. In a helper not installed there (an
editable checkout) its ~45 literals joined the project's pool: the judged
run's examples differed from the bare run's (13 literals more once moved
attrs' suite's work by 2.6 %). Keep it so (tests/unit/auto/ratchet/test_plugin_parts.py
asks hypothesis what it collects here).
"""

from __future__ import annotations

import os
from importlib.machinery import SourceFileLoader
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names the helper's tests read here, for the type checker
    from .plugin.entry import _abs as _abs  # noqa: PLC0414
    from .plugin.entry import _both as _both  # noqa: PLC0414
    from .plugin.entry import _docstring_digest as _docstring_digest  # noqa: PLC0414


def _run_entry(namespace: dict[str, object]) -> None:
    """plugin/entry.py's code, in ``namespace``. The path is an f-string: hypothesis
    takes no literal from one. The source loader reads the bytecode cache as an
    import would."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = f"{here}{os.sep}plugin{os.sep}entry.py"
    code = SourceFileLoader(__name__, path).get_code(__name__)
    assert code is not None
    exec(code, namespace)


_run_entry(globals())
