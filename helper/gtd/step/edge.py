"""The edge: performs the one action :func:`gtd.step.machine.resolve` returns, and the
mutators' fixpoint loop (docs/step-mode.md, "How it is built").

Every git and test command goes through :mod:`gtd.proc` (via :class:`gtd.git.Git`).
A red test run is a normal step; an operational failure (a missing test binary, a
git error) raises after keeping every commit made so far, so re-running resumes from
the checkpoint HEAD now records.

Staging never takes auto mode's private files (``.deepflow/`` but its
``config.yaml``; :func:`gtd.step.steering.is_private`): every ``git add`` here
excludes them by pathspec, whatever the branch's ignore rules say.

With scripted checks the edge runs a check script only for :class:`RunCheck` (the
human's step at idle) and for ``gtd run`` (:func:`run_check`) — always the script
it renders itself from the config and the state (:mod:`gtd.step.script`), never
text read from the working tree.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from gtd import proc, spawned
from gtd.errors import GitError, GtdError, RepoError
from gtd.git import Git
from gtd.step.actions import (
    SQUASH_TEMPLATE,
    Action,
    CaptureCheck,
    ClosePackage,
    HealthCheck,
    MakeCommit,
    RunCheck,
    RunTests,
    Squash,
    WriteSquashTemplate,
    silent_failure_message,
)
from gtd.step.config_file import STUB_NAME, load_step_config, stub_text
from gtd.step.errors import ChangesNotGathered, StepError
from gtd.step.events import Invoker, Snapshot
from gtd.step.gather import ensure_attached, gather, read_changes
from gtd.step.machine import Resolution, resolve
from gtd.step.settings import StepConfig
from gtd.step.states import State, SteeringFile
from gtd.step.steering import (
    AUTO_CONFIG,
    AUTO_DIR,
    ERRORS,
    FEEDBACK,
    GTD_DIR,
    HEALTH,
    SQUASH_MSG,
)
from gtd.step.subjects import Boundary
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from gtd.step.detached_check import Running
    from gtd.step.sketch import Sketch

__all__ = [
    "HOPS",
    "Advance",
    "Context",
    "TestCommandNotFound",
    "advance",
    "check_script",
    "commit",
    "complete",
    "file_fields",
    "make_review_folder",
    "open_context",
    "resolve_snapshot",
    "resting_file",
    "run_check",
]

HOPS = 100
HOP_LIMIT_MESSAGE = f"edge loop exceeded {HOPS} hops without reaching fixpoint"


class TestCommandNotFound(GtdError):
    """The configured test command names an executable that does not exist."""

    __test__ = False  # not a pytest class, whatever its name says


class Context:
    """One invocation's repository, config and the commits it has authored."""

    __slots__ = ("actions", "commits", "config", "git")

    def __init__(
        self,
        git: Git,
        config: StepConfig,
        commits: list[str] | None = None,
        actions: list[str] | None = None,
    ) -> None:
        self.git = git
        self.config = config
        self.commits: list[str] = [] if commits is None else commits
        self.actions: list[str] = [] if actions is None else actions

    def __repr__(self) -> str:
        return (
            f"Context(git={self.git!r}, config={self.config!r}, "
            f"commits={self.commits!r}, actions={self.actions!r})"
        )

    @property
    def root(self) -> Path:
        return self.git.root


def open_context(root: Path, *, mutate: bool = True) -> Context:
    """Guard HEAD, load the config and auto-init it when none exists anywhere."""
    git = Git(root)
    ensure_attached(git)
    config, files = load_step_config(root)
    ctx = Context(git, config)
    if not files and mutate:
        auto_init(ctx)
    return ctx


def auto_init(ctx: Context) -> None:
    """Write the ``.gtdrc.json`` stub and commit it on its own, or amend it into HEAD
    when HEAD is a ``gtd`` commit (a boundary there would strand the workflow). Only
    the stub is committed; whatever else is pending stays pending."""
    git = ctx.git
    (ctx.root / STUB_NAME).write_text(stub_text(), encoding="utf-8")
    head = git.head()
    subject = git.run("log", "-1", "--format=%s").strip() if head else ""
    from gtd.step.subjects import parse_subject

    owned = head is not None and not isinstance(parse_subject(subject), Boundary)
    git.run("add", "--", STUB_NAME)
    if owned:
        git.run(
            "commit", "-q", "--no-verify", "--allow-empty", "--amend", "--no-edit", "--", STUB_NAME
        )
        done = "amended it into HEAD"
    else:
        message = "chore: add .gtdrc.json"
        git.run("commit", "-q", "--no-verify", "-m", message, "--", STUB_NAME)
        ctx.commits.append(message)
        ctx.actions.append(f'write {STUB_NAME} and commit "{message}"')
        done = f"committed it as `{message}`"
    import sys

    # `gtd next` and `gtd status` print no commit lines: the one write they make
    # (gtd 2.0's auto-init) is said here, or it would pass unseen.
    print(
        f"gtd: no config file in this folder or above: wrote {STUB_NAME} and {done} "
        "(gtd 2.0's auto-init, once per repository; set testCommand in it)",
        file=sys.stderr,
    )


