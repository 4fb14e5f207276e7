"""Concise builders for step-mode inputs.

``history("chore: init", ("gtd(human): grilling", "A idea.md"), ...)`` makes a
first-parent chain: a bare string is an empty commit, a tuple is a subject followed
by ``"<A|M|D> <path>"`` changes (or a LineDiff for REVIEW.md). Shas are sequential
40-hex strings; the first commit's parent is :data:`BASE` (the merge base).

``tree("TODO REVIEW", dirty="A src/x.py, D .gtd/ERRORS.md", packages="01-a")`` makes a
WorkingTree; steering files are named by their stem.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from gtd.step.events import Change, ChangeStatus, Commit, Invoker, LineDiff, WorkingTree
from gtd.step.machine import Resolution, resolve
from gtd.step.settings import StepConfig
from gtd.step.steering import STEERING_FILES, Package

BASE = "b" * 40
STEER = {path.removeprefix(".gtd/").removesuffix(".md"): path for path in STEERING_FILES}

CommitSpec = str | tuple[str | LineDiff, ...]


def sha(i: int) -> str:
    return format(i, "040x")


def changes(spec: str) -> tuple[Change, ...]:
    out = []
    for item in (s.strip() for s in spec.split(",")):
        if item:
            status, path = item.split(" ", 1)
            out.append(Change(cast(ChangeStatus, status), STEER.get(path, path)))
    return tuple(out)


def commit(subject: str, *spec: str | LineDiff, n: int = 1, parent: str | None = BASE) -> Commit:
    diff = next((s for s in spec if isinstance(s, LineDiff)), None)
    text = ", ".join(s for s in spec if isinstance(s, str))
    return Commit(sha(n), subject, parent, changes(text), diff)


def history(*items: CommitSpec, start: int = 1) -> list[Commit]:
    out: list[Commit] = []
    parent = BASE
    for i, item in enumerate(items, start):
        subject, *spec = (item,) if isinstance(item, str) else item
        assert isinstance(subject, str)
        made = commit(subject, *spec, n=i, parent=parent)
        out.append(made)
        parent = made.sha
    return out


def tree(
    present: str = "",
    *,
    dirty: str = "",
    packages: str = "",
    feedback: str | None = None,
    squash_msg: str | None = None,
) -> WorkingTree:
    files = frozenset(STEER[name] for name in present.split())
    feedback_path, squash_path = STEER["FEEDBACK"], STEER["SQUASH_MSG"]
    return WorkingTree(
        present=files,
        dirty=changes(dirty),
        packages=tuple(Package(name, ("01-task.md",)) for name in packages.split()),
        feedback_text=feedback
        if feedback is not None
        else ("" if feedback_path in files else None),
        squash_msg_text=squash_msg
        if squash_msg is not None
        else ("msg" if squash_path in files else None),
    )


def run(
    commits: Sequence[Commit],
    t: WorkingTree | None = None,
    config: StepConfig | None = None,
    invoker: Invoker = None,
) -> Resolution:
    return resolve(commits, t if t is not None else tree(), config or StepConfig(), invoker)
