"""The contract between the ratchet's pytest plugin and the helper that reads it.

One file, read by both sides: the helper imports it as
``gtd.auto.ratchet.contract``; the plugin (gtd.auto.ratchet.pytest_report), which
runs inside the user's pytest and cannot import gtd, loads this same file by path
from beside itself. So it imports nothing and holds only constants, in syntax any
Python 3 that pytest supports can read.

Environment of the test command
-------------------------------
``GTD_RATCHET_SETTINGS``
    Path of a JSON object with the keys ``SETTING_*`` below: where to append lines
    when the pipe is not inherited, the ``--junitxml`` path the helper added to
    ``PYTEST_ADDOPTS``, the directory it added to ``PYTHONPATH``, the root test
    ids are relative to, the selection, the forbidden roots, the redirect and
    the protected files whose values are guarded.
``GTD_RATCHET_FD``
    ``"<fd>:<st_dev>:<st_ino>"``: the test command's end of the helper's report
    pipe (a connected socket pair: a pipe could be reopened through ``/proc`` by
    any process of the user). The plugin writes to it only when that descriptor
    is open in its own process and is that very socket (a process that did not
    inherit it may have the number reused for another file); otherwise it
    appends to the settings' ``report`` file.

The plugin takes both names (and its additions to ``PYTHONPATH`` and
``PYTEST_ADDOPTS``) out of the environment once the session has started, so a
pytest that a test starts does not report into the run.

Line format
-----------
UTF-8, one JSON object per line, ASCII-escaped (no raw newline can occur inside
one). Every line has ``k`` (its kind) and ``s`` (the session id: one pytest
process, a controller or an xdist worker). Lines of several sessions may
interleave (each write of up to 4,096 bytes, which a pipe or a local socket
writes whole, holds whole lines); a reader groups them by ``s`` and skips what it cannot parse.

``start``   ``v`` format version, ``pid``, ``worker`` (xdist worker id or null),
            ``root`` pytest's rootpath, ``ini`` its inipath or null, ``plugin`` the
            plugin's file, ``via`` "pipe" or "file", ``sel`` whether a requested
            selection is in force (null when none was requested)
``c``       ``file`` (absolute): pytest begins collecting this module
``items``   ``file`` (absolute), ``kind`` (one of ITEM_KINDS), ``ids`` (node ids,
            relative to ``root`` as pytest makes them), ``d`` true for items
            deselected (by ``-k``, ``-m``, a plugin or the selection); for
            doctest-module items ``dg``, beside ``ids``: the sha256 of the
            examples each doctest runs (gtd.auto.ratchet.doctests.examples_digest;
            null where unknown)
``t``       one test report: ``id`` node id, ``o`` (one of OUTCOMES), ``w`` phase
            (setup, call, teardown or collect); for a skip ``at`` ("path:line" as
            pytest reports it) and ``r`` the reason; for an xfail ``r``; for a
            collection error ``r`` its last line
``ev``      tamper evidence: ``what`` (one of EVIDENCE_KINDS), ``subject``,
            ``detail``
``end``     ``exit`` pytest's exit status, ``counts`` {outcome: number of distinct
            tests the session recorded with that outcome}, ``conftests`` (absolute
            files), ``plugins`` [[name, file or null, [REPORT_HOOKS it
            implements], late, [every hook it implements]]] for every plugin
            that implements a hook and each one registered and removed again,
            ``env`` (ENV_* keys)

A session whose ``end`` is missing, or whose counts disagree with its ``t`` lines,
did not finish as the plugin wrote it; lines naming a session that never started
were not written by the plugin.
"""

VERSION = 2

ENV_SETTINGS = "GTD_RATCHET_SETTINGS"
ENV_FD = "GTD_RATCHET_FD"

