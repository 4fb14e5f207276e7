"""Waves end to end (docs/parallel.md): `parallel: 2`, real git repositories, real
pytest runs, the real CLI in subprocesses. A scripted "implementer" writes its
files into the worktree the wave's answer names, between begin and the ends."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from gtd.auto.cycle import worktrees
from gtd.git import Git
from tests.conftest import Repo
from tests.integration.calc_project import gtd_json, make_project, run_cli

PLAN = """\
# Calculator

### spec-calc

- [ ] **T1**: Add mul
  - Files: mul.py, tests/test_mul.py
  - Blocked by: none
- [ ] **T2**: Add sub
  - Files: sub.py, tests/test_sub.py
  - Blocked by: none
"""
MUL = "def mul(a, b):\n    return a * b\n"
MUL_TEST = "from mul import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
SUB = "def sub(a, b):\n    return a - b\n"
SUB_TEST = "from sub import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n"
# A test the two tasks break together and neither alone: at most one plugin.
PLUGINS_TEST = (
    "import pathlib\n\n\ndef test_one_plugin_at_most():\n"
    "    here = pathlib.Path(__file__).parent.parent / 'plugins'\n"
    "    assert len(list(here.glob('*.py'))) <= 1\n"
)


def project(repo: Repo, parallel: int = 2, plan: str = PLAN) -> Repo:
    make_project(repo, plan=plan, config_extra=f"parallel: {parallel}\n")
    assert repo.status() == ""
    return repo


def begin(repo: Repo) -> dict[str, object]:
    return gtd_json(repo, "cycle", "begin")


def wave_trees(repo: Repo) -> list[str]:
    """Begin a wave; its worktrees, in plan order."""
    answer = begin(repo)
    assert answer["status"] == "wave", answer
    trees = answer["worktrees"]
    assert isinstance(trees, list)
    return trees


def settled(repo: Repo) -> dict[str, object]:
    """`begin`'s answer once no verdict is still being worked out (an `end`
    whose tests outlived its wait on a loaded machine answers `checking`)."""
    deadline = time.monotonic() + 120
    answer = begin(repo)
    while answer["status"] == "busy" and answer.get("phase") == "checking":
        assert time.monotonic() < deadline, answer
        time.sleep(0.3)
        answer = begin(repo)
    return answer


def end(repo: Repo, cycle: object) -> dict[str, object]:
    return gtd_json(repo, "cycle", "end", "--cycle", str(cycle))


def write(where: object, rel: str, text: str) -> None:
    path = Path(str(where)) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def helper_leftovers(repo: Repo) -> list[str]:
    """The helper's worktrees and wave branches left (none once a wave is over)."""
    listed = repo.git("worktree", "list", "--porcelain").splitlines()
    trees = [line for line in listed if line.startswith("worktree ") and "gtd-wave-" in line]
    refs = repo.git("for-each-ref", "--format=%(refname)", "refs/gtd/wave/").split()
    folder = worktrees.home(Git(repo.path))
    files = [str(p) for p in folder.rglob("*")] if folder.exists() else []
    return trees + refs + files


def subjects(repo: Repo, base: str) -> list[str]:
    return repo.git("log", "--reverse", "--format=%s", f"{base}..HEAD").splitlines()


def state_ref(repo: Repo) -> str:
    return repo.git("rev-parse", "refs/gtd/state").strip()


def records(repo: Repo) -> list[dict[str, object]]:
    if not repo.git("ls-tree", "refs/gtd/state", "records.jsonl").strip():
        return []
    raw = repo.git("show", "refs/gtd/state:records.jsonl")
    return [json.loads(line) for line in raw.splitlines() if '"kind": "cycle"' in line]