# -- commits -------------------------------------------------------------------------


def _remove(root: Path, rel: str) -> None:
    target = root / rel
    if target.is_dir() and not target.is_symlink():
        import shutil  # deferred: bz2, lzma and zlib for a rare removal

        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()


def _prune_gtd_dir(root: Path) -> None:
    gtd_dir = root / GTD_DIR
    try:
        if gtd_dir.is_dir() and not any(gtd_dir.iterdir()):
            gtd_dir.rmdir()
    except OSError:
        pass


def stage_all(git: Git) -> None:
    """``git add -A`` of everything but auto mode's private files: ``.deepflow/`` is
    excluded by pathspec, then its ``config.yaml`` (the human's) added on its own —
    an exclude pathspec would drop it too. Its add is allowed to match nothing."""
    git.run("add", "-A", "--", ".", f":(exclude){AUTO_DIR}")
    res = git.call("add", "-A", "--", AUTO_CONFIG)
    if res.returncode != 0 and "did not match any files" not in res.stderr:
        detail = (res.stderr.strip().splitlines() or ["git add failed"])[-1]
        raise GitError(f"git add failed: {detail}")


def commit(ctx: Context, subject: str, *, verbatim: bool = False) -> None:
    """Stage everything (but auto mode's private files) and commit ``subject``
    (allow empty), with the repository's hooks: they are the person's. ``subject``
    may carry a body (the check's trailer).

    A hook that refuses a commit holding changes stops the step with its output:
    gtd never bypasses it (as auto mode, whose `commit.hooks: run` reverts on a
    failing hook). A hook that refuses an *empty* commit (a marker such as
    ``gtd: tests green`` with nothing new) gets one retry without hooks, as the
    2.x contract has it, and the retry is said on stderr: such a commit carries no
    change for a hook to judge."""
    git = ctx.git
    stage_all(git)
    args = ["commit", "-q", "--allow-empty", "-F", "-"]
    if verbatim:
        args.append("--cleanup=verbatim")
    text = subject if subject.endswith("\n") else subject + "\n"
    first = subject.strip().splitlines()[0] if subject.strip() else ""
    result = git.call(*args, input_text=text)
    if result.returncode != 0:
        if not git.ok("diff", "--cached", "--quiet"):  # changes staged: the hook's call
            raise GitError(
                f"git commit of `{first}` was refused: {_last_words(result)}",
                "the repository's commit hook (or git) refused it, and gtd does not "
                "bypass your hooks: fix what it reports, then run gtd again (the "
                "changes stay staged)",
            )
        retry = git.call(*args, "--no-verify", input_text=text)
        if retry.returncode != 0:
            raise GitError(f"git commit failed: {_last_words(retry)}")
        import sys

        print(
            f"gtd: a commit hook refused the empty commit `{first}` "
            f"({_last_words(result)}); it was made without hooks: it holds no change",
            file=sys.stderr,
        )
    ctx.commits.append(first)