# Keys of the settings object.
SETTING_VERSION = "v"
SETTING_REPORT = "report"  # file to append lines to where the pipe is not inherited
SETTING_JUNIT = "junit"  # the --junitxml path the helper put in PYTEST_ADDOPTS
SETTING_SITE = "site"  # the directory the helper put on PYTHONPATH
SETTING_ROOT = "root"  # absolute: selection paths and ids are relative to it
SETTING_FILES = "files"  # root-relative files, or null: only these are collected
SETTING_IDS = "ids"  # root-relative node ids, or null: only these run
SETTING_FORBIDDEN = "forbidden"  # absolute roots no module may be loaded from
SETTING_LIVE = "live"  # with SETTING_ROOM: imports from under live load from room
SETTING_ROOM = "room"
# Root-relative Python files whose modules' values are guarded (the protected
# ones the judged tree takes from the base), or null: none.
SETTING_GUARDED = "guarded"
# A cycle's end: when its agent began, in nanoseconds since the epoch (or null):
# a file of the test environment run as code that changed since is evidence.
SETTING_ENV_SINCE = "env_since"

# Line kinds and keys.
KIND = "k"
SESSION = "s"
START = "start"
ITEMS = "items"
COLLECTING = "c"  # a test module's collection begins: where a session that dies died
TEST = "t"
EVIDENCE = "ev"
END = "end"

# Per-test outcomes, best to worst: when a test reports more than once (a failing
# teardown after a passing call, two sessions, a forged line) the worst one wins.
OUTCOMES = ("passed", "xpassed", "skipped", "xfailed", "failed", "error")

# What a collected item is: a Python test function or method (unittest included),
# a doctest from a Python module (--doctest-modules), a doctest from a text file
# (--doctest-glob), or anything a plugin collects.
ITEM_KINDS = ("function", "doctest-module", "doctest-text", "other")

# Hooks through which a plugin can change what a test's report says.
REPORT_HOOKS = (
    "pytest_runtest_makereport",
    "pytest_runtest_logreport",
    "pytest_report_teststatus",
    "pytest_runtest_protocol",
    "pytest_runtest_call",
    "pytest_pyfunc_call",
)

EVIDENCE_KINDS = (
    "patched",  # a watched pytest/pluggy/plugin object was replaced during the session
    "foreign",  # a watched object's code does not come from pytest or pluggy at all
    "late-plugin",  # a plugin implementing REPORT_HOOKS registered after configure, or a
    # hook implementation whose plugin is not registered at all
    "unregistered",  # the plugin's own recorder or one of its hooks was removed
    "forbidden-module",  # a module was loaded from under a forbidden root
    "redirect-missing",  # a module under the live root has no counterpart in the room
    "report-class",  # a report of another class than pytest's reached the recorder
    "passed-with-failure",  # a passed report carried a failure representation
    "unselected",  # something outside the selection was collected
    "conftest-outside",  # a conftest outside the selection was loaded
    "guard-missing",  # this pytest lacks what the selection's conftest guard needs
    "planted-module",  # a module put into sys.modules by hand under a room file's name
    "tracer",  # a trace or profile function installed by other code than the baseline's
    "rebound",  # a project module's function not what its code made (swapped, planted)
    "loader",  # a module of the room loaded by a loader the run did not start with
    "written-module",  # a file of the room loaded as code, written during the run
    "outside-module",  # code loaded from outside the room, the environment and the path
    "changed-value",  # a value protected code reads, changed since it was first seen
    "stand-in",  # a name a protected module's import bound to other than what it imports
    "machinery",  # unittest's, doctest's or pytest's approx/raises classes changed
    "code-replaced",  # a library function's code or defaults replaced in place
    "environment-file",  # a file of the test environment run as code changed since the
    # cycle began (SETTING_ENV_SINCE)
    "replaced-test",  # a test item handed another function to run, or a runtest of its
    # own (the item itself changed, by code that found it)
    "internal",  # a check of the plugin itself failed (its error, not the tests')
)

# Keys of an end line's ``env``.
ENV_EXECUTABLE = "executable"
ENV_PREFIX = "prefix"
ENV_BASE_PREFIX = "base_prefix"
ENV_VERSION = "python"
ENV_PATH = "path"
ENV_SITE = "site"
ENV_PTH = "pth"
ENV_PYTEST = "pytest"
ENV_PLUGGY = "pluggy"