def test_two_independent_tasks_land_in_plan_order(repo: Repo) -> None:
    project(repo)
    base = repo.git("rev-parse", "HEAD").strip()
    answer = begin(repo)

    assert answer["status"] == "wave", answer
    assert answer["wave"] == 1
    assert answer["cycles"] == [1, 2]
    assert answer["tasks"] == ["T1", "T2"]
    briefs, trees = answer["briefs"], answer["worktrees"]
    assert isinstance(briefs, list)
    assert isinstance(trees, list)
    for brief, tree in zip(briefs, trees, strict=True):
        assert Path(brief).is_absolute()
        assert Path(tree).is_absolute()
        assert str(Path(tree).resolve()) in Path(brief).read_text()
        assert (Path(tree) / "calc.py").is_file()  # a checkout of the tip
    assert repo.status() == ""  # nothing in the person's tree
    write(trees[0], "mul.py", MUL)
    write(trees[0], "tests/test_mul.py", MUL_TEST)
    write(trees[1], "sub.py", SUB)
    write(trees[1], "tests/test_sub.py", SUB_TEST)

    # Landing is in plan order: the later cycle is refused while the earlier runs.
    before = state_ref(repo)
    early = run_cli(repo, "cycle", "end", "--cycle", "2")
    assert early.code == 1, early.stdout
    assert "end --cycle 1` first" in early.stderr
    assert state_ref(repo) == before

    first = end(repo, 1)
    assert first["status"] == "passed", first
    assert helper_leftovers(repo)  # the second's worktree stays until it ends
    second = end(repo, 2)
    assert second["status"] == "passed", second

    assert subjects(repo, base) == [
        "T1: Add mul",
        f"T1: mark done in PLAN.md ({first['commit']})",
        "T2: Add sub",
        f"T2: mark done in PLAN.md ({second['commit']})",
    ]
    plan = (repo.path / "PLAN.md").read_text()
    assert f"**T1**: Add mul ✓ ({first['commit']})" in plan
    assert f"**T2**: Add sub ✓ ({second['commit']})" in plan
    assert (repo.path / "mul.py").read_text() == MUL  # the person's tree brought along
    assert (repo.path / "tests/test_sub.py").read_text() == SUB_TEST
    assert repo.status() == ""
    assert helper_leftovers(repo) == []
    assert [(r["cycle"], r["task"], r["status"], r.get("wave")) for r in records(repo)] == [
        (1, "T1", "passed", 1),
        (2, "T2", "passed", 1),
    ]
    assert begin(repo)["status"] == "complete"


def test_a_conflicting_task_goes_back_to_the_queue_and_lands_later(repo: Repo) -> None:
    project(repo)
    base = repo.git("rev-parse", "HEAD").strip()
    trees = wave_trees(repo)
    write(trees[0], "mul.py", MUL)
    write(trees[0], "notes.txt", "mul\n")
    write(trees[1], "sub.py", SUB)
    write(trees[1], "notes.txt", "sub\n")  # the same new file, other bytes: a conflict

    assert end(repo, 1)["status"] == "passed"
    queued = end(repo, 2)

    assert queued["status"] == "queued", queued
    assert "conflicts with T1" in str(queued["reason"])
    assert repo.git("show", "refs/gtd/queued/T2:notes.txt") == "sub\n"
    assert repo.git("show", "refs/gtd/queued/T2:sub.py") == SUB
    assert helper_leftovers(repo) == []
    assert repo.status() == ""
    memory = repo.git("show", "refs/gtd/state:records.jsonl")
    assert '"status": "skipped"' in memory
    # Not a failure: the breaker counts nothing for it.
    again = begin(repo)
    assert again["status"] == "task", again
    assert again["task"] == "T2"
    assert again["cycle"] == 3
    repo.write("sub.py", SUB)
    repo.write("tests/test_sub.py", SUB_TEST)
    landed = gtd_json(repo, "cycle", "end", "--cycle", "3")
    assert landed["status"] == "passed", landed
    assert subjects(repo, base)[2] == "T2: Add sub"
    assert repo.git("for-each-ref", "refs/gtd/queued/").strip() == ""


