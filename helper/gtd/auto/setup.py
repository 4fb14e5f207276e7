"""`gtd auto setup`: make a repository ready for the unattended loop.

Checks the repository and PLAN.md, writes the config template, keeps gtd's private
files and test litter out of git through ``.git/info/exclude`` (on every branch),
commits the files the loop needs tracked (only those paths), takes the baseline in
the clean room, and seals the snapshot. The baseline may take as long as the
suite, so it runs in a worker process: setup waits for it up to
``ratchet.wait_seconds`` and otherwise answers ``checking``; run setup again to
get the result. A baseline that did not really run is refused with a diagnosis
(``baseline-broken``) unless accepted with ``--accept-baseline``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from gtd import paths
from gtd.auto import records, state
from gtd.auto.main_line import is_main
from gtd.clock import Now
from gtd.errors import GtdError, InputError, RepoError
from gtd.fsio import atomic_write, locked, state_lock
from gtd.git import Git

LOOP_COMMAND = "/loop 1m /gtd:auto-cycle"
SETUP_SUBJECT = "chore(gtd): set up auto mode"

Answer = dict[str, Any]


def setup(root: Path, now: Now, *, accept: bool = False) -> Answer:
    from gtd.auto import plan_file

    git = Git(root, hardened=True)
    if git.head() is None:
        raise RepoError(
            f"{root}: the repository has no commits", "make a first commit, then run setup again"
        )
    if git.branch() is None:
        raise RepoError(
            "HEAD is detached: the loop's commits would land on no branch",
            "create or check out a branch for the loop (`git switch -c gtd-auto`), then rerun",
        )
    try:
        _, plan = plan_file.load_valid(root)
    except InputError as exc:
        missing = not (root / paths.PLAN).exists()
        return {
            "status": "needs-plan",
            "problems": [] if missing else exc.message.splitlines(),
            "specs": sorted(p.relative_to(root).as_posix() for p in root.glob("specs/*.md")),
            "message": "no PLAN.md: write one first (the planner agent, or by hand)"
            if missing
            else "PLAN.md has problems; fix them and run setup again",
            "next": "write or fix PLAN.md, check it with `gtd plan check`, rerun `gtd auto setup`",
        }
    tracked_state = [
        p for p in git.run("ls-files", "-z", "--", *paths.HELPER_STATE).split("\0") if p
    ]
    if tracked_state:
        raise GtdError(
            f"helper state is tracked by git: {', '.join(tracked_state)}",
            f"gtd keeps it out of commits: run `git rm --cached {' '.join(tracked_state)}` "
            "and commit, then rerun setup",
        )
    with locked(state_lock(root)):
        st = state.read(git, head=True)  # HEAD with it: a git process less
        at_head = st.head
        if not st.set_up and (root / paths.MEMORY).exists():
            from gtd.auto import memory_file

            memory_file.load(root / paths.MEMORY)  # imported at the end: say now if unreadable
        current = st.journal
        if current is not None and current.kind != "baseline":
            raise GtdError(
                "a cycle is in flight", "let it finish (or run `gtd cycle begin` to recover it)"
            )
        from gtd.processes import alive

        if current is not None and alive(current.pid):
            return _checking()
        if current is not None:
            st = state.write(git, st, "drop an interrupted baseline run", journal=None)
        head = at_head[0] if at_head is not None else git.head()
        if state.SETUP in st.raw:
            result: Answer = json.loads(st.raw[state.SETUP])
            st = state.write(git, st, "setup result reported", others={state.SETUP: None})
            if result.get("head") == head:
                result.pop("head", None)
                return result
        created, committed, cfg = _prepare(root, git)
        if committed is not None:  # the setup commit moved HEAD
            head = git.head()
        assert head is not None
        from gtd.auto.config import to_json
        from gtd.auto.cycle.seals import environment_changes

        summary = st.summary or {}
        # Set up again after the test environment changed (a package installed,
        # a linked folder updated): the baseline is taken again in it, as
        # `begin` asks (it halts until then).
        if (
            st.set_up
            and summary.get("head") == head
            and summary.get("config") == to_json(cfg)
            and not environment_changes(summary, summary.get("environment_dirs") or [])
        ):
            return _ready(root, git, st, plan, cfg, created=created, committed=committed)
        from gtd.auto.cycle.worker import fork
        from gtd.auto.journal import Journal

        entry = Journal(
            cycle=0, task="", title="gtd auto setup: taking the baseline", kind="baseline",
            spike=False, base=head, branch=git.branch(), started_at=now.iso,
            started_epoch=now.epoch, phase="checking",
        )  # fmt: skip
        st = state.write(git, st, "setup: baseline", journal=entry)
        extra = {"created": created, "committed": committed}
        child = fork(root, lambda: _worker(root, accept, extra))
        st = state.write(git, st, f"setup: worker {child}", journal=entry.evolve(pid=child))
    deadline = time.monotonic() + cfg.wait_s
    while True:
        done, _ = os.waitpid(child, os.WNOHANG)
        if done:
            break
        if time.monotonic() >= deadline:
            return _checking()
        time.sleep(0.02)
    with locked(state_lock(root)):
        st = state.read(git)
        if state.SETUP not in st.raw:
            raise GtdError(
                f"the baseline run stopped before its result (see {paths.CHECK_LOG})",
                "run `gtd auto setup` again",
            )
        result = json.loads(st.raw[state.SETUP])
        state.write(git, st, "setup result reported", others={state.SETUP: None})
    result.pop("head", None)
    return result


def _checking() -> Answer:
    return {
        "status": "checking",
        "message": "the baseline run is still going (it runs the whole suite once)",
        "next": "run `gtd auto setup` again later for the result",
    }


def _prepare(root: Path, git: Git) -> tuple[list[str], str | None, Any]:
    """Config template, exclude rules, and the setup commit (PLAN.md + config)."""
    from gtd.auto import config

    created: list[str] = []
    if not (root / paths.CONFIG).exists():
        atomic_write(root / paths.CONFIG, config.template_text())
        created.append(paths.CONFIG)
    cfg = config.load_auto_config(root)  # after writing the template: validates a human's file
    ensure_excluded(git, _virtualenvs(root, git, cfg.links))
    to_commit = [e.path for e in git.status() if e.path in (paths.PLAN, paths.CONFIG)]
    committed = None
    if to_commit:
        git.run("add", "--", *to_commit)
        git.run("commit", "-q", "--no-verify", "-m", SETUP_SUBJECT, "--", *to_commit)
        committed = git.short("HEAD")
    return created, committed, cfg


def _virtualenvs(root: Path, git: Git, links: tuple[str, ...]) -> list[str]:
    """The linked folders that are virtualenvs git does not track: they are the
    test environment, never part of a commit, and an unignored one would make
    every tick answer `dirty`."""
    from gtd.detect import venv_python

    found = [link for link in links if venv_python(root / link) is not None]
    if not found:
        return []
    tracked = set(git.run("ls-files", "-z", "--", *found).split("\0"))
    return [f for f in found if not any(t == f or t.startswith(f + "/") for t in tracked)]


def ensure_excluded(git: Git, virtualenvs: list[str] | None = None) -> bool:
    """gtd's block in ``.git/info/exclude``: private helper files, test litter and
    the project's untracked virtualenvs (``virtualenvs``) are ignored on every
    branch. Returns whether the file changed."""
    path = git.common_dir() / "info" / "exclude"  # git reads no worktree's own
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    # No trailing slash: a virtualenv may be a symbolic link to one elsewhere.
    venvs = [f"/{v.strip('/')}" for v in virtualenvs or ()]
    lines = [paths.EXCLUDE_BEGIN, *paths.EXCLUDE_LINES, *venvs, paths.EXCLUDE_END]
    block = "\n".join(lines) + "\n"
    start, end = text.find(paths.EXCLUDE_BEGIN), text.find(paths.EXCLUDE_END)
    if start != -1 and end != -1:
        new = text[:start] + block + text[end + len(paths.EXCLUDE_END) :].lstrip("\n")
    else:
        new = text + ("" if not text or text.endswith("\n") else "\n") + block
    if new == text:
        return False
    atomic_write(path, new)
    return True


def _worker(root: Path, accept: bool, extra: dict[str, Any]) -> None:
    """The baseline run of setup, in its own process; its answer is sealed."""
    from gtd.auto import baseline, config, memory_file, plan_file
    from gtd.auto.ratchet.diagnose import diagnose
    from gtd.auto.rendering import render
    from gtd.clock import now

    git = Git(root, hardened=True)
    lock = state_lock(root)
    current = baseline.claim(git, lock)
    if current is None:
        return
    cfg = config.load_auto_config(root)
    snap = baseline.take(git, cfg, current.base)
    from gtd.auto.ratchet import box

    found = diagnose(
        snap.baseline,
        cfg.test_command,
        pytest=snap.environment.plugin,
        has_tests=bool(snap.test_paths),
        ended=box.killed(snap.baseline.command("test"), box.plan(cfg)),
    )
    if found is not None and accept:
        snap = snap._replace(accepted=f"{found.problem} (accepted at setup)")
    with locked(lock):
        st = state.read(git)
        if st.journal is None or st.journal.pid != os.getpid():
            return
        _, plan = plan_file.load(root)
        answer: Answer = {"head": current.base}
        if snap.baseline_red or (found is not None and not accept):
            answer.update(_refused(snap, cfg, found))
            state.write(
                git,
                st,
                "setup: baseline refused",
                journal=None,
                others={state.SETUP: json.dumps(answer).encode()},
            )
            return
        imported: list[records.Record] = []
        reverted: list[int] = []
        if not st.set_up:
            mem, _ = memory_file.load(root / paths.MEMORY)
            imported = records.from_memory(mem)
            known = {r.cycle for r in mem.cycles}
            reverted = [n for n in _reverted_numbers(git) if n not in known]
        st = baseline.seal(
            root,
            git,
            st,
            snap,
            cfg,
            message="setup: snapshot",
            append=imported,
            reverted_before=reverted,
        )
        answer.update(_ready_answer(root, git, snap, plan, cfg, extra=extra))
        state.write(git, st, "setup: ready", others={state.SETUP: json.dumps(answer).encode()})
        render(root, state.read(git), plan, now())


def _reverted_numbers(git: Git) -> list[int]:
    refs = git.refs(state.reverted_refs(git))
    return sorted(int(ref.rsplit("-", 1)[-1]) for ref in refs if ref.rsplit("-", 1)[-1].isdigit())


def _ready(
    root: Path,
    git: Git,
    st: state.State,
    plan: Any,
    cfg: Any,
    *,
    created: list[str],
    committed: str | None,
) -> Answer:
    from gtd.auto.ratchet import snapshot as codec

    raw = state.read_blob(git, st, state.SNAPSHOT)
    assert raw is not None
    snap = codec.loads(raw, f"{state.ref(git)}:{state.SNAPSHOT}")
    return _ready_answer(
        root, git, snap, plan, cfg, extra={"created": created, "committed": committed}
    )


def _ready_answer(
    root: Path, git: Git, snap: Any, plan: Any, cfg: Any, *, extra: dict[str, Any]
) -> Answer:
    from gtd.auto.ratchet import snapshot as codec

    count = len(snap.test_paths)
    answer: Answer = {
        "status": "ready",
        "tasks": len(plan.tasks),
        "pending": len(plan.pending),
        "snapshot_files": count,
        **_command_facts(cfg),
        "baseline": codec.describe_baseline(snap),
        "tests": tests_line(snap),
        "created": extra.get("created") or [],
        "committed": extra.get("committed"),
        "loop": LOOP_COMMAND,
        "report": paths.REPORT,
        "message": f"Ratchet snapshot: {count} pre-existing test file{'' if count == 1 else 's'}",
    }
    if snap.accepted:
        answer["accepted"] = snap.accepted
    answer.update(_failing(snap))
    warnings: list[str] = []
    branch = git.branch()
    if branch is not None and is_main(git, branch):
        warnings.append(_on_main(branch, extra.get("committed")))
    from gtd.auto.ratchet.diagnose import plugin_unheard

    unheard = plugin_unheard(snap.baseline, cfg.test_command, plugin=snap.environment.plugin)
    if unheard is not None:
        warnings.append(unheard)
    from gtd.auto.ratchet import box

    answer["judge"] = box.plan(cfg).described.removeprefix("judge ")  # never a silent downgrade
    from gtd.auto import install_metadata

    entries = git.status()
    dirty = [e.path for e in entries]
    rewritten = install_metadata.folders(e.path for e in entries if not e.untracked)
    others = [p for p in dirty if not any(p.startswith(f + "/") for f in rewritten)]
    if dirty:
        answer["dirty"] = dirty
    if rewritten:
        warnings.append(
            f"{', '.join(f + '/' for f in rewritten)} rewritten by the project's install: "
            "every tick answers `dirty` until it is untracked (the install_metadata: command)"
        )
    if others:
        warnings.append(
            "uncommitted changes: every tick answers `dirty` until you commit or stash them"
        )
    if warnings:
        answer["warning"] = "; ".join(warnings)
    # Tracked files the project's install rewrites: said before the first tick
    # answers `dirty` for them.
    regenerated = install_metadata.folders(git.run("ls-files", "-z").split("\0"))
    if regenerated:
        answer["install_metadata"] = install_metadata.advice(regenerated)
    answer["next"] = _first(bool(rewritten), bool(others)) + f"start the loop: {LOOP_COMMAND}"
    return answer


def _first(rewritten: bool, others: bool) -> str:
    """What a dirty tree needs before the loop starts: a loop started on it only
    answers `dirty`, tick after tick."""
    steps = ["run the install_metadata: command"] if rewritten else []
    if others:
        steps.append(f"commit or stash the {'other' if rewritten else 'uncommitted'} changes")
    return f"{' and '.join(steps)}, then " if steps else ""


def _on_main(branch: str, committed: str | None) -> str:
    """The warning of a setup on the main line, with the commands that move the
    work to a branch of its own (nothing else changes: the baseline is the same
    commit's)."""
    if committed:
        move = (
            f"`git switch -c gtd-auto && git branch -f {branch} {committed}~1` moves it "
            f"(and the loop) to a branch of its own"
        )
        return (
            f"set up on `{branch}`: the setup commit {committed} and every cycle's "
            f"commit land on it; {move}"
        )
    return (
        f"set up on `{branch}`: every cycle's commit lands on it; `git switch -c gtd-auto` "
        "before the loop starts keeps it on a branch of its own"
    )


def _failing(snap: Any) -> Answer:
    """The tests failing at the baseline, named (the first few and a count) and
    said tolerated: `tests: 255 / 257 passed` alone leaves a person to guess."""
    from gtd.auto.report_notes import SHOWN_FAILING, failing_line

    tests = snap.baseline.tests or {}
    failing = sorted(t for t, o in tests.items() if o in ("failed", "error"))
    if not failing:
        return {}
    return {"failing": failing_line(len(failing), failing[:SHOWN_FAILING])}


def _failing_refused(snap: Any) -> Answer:
    """The tests failing at a baseline setup refuses, named: not tolerated (yet),
    so not said so; `--accept-baseline` would make them so."""
    from gtd.auto.report_notes import SHOWN_FAILING
    from gtd.auto.shorten import shorten

    tests = snap.baseline.tests or {}
    failing = sorted(t for t, o in tests.items() if o in ("failed", "error") and "::" in t)
    if not failing:
        return {}
    shown = ", ".join(shorten(t, 120) for t in failing[:SHOWN_FAILING])
    if len(failing) > SHOWN_FAILING:
        shown += f" and {len(failing) - SHOWN_FAILING} more"
    many = "1 test fails" if len(failing) == 1 else f"{len(failing)} tests fail"
    return {"failing": f"{many} at the baseline: {shown}."}


def _refused(snap: Any, cfg: Any, found: Any) -> Answer:
    from gtd.auto.ratchet import snapshot as codec

    answer: Answer = {
        "status": "baseline-red",
        "snapshot_files": len(snap.test_paths),
        **_command_facts(cfg),
        "baseline": codec.describe_baseline(snap),
        "tests": tests_line(snap),
    }
    if snap.baseline_red and found is None:
        answer["message"] = (
            "the test suite fails before any change and reports no per-test results, "
            "so the ratchet cannot tell a regression from the old failure"
        )
        answer["next"] = "make the suite green (or emit JUnit XML, see ratchet.junit_xml) and rerun"
        return answer
    answer["status"] = "baseline-broken"
    answer.update(_failing_refused(snap))
    if snap.baseline_red:  # nothing to accept: without results no cycle could be judged
        answer["problem"] = found.problem
        answer["fix"] = found.fix
        answer["message"] = f"the baseline did not run the suite: {found.problem}"
        answer["next"] = f"{found.fix}; then rerun `gtd auto setup`"
        return answer
    answer["problem"] = found.problem
    answer["fix"] = found.fix
    answer["message"] = f"the baseline did not really run the suite: {found.problem}"
    answer["next"] = (
        f"{found.fix}; then rerun `gtd auto setup` (or accept it as it is with "
        "`gtd auto setup --accept-baseline`)"
    )
    return answer


def _command_facts(cfg: Any) -> Answer:
    """The test command, why it is the one, and what the clean room links."""
    facts: Answer = {"test_command": cfg.test_command}
    if cfg.test_command_reason:
        facts["test_command_why"] = cfg.test_command_reason
    if cfg.links:
        facts["linked"] = list(cfg.links)
    return facts


def tests_line(snapshot: Any) -> str:
    from gtd.auto.ratchet.diagnose import not_collected, uncollected

    base = snapshot.baseline
    if base.tests_total is None:
        return "no per-test results (judged by exit code)"
    # A file pytest could not collect counts as one errored "test": `0 / 1 passed`
    # would read as one test failing. Say what happened, in the diagnosis's words.
    broken = uncollected(base.tests or {})
    if not broken:
        return f"{base.tests_passed} / {base.tests_total} passed at baseline"
    ran = base.tests_total - len(broken)
    counted = f"{base.tests_passed} / {ran} passed" if ran else "none ran"
    return f"{counted} at baseline: {not_collected(broken)}"
