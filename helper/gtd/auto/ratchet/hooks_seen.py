"""The pytest plugins a session loaded, and the hooks the checkout's own plugin
files implement, against the baseline's: a plugin the change brings in, or a
hook it adds to one, runs the change's code inside the old tests' session."""

from __future__ import annotations

import os

from gtd.auto.ratchet import room
from gtd.auto.ratchet.model import Snapshot
from gtd.auto.ratchet.results import Report


def new_plugins(report: Report, rm: room.Room, snapshot: Snapshot) -> list[str]:
    """Plugins the old tests' session loaded and the baseline did not: put in the
    test environment for this run (by a process the agent left running, say, and
    taken away again after), declared by a new ``*.dist-info`` the import path
    reaches, or registered by the code under test. Any hook can change what a
    test does, not only the report hooks. Then the hooks a plugin of the
    checkout's own files implements that it did not at the baseline: a support
    module of the product's that a protected conftest loads (``pytest_plugins``,
    a star import) is code the change may edit."""
    known = snapshot.environment.plugins
    if known is None or report.source != "plugin":
        return []
    labels, hooks = plugin_hooks(report, rm)
    new = sorted(labels - set(known))
    if new:
        if new[0].startswith("./"):  # from the candidate's own files
            why = "the change's files load or register it"
        else:
            why = "installed since? take the baseline again: `gtd ratchet snapshot`"
        return [f"a pytest plugin the baseline did not load: {new[0]} ({why})"]
    had = snapshot.environment.hooks
    if had is None:
        return []
    gained = sorted(set(hooks) - set(had))
    if not gained:
        return []
    label = gained[0].split(" ", 1)[1]
    names = [h.split(" ", 1)[0] for h in gained if h.split(" ", 1)[1] == label]
    where = hooks[gained[0]]
    made = "" if where == label else f", its function from {where}"
    return [
        f"a pytest plugin implements hooks it did not at the baseline: {label} "
        f"({', '.join(names)}{made}: the change's code runs as a plugin of the old tests)"
    ]


# Hooks that cannot change which tests run or how they end: options declared,
# lines added to the terminal's header and summary, an assertion's message.
_HARMLESS_HOOKS = frozenset(
    {
        "pytest_addoption",
        "pytest_addhooks",
        "pytest_report_header",
        "pytest_report_collectionfinish",
        "pytest_terminal_summary",
        "pytest_assertrepr_compare",
        "pytest_assertion_pass",
        "pytest_warning_recorded",
        "pytest_enter_pdb",
        "pytest_leave_pdb",
    }
)


def plugin_hooks(report: Report, rm: room.Room) -> tuple[set[str], dict[str, str]]:
    """The plugins the sessions loaded, early or late, by file: "./"-relative
    inside the room's checkout (which moves) or the repository (a virtualenv in
    it, linked into the room: the repository may move too); and, for those of
    the checkout's own files, each hook they implement that could change a test
    ("<hook> <label>"), with the file its function comes from. Installed plugins
    are left to the environment's own checks: their files cannot change, and
    some register objects by what the run meets."""
    bases = [os.path.realpath(rm.tree), os.path.realpath(rm.live)]
    folders: dict[str, str] = {}  # most plugins share a few folders: each resolved once

    def label_of(file: str) -> tuple[str, str | None]:
        folder, name = os.path.split(file)
        if name in ("", ".", "..") or os.path.islink(file):
            real = os.path.realpath(file)
        else:
            if folder not in folders:
                folders[folder] = os.path.realpath(folder)
            real = os.path.join(folders[folder], name)
        base = next((b for b in bases if real.startswith(b + os.sep)), None)
        return (real if base is None else "./" + os.path.relpath(real, base)), base

    out: set[str] = set()
    hooks: dict[str, str] = {}
    for session in report.sessions:
        for plugin in session.plugins:
            if plugin.file is None:
                out.add(f"plugin {plugin.name}")
                continue
            label, base = label_of(plugin.file)
            out.add(label)
            if base is not bases[0]:
                continue
            for entry in plugin.implements:
                hook, _, file = entry.partition("\t")
                if hook not in _HARMLESS_HOOKS:
                    hooks.setdefault(f"{hook} {label}", label_of(file)[0] if file else label)
    return out, hooks
