"""The parts of the ratchet's pytest plugin (gtd.auto.ratchet.pytest_report, which
composes them into pytest's hooks). Never imported by gtd at run time: the plugin
loads each part by path, in the order pytest_report names, under a private
package name, inside the user's test interpreter. The helper's own tests and the
type checker import them as this package.

Each part is one noun: the contract's names (terms), paths, the settings, the
sink every line and piece of evidence goes through, the selection, provenance of
the room's code, the bytecode guard, the values protected code reads (shapes,
import bindings, values), the import watch, identities, the outcome watch, the
recorder, the session's checks and the plugin's check of its own code. Each
watcher starts when the plugin starts (or the session is configured) and its
``finish()`` returns the evidence found at the session's end; the sink is
injected, and no part holds state another part shares.

Like the plugin, the parts run in the user's test environment: standard library
and pytest (6.1 or later) only, syntax for Python 3.7 and later.
"""
