"""The repositories the kill trials run in, built once and copied per trial.

The project is the calculator of tests/integration/calc_project.py (a real
pytest suite) plus files of "the user" that no trial may ever lose: tracked
ones (``README.md``, ``data/values.csv``) and ignored ones (``.env``,
``local/notes.txt``, ``data/cache.bin`` — the last beside files the agent
adds). Templates, one per starting point:

- ``raw``: committed project; PLAN.md and the config written but not
  committed (setup commits them), before `gtd auto setup`;
- ``ready``: set up, clean, no cycle in flight;
- ``moved``: ``ready`` plus a commit a person made (the next `begin` refreshes
  the snapshot in a worker);
- ``inflight``: ``ready`` after `gtd cycle begin` answered task T1 (cycle 1);
  the agent's files are written per trial;
- ``gone``: the same, but begun by a Claude Code session (a stand-in,
  tests/kill/client.py) that was then killed: its next `begin` judges the cycle
  at once (docs/crash-safety.md, "Crash safety"), whoever asks.

Building them runs each command once unkilled; its duration is what the kill
moments are drawn over.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.calc_project import CALC, CONFTEST, MUL, MUL_TEST, PLAN, TESTS
from tests.kill.client import Session

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:hypothesispytest"
# One re-run of failing tests instead of the default two: the re-run's path is
# still crossed by the kills, and a failing `end` costs a pytest session less.
CONFIG = f"ratchet:\n  test_command: {PYTEST}\n  rerun_failures: 1\n"

# Files of the user: tracked, and ignored (never touched by a revert).
USER_TRACKED = {
    "README.md": "# Calculator\n\nThe user's own notes.\n",
    "data/values.csv": "a,b,sum\n2,3,5\n",
    ".gitignore": ".env\nlocal/\ndata/*.bin\n",
}
USER_IGNORED = {
    ".env": "SECRET=kept-out-of-git\n",
    "local/notes.txt": "ignored notes of the user\n",
    "data/cache.bin": "binary-ish cache\0\1\2\n",
}
PERSON_EDIT = ("README.md", USER_TRACKED["README.md"] + "\nA line a person committed.\n")

# The agent's work on T1 (Add mul): good (passes), or bad (breaks `add`).
AGENT_PASS = {
    "calc.py": MUL,
    "tests/test_mul.py": MUL_TEST,
    "notes/agent.md": "what the agent thought\n",
    "data/extra.csv": "x\n1\n",
}
BROKEN_ADD = MUL.replace("return a + b", "return a - b")
AGENT_FAIL = {
    "calc.py": BROKEN_ADD,
    "tests/test_mul.py": MUL_TEST,
    "notes/agent.md": "what the agent thought\n",
    "data/extra.csv": "x\n1\n",
}
assert BROKEN_ADD != MUL

# Where the agent's T1 line stands in PLAN.md before and after the tick.
T1_OPEN = "- [ ] **T1**: Add mul"


def t1_done(short: str) -> str:
    return f"- [x] **T1**: Add mul ✓ ({short})"


GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def clean_env(base: Mapping[str, str]) -> dict[str, str]:
    """The environment every process of a trial gets: the caller's, without any
    of gtd's test hooks or the outer pytest's variables, with the pinned git
    identity. Its commands look for no Claude Code session, as the rest of the
    suite's (tests/conftest.py): a kill suite run from inside Claude Code would
    otherwise record that session in every cycle, and have the cycles that must
    wait for the agent's timeout (``begin-recover``) judged at once. The session
    kinds run their commands under a stand-in session (tests/kill/client.py),
    which takes the variable away again."""
    env = {k: v for k, v in base.items() if not k.startswith(("GTD_", "PYTEST_"))}
    env["GTD_NO_SESSION"] = "1"
    # Bytecode as a user's installation has it: without it every helper start
    # compiles the helper again, which would triple the cost of a trial.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(GIT_IDENTITY)
    return env


def git(root: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    res = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=dict(env) if env is not None else None,
    )
    if res.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {root}: {res.stderr}")
    return res.stdout


def write_files(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))


# -- the tree as a comparable value -----------------------------------------------------

State = dict[str, Any]  # rel → ("-" | "x", bytes) for a file, "dir", ("link", target)


# The sandbox block setup writes and the loop's end takes out (gtd.auto.sandbox):
# the helper's, like .deepflow/; its own tests are tests/integration/
# test_sandbox_settings.py. The trials' projects have no .claude/ of their own.
_SANDBOX_FILES = frozenset({".claude/settings.local.json"})


def tree_state(root: Path) -> State:
    """Everything in the working tree, ignored or not (the user's ignored files
    count), directories included; not `.git` and not gtd's private files in
    `.deepflow/` (only `config.yaml` there is the user's)."""
    out: State = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        rel_here = here.relative_to(root).as_posix()
        if rel_here == ".deepflow":
            dirnames[:] = []
            if "config.yaml" in filenames:
                out[".deepflow/config.yaml"] = ("-", (here / "config.yaml").read_bytes())
            continue
        for name in list(dirnames):
            rel = (here / name).relative_to(root).as_posix()
            if name == ".git" and here == root:
                dirnames.remove(name)
            elif (here / name).is_symlink():
                out[rel] = ("link", os.readlink(here / name))
                dirnames.remove(name)
            elif rel not in (".deepflow", ".claude"):
                out[rel + "/"] = "dir"
        for name in filenames:
            path = here / name
            rel = path.relative_to(root).as_posix()
            if rel in _SANDBOX_FILES:
                continue
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            else:
                out[rel] = ("x" if os.access(path, os.X_OK) else "-", path.read_bytes())
    return out


def state_diff(want: State, got: State) -> list[str]:
    lines = []
    for rel in sorted(set(want) | set(got)):
        if rel not in got:
            lines.append(f"missing: {rel}")
        elif rel not in want:
            lines.append(f"left behind: {rel}")
        elif want[rel] != got[rel]:
            lines.append(f"changed: {rel}")
    return lines


# -- the helper ----------------------------------------------------------------------------


def gtd_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "gtd", *args]