def test_a_failing_task_is_reverted_and_the_other_lands(repo: Repo) -> None:
    project(repo)
    base = repo.git("rev-parse", "HEAD").strip()
    trees = wave_trees(repo)
    write(trees[0], "mul.py", MUL)
    write(trees[0], "tests/test_mul.py", MUL_TEST.replace("== 6", "== 7"))
    write(trees[1], "sub.py", SUB)
    write(trees[1], "tests/test_sub.py", SUB_TEST)

    failed = end(repo, 1)
    assert failed["status"] == "reverted", failed
    assert failed["kept"] == "refs/gtd/reverted/cycle-1"
    assert repo.git("show", "refs/gtd/reverted/cycle-1:mul.py") == MUL
    assert repo.git("rev-parse", "HEAD").strip() == base
    assert not (repo.path / "mul.py").exists()
    landed = end(repo, 2)
    assert landed["status"] == "passed", landed

    assert subjects(repo, base)[0] == "T2: Add sub"
    assert repo.status() == ""
    assert helper_leftovers(repo) == []
    mem = (repo.path / ".deepflow/auto-memory.yaml").read_text()
    assert "T1: 1" in mem  # counted by the breaker as any revert


def test_a_combination_no_task_broke_alone_is_refused(repo: Repo) -> None:
    repo.write("tests/test_plugins.py", PLUGINS_TEST)
    plan = PLAN.replace("mul.py, tests/test_mul.py", "plugins/a.py").replace(
        "sub.py, tests/test_sub.py", "plugins/b.py"
    )
    project(repo, plan=plan)
    base = repo.git("rev-parse", "HEAD").strip()
    trees = wave_trees(repo)
    write(trees[0], "plugins/a.py", "A = 1\n")
    write(trees[1], "plugins/b.py", "B = 1\n")

    assert end(repo, 1)["status"] == "passed"
    refused = end(repo, 2)

    # Alone on the wave's tip T2 holds one plugin and passes; on the tip T1 moved
    # there are two: the tree to commit is the one judged, and it fails.
    assert refused["status"] == "reverted", refused
    assert "test_one_plugin_at_most" in str(refused["reason"])
    assert "T1 landed before it" in str(refused["reason"])
    assert repo.git("show", "refs/gtd/reverted/cycle-2:plugins/b.py") == "B = 1\n"
    assert subjects(repo, base)[0] == "T1: Add mul"
    assert len(subjects(repo, base)) == 2
    assert not (repo.path / "plugins/b.py").exists()
    assert helper_leftovers(repo) == []


def test_parallel_one_is_the_serial_loop(repo: Repo) -> None:
    project(repo, parallel=1)
    answer = begin(repo)
    assert answer["status"] == "task", answer
    assert answer["task"] == "T1"
    assert helper_leftovers(repo) == []


def test_a_wave_of_one_ready_task_is_a_serial_cycle(repo: Repo) -> None:
    project(
        repo,
        plan=PLAN.replace("Blocked by: none\n", "Blocked by: T1\n", 2).replace(
            "**T1**: Add mul\n  - Files: mul.py, tests/test_mul.py\n  - Blocked by: T1",
            "**T1**: Add mul\n  - Files: mul.py, tests/test_mul.py\n  - Blocked by: none",
        ),
    )
    answer = begin(repo)
    assert answer["status"] == "task", answer
    assert answer["task"] == "T1"


# The kills at named points of a wave are a harness: the quick loop keeps one kill of
# each kind and the rest run in the slow set (their guarantee kept in the quick loop by
# the test named in each marker), as test_cycle.py's crash points do; the kill trials
# at random moments of a wave are tests/integration/test_wave_kills.py (slow).
def _variant(values: object, kept_by: str) -> object:
    """A kill point whose guarantee the quick loop keeps in the case ``kept_by``."""
    args = values if isinstance(values, tuple) else (values,)
    return pytest.param(*args, marks=pytest.mark.slow(reason=f"a variant of {kept_by}"))


