"""The test ratchet (docs/ratchet.md, "The ratchet"): a snapshot of the test
files, the protected test configuration and a baseline run; after each cycle, a
check in a clean room that nothing protected changed and nothing that passed got
worse.

Modules, one noun each (docs/layout.md maps them all). The pure core: ``model``
(values), ``verdict`` (the decision), ``snapshot`` (its JSON form and
presentation), ``protect`` (which configuration governs tests, and its digests),
``files`` (which paths are tests), ``junit`` (a per-test report format). The
edge: ``room`` (the clean checkout), ``commands`` (the configured commands, each
run once), ``room_run`` (a run of them in the room, as judging and the baseline
make it), ``report_listener`` (where a run reports), ``report_lines`` (the
plugin's report lines, read), ``environment`` (the test interpreter's
site-packages), ``check`` (judging
a candidate and taking a baseline). ``pytest_report`` is the plugin that runs
inside the user's pytest (its entry point; its parts are the package
``plugin``). Importing this package loads none of them.
"""