@dataclass
class Ran:
    code: int
    out: str
    err: str
    seconds: float


def run_gtd(root: Path, env: Mapping[str, str], *args: str, timeout: float = 120) -> Ran:
    start = time.monotonic()
    res = subprocess.run(
        gtd_argv(*args), cwd=root, capture_output=True, text=True, env=dict(env), timeout=timeout
    )
    return Ran(res.returncode, res.stdout, res.stderr, time.monotonic() - start)


# -- templates -------------------------------------------------------------------------------

KINDS = (
    "setup",
    "begin",
    "begin-recover",
    "begin-refresh",
    "end-pass",
    "end-fail",
    # `begin` judging a cycle left in its agent phase by a session that is gone, or
    # that asks again (gtd.auto.cycle.begin, Beginning._unattended), passing or failing.
    "begin-gone-pass",
    "begin-gone-fail",
    "begin-same-pass",
    "begin-same-fail",
)
# The kinds whose killed `begin` judges the agent's work, and that work.
JUDGING = {
    "begin-gone-pass": AGENT_PASS,
    "begin-gone-fail": AGENT_FAIL,
    "begin-same-pass": AGENT_PASS,
    "begin-same-fail": AGENT_FAIL,
}


@dataclass
class Templates:
    """The template repositories and the measured duration of each command."""

    root: Path
    env: dict[str, str]
    dirs: dict[str, Path] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def copy(self, name: str, dest: Path) -> Path:
        shutil.copytree(self.dirs[name], dest, symlinks=True)
        return dest

    def env_for(self, cache: Path) -> dict[str, str]:
        return {**self.env, "XDG_CACHE_HOME": str(cache)}