def _last_words(result: proc.Result) -> str:
    lines = (result.stderr or result.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit {result.returncode}"


# -- tests ---------------------------------------------------------------------------


class TestRun(NamedTuple):
    green: bool
    report: str


TestRun.__test__ = False  # type: ignore[attr-defined]  # not a pytest class


def run_test_command(ctx: Context) -> TestRun:
    """Run ``testCommand`` split like a shell word list — never through a shell."""
    from gtd.step.script import argv_of  # the one split, shared with the check script

    command = ctx.config.test_command
    argv = argv_of(command)
    if ctx.config.test_command_source != "config":
        _say_test_command(ctx)
    # Waited for as a long command (gtd.spawned.Spawned): a server a test leaves
    # running, holding the output, would otherwise hold the step until it ends.
    child = spawned.start_logged(argv, ctx.root)
    result = child if isinstance(child, proc.Result) else child.finish()
    if result.not_found:
        raise TestCommandNotFound(f"test command not found: {command}")
    if result.returncode == 0:
        return TestRun(True, "")
    output = result.output
    if not output.strip():
        return TestRun(False, silent_failure_message(command, result.returncode) + "\n")
    return TestRun(False, output if output.endswith("\n") else output + "\n")


def _write(root: Path, rel: str, text: str) -> None:
    from gtd.fsio import atomic_write

    atomic_write(root / rel, text)


# -- the actions ---------------------------------------------------------------------


def perform(ctx: Context, action: Action) -> None:
    root = ctx.root
    ctx.actions.append(action.describe())
    if isinstance(action, MakeCommit):
        for rel in action.removes:
            _remove(root, rel)
        _prune_gtd_dir(root)
        commit(ctx, action.subject)
    elif isinstance(action, RunTests):
        run = run_test_command(ctx)  # before touching anything: a missing binary loses nothing
        _remove(root, FEEDBACK)
        if run.green:
            _prune_gtd_dir(root)
            commit(ctx, "gtd: tests green")
        else:
            _write(root, ERRORS if action.cap_reached else FEEDBACK, run.report)
            commit(ctx, "gtd: errors")
    elif isinstance(action, ClosePackage):
        _remove(root, FEEDBACK)
        _remove(root, f"{GTD_DIR}/{action.package}")
        _prune_gtd_dir(root)
        commit(ctx, "gtd: package done")
    elif isinstance(action, WriteSquashTemplate):
        _write(root, SQUASH_MSG, SQUASH_TEMPLATE)
        commit(ctx, "gtd: squash template")
    elif isinstance(action, Squash):
        _squash(ctx, action.base)
    elif isinstance(action, HealthCheck):
        run = run_test_command(ctx)
        if not run.green:
            if action.cap_reached:
                _remove(root, HEALTH)
            _write(root, ERRORS if action.cap_reached else HEALTH, run.report)
            commit(ctx, "gtd: health-check")
        elif action.commit_green:
            _remove(root, HEALTH)
            _prune_gtd_dir(root)
            commit(ctx, "gtd: tests green")
    elif isinstance(action, RunCheck):
        _run_script(ctx, action.state)
    elif isinstance(action, CaptureCheck):
        if action.moves_to is not None:
            import os

            os.replace(root / FEEDBACK, root / action.moves_to)
        for rel in action.removes:
            _remove(root, rel)
        _prune_gtd_dir(root)
        commit(ctx, action.message)
    else:  # pragma: no cover - exhaustive over Action
        raise AssertionError(action)


# -- scripted checks -----------------------------------------------------------------


def check_script(ctx: Context, state: str) -> str:
    """The wrapper script for a check at ``state``, rendered from the config — the
    same text ``gtd next`` prints there."""
    from gtd.step.prompts import render
    from gtd.step.script import script_context

    return render("check", script_context(ctx.config, state))


def _run_script(ctx: Context, state: str, wait: float | None = None) -> Running | None:
    """Run gtd's own check script for ``state`` detached (:mod:`gtd.step.detached_check`),
    or attach to the run already going, and wait for it (at most ``wait`` seconds).
    Its effect is left in the tree for the check's capture; a script that could not
    run raises."""
    from gtd.step.detached_check import run

    if ctx.config.test_command_source != "config":
        _say_test_command(ctx)
    return run(ctx.root, check_script(ctx, state), ctx.git.head() or "", state, wait)


def _say_test_command(ctx: Context) -> None:
    """Tell the person at the terminal which command runs when none is configured."""
    import sys

    config = ctx.config
    how = (
        "detected from the project's files"
        if config.test_command_source == "detected"
        else "gtd's default (no test runner detected)"
    )
    print(
        f"gtd: no testCommand is configured — running `{config.test_command}`, {how}; "
        "set testCommand in .gtdrc.json to choose",
        file=sys.stderr,
    )


def _squash(ctx: Context, base: str) -> None:
    """``reset --soft`` to the cycle's base, commit SQUASH_MSG.md verbatim."""
    root = ctx.root
    written = (root / SQUASH_MSG).read_text(encoding="utf-8")
    message = written.replace("\r\n", "\n").strip()
    if not message:
        raise StepError("input", f"{SQUASH_MSG} is empty; write the squash message first")
    head = ctx.git.head()
    from gtd.step.sketch import unchanged_notes

    sketch = unchanged_notes(ctx.git, base, head) if head is not None else None
    paths = sketch.paths if sketch is not None else ()
    notes = {p: (root / p).read_bytes() for p in paths if (root / p).is_file()}
    _remove(root, SQUASH_MSG)
    _prune_gtd_dir(root)
    for rel in notes:
        _remove(root, rel)
    ctx.git.run("reset", "-q", "--soft", base)
    try:
        commit(ctx, message + "\n", verbatim=True)
    except GtdError:
        # A hook refused it (or git failed): back to the commits as they were, the
        # person's message in its file again; nothing of theirs is lost.
        if head is not None:
            ctx.git.run("reset", "-q", head)
        from gtd.fsio import atomic_write, atomic_write_bytes  # make .gtd/ again if pruned

        atomic_write(root / SQUASH_MSG, written)
        for rel, data in notes.items():
            atomic_write_bytes(root / rel, data)
        raise
    if sketch is not None:
        _say_left_out(ctx, sketch)


def _say_left_out(ctx: Context, sketch: Sketch) -> None:
    """Keep the opening turn reachable and say which notes the squash left out."""
    import sys

    ctx.git.run("update-ref", sketch.ref, sketch.opening)
    named = ", ".join(sketch.paths)
    first = sketch.paths[0]
    ctx.actions.append(f"leave the sketch {named} out of the squashed commit")
    print(
        f"gtd: left out of the squashed commit: {named} — the sketch the human's first "
        f"turn added, unchanged since; kept at {sketch.ref} "
        f"(`git show {sketch.ref}:{first}`)",
        file=sys.stderr,
    )


# -- the fixpoint driver -------------------------------------------------------------


class Advance(NamedTuple):
    """What a ``step``/``step-agent`` invocation did."""

    state: State
    commits: tuple[str, ...]
    actions: tuple[str, ...]
    # said on stderr when the invocation captured nothing though its actor is
    # awaited (gtd 2.x exits 0 there: the reason is the person's to read)
    note: str | None = None


def resolve_snapshot(
    snapshot: Snapshot, config: StepConfig, invoker: Invoker, git: Git | None = None
) -> Resolution:
    """``resolve`` with the merge-commit caveat spelled out when nothing matches.

    With ``git``, should a fold read a change list the gather skipped
    (:class:`ChangesNotGathered`), every list is read and the snapshot resolved
    again: the answer never depends on what was skipped."""
    try:
        return _resolve(snapshot, config, invoker)
    except ChangesNotGathered:
        if git is None:
            raise
        return _resolve(complete(git, snapshot), config, invoker)


def _resolve(snapshot: Snapshot, config: StepConfig, invoker: Invoker) -> Resolution:
    try:
        return resolve(snapshot.commits, snapshot.tree, config, invoker)
    except StepError as exc:
        if snapshot.head_is_merge and exc.kind == "corruption":
            raise StepError(
                "corruption",
                f"{exc.message} — HEAD is a merge commit; gtd folds first-parent history "
                "only and cannot resume a cycle across a merge (undo the merge, or finish "
                "the cycle on a branch without merges)",
            ) from None
        raise


def complete(git: Git, snapshot: Snapshot) -> Snapshot:
    """``snapshot`` with every commit's change list read (:func:`gather` reads only
    those the folds are known to need)."""
    commits = read_changes(git, snapshot.commits, len(snapshot.commits))
    return snapshot._replace(commits=commits)


def file_fields(r: Resolution) -> dict[str, str]:
    """``file`` and ``mode`` of ``gtd next --json``/``gtd status --json``: the steering
    file the resting state is about (repo-relative) and its format; each omitted
    when unset (mode: a plain-text file; both: no file, or mid-chain)."""
    found = r.steering_file
    if found is None:
        return {}
    return {"file": found.path, **({"mode": found.mode} if found.mode else {})}


def resting_file(root: Path) -> tuple[Resolution, SteeringFile | None]:
    """The current resolution of the repository at ``root`` (as ``gtd status`` sees
    it, with no invoker; unlike it, writing nothing — not even the config stub) and the steering
    file its resting state is about. The language server's jump command calls this
    in-process; ``gtd next``/``gtd status`` emit the same association."""
    ctx = open_context(root, mutate=False)
    r = resolve_snapshot(gather(ctx.git), ctx.config, None, ctx.git)
    return r, r.steering_file


def advance(ctx: Context, invoker: Invoker) -> Advance:
    """Gather → resolve → act until a rest, a refusal after the first hop, or a
    fixpoint. A refusal at the first hop raises (exit 1, zero commits). Once a check
    script has run (:class:`RunCheck`), the loop goes on as the check actor, whose
    capture is the first hop of its own turn."""
    git = ctx.git
    if invoker == "check":
        from gtd.step.detached_check import ensure_idle

        ensure_idle(ctx.root)  # a running script has not written its verdict yet
    first = True
    for _ in range(HOPS):
        r = resolve_snapshot(gather(git), ctx.config, invoker, git)
        if r.refusal is not None:
            if first:
                raise RepoError(r.refusal)
            return _rest(ctx, r)
        if r.action is None or (not first and not r.continues_chain):
            done = _rest(ctx, r)
            if first and r.decision == "inert":
                return done._replace(note=inert_note(r))
            return done
        made = len(ctx.commits)
        perform(ctx, r.action)
        if isinstance(r.action, RunCheck):
            invoker, first = "check", True
            continue
        first = False
        if len(ctx.commits) == made:  # nothing changed: the action's fixpoint
            return _done(ctx, r.state)
    raise StepError("corruption", HOP_LIMIT_MESSAGE)


class NoCheckAwaited(GtdError):
    """``gtd run`` where no check is awaited."""


def run_check(ctx: Context, wait: float | None = None) -> Advance | Running:
    """``gtd run``: run the check script gtd renders for the awaited check (or for
    the health check at idle, the carve-out), then step as the check. With
    ``wait``, give up waiting after that many seconds and answer the
    :class:`gtd.step.detached_check.Running` run instead (a later call attaches to it).
    Refuses unless checks are scripted and a check is awaited; at idle, also while
    the tree holds changes that are not the check's own output (those are the
    human's to capture with ``gtd step``)."""
    if not ctx.config.scripted:
        raise NoCheckAwaited(
            'checks run inline in this repository (set "checks": "scripted" in '
            ".gtdrc.json to run them as the check actor)"
        )
    r = resolve_snapshot(gather(ctx.git), ctx.config, None, ctx.git)
    if r.pending:
        raise NoCheckAwaited(
            f"{r.state} is a mid-chain checkpoint — run `gtd step-agent` (or `gtd step`) first"
        )
    if r.actor != "check" and r.state != "idle":
        who = "a human" if r.actor == "human" else "an agent"
        raise NoCheckAwaited(f"no check is awaited: {r.state} awaits {who} turn")
    if r.state == "idle" and not r.check_output and not gather(ctx.git).tree.clean:
        raise NoCheckAwaited(
            "idle with uncommitted changes: capture them with `gtd step` before a health check"
        )
    ctx.actions.append(RunCheck(r.state).describe())
    running = _run_script(ctx, r.state, wait)
    if running is not None:
        return running
    return advance(ctx, "check")


def inert_note(r: Resolution) -> str:
    """Why an agent's `gtd step-agent` captured nothing: its state waits on work
    the tree does not hold (at review: `.gtd/REVIEW.md`, which a folder closed
    with the last package made easy to fail to write)."""
    wanted = "`.gtd/REVIEW.md`" if r.state == "review" else "the agent's work"
    return (
        f"nothing to capture: {r.state} awaits {wanted} and the working tree has none "
        "— `gtd next` prints the turn"
    )


def _rest(ctx: Context, r: Resolution) -> Advance:
    """The invocation ends at ``r``; at `review` awaiting the agent, the `.gtd/`
    folder the last package's close removed is made again (empty, so git sees
    nothing), so the agent's REVIEW.md has a folder to go in."""
    if r.state == "review" and r.actor == "agent" and not r.pending:
        make_review_folder(ctx.root)
    return _done(ctx, r.state)


def make_review_folder(root: Path) -> None:
    """An empty ``.gtd/`` (git sees nothing) for the agent's REVIEW.md at a review
    rest: the last package's close, or a clone, leaves none, and a plain
    ``cat > .gtd/REVIEW.md`` would fail."""
    with contextlib.suppress(OSError):  # a file in the way: the agent's write says so
        (root / GTD_DIR).mkdir(exist_ok=True)


def _done(ctx: Context, state: State) -> Advance:
    return Advance(state, tuple(ctx.commits), tuple(ctx.actions))
