"""Step mode's command bodies: ``gtd step [human|agent|check]``, ``gtd step-agent``,
``gtd next``, ``gtd status``, ``gtd run``, ``gtd review <target>`` and
``gtd format <file>`` — the gtd 2.x contract (docs/step-mode.md, "Commands") plus
the scripted check's ``gtd step check`` and ``gtd run``.

``next`` and ``status`` (and the two mutators) are reached from the typer-free fast
path in :mod:`gtd.cli`, so everything here imports lazily and reads git a fixed
handful of times per gather.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gtd.errors import GtdError, RepoError
from gtd.names import readable_json

if TYPE_CHECKING:
    from gtd.step.edge import Advance, Context
    from gtd.step.events import Invoker, WorkingTree
    from gtd.step.machine import Resolution
    from gtd.step.settings import StepConfig
    from gtd.step.subjects import Party

__all__ = [
    "RawError",
    "format_file",
    "next_prompt",
    "review",
    "run_check",
    "status",
    "step",
    "step_as",
]

_DIRTY_NEXT = (
    "gtd next: working tree is dirty — run `gtd status` to inspect it, then advance "
    "with `gtd step` or `gtd step-agent` (whichever actor is awaited)"
)
_PENDING_AGENT = (
    "mid-chain checkpoint — run `gtd step-agent` to continue, then run `gtd next` again"
)
_PENDING_HUMAN = "mid-chain checkpoint — run `gtd step` to continue"


class RawError(GtdError):
    """An error whose message carries its own ``gtd <command>:`` prefix: printed as
    is on stderr, without the usual ``gtd: ``."""

    raw = True


def _emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(readable_json(json.dumps(payload, ensure_ascii=False)) + "\n")


def _root() -> Path:
    """The repository root, which must be the working directory (the 2.x contract: steering
    files, diffs and pathspecs are resolved against cwd)."""
    from gtd.errors import GitError
    from gtd.git import Git, is_top_level

    cwd = Path.cwd()
    if is_top_level(cwd):
        return cwd
    try:
        res = Git(cwd).call("rev-parse", "--show-toplevel")
    except GitError as exc:  # step mode's messages are its own (2.x contract): no hint
        raise RepoError(exc.message) from None
    if res.returncode != 0:
        raise RepoError(f"not a git repository: {cwd} — run gtd from a repository's root")
    top = res.stdout.strip()
    if os.path.realpath(top) != os.path.realpath(cwd):
        raise RepoError(
            f"gtd must run from the repository root ({top}), not from {cwd} — "
            f"cd {top} and run it there"
        )
    return Path(top)


# -- step / step-agent / step check / run --------------------------------------------

_PARTIES: tuple[Invoker, ...] = ("human", "agent", "check")


def step(agent: bool, as_json: bool) -> int:
    """``gtd step`` (the human) and ``gtd step-agent``."""
    return _advance("agent" if agent else "human", as_json)


def step_as(actor: str, as_json: bool) -> int:
    """``gtd step <actor>``: ``human`` and ``agent`` are ``gtd step`` and
    ``gtd step-agent``; ``check`` captures the check script's effect."""
    for party in _PARTIES:
        if actor == party:
            return _advance(party, as_json)
    raise RawError(
        f"gtd step: unknown actor '{actor}' — expected human, agent or check "
        "(`gtd step` alone is the human)"
    )


def run_check(as_json: bool, wait: float | None = None) -> int:
    """``gtd run [--wait SECONDS]``: run gtd's own script for the awaited check,
    then step as it. With ``--wait``, a check still running after that long is
    answered ``checking`` (exit 0); the next ``gtd run`` attaches to it."""
    from gtd.step.detached_check import CheckRunning, Running
    from gtd.step.edge import NoCheckAwaited, open_context, run_check

    ctx = open_context(_root())
    try:
        result = run_check(ctx, wait)
    except (NoCheckAwaited, CheckRunning) as exc:
        raise RawError(f"gtd run: {exc.message}") from None
    if isinstance(result, Running):
        again = "gtd run" + (f" --wait {wait:g}" if wait is not None else "")
        message = (
            f"the check script started at {result.started} is still running "
            f"(process group {result.pid}) — run `{again}` again to wait for it"
        )
        if as_json:
            state = _resolve_state(ctx)
            _emit(
                {
                    "state": state,
                    "checking": True,
                    "message": message,
                    "actions": ctx.actions,
                    "commits": ctx.commits,
                }
            )
        else:
            print(f"checking: {message}")
        return 0
    return _report(ctx, lambda: result, as_json)


