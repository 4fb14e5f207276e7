"""Step mode commits with the repository's hooks, in the helper's git environment:
a hook that refuses a commit holding changes stops the step with its words (gtd
never bypasses a person's hook); one that refuses an empty marker commit gets the
2.x contract's retry without hooks, said on stderr. Real git, real hooks."""

from __future__ import annotations

import os

import pytest

from gtd.errors import GitError
from gtd.step.edge import _squash, commit, open_context
from gtd.step.steering import SQUASH_MSG
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


def test_a_refused_squash_leaves_the_commits_and_the_message_as_they_were(
    step_repo: StepRepo,
) -> None:
    r = step_repo
    base = r.git("rev-parse", "HEAD").strip()
    r.write("idea.md", "x\n")  # the human's sketch: left out of the squash
    r.write("value.txt", "ok\n")
    r.commit_all("gtd(human): grilling")
    r.write(SQUASH_MSG, "feat: the idea\n\nWhy it matters.\n")
    r.commit_all("gtd: squash template")
    head = r.git("rev-parse", "HEAD").strip()
    r.write(SQUASH_MSG, "feat: the idea, as the person wrote it\n")  # edited, uncommitted
    _hook(r, REFUSE_ALL)
    with pytest.raises(GitError, match="lint: not today"):
        _squash(open_context(r.path, mutate=False), base)
    assert r.git("rev-parse", "HEAD").strip() == head  # no squash, no commit lost
    assert r.read(SQUASH_MSG) == "feat: the idea, as the person wrote it\n"
    assert r.read("idea.md") == "x\n"  # the left-out sketch is back too
    assert r.git("status", "--porcelain").strip() == f"M {SQUASH_MSG}"
