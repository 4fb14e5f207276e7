"""`gtd cycle begin` killed after it sealed the cycle it starts and before it wrote
that cycle's mirror, `.deepflow/cycle.json` (docs/auto-mode.md, "Crash safety").
The same session's next `begin` judges that cycle at once, as `end` would, and
`end`'s strict check reads the journal's mirror: a missing one is tampering. The
kill comes from a `git` on PATH that runs the real git and, after the `update-ref`
that pins a cycle's base (`begin`'s seal, and only its), SIGKILLs its parent: the
helper, at the very moment the kill harness met. Real git, real pytest, the real
CLI under a stand-in Claude Code client (tests/integration/session_client.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration.calc_project import MUL, MUL_TEST, make_project
from tests.integration.session_client import Client

MIRROR = ".deepflow/cycle.json"


@pytest.fixture
def project(repo: Repo) -> Repo:
    make_project(repo)
    assert repo.status() == ""
    return repo


def killed_after_seal(tmp_path: Path) -> dict[str, str]:
    """The environment of a command whose helper is SIGKILLed right after a `git
    update-ref` that moves `refs/gtd/base` (the seal of the cycle `begin` starts)
    has run to its end."""
    real = shutil.which("git")
    assert real is not None
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir(exist_ok=True)
    wrapper.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        '  if [ "$arg" = update-ref ]; then\n'
        "    input=$(cat)\n"
        f'    printf \'%s\\n\' "$input" | "{real}" "$@"\n'
        "    code=$?\n"
        '    case "$input" in *refs/gtd/base*) kill -9 "$PPID" ;; esac\n'
        "    exit $code\n"
        "  fi\n"
        "done\n"
        f'exec "{real}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return {"PATH": f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}"}


def sealed_journal(repo: Repo) -> dict[str, object]:
    journal: dict[str, object] = json.loads(repo.git("show", "refs/gtd/state:journal.json"))
    return journal


@pytest.mark.xfail(strict=True, reason="the false halt: the missing mirror reads as tampering")
def test_begin_killed_between_its_seal_and_its_mirror_is_judged_not_halted(
    project: Repo, tmp_path: Path
) -> None:
    """The kill harness's former known halt, made on purpose: the same session's
    next `begin` judges the empty cycle 2 as `end` would (reverted: nothing was
    done), and the loop goes on."""
    with Client(tmp_path / "client") as client:
        assert client.begin(project.path)["task"] == "T1"
        project.write("calc.py", MUL)
        project.write("tests/test_mul.py", MUL_TEST)
        killed = client.run(
            project.path, "cycle", "begin", "--json", env=killed_after_seal(tmp_path)
        )
        assert killed.code == -9, killed.stderr
        # The window itself: cycle 2 sealed, its mirror never written.
        assert (sealed_journal(project)["cycle"], sealed_journal(project)["task"]) == (2, "T2")
        assert not (project.path / MIRROR).exists()

        again = client.begin(project.path)

    assert again["status"] == "task", again
    assert "helper state modified" not in json.dumps(again)
    assert str(again["previous"]).startswith("cycle 2 T2 reverted"), again
    assert (again["task"], again["cycle"]) == ("T2", 3)
    assert "T1: Add mul" in project.subjects()[1]
