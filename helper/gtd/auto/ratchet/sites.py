"""The test interpreter's folders outside the repository: recorded with the
baseline (the module names a new file must not take), and compared with those of
a candidate's run (a new site folder runs its ``.pth`` files in every test
process)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from gtd.auto.ratchet import room
from gtd.auto.ratchet.model import Snapshot
from gtd.auto.ratchet.results import Report


def environment_dirs(report: Report, rm: room.Room, links: Sequence[str]) -> list[str]:
    paths: list[str] = []
    for session in report.sessions:
        if session.environment is not None:
            paths.extend(session.environment.site)
            paths.extend(session.environment.path)
    from gtd.auto.ratchet.environment import outside

    return outside(
        paths, [str(rm.tree), str(rm.live), str(rm.slot)], [str(rm.live / p) for p in links]
    )


def new_site_folders(report: Report, rm: room.Room, snapshot: Snapshot) -> list[str]:
    """Site folders the candidate's interpreter read that the baseline's did not:
    a virtualenv switched to include the interpreter's own site-packages (and
    with it the user's site folder), whose ``.pth`` files run in every test
    process. No entry of a folder the baseline ran with changes; the path does."""
    known = set(snapshot.environment.dirs)
    if not known:
        return []  # a snapshot taken before the folders were recorded
    sites = [
        s for session in report.sessions if session.environment for s in session.environment.site
    ]
    from gtd.auto.ratchet.environment import outside

    # (only folders outside the repository: a virtualenv of its own, linked into
    # the room, is named by the repository's path, which moves with the
    # repository while the snapshot keeps the path it was taken at)
    roots = [str(rm.tree), str(rm.live), str(rm.slot)]
    now = outside(sites, roots)
    return [
        f"test environment changed: {folder} is a new site folder of the test interpreter"
        for folder in now
        if folder not in known and os.path.isdir(folder)
    ][:1]


def module_names(dirs: Sequence[str]) -> set[str]:
    """Top-level module names importable from ``dirs`` and the standard library:
    a file the candidate adds must not take one of them."""
    import sys

    names = set(sys.stdlib_module_names)
    for folder in dirs:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            stem = entry.split(".", 1)[0]
            if stem.isidentifier() and not entry.endswith((".dist-info", ".egg-info", ".pth")):
                names.add(stem)
    return names
