"""`gtd verify`: the final check once every task is done (deepflow's levels).

- **L0 build**: the configured build command (``ratchet.build_command``) passes;
  ``skipped`` when none is configured.
- **L1 files**: each done task's work commit (the ``✓ (abc1234)`` hash) changed
  only the files its ``Files:`` line lists. Extra files are a ``warning``, never a
  failure: plans name the files they expect, not every file an honest change
  touches. One ``git log --no-walk`` call covers every task.
- **L2 coverage**: measured only when the test command is pytest and the test
  interpreter can import ``coverage`` (``<python> -m coverage --version``). A
  ``pytest …`` command is recognised by what runs, not by its file (a pyenv or
  asdf shim is a shell script): the command is started once as
  ``pytest --noconftest --version --version`` with a one-line plugin that prints
  the interpreter it was imported into (``_which_python``); then
  ``coverage run -m pytest …`` runs with its data file in a temporary directory
  (nothing is left in the tree) and the total is reported. Informational: no
  threshold, so ``passed`` with the percentage, ``warning`` when the run fails,
  ``skipped`` ("not available") otherwise.
- **L4 tests**: the configured test command, the whole suite, must pass.

The verdict is ``passed`` when no level failed and the plan has no open task.
A verdict is never an error; gtd never merges or pushes — the branch is left for
review. The Health Score of `.deepflow/auto-report.md` is re-rendered with the
levels.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

from gtd import paths, proc, spawned
from gtd.auto.config import AutoConfig, load_auto_config
from gtd.auto.plan import Plan, Task
from gtd.auto.report import Health, VerifyResult
from gtd.clock import Now
from gtd.errors import GtdError
from gtd.fsio import remove_tree
from gtd.git import Git

Answer = dict[str, Any]

_TOTAL = re.compile(r"^TOTAL\s.*?(\d+(?:\.\d+)?)%\s*$", re.MULTILINE)
_MAX_LISTED = 5


def verify(root: Path, now: Now) -> Answer:
    from gtd.auto import plan_file, state

    _, the_plan = plan_file.load_valid(root)
    current = state.read(Git(root, hardened=True)).journal
    if current is not None and current.kind != "baseline":
        raise GtdError(
            f"cycle {current.cycle} ({current.task}) is in flight",
            "let it finish (or run `gtd cycle end`), then verify",
        )
    config = load_auto_config(root)
    results = [
        _build(root, config),
        _files(Git(root), the_plan),
        _coverage(root, config),
        _tests(root, config),
    ]
    open_tasks = [t.id for t in the_plan.tasks if t.status == "todo"]
    failed = [r for r in results if r.status == "failed"]
    passed = not failed and not open_tasks
    if passed:
        message = "Verification passed: the branch is ready for review"
    else:
        why = [f"{r.level} {r.name} failed" for r in failed]
        if open_tasks:
            tasks = "1 task" if len(open_tasks) == 1 else f"{len(open_tasks)} tasks"
            why.append(f"{tasks} not done: {', '.join(open_tasks)}")
        message = "Verification failed (" + "; ".join(why) + ")"
    message += " (gtd never merges or pushes)."
    _write_report(root, the_plan, now, results)
    if not open_tasks:
        from gtd.auto import notifier
        from gtd.auto.rendering import rerender

        done = sum(1 for t in the_plan.tasks if t.status == "done")
        verdict = "passed" if passed else "failed"
        notifier.completed(root, verdict, done, now.iso, rerender=rerender)
    return {
        "status": "passed" if passed else "failed",
        "levels": [
            {"level": r.level, "name": r.name, "status": r.status, "detail": r.detail}
            for r in results
        ],
        "open_tasks": open_tasks,
        "message": message,
    }


# -- the levels --------------------------------------------------------------------


def _build(root: Path, config: AutoConfig) -> VerifyResult:
    from gtd.auto.ratchet import commands

    if not config.build_command:
        return VerifyResult("L0", "skipped", "build", "not configured")
    run = commands.run_command(root, "build", config.build_command, config.timeout_s)
    if run.ok:
        return VerifyResult("L0", "passed", "build", config.build_command)
    return VerifyResult("L0", "failed", "build", _why(run.missing, run.timed_out, run.exit_code))


def _files(git: Git, the_plan: Plan) -> VerifyResult:
    done = [t for t in the_plan.tasks if t.status == "done"]
    hashed = [t for t in done if t.commit]
    if not hashed:
        detail = "no done task with a commit hash" if done else "no done tasks"
        return VerifyResult("L1", "skipped", "files", detail)
    changed, missing = _changed_files(git, hashed)
    extra: list[str] = []
    for task in hashed:
        files = changed.get(task.id)
        if files is None:
            continue
        listed = {_norm(f) for f in task.files}
        unlisted = sorted(f for f in files if _norm(f) not in listed and f != paths.PLAN)
        if unlisted:
            shown = ", ".join(unlisted[:_MAX_LISTED])
            more = f" (+{len(unlisted) - _MAX_LISTED} more)" if len(unlisted) > _MAX_LISTED else ""
            extra.append(f"{task.id} changed unlisted {shown}{more}")
    notes = extra + [f"{task_id}: commit {h} not found" for task_id, h in missing]
    if notes:
        return VerifyResult("L1", "warning", "files", "; ".join(notes))
    match = (
        "1 task matches its Files" if len(hashed) == 1 else f"{len(hashed)} tasks match their Files"
    )
    return VerifyResult("L1", "passed", "files", match)


def _changed_files(
    git: Git, tasks: list[Task]
) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    """Files each task's commit changed, from one `git log --no-walk` call; commits
    that do not resolve are returned apart (a hand-edited hash, a rewritten branch)."""
    resolved: dict[str, str] = {}
    missing: list[tuple[str, str]] = []
    for task in tasks:
        assert task.commit is not None
        full = git.run("rev-parse", "--verify", "-q", f"{task.commit}^{{commit}}", check=False)
        if full.strip():
            resolved[task.id] = full.strip()
        else:
            missing.append((task.id, task.commit))
    if not resolved:
        return {}, missing
    by_hash = git.touched(list(resolved.values()))
    return {task_id: by_hash.get(full, []) for task_id, full in resolved.items()}, missing


def _coverage(root: Path, config: AutoConfig) -> VerifyResult:
    command = config.test_command
    python, pytest_args = _pytest_interpreter(root, command) if command else (None, [])
    if python is None:
        return VerifyResult(
            "L2", "skipped", "coverage", "not available (test command is not pytest)"
        )
    probe = proc.run([python, "-m", "coverage", "--version"], root, timeout=60)
    if not probe.ok:
        return VerifyResult("L2", "skipped", "coverage", "not available (coverage not installed)")
    tmp = Path(tempfile.mkdtemp(prefix="gtd-coverage-"))
    try:
        env = {"COVERAGE_FILE": str(tmp / ".coverage")}
        # the whole suite: a long command (gtd.spawned.Spawned), not held up by a
        # server a test left running
        child = spawned.start_logged(
            [python, "-m", "coverage", "run", "-m", "pytest", *pytest_args], root, env=env
        )
        run = child if isinstance(child, proc.Result) else child.finish(config.timeout_s)
        if not run.ok:
            detail = "coverage run failed: " + _why(None, run.timed_out, run.returncode)
            return VerifyResult("L2", "warning", "coverage", detail)
        report = proc.run([python, "-m", "coverage", "report"], root, timeout=120, env=env)
        match = _TOTAL.search(report.stdout)
        if not report.ok or match is None:
            return VerifyResult("L2", "warning", "coverage", "coverage report gave no total")
        return VerifyResult("L2", "passed", "coverage", f"{match.group(1)}% of lines")
    finally:
        remove_tree(tmp, ignore_errors=True)


def _pytest_interpreter(root: Path, command: str) -> tuple[str | None, list[str]]:
    """(python, pytest arguments) when ``command`` is plain pytest: ``pytest …`` or
    ``<python> -m pytest …``. Shell syntax or another runner gives (None, [])."""
    try:
        argv, via_shell = proc.command_argv(command)
    except ValueError:
        return None, []
    if via_shell or not argv:
        return None, []
    if len(argv) >= 3 and argv[1:3] == ["-m", "pytest"]:
        return argv[0], argv[3:]
    if os.path.basename(argv[0]) == "pytest":
        python = _which_python(root, argv[0])
        return (python, argv[1:]) if python else (None, [])
    return None, []


_PROBE = "gtd_verify_probe"
_PROBE_MARK = "gtd-verify-python:"


def _which_python(root: Path, executable: str) -> str | None:
    """The interpreter ``executable`` runs pytest in, whatever the file is (a script
    with a python shebang, a pyenv or asdf shim, a wrapper), or None when it is not
    pytest. It runs with a plugin that prints ``sys.executable`` when pytest imports
    it; ``--version --version`` loads plugins (one ``--version`` returns before) but
    collects nothing, and ``--noconftest`` keeps the project's conftest.py out."""
    tmp = Path(tempfile.mkdtemp(prefix="gtd-verify-probe-"))
    try:
        (tmp / f"{_PROBE}.py").write_text(
            f"import sys\nprint({_PROBE_MARK!r} + sys.executable, flush=True)\n",
            encoding="utf-8",
        )
        plugins = [p for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p.strip()]
        pythonpath = [str(tmp), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {
            "PYTEST_PLUGINS": ",".join([*plugins, _PROBE]),
            "PYTHONPATH": os.pathsep.join(pythonpath),
        }
        argv = [executable, "--noconftest", "--version", "--version"]
        res = proc.run(argv, root, timeout=120, env=env)
    finally:
        remove_tree(tmp, ignore_errors=True)
    for line in res.stdout.splitlines():
        if line.startswith(_PROBE_MARK):
            return line[len(_PROBE_MARK) :].strip() or None
    return None


def _tests(root: Path, config: AutoConfig) -> VerifyResult:
    from gtd.auto.ratchet import commands

    if not config.test_command:
        return VerifyResult("L4", "failed", "tests", "no test command configured")
    run, report = commands.run_tests(root, config.test_command, config)
    outcomes = report.junit_outcomes
    counts = ""
    if outcomes:
        good = sum(1 for o in outcomes.values() if o == "passed")
        counts = f"{good} / {len(outcomes)} tests passed"
    if run.ok:
        return VerifyResult("L4", "passed", "tests", counts or "test command passed")
    detail = _why(run.missing, run.timed_out, run.exit_code)
    if outcomes:
        bad = sorted(name for name, o in outcomes.items() if o != "passed")
        detail = f"{counts}; failing: {', '.join(bad[:_MAX_LISTED])}" + (
            f" (+{len(bad) - _MAX_LISTED} more)" if len(bad) > _MAX_LISTED else ""
        )
    return VerifyResult("L4", "failed", "tests", detail)


# -- helpers -----------------------------------------------------------------------


def _why(missing: str | None, timed_out: bool, code: int) -> str:
    if missing:
        return f"command not found: {missing}"
    if timed_out:
        return "timed out"
    return f"exit code {code}"


def _norm(path: str) -> str:
    return path.strip().strip("`").removeprefix("./")


def _write_report(root: Path, the_plan: Plan, now: Now, results: list[VerifyResult]) -> None:
    from gtd.auto import records, report, state
    from gtd.auto.rendering import render_report
    from gtd.fsio import atomic_write, locked, state_lock

    if not (root / paths.STATE_DIR).is_dir():
        return
    health = Health(verify=tuple(results))
    with locked(state_lock(root)):
        st = state.read(Git(root, hardened=True))
        if st.set_up:
            render_report(root, st, the_plan, now, health=health)
            return
        title = the_plan.title or next((t.spec for t in the_plan.tasks if t.spec), None)
        mem = records.fold(st.records)
        text = report.render(title or root.name, mem, now.iso, health, plan=the_plan)
        atomic_write(root / paths.REPORT, text)