# A kill as the wave begins: before its first seal, and after its last worktree is made.
BEGIN_POINTS = [
    "wave-sealed",
    _variant("wave-branch", "test_a_wave_killed_as_it_begins_leaves_nothing[wave-made]"),
    _variant("wave-checkout", "test_a_wave_killed_as_it_begins_leaves_nothing[wave-made]"),
    "wave-made",
]


@pytest.mark.parametrize("point", BEGIN_POINTS)
def test_a_wave_killed_as_it_begins_leaves_nothing(repo: Repo, point: str) -> None:
    project(repo)
    head = repo.git("rev-parse", "HEAD").strip()
    crashed = run_cli(repo, "cycle", "begin", "--json", env={"GTD_CRASH_AT": point})
    assert crashed.code != 0

    answer = begin(repo)

    assert answer["status"] == "wave", answer
    assert "cut short" in str(answer["recovered"])
    assert answer["cycles"] == [1, 2]
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert repo.status() == ""
    trees = answer["worktrees"]
    assert isinstance(trees, list)
    home = worktrees.home(Git(repo.path))
    assert sorted(p.name for p in home.iterdir()) == [
        "gtd-wave-T1",
        "gtd-wave-T2",
    ]


def _finish_wave(repo: Repo, trees: list[str]) -> None:
    write(trees[0], "mul.py", MUL)
    write(trees[0], "tests/test_mul.py", MUL_TEST)
    write(trees[1], "sub.py", SUB)
    write(trees[1], "tests/test_sub.py", SUB_TEST)


# Each point of a wave task's end: its turn sealed (`wave-turn`, in `end`), then
# the worker's, as a single cycle's (tests/integration/test_cycle.py). The quick loop
# keeps one kill of each kind: in `end` itself, in the worker before the verdict,
# between the verdict and the sealed record, after it; the first task's end (the
# other still in flight) and the second's each at two of them.
_END = "test_a_kill_in_a_wave_task_end_leaves_it_landed_or_queued"
END_KILLS = [
    (1, "wave-turn"),
    _variant((2, "wave-turn"), f"{_END}[1-wave-turn]"),
    _variant((1, "checking"), f"{_END}[2-checking]"),
    (2, "checking"),
    _variant((1, "verdict"), f"{_END}[1-work-commit]"),
    _variant((2, "verdict"), f"{_END}[1-work-commit]"),
    (1, "work-commit"),
    _variant((2, "work-commit"), f"{_END}[1-work-commit]"),
    _variant((1, "tick-commit"), f"{_END}[1-work-commit]"),
    _variant((2, "tick-commit"), f"{_END}[1-work-commit]"),
    _variant((1, "plan-ticked"), f"{_END}[1-work-commit]"),
    _variant((2, "plan-ticked"), f"{_END}[1-work-commit]"),
    _variant((1, "recorded"), f"{_END}[2-recorded]"),
    (2, "recorded"),
]


@pytest.mark.parametrize(("which", "point"), END_KILLS)
def test_a_kill_in_a_wave_task_end_leaves_it_landed_or_queued(
    repo: Repo, which: int, point: str
) -> None:
    project(repo)
    base = repo.git("rev-parse", "HEAD").strip()
    trees = wave_trees(repo)
    _finish_wave(repo, trees)
    if which == 2:
        assert end(repo, 1)["status"] == "passed"
    crashed = run_cli(repo, "cycle", "end", "--cycle", str(which), "--json",
                      env={"GTD_CRASH_AT": point})  # fmt: skip
    del crashed  # whatever it said: the next begin decides

    after = settled(repo)
    # The other task of the wave may still be in flight: end it as its tick would.
    if which == 1:
        assert after["status"] in ("busy", "wave"), after
        other = run_cli(repo, "cycle", "end", "--cycle", "2", "--json")
        assert other.code == 0, other.stderr
        after = settled(repo)
    assert after["status"] in ("task", "complete"), after

    landed = [s for s in subjects(repo, base) if not s.startswith(("T1: mark", "T2: mark"))]
    queued = repo.git("for-each-ref", "--format=%(refname)", "refs/gtd/queued/").split()
    for task in ("T1", "T2"):
        is_landed = any(s.startswith(f"{task}: ") for s in landed)
        is_queued = f"refs/gtd/queued/{task}" in queued
        assert is_landed != is_queued, (task, landed, queued)  # one, never both
        if is_queued:
            assert after["task"] == task or after["status"] == "task"
    assert len(landed) == len(set(landed))  # never twice
    assert helper_leftovers(repo) == []
    assert repo.status() == "", repo.status()