def _resolve_state(ctx: Context) -> str:
    from gtd.step.edge import resolve_snapshot
    from gtd.step.gather import gather

    return resolve_snapshot(gather(ctx.git), ctx.config, None, ctx.git).state


def _advance(invoker: Invoker, as_json: bool) -> int:
    from gtd.step.edge import advance, open_context

    ctx = open_context(_root())
    return _report(ctx, lambda: advance(ctx, invoker), as_json)


def _report(ctx: Context, act: Callable[[], Advance], as_json: bool) -> int:
    try:
        result = act()
    except GtdError:
        if not as_json:
            for subject in ctx.commits:  # the commits made so far are kept
                print(f"committed: {subject}")
        raise
    if as_json:
        _emit(
            {
                "state": result.state,
                "actions": list(result.actions),
                "commits": list(result.commits),
            }
        )
    else:
        for subject in result.commits:
            print(f"committed: {subject}")
        print(f"state: {result.state}")
    if result.note:
        print(f"gtd: {result.note}", file=sys.stderr)
    return 0


# -- next ----------------------------------------------------------------------------


def next_prompt(as_json: bool) -> int:
    """``gtd next``. Refuses on any pending change, as gtd 2.0.0 does — even one only
    under ``.gtd/`` — except the agent's draft in progress: at the rest that drafts
    TODO.md or REVIEW.md, a tree whose only change is that file gets the prompt
    again, listing the draft's format findings if any (the validation loop). With
    scripted checks every answer names the actor's ``kind``, and a check's carries
    the wrapper script in ``script`` (plain mode prints the script alone)."""
    from gtd.step.edge import file_fields, open_context, resolve_snapshot
    from gtd.step.gather import gather

    ctx = open_context(_root())
    snapshot = gather(ctx.git)
    dirty = not snapshot.tree.clean
    if snapshot.tree.dirty_outside_gtd:
        raise RawError(_DIRTY_NEXT)
    r = resolve_snapshot(snapshot, ctx.config, None, ctx.git)
    if dirty and not _draft_in_progress(snapshot.tree, r):
        raise RawError(_DIRTY_NEXT)
    kind = _kind(ctx.config, r.actor)
    if r.pending:
        if as_json:
            _emit({"state": r.state, "actor": r.actor, "pending": True, "prompt": None} | kind)
        else:
            print(_PENDING_AGENT if r.actor == "agent" else _PENDING_HUMAN)
        return 0
    from gtd.step.inlines import build_prompt

    prompt = build_prompt(ctx.git, snapshot.commits, r, ctx.config, plain=not as_json)
    if as_json:
        script = {"script": prompt} if r.actor == "check" else {}
        _emit(
            {"state": r.state, "actor": r.actor, "pending": False, "prompt": prompt}
            | kind
            | script
            | file_fields(r)
        )
    else:
        sys.stdout.write(prompt)
    return 0


def _draft_in_progress(tree: WorkingTree, r: Resolution) -> bool:
    """The tree's only pending change is the file the resting agent drafts."""
    from gtd.step.states import DRAFTED

    draft = DRAFTED.get(r.state) if r.actor == "agent" and not r.pending else None
    return draft is not None and all(change.path == draft for change in tree.dirty)


def _kind(config: StepConfig, actor: Party) -> dict[str, str]:
    """``{"kind": ...}`` with scripted checks; nothing in gtd 2.x mode (its JSON)."""
    if not config.scripted:
        return {}
    from gtd.step.subjects import KINDS

    return {"kind": KINDS[actor]}


# -- status --------------------------------------------------------------------------


