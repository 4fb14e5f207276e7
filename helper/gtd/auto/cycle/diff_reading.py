"""The diff reader at the cycle's edge: the candidate's changed Python files and
the snapshot's tests read from git objects (never the working tree the agent
can still write), handed to the pure reader (gtd.auto.diffread.reader), and its
findings sorted by the config's action per pattern.

Runs in the check, after the guards and before the test run: a refusing finding
saves the run. Costs one `diff-tree` (already made by the guards' caller) and
one `cat-file --batch` for the changed files; the snapshot's tests are read only
when the change holds a literal table or branch they could have fed (one more
batch).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from gtd.auto.config import AutoConfig
from gtd.auto.diffread import patterns
from gtd.auto.ratchet.model import Snapshot
from gtd.git import Git
from gtd.names import one_line

_MAX_FLAGS = 20  # a cycle's flagged findings kept in its record


def read(
    git: Git, base_tree: str, candidate: str, snapshot: Snapshot, config: AutoConfig
) -> tuple[str | None, tuple[str, ...]]:
    """(the reason to refuse the candidate, or None; the findings to flag)."""
    every = git.diff_trees(base_tree, candidate)
    shadow = shadowing([c.path for c in every if c.status == "A"], snapshot.files)
    if shadow is not None:
        return shadow, ()
    actions = patterns.actions(dict(config.diff_reader))
    if all(action == patterns.OFF for action in actions.values()):
        return None, ()
    from gtd.auto.diffread.reader import Source
    from gtd.auto.diffread.reader import read as read_sources

    changes = [
        c
        for c in every
        if c.status != "D" and c.path.endswith(".py") and c.new_mode.startswith("100")
    ]
    if not changes:
        return None, ()
    names = [c.new_oid for c in changes] + [c.old_oid for c in changes if c.status != "A"]
    blobs = {o.oid: o.data for o in git.objects(names) if o is not None}
    sources = [
        Source(
            c.path,
            None if c.status == "A" else _text(blobs.get(c.old_oid, b"")),
            _text(blobs.get(c.new_oid, b"")),
        )
        for c in changes
    ]
    tests = sorted(p for p in snapshot.files if p.endswith(".py"))
    found = read_sources(sources, _Tests(git, base_tree, tests), tests)
    refused = [f for f in found if actions.get(f.pattern) == patterns.REFUSE]
    flagged = [f for f in found if actions.get(f.pattern) == patterns.FLAG]
    reason = None
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        reason = f"the diff reader refused it: {one_line(refused[0].text())}{more}"
    return reason, tuple(one_line(f.text()) for f in flagged[:_MAX_FLAGS])


def shadowing(added: list[str], protected: Collection[str]) -> str | None:
    """Why a new file would shadow a module the snapshot protects (a test, an
    assertion helper the tests import, a declared file), or None: a package
    (``pkg/testing/__init__.py`` beside ``pkg/testing.py``), an extension module
    (``pkg/testing.cpython-311-x86_64-linux-gnu.so``, found before the source),
    or the same module under another source root (``pkg/`` over ``src/pkg/``).
    Refused whatever the diff reader's config says: the protected module would
    no longer be what the tests import."""
    if not added:
        return None
    from gtd.auto.diffread.tests_seen import module_names

    names: dict[str, str] = {}
    for path in protected:
        for name in module_names(path):
            names.setdefault(name, path)
    for path in added:
        if path in protected:
            continue
        for name in sorted(module_names(path)):
            if name in names:
                return (
                    f"a new module would shadow a protected one: {one_line(path)} is "
                    f"imported as {name}, as {one_line(names[name])} is (the tests import it)"
                )
    return None


class _Tests:
    """The snapshot's test sources at the base, read on first use."""

    def __init__(self, git: Git, base_tree: str, paths: list[str]) -> None:
        self.git, self.base_tree, self.paths = git, base_tree, paths

    def __iter__(self) -> Iterator[str]:
        specs = [f"{self.base_tree}:{p}" for p in self.paths]
        for obj in self.git.objects(specs):
            if obj is not None:
                yield _text(obj.data)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")