# A scripted implementer for `gtd loop`: its brief on stdin, its worktree its
# working directory; it notes when it ran (outside every tree) and takes a while.
WAVE_AGENT = f"""\
import os, sys, time
from pathlib import Path
brief = sys.stdin.read()
log = Path(sys.argv[1])
start = time.time()
time.sleep(1.5)
if "— T1:" in brief:
    Path("mul.py").write_text({MUL!r})
    Path("tests/test_mul.py").write_text({MUL_TEST!r})
elif "— T2:" in brief:
    Path("sub.py").write_text({SUB!r})
    Path("tests/test_sub.py").write_text({SUB_TEST!r})
with open(log, "a") as out:
    out.write(f"{{os.getcwd()}} {{start}} {{time.time()}}\\n")
"""


def test_the_headless_loop_runs_a_wave_s_agents_at_once(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setenv("GTD_SANDBOX", "off")  # (the wave's fence: docs/parallel.md)
    project(repo, parallel=1)  # `--parallel` is the loop's own, over the config
    base = repo.git("rev-parse", "HEAD").strip()
    script = repo.path.parent / "agent.py"
    script.write_text(WAVE_AGENT)
    log = repo.path.parent / "ran.log"
    agent = f"{sys.executable} {script} {log}"

    ran = run_cli(repo, "loop", "--agent", agent, "--parallel", "2")

    assert ran.code == 0, (ran.stdout, ran.stderr)
    lines = ran.stdout.splitlines()
    assert lines[0].startswith("cycle 1 T1 passed"), lines
    assert lines[1].startswith("cycle 2 T2 passed"), lines
    assert [s for s in subjects(repo, base) if "mark done" not in s] == [
        "T1: Add mul",
        "T2: Add sub",
    ]
    runs = [line.split() for line in log.read_text().splitlines()]
    assert sorted(Path(r[0]).name for r in runs) == ["gtd-wave-T1", "gtd-wave-T2"]
    starts = [float(r[1]) for r in runs]
    ends = [float(r[2]) for r in runs]
    assert max(starts) < min(ends)  # at once: each began before the other ended
    assert repo.status() == ""
    assert helper_leftovers(repo) == []


# A failing task's end: the kill between its verdict and its sealed record that only
# a revert has (`wave-kept`) stays in the quick loop; the verdict's and the record's
# are those of a passing end, above.
_REVERTED = "test_a_kill_in_a_failing_task_end_leaves_it_reverted_once[wave-kept]"


@pytest.mark.parametrize(
    "point",
    [_variant("verdict", _REVERTED), "wave-kept", _variant("recorded", _REVERTED)],
)
def test_a_kill_in_a_failing_task_end_leaves_it_reverted_once(repo: Repo, point: str) -> None:
    project(repo)
    base = repo.git("rev-parse", "HEAD").strip()
    before = {p: (repo.path / p).read_bytes() for p in ("calc.py", "PLAN.md")}
    trees = wave_trees(repo)
    write(trees[0], "mul.py", MUL)
    write(trees[0], "tests/test_mul.py", MUL_TEST.replace("== 6", "== 7"))
    write(trees[1], "sub.py", SUB)
    write(trees[1], "tests/test_sub.py", SUB_TEST)
    run_cli(repo, "cycle", "end", "--cycle", "1", "--json", env={"GTD_CRASH_AT": point})

    after = settled(repo)
    assert after["status"] == "busy", after  # T2's implementer may still be at work
    assert end(repo, 2)["status"] == "passed"

    statuses = [(r["cycle"], r["status"]) for r in records(repo)]
    assert statuses == [(1, "reverted"), (2, "passed")]
    assert repo.git("show", "refs/gtd/reverted/cycle-1:mul.py") == MUL
    assert [s for s in subjects(repo, base) if "mark done" not in s] == ["T2: Add sub"]
    assert not (repo.path / "mul.py").exists()
    assert (repo.path / "calc.py").read_bytes() == before["calc.py"]
    assert repo.status() == ""
    assert helper_leftovers(repo) == []


def test_ctrl_c_stops_a_wave_s_agents(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal
    import subprocess
    import sys

    monkeypatch.setenv("GTD_SANDBOX", "off")
    project(repo)
    script = repo.path.parent / "slow.py"
    pids = repo.path.parent / "pids"
    pids.mkdir()
    script.write_text(
        "import os, sys, time\nsys.stdin.read()\n"
        f"open(os.path.join({str(pids)!r}, str(os.getpid())), 'w').close()\ntime.sleep(120)\n"
    )
    loop = subprocess.Popen(
        [sys.executable, "-m", "gtd", "loop", "--agent", f"{sys.executable} {script}"],
        cwd=repo.path,
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while len(list(pids.iterdir())) < 2:
        assert time.monotonic() < deadline, "the wave's two agents did not start"
        time.sleep(0.1)
    loop.send_signal(signal.SIGINT)
    out, _ = loop.communicate(timeout=30)

    assert loop.returncode == 130, out
    assert "interrupted during wave 1" in out
    for pid in pids.iterdir():
        assert not Path(f"/proc/{pid.name}").exists(), f"agent {pid.name} still runs"


def test_a_worktree_whose_git_file_is_rewritten_is_read_through_the_helpers_entry(
    repo: Repo,
) -> None:
    """An implementer (whose sandbox opens its whole worktree) points the
    worktree's `.git` file at a git folder of its own, borrowing the real
    objects, whose config names a clean filter its `.gitattributes` applies: a
    helper that followed the file would run that command outside the sandbox
    when it builds the candidate. The helper reads the worktree through git's
    entry for it, in the common git folder no agent writes."""
    project(repo)
    trees = wave_trees(repo)
    mine = Path(str(trees[0]))
    marker = repo.path.parent / "the-filter-ran"
    forged = repo.path.parent / "forged.git"
    forged.mkdir()
    for sub in ("refs", "objects/info"):
        (forged / sub).mkdir(parents=True)
    common = Path(repo.git("rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    (forged / "objects/info/alternates").write_text(f"{common / 'objects'}\n")
    (forged / "HEAD").write_text(repo.git("rev-parse", "HEAD").strip() + "\n")
    (forged / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        f'[filter "evil"]\n\tclean = "touch {marker}; cat"\n'
    )
    write(mine, ".gitattributes", "* filter=evil\n")
    write(mine, "mul.py", MUL)
    write(mine, "tests/test_mul.py", MUL_TEST)
    (mine / ".git").write_text(f"gitdir: {forged}\n")
    assert (
        subprocess.run(  # the forged folder works: a git that follows the file runs it
            ["git", "add", "-A", "--dry-run"], cwd=mine, capture_output=True
        ).returncode
        == 0
    )
    marker.unlink(missing_ok=True)

    first = end(repo, 1)

    assert not marker.exists()
    assert first["status"] == "passed", first  # the worktree's own files, judged
    assert repo.git("show", "HEAD~1:mul.py") == MUL
    assert end(repo, 2)["status"] in ("passed", "reverted")
    assert helper_leftovers(repo) == []