def status(as_json: bool) -> int:
    from gtd.step.edge import complete, file_fields, open_context, resolve_snapshot
    from gtd.step.errors import ChangesNotGathered
    from gtd.step.gather import gather
    from gtd.step.predict import predict

    ctx = open_context(_root())
    snapshot = gather(ctx.git)
    r = resolve_snapshot(snapshot, ctx.config, None, ctx.git)
    try:
        p = predict(snapshot, r, ctx.config)
    except ChangesNotGathered:  # a fold of the mover may reach further back
        p = predict(complete(ctx.git, snapshot), r, ctx.config)
    # The file of the state reported: at a dirty boundary that is grilling's TODO.md.
    fields = file_fields(r if p.state == r.state else r._replace(state=p.state))
    if as_json:
        _emit(
            {
                "state": p.state,
                "actor": p.actor,
                "predictedCommit": p.commit,
                "predictedState": p.predicted_state,
            }
            | fields
        )
    else:
        print(f"State: {p.state}")
        print(f"Awaits: {p.actor}")
        print(f"Predicted commit: {p.commit or '(none)'}")
        print(f"Predicted state: {p.predicted_state}")
        if "file" in fields:
            print(f"File: {fields['file']}")
        if "mode" in fields:
            print(f"Mode: {fields['mode']}")
    return 0


# -- review --------------------------------------------------------------------------


def review(targets: list[str], as_json: bool) -> int:
    if not targets:
        raise RawError("gtd review: missing target argument")
    if len(targets) > 1:
        raise RawError(
            f"gtd review: too many arguments — expected one target, got: {' '.join(targets)}"
        )
    target = targets[0]
    from gtd.step.edge import commit, make_review_folder, open_context, resolve_snapshot
    from gtd.step.gather import gather
    from gtd.step.subjects import reviewing_subject

    ctx = open_context(_root())
    git = ctx.git
    snapshot = gather(git)
    if not snapshot.tree.clean:
        raise RawError(
            "gtd review: working tree is dirty — commit your changes (or run `gtd step`) first"
        )
    current = resolve_snapshot(snapshot, ctx.config, None, git)
    if current.pending or current.state not in ("idle", "review"):
        raise RawError(
            f"gtd review: a cycle is in progress ({current.state}, awaiting the "
            f"{current.actor}) — finish it before anchoring a review"
        )
    resolved = git.call("rev-parse", "--verify", "--end-of-options", f"{target}^{{commit}}")
    if resolved.returncode != 0 or snapshot.head is None:
        detail = (resolved.stderr.strip().splitlines() or ["unknown revision"])[-1]
        if snapshot.head is None:
            detail = "the repository has no commits yet"
        raise RawError(f"gtd review: cannot resolve ref '{target}': {detail}")
    base = git.run("merge-base", resolved.stdout.strip(), snapshot.head, check=False).strip()
    if not base:
        raise RawError(f"gtd review: cannot resolve ref '{target}': no common ancestor with HEAD")
    if git.ok("diff", "--quiet", base, snapshot.head, "--", ".", ":(exclude).gtd"):
        raise RawError(f"gtd review: nothing to review ({target} diff is empty after filtering)")
    subject = reviewing_subject(base)
    ctx.actions.append(f'anchor the review at {base} with "{subject}"')
    commit(ctx, subject)
    make_review_folder(git.root)
    if as_json:
        _emit({"state": "review", "actions": ctx.actions, "commits": ctx.commits})
    else:
        print(f"anchored review at {base} — run `gtd next` to get the review prompt")
    return 0


# -- format --------------------------------------------------------------------------


def format_file(args: list[str]) -> int:
    """Format a markdown file in place: CommonMark + GFM, prose wrapped at 80
    columns, whatever the host repository's own formatter config says."""
    if "--json" in args:
        raise RawError("gtd format does not accept --json")
    if not args:
        raise RawError("gtd format: missing file path argument")
    if len(args) > 1:
        raise RawError(f"gtd format: too many arguments — expected one path, got: {' '.join(args)}")
    name = args[0]
    if not name.lower().endswith((".md", ".markdown")):
        raise RawError(f"gtd format: {name} is not a markdown file (expected .md or .markdown)")
    path = Path(name)
    if not path.is_file():
        raise GtdError(f"skipped formatting {name}: not found")
    import mdformat

    from gtd.fsio import atomic_write

    text = path.read_text(encoding="utf-8")
    formatted = mdformat.text(text, options={"wrap": 80, "number": False}, extensions={"gfm"})
    if formatted != text:
        atomic_write(path, formatted)
    return 0
