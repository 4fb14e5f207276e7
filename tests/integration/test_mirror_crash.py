"""`gtd cycle begin` killed after it sealed the cycle it starts and before it wrote
that cycle's mirror, `.deepflow/cycle.json` (docs/crash-safety.md, "Crash safety").
`end`'s strict check reads the journal's mirror, and a missing one is tampering:
before the mirror was staged ahead of the seal, the same session's next `begin`
(which judges that cycle at once, as `end` would) halted the loop. The kill comes
from a `git` on PATH that runs the real git and SIGKILLs its parent, the helper,
around the `update-ref` that pins a cycle's base (`begin`'s seal, and only its):
the very moment the kill harness met. Real git, real pytest, the real CLI, under
a stand-in Claude Code client where a session matters
(tests/integration/session_client.py). The attacks on the recovery (forged temp
files) are red-team tests: tests/redteam/test_helper_state.py."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration.calc_project import MUL, MUL_TEST, gtd_json, make_project, run_cli
from tests.integration.session_client import Client

MIRROR = ".deepflow/cycle.json"


@pytest.fixture
def project(repo: Repo) -> Repo:
    make_project(repo)
    assert repo.status() == ""
    return repo


def killed_at_seal(tmp_path: Path, *, sealed: bool = True) -> dict[str, str]:
    """The environment of a command whose helper is SIGKILLed at the `git
    update-ref` that moves `refs/gtd/base` (the seal of the cycle `begin`
    starts): right after it ran to its end, or (``sealed`` false) instead of it."""
    real = shutil.which("git")
    assert real is not None
    seal = f'printf \'%s\\n\' "$input" | "{real}" "$@"'
    kill = 'kill -9 "$PPID"'
    at_seal = f"{seal}; {kill}; exit 0" if sealed else f"{kill}; exit 1"
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir(exist_ok=True)
    wrapper.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        '  if [ "$arg" = update-ref ]; then\n'
        "    input=$(cat)\n"
        '    case "$input" in\n'
        f"      *refs/gtd/base*) {at_seal} ;;\n"
        f"      *) {seal}; exit $? ;;\n"
        "    esac\n"
        "  fi\n"
        "done\n"
        f'exec "{real}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return {"PATH": f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}"}


def staged_mirrors(repo: Repo) -> list[Path]:
    """The journal mirror's temp files in `.deepflow/`."""
    return sorted((repo.path / ".deepflow").glob(".cycle.json.gtd-tmp-*"))


def sealed_journal(repo: Repo) -> bytes:
    return repo.git("show", "refs/gtd/state:journal.json").encode()


def assert_in_the_window(repo: Repo, cycle: int, task: str) -> Path:
    """The kill landed between the seal and the mirror: ``cycle`` sealed, its
    mirror missing, and staged whole beside it (returned)."""
    journal = json.loads(sealed_journal(repo))
    assert (journal["cycle"], journal["task"]) == (cycle, task)
    assert not (repo.path / MIRROR).exists()
    (staged,) = staged_mirrors(repo)
    assert staged.read_bytes() == sealed_journal(repo)
    return staged


def test_begin_killed_between_its_seal_and_its_mirror_is_judged_not_halted(
    project: Repo, tmp_path: Path
) -> None:
    """The kill harness's former known halt, made on purpose: the same session's
    next `begin` puts the staged mirror in place and judges the empty cycle 2 as
    `end` would (reverted: nothing was done); the loop goes on."""
    with Client(tmp_path / "client") as client:
        assert client.begin(project.path)["task"] == "T1"
        project.write("calc.py", MUL)
        project.write("tests/test_mul.py", MUL_TEST)
        killed = client.run(project.path, "cycle", "begin", "--json", env=killed_at_seal(tmp_path))
        assert killed.code == -9, killed.stderr
        assert_in_the_window(project, 2, "T2")

        again = client.begin(project.path)

    assert again["status"] == "task", again
    assert "helper state modified" not in json.dumps(again)
    assert str(again["previous"]).startswith("cycle 2 T2 reverted: no changes"), again
    assert (again["task"], again["cycle"]) == ("T2", 3)
    assert "T1: Add mul" in project.subjects()[1]
    assert staged_mirrors(project) == []


def test_end_after_a_begin_killed_before_its_mirror_judges_the_work(
    project: Repo, tmp_path: Path
) -> None:
    """A person (or the agent) runs `gtd cycle end` next: `end` puts the mirror
    in place too, and its strict check then finds the helper's own bytes."""
    killed = run_cli(project, "cycle", "begin", "--json", env=killed_at_seal(tmp_path))
    assert killed.code == -9, killed.stderr
    assert_in_the_window(project, 1, "T1")
    project.write("calc.py", MUL)
    project.write("tests/test_mul.py", MUL_TEST)

    answer = gtd_json(project, "cycle", "end")

    assert answer["status"] == "passed", answer
    assert "T1: Add mul" in project.subjects()[1]
    assert staged_mirrors(project) == []


def test_a_killed_begins_pid_taken_since_still_has_its_mirror_put_back(
    project: Repo, tmp_path: Path
) -> None:
    """The pid in the temp file's name now names a live process (the system gave
    it out again): under the state lock no helper writes a mirror, so content
    alone decides, and the halt does not come back by that route."""
    with Client(tmp_path / "client") as client:
        client.begin(project.path)
        killed = client.run(project.path, "cycle", "begin", "--json", env=killed_at_seal(tmp_path))
        assert killed.code == -9, killed.stderr
        staged = assert_in_the_window(project, 2, "T1")
        staged.rename(staged.with_name(f".cycle.json.gtd-tmp-{client.pid}-0"))

        again = client.begin(project.path)

    assert again["status"] == "task", again
    assert str(again["previous"]).startswith("cycle 2 T1 reverted: no changes"), again
    assert staged_mirrors(project) == []


def test_begin_killed_before_its_seal_leaves_no_cycle_and_no_staged_mirror(
    project: Repo, tmp_path: Path
) -> None:
    """Staged, never sealed: the temp file holds no sealed journal, so it is a
    plain leftover, removed; the next `begin` starts the cycle afresh."""
    with Client(tmp_path / "client") as client:
        client.begin(project.path)
        project.write("calc.py", MUL)
        project.write("tests/test_mul.py", MUL_TEST)
        env = killed_at_seal(tmp_path, sealed=False)
        killed = client.run(project.path, "cycle", "begin", "--json", env=env)
        assert killed.code == -9, killed.stderr
        assert project.git("show", "refs/gtd/state:journal.json", check=False) == ""
        assert len(staged_mirrors(project)) == 1

        again = client.begin(project.path)

    assert (again["status"], again["task"], again["cycle"]) == ("task", "T2", 2), again
    assert json.loads((project.path / MIRROR).read_bytes()) == json.loads(sealed_journal(project))
    assert staged_mirrors(project) == []
