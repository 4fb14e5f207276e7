"""`gtd auto setup`: make a repository ready for the unattended loop.

Checks the repository and PLAN.md, writes the config template and the ignore rules
for helper state, commits the files the loop needs tracked (only those paths),
takes the ratchet snapshot with a baseline run, and says how to start the loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gtd import paths
from gtd.auto import journal as journal_mod
from gtd.clock import Now
from gtd.errors import GtdError, InputError, RepoError
from gtd.fsio import atomic_write, locked
from gtd.git import Git

LOOP_COMMAND = "/loop 1m /gtd:auto-cycle"
SETUP_SUBJECT = "chore(gtd): set up auto mode"


def setup(root: Path, now: Now) -> dict[str, Any]:
    from gtd.auto import plan_file

    git = Git(root)
    if git.head() is None:
        raise RepoError(
            f"{root}: the repository has no commits", "make a first commit, then run setup again"
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
    with locked(root / paths.LOCK):
        if journal_mod.load(root) is not None:
            raise GtdError(
                "a cycle is in flight", "let it finish (or run `gtd cycle begin` to recover it)"
            )
        return _setup_locked(root, git, plan, now)


def _setup_locked(root: Path, git: Git, plan: Any, now: Now) -> dict[str, Any]:
    from gtd.auto import config, memory_file, ratchet, report

    created: list[str] = []
    if not (root / paths.CONFIG).exists():
        atomic_write(root / paths.CONFIG, config.template_text())
        created.append(paths.CONFIG)
    if not (root / paths.IGNORE).exists():
        atomic_write(root / paths.IGNORE, paths.IGNORE_TEXT)
        created.append(paths.IGNORE)
    cfg = config.load_config(root)  # after writing the template: validates a human's file

    to_commit = [e.path for e in git.status() if e.path in (paths.PLAN, paths.CONFIG, paths.IGNORE)]
    committed = None
    if to_commit:
        git.run("add", "--", *to_commit)
        git.run("commit", "-q", "--no-verify", "-m", SETUP_SUBJECT, "--", *to_commit)
        committed = git.short("HEAD")

    snapshot = ratchet.take_snapshot(root, cfg)
    mem = memory_file.load_fast(root / paths.MEMORY)
    title = plan.title or next((t.spec for t in plan.tasks if t.spec), None) or root.name
    atomic_write(root / paths.REPORT, report.render(title, mem, now.iso))

    dirty = [e.path for e in git.status()]
    answer: dict[str, Any] = {
        "status": "ready",
        "tasks": len(plan.tasks),
        "pending": len(plan.pending),
        "snapshot_files": len(snapshot.files),
        "test_command": cfg.test_command,
        "baseline": ratchet.describe_baseline(snapshot),
        "tests": _tests_line(snapshot),
        "created": created,
        "committed": committed,
        "loop": LOOP_COMMAND,
        "report": paths.REPORT,
        "message": f"Ratchet snapshot: {len(snapshot.files)} pre-existing test files",
    }
    if ratchet.baseline_red(snapshot):
        answer["status"] = "baseline-red"
        answer["message"] = (
            "the test suite fails before any change and reports no per-test results, "
            "so the ratchet cannot tell a regression from the old failure"
        )
        answer["next"] = "make the suite green (or emit JUnit XML, see ratchet.junit_xml) and rerun"
        return answer
    if dirty:
        answer["dirty"] = dirty
        answer["warning"] = "uncommitted changes: every tick answers `dirty` until you commit them"
    answer["next"] = f"start the loop: {LOOP_COMMAND}"
    return answer


def _tests_line(snapshot: Any) -> str:
    base = snapshot.baseline
    if base.tests_total is None:
        return "no per-test results (judged by exit code)"
    return f"{base.tests_passed} / {base.tests_total} passed at baseline"
