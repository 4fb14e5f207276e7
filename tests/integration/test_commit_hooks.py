"""`commit.hooks: run`: the repository's own pre-commit hook runs on each cycle's
work before it is judged. Off by default (cycle commits are the helper's and the
ratchet is the judge). Real repository, real git hook, real pytest."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import Repo
from tests.integration.calc_project import MUL, MUL_TEST, gtd_json, make_project

FORMATTER = """#!/bin/sh
# A formatter: strips trailing blanks from staged Python files and re-stages them.
for f in $(git diff --cached --name-only -- '*.py'); do
    [ -f "$f" ] && sed -i 's/[ \\t]*$//' "$f" && git add "$f"
done
"""
LINTER = """#!/bin/sh
# A linter that refuses a TODO left in staged code.
if git diff --cached -U0 | grep -q '^+.*TODO'; then
    echo "lint: TODO left in the change" >&2
    exit 1
fi
"""


def hook(repo: Repo, text: str) -> None:
    path = Path(repo.path / ".git/hooks/pre-commit")
    path.write_text(text)
    os.chmod(path, 0o755)


def test_hooks_are_skipped_by_default(repo: Repo) -> None:
    make_project(repo)
    hook(repo, LINTER)
    gtd_json(repo, "cycle", "begin")
    repo.write("calc.py", MUL + "# TODO: tidy\n")
    repo.write("tests/test_mul.py", MUL_TEST)
    assert gtd_json(repo, "cycle", "end")["status"] == "passed"


def test_a_failing_hook_reverts_with_its_output(repo: Repo) -> None:
    make_project(repo, config_extra="commit:\n  hooks: run\n")
    hook(repo, LINTER)
    base = repo.git("rev-parse", "HEAD").strip()
    gtd_json(repo, "cycle", "begin")
    repo.write("calc.py", MUL + "# TODO: tidy\n")
    repo.write("tests/test_mul.py", MUL_TEST)
    answer = gtd_json(repo, "cycle", "end")
    assert answer["status"] == "reverted", answer
    assert "pre-commit hook failed" in str(answer["reason"])
    assert "lint: TODO left in the change" in str(answer["reason"])
    assert repo.git("rev-parse", "HEAD").strip() == base
    assert repo.status() == ""


def test_a_hook_that_reformats_has_its_result_judged_and_committed(repo: Repo) -> None:
    make_project(repo, config_extra="commit:\n  hooks: run\n")
    hook(repo, FORMATTER)
    gtd_json(repo, "cycle", "begin")
    repo.write("calc.py", MUL.replace("return a * b", "return a * b   "))
    repo.write("tests/test_mul.py", MUL_TEST)
    answer = gtd_json(repo, "cycle", "end")
    assert answer["status"] == "passed", answer
    assert repo.git("show", "HEAD~1:calc.py") == MUL
    assert repo.status() == ""
