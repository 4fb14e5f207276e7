"""Step mode commits with the repository's hooks, in the helper's git environment:
a hook that refuses a commit holding changes stops the step with its words (gtd
never bypasses a person's hook); one that refuses an empty marker commit gets the
2.x contract's retry without hooks, said on stderr. Real git, real hooks."""

from __future__ import annotations

import os

from gtd.step.edge import commit, open_context
from tests.integration.step.conftest import StepRepo

REFUSE_ALL = "#!/bin/sh\necho 'lint: not today' >&2\nexit 1\n"
REFUSE_EMPTY = (
    "#!/bin/sh\n"
    "if git diff --cached --quiet; then echo 'hook: empty commit' >&2; exit 1; fi\n"
    'echo "$LC_ALL" > "$(git rev-parse --git-dir)/hook-locale"\n'
)


def _hook(r: StepRepo, text: str) -> None:
    path = r.path / ".git" / "hooks" / "pre-commit"
    path.write_text(text)
    os.chmod(path, 0o755)


def test_a_hook_refusing_changes_stops_the_step_and_is_not_bypassed(
    step_repo: StepRepo,
) -> None:
    r = step_repo
    _hook(r, REFUSE_ALL)
    head = r.git("rev-parse", "HEAD")
    r.write("idea.md", "x\n")
    out = r.gtd("step")
    assert out.code == 1, out
    assert "git commit of `gtd(human): grilling` was refused: lint: not today" in out.stderr
    assert "gtd does not bypass your hooks" in out.stderr
    assert r.git("rev-parse", "HEAD") == head  # nothing committed, not even without hooks
    assert "idea.md" in r.git("diff", "--cached", "--name-only")  # the work stays staged


def test_a_hook_refusing_an_empty_marker_commit_gets_one_said_retry(
    step_repo: StepRepo, capsys: object
) -> None:
    r = step_repo
    _hook(r, REFUSE_EMPTY)
    ctx = open_context(r.path, mutate=False)
    commit(ctx, "gtd: tests green")
    assert r.git("log", "-1", "--format=%s").strip() == "gtd: tests green"
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert "a commit hook refused the empty commit `gtd: tests green`" in err
    assert "hook: empty commit" in err
    assert "made without hooks" in err


def test_a_commit_with_changes_runs_the_hook_in_the_helpers_git_environment(
    step_repo: StepRepo,
) -> None:
    r = step_repo
    _hook(r, REFUSE_EMPTY)
    r.write("idea.md", "x\n")
    r.ok("step")
    assert r.git("log", "-1", "--format=%s").strip() == "gtd(human): grilling"
    # gtd.git.GIT_ENV: git (and so its hooks) speak the C locale whatever the user's is.
    assert (r.path / ".git" / "hook-locale").read_text().strip() == "C"