def build(root: Path, base_env: Mapping[str, str]) -> Templates:
    t = Templates(root, clean_env(base_env))
    env = t.env_for(root / "cache")

    raw = root / "raw"
    raw.mkdir(parents=True)
    write_files(
        raw,
        {
            "calc.py": CALC,
            "tests/test_calc.py": TESTS,
            "conftest.py": CONFTEST,
            **USER_TRACKED,
        },
    )
    git(raw, "init", "-q", "-b", "main", env=env)
    git(raw, "add", "-A", env=env)
    git(raw, "commit", "-q", "-m", "initial", env=env)
    write_files(raw, {**USER_IGNORED, "PLAN.md": PLAN, ".deepflow/config.yaml": CONFIG})
    t.dirs["raw"] = raw

    probes = iter(range(1000))

    def timed(
        kind: str,
        source: str,
        want: str,
        *args: str,
        agent: Mapping[str, str] | None = None,
        dest: str = "",
        extra: Mapping[str, str] | None = None,
        said: str = "",
        runs: int = 2,
    ) -> None:
        """Run a command unkilled on a copy of ``source``, ``runs`` times; its
        duration is the fastest run's (another may have met a busier machine).
        The first copy becomes template ``dest`` when one is named. ``said``:
        what the answer's ``previous`` must say cycle 1 came to (the scene is the
        one meant: a judged cycle, not one abandoned)."""
        for attempt in range(runs):
            where = t.copy(source, root / f"probe-{next(probes)}")
            write_files(where, agent or {})
            ran = run_gtd(where, {**env, **(extra or {})}, *args, "--json")
            assert f'"status": "{want}"' in ran.out, f"{kind} while building: {ran.out} {ran.err}"
            assert not said or f'"previous": "cycle 1 T1 {said}' in ran.out, f"{kind}: {ran.out}"
            t.seconds[kind] = min(t.seconds.get(kind, ran.seconds), ran.seconds)
            if dest and attempt == 0:
                t.dirs[dest] = where.rename(root / dest)
            else:
                shutil.rmtree(where)

    timed("setup", "raw", "ready", "auto", "setup", dest="ready")
    timed("begin", "ready", "task", "cycle", "begin", dest="inflight")
    moved = t.copy("ready", root / "moved")
    write_files(moved, dict([PERSON_EDIT]))
    git(moved, "commit", "-q", "-am", "a person's commit", env=env)
    t.dirs["moved"] = moved
    timed("begin-refresh", "moved", "task", "cycle", "begin")
    timed("end-pass", "inflight", "passed", "cycle", "end", agent=AGENT_PASS)
    timed("end-fail", "inflight", "reverted", "cycle", "end", agent=AGENT_FAIL)
    timed(
        "begin-recover",
        "inflight",
        "task",
        "cycle",
        "begin",
        agent=AGENT_PASS,
        extra=abandon_offset(1),
    )
    t.dirs["gone"] = _gone(t, root, env)
    # The judging takes as long whether the session that began the cycle is gone
    # or asks again: measured on the first (no session needed to run it), in one
    # run each: the build holds up every worker, and a duration measured long
    # only costs the trials whose moment it passes a second attempt.
    for verdict, agent, said in (("pass", AGENT_PASS, "passed"), ("fail", AGENT_FAIL, "reverted")):
        kind = f"begin-gone-{verdict}"
        timed(kind, "gone", "task", "cycle", "begin", agent=agent, said=said, runs=1)
        t.seconds[f"begin-same-{verdict}"] = t.seconds[f"begin-gone-{verdict}"]
    return t


def _gone(t: Templates, root: Path, env: Mapping[str, str]) -> Path:
    """``ready`` after a `begin` under a stand-in session, which is then killed:
    cycle 1 records a session that no process will ever be again (a pid comes
    back with another start time)."""
    gone = t.copy("ready", root / "gone")
    session = Session(root / "gone-session", env)
    try:
        argv = gtd_argv("cycle", "begin", "--json")
        code = session.start(argv, gone, root / "gone.out", root / "gone.err").wait()
        answer = (root / "gone.out").read_text()
        assert code == 0, f"gone: {answer} {code}"
        assert '"status": "task"' in answer, f"gone: {answer}"
    finally:
        session.close()
    recorded = json.loads(git(gone, "show", "refs/gtd/state:journal.json"))["session"]
    assert recorded is not None, "gone: no session recorded"
    assert recorded["pid"] == session.pid, f"gone: recorded {recorded}"
    return gone


AGENT_TIMEOUT_S = 45 * 60  # cycle.agent_timeout_minutes' default


def abandon_offset(times: int) -> dict[str, str]:
    """A clock moved past the agent's timeout ``times`` over: the cycle begun
    by the previous `begin` (the answer to it lost with the kill) counts as
    abandoned, as it would after that many silent ticks of the loop."""
    return {"GTD_CLOCK_OFFSET_S": str(times * (AGENT_TIMEOUT_S + 60))}
