"""A wave's headless agent fenced to its own worktree (gtd.auto.agent_fence
.wrap_in), under real bubblewrap: it writes its checkout, and nothing of the
other task's checkout, the person's tree, git's refs, objects or config, the
helper's folder, nor its own checkout's `.git` file, PLAN.md or protected tests.
Skipped, with the reason, where bubblewrap cannot start (GTD_BOX_REQUIRED=1, as
in CI, makes that a failure)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gtd.auto import agent_fence
from gtd.auto.cycle import worktrees
from gtd.auto.ratchet import box
from gtd.executables import which
from gtd.git import Git
from tests.conftest import Repo

BWRAP = which("bwrap", os.environ.get("PATH"))
_PROBLEM = "bwrap not found" if BWRAP is None else box.probe(BWRAP)
if _PROBLEM is not None and os.environ.get("GTD_BOX_REQUIRED"):
    raise RuntimeError(f"bubblewrap cannot start here, and CI needs it: {_PROBLEM}")
pytestmark = pytest.mark.skipif(_PROBLEM is not None, reason=f"bubblewrap cannot start: {_PROBLEM}")

# Each path on the command line: write it (making its folder), say what happened.
ATTEMPT = """
import os, sys
for path in sys.argv[1:]:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a") as out:
            out.write("agent was here\\n")
        print("WROTE", path)
    except OSError as exc:
        print("REFUSED", path, exc.strerror)
"""


@pytest.fixture
def wave(repo: Repo) -> tuple[Repo, Path, Path]:
    repo.write("calc.py", "def add(a, b):\n    return a + b\n")
    repo.write(
        "tests/test_calc.py", "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n"
    )
    repo.write("PLAN.md", "# Plan\n\n- [ ] **T1**: a\n- [ ] **T2**: b\n")
    repo.commit_all("init")
    git = Git(repo.path)
    a = worktrees.create(git, "T1", "HEAD").path
    b = worktrees.create(git, "T2", "HEAD").path
    return repo, a, b


def _run(argv: list[str], cwd: Path) -> dict[str, str]:
    res = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    said: dict[str, str] = {}
    for line in res.stdout.splitlines():
        verdict, path = line.split(" ", 2)[:2]
        said[path] = verdict
    return said


def test_an_agent_fenced_to_its_worktree_writes_there_only(
    wave: tuple[Repo, Path, Path], tmp_path: Path
) -> None:
    repo, a, b = wave
    git = Git(repo.path)
    common = git.common_dir()
    mine = [a / "calc.py", a / "new_module.py", a / "pkg" / "deep.py", tmp_path / "scratch.txt"]
    theirs = [
        b / "calc.py",  # the other task's checkout
        b / "planted.py",
        repo.path / "calc.py",  # the person's tree
        repo.path / "planted.py",
        common / "refs" / "heads" / "evil",  # git's refs, objects, config, hooks
        common / "objects" / "planted",
        common / "config",
        common / "hooks" / "pre-commit",
        common / "HEAD",
        common / "packed-refs",
        common / "gtd" / "planted",  # the helper's folder
        worktrees.home(git) / "planted",
        common / "worktrees" / "gtd-wave-T1" / "HEAD",  # its own git entry
        a / ".git",  # the file naming the git folder the helper reads it through
        a / "PLAN.md",
        a / "tests" / "test_calc.py",  # a protected test
    ]
    before = {p: p.read_bytes() if p.is_file() else None for p in [*mine, *theirs]}
    argv, note = agent_fence.wrap_in([sys.executable, "-c", ATTEMPT], repo.path, a)
    assert note is None
    said = _run(argv + [str(p) for p in [*mine, *theirs]], a)
    for path in mine:
        assert said[str(path)] == "WROTE", (path, said)
    for path in theirs:
        assert said[str(path)] == "REFUSED", (path, said)
        now = path.read_bytes() if path.is_file() else None
        assert now == before[path], path
    assert repo.git("status", "--porcelain") == ""
    assert repo.git("for-each-ref", "refs/heads/evil") == ""

    # The same fence the other way round: B writes B, not A.
    argv, _ = agent_fence.wrap_in([sys.executable, "-c", ATTEMPT], repo.path, b)
    said = _run([*argv, str(b / "mine.py"), str(a / "theirs.py")], b)
    assert said == {str(b / "mine.py"): "WROTE", str(a / "theirs.py"): "REFUSED"}


def test_the_fence_refuses_to_open_the_persons_tree(wave: tuple[Repo, Path, Path]) -> None:
    repo, _, _ = wave
    with pytest.raises(ValueError, match="not a worktree of the helper's"):
        agent_fence.fence_in(repo.path, repo.path)


def test_unfenced_where_the_sandbox_is_off(
    wave: tuple[Repo, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, a, _ = wave
    monkeypatch.setenv("GTD_SANDBOX", "off")
    argv, note = agent_fence.wrap_in(["true"], repo.path, a)
    assert argv == ["true"]
    assert note is not None
    assert "GTD_SANDBOX=off" in note


# A scripted implementer for `gtd loop --parallel`: it does its task in its
# worktree, then tries the other task's worktree and the person's tree, and
# notes what each write did (outside every tree).
FENCED_AGENT = """\
import sys
from pathlib import Path
brief = sys.stdin.read()
log, person = Path(sys.argv[1]), Path(sys.argv[2])
mine, other = ("T1", "T2") if "— T1:" in brief else ("T2", "T1")
name = "mul" if mine == "T1" else "sub"
Path(f"{name}.py").write_text(MODULES[name])
Path(f"tests/test_{name}.py").write_text(TESTS[name])
tried = {"other": Path("..") / f"gtd-wave-{other}" / "stray.txt", "person": person / "stray.txt"}
with open(log, "a") as out:
    for what, path in tried.items():
        try:
            path.write_text("written by the other task's agent")
            out.write(f"{mine} {what} written\\n")
        except OSError as err:
            out.write(f"{mine} {what} refused {err.errno}\\n")
"""


def test_a_headless_waves_agents_are_each_fenced_to_their_own_worktree(repo: Repo) -> None:
    from tests.integration.calc_project import make_project, run_cli
    from tests.integration.test_waves import MUL, MUL_TEST, PLAN, SUB, SUB_TEST

    make_project(repo, plan=PLAN, config_extra="parallel: 2\n")
    script = repo.path.parent / "agent.py"
    script.write_text(
        f"MODULES = {{'mul': {MUL!r}, 'sub': {SUB!r}}}\n"
        f"TESTS = {{'mul': {MUL_TEST!r}, 'sub': {SUB_TEST!r}}}\n" + FENCED_AGENT
    )
    log = repo.path.parent / "tried.log"
    agent = f"{sys.executable} {script} {log} {repo.path}"

    ran = run_cli(repo, "loop", "--agent", agent, "--max-cycles", "2")

    assert ran.code in (0, 4), (ran.stdout, ran.stderr)
    lines = ran.stdout.splitlines()
    assert lines[0].startswith("cycle 1 T1 passed"), lines
    assert lines[1].startswith("cycle 2 T2 passed"), lines
    tried = sorted(log.read_text().splitlines())
    assert [t.rsplit(" ", 1)[0] if "refused" in t else t for t in tried] == [
        "T1 other refused",
        "T1 person refused",
        "T2 other refused",
        "T2 person refused",
    ]
    assert not (repo.path / "stray.txt").exists()
    assert "stray.txt" not in repo.git("log", "--name-only", "--format=")
