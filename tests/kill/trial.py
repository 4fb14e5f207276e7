"""One kill trial: start a helper command on a copy of a template, `kill -9` it at
a drawn moment (the helper alone, or its whole process tree), then run
`gtd cycle begin` until it settles, and check what holds after any crash:

- no stall: within a bound, `begin` answers task, complete or blocked (a halt
  would be a crash read as something only a person can fix)
  (busy is waited out while a process of the trial lives; a cycle whose agent
  phase was left open counts as abandoned once the clock passes the agent's
  timeout, as it would after that many ticks);
- no lost file: the user's files (tracked, and ignored) are all there byte for
  byte; every file the agent wrote is committed or kept in
  refs/gtd/reverted/cycle-N;
- no half state: the tree is either the committed result (the cycle's two
  commits with their trailers, PLAN.md ticked) or exactly the base (every file,
  ignored or not, and every directory), with `git status` clean.

Moments are drawn from a seeded generator as fractions of the command's
measured duration, so a failing trial is named by its seed and index.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gtd.fsio import TEMP_MARK
from tests.kill import procs
from tests.kill.client import Session
from tests.kill.scene import (
    AGENT_FAIL,
    AGENT_PASS,
    BROKEN_ADD,
    JUDGING,
    KINDS,
    T1_OPEN,
    Ran,
    State,
    Templates,
    abandon_offset,
    git,
    gtd_argv,
    run_gtd,
    state_diff,
    t1_done,
    tree_state,
    write_files,
)

# helper: the `gtd` process alone; tree: it and everything it started, at one
# instant; tree-at-git: the same, at the first moment after the drawn one when a
# git child runs (where a kill can leave a git lock file behind).
MODES = ("helper", "tree", "tree-at-git")
# The judging kinds alternate the first two only: their `begin` runs the ratchet
# as `end` does, whose git moments the `end` kinds' tree-at-git trials cover.
KIND_MODES = {kind: MODES[:2] for kind in JUDGING}
SETTLED = ("task", "complete", "blocked", "halted")
SETTLE_BOUND_S = 60.0  # a begin that has not settled by then is a stall
QUIET_BOUND_S = 30.0  # a process of the trial alive after that is a failure
MAX_ATTEMPTS = 3
# What each command answers when it runs to its end.
UNKILLED = {
    "setup": "ready",
    "begin": "task",
    "begin-recover": "task",
    "begin-refresh": "task",
    "end-pass": "passed",
    "end-fail": "reverted",
    **{kind: "task" for kind in JUDGING},  # cycle 1 judged, the next task begun
}
# The kinds whose agent work passes: the only ones that may end committed.
PASSING = ("end-pass", "begin-gone-pass", "begin-same-pass")
Hook = Callable[[str, Path], None]


class Child(Protocol):
    """A command of the trial: a `subprocess.Popen`, or a command the stand-in
    session runs (tests/kill/client.py)."""

    pid: int

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...


@dataclass(frozen=True)
class Trial:
    seed: int
    index: int
    kind: str  # one of scene.KINDS
    mode: str  # helper | tree
    fraction: float  # of the measured duration

    @property
    def follow_up(self) -> bool:
        """Whether a full cycle follows the settled begin: for a third of the
        whole-tree kills (those leave the most behind)."""
        return self.mode != "helper" and self.index % 3 == 0

    def name(self) -> str:
        return f"seed={self.seed} trial={self.index} {self.kind}/{self.mode} at {self.fraction:.3f}"


def layout(counts: dict[str, int]) -> list[tuple[str, str]]:
    """(kind, mode) of each trial index: ``counts[kind]`` trials of each kind,
    modes alternating within a kind, kinds interleaved in a fixed order (so a
    trial's index names the same scene whatever the seed)."""
    slots = [
        (kind, modes[i % len(modes)])
        for kind in KINDS
        for modes in [KIND_MODES.get(kind, MODES)]
        for i in range(counts.get(kind, 0))
    ]
    random.Random(0).shuffle(slots)
    return slots


def fraction(seed: int, index: int) -> float:
    """The moment of trial ``index``, as a fraction of the command's duration."""
    return random.Random(f"{seed}:{index}").random()


# The trials of one run of the test suite: the kinds in proportion to what can
# go wrong in them (end does the most: the worker, the clean room, the commit or
# the revert).
COUNTS = {
    "setup": 24,
    "begin": 44,
    "begin-recover": 36,
    "begin-refresh": 16,
    "end-pass": 46,
    "end-fail": 46,
    "begin-gone-pass": 6,
    "begin-gone-fail": 6,
    "begin-same-pass": 6,
    "begin-same-fail": 6,
}
SLOTS = layout(COUNTS)


def trial(seed: int, index: int) -> Trial:
    """Trial ``index`` of a run: its scene from SLOTS (repeating past the end),
    its moment from the seed."""
    kind, mode = SLOTS[index % len(SLOTS)]
    return Trial(seed, index, kind, mode, fraction(seed, index))


@dataclass
class Outcome:
    trial: Trial
    delay: float
    killed: list[str] = field(default_factory=list)  # what the kill hit ("" if nothing)
    landed: bool = False  # the helper was still running when the kill came
    finished_in: float | None = None  # when it was not: how long it took
    attempts: int = 1
    folder: Path | None = None
    leftovers: list[str] = field(default_factory=list)  # locks, temp files right after
    final: str = ""  # committed | base
    begins: int = 0
    settle_s: float = 0.0
    answers: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def report(self) -> str:
        lines = [
            f"{self.trial.name()} (delay {self.delay:.3f}s, kill landed: {self.landed}, "
            f"attempt {self.attempts})",
            f"  folder: {self.folder}",
            f"  killed: {self.killed or 'nothing'}",
            f"  left right after the kill: {self.leftovers}",
            f"  answers after the kill: {self.answers}",
            *(f"  PROBLEM: {p}" for p in self.problems),
        ]
        return "\n".join(lines)


class Runner:
    """Runs trials in fresh copies of the templates under ``work``."""

    def __init__(self, templates: Templates, work: Path) -> None:
        self.t = templates
        self.work = work

    def run(
        self,
        trial: Trial,
        *,
        keep: bool = False,
        attempts: int = MAX_ATTEMPTS,
        hook: Hook | None = None,
    ) -> Outcome:
        """The trial, again (in a fresh copy) when the command finished before
        its moment came (the machine was busier when the durations were
        measured): then over the duration it just took, so the same fraction of
        it lands inside the run. ``hook`` is the harness's own test seam: it is
        called with the stage ("settle", "check") and the repository just before
        that stage."""
        duration = self.t.seconds[trial.kind]
        for attempt in range(1, attempts + 1):
            folder = self.work / f"t{trial.seed}-{trial.index}-{attempt}"
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            try:
                outcome = _Run(self.t, trial, folder, duration, hook).go()
            finally:
                procs.kill_family((), [folder])  # never leave a process of ours behind
            outcome.attempts = attempt
            outcome.folder = folder
            if not outcome.problems and not keep:
                shutil.rmtree(folder, ignore_errors=True)
            if outcome.landed or outcome.problems or outcome.finished_in is None:
                break
            # A little less than it just took: a fraction near 1 of the full
            # duration would otherwise miss again as often as not.
            duration = outcome.finished_in * 0.95
        return outcome


class _Run:
    def __init__(
        self, t: Templates, trial: Trial, folder: Path, duration: float, hook: Hook | None
    ) -> None:
        self.hook = hook or (lambda stage, repo: None)
        self.t = t
        self.trial = trial
        self.folder = folder
        self.env = t.env_for(folder / "cache")
        self.outcome = Outcome(trial, trial.fraction * duration)
        self.offsets = 0  # how many times the clock was moved past the agent's timeout
        # The Claude Code session that began cycle 1 and runs every `begin` after
        # (the `begin-same-*` kinds); None: the harness runs them, in no session.
        self.session: Session | None = None

    # -- the scene ----------------------------------------------------------------------

    def go(self) -> Outcome:
        try:
            return self._go()
        finally:
            if self.session is not None:
                self.session.close()

    def _go(self) -> Outcome:
        kind = self.trial.kind
        source = {
            "setup": "raw",
            "begin": "ready",
            "begin-refresh": "moved",
            "begin-gone-pass": "gone",
            "begin-gone-fail": "gone",
            "begin-same-pass": "ready",
            "begin-same-fail": "ready",
        }.get(kind, "inflight")
        self.repo = self.t.copy(source, self.folder / "repo")
        self.base_head = self.head()
        self.base = tree_state(self.repo)
        self.agent: dict[str, str] = {}
        if kind in ("end-pass", "begin-recover"):
            self.agent = AGENT_PASS
        elif kind == "end-fail":
            self.agent = AGENT_FAIL
        elif kind in JUDGING:
            self.agent = JUDGING[kind]
        if kind.startswith("begin-same"):
            self._begin_in_session()
            if self.outcome.problems:
                return self.outcome
        write_files(self.repo, self.agent)
        if kind == "setup":
            argv = gtd_argv("auto", "setup", "--json")
        elif kind.startswith("end"):
            argv = gtd_argv("cycle", "end", "--json")
        else:
            argv = gtd_argv("cycle", "begin", "--json")
        extra = self._offset() if kind == "begin-recover" else {}
        self._kill_at(argv, extra)
        if self.outcome.landed:
            self.outcome.leftovers = leftovers(self.repo)
        if kind == "setup":
            # What a killed setup leaves, once whatever it started is done.
            left = procs.wait_quiet([self.folder], QUIET_BOUND_S)
            self._problem_if(bool(left), lambda: f"still running: {procs.describe(left)}")
            self._check_setup_now()
        self.hook("settle", self.repo)
        self._settle()
        left = procs.wait_quiet([self.folder], QUIET_BOUND_S)
        self._problem_if(
            bool(left), lambda: f"alive {QUIET_BOUND_S}s after settling: {procs.describe(left)}"
        )
        if not self.outcome.problems:
            self.hook("check", self.repo)
            self._check_final()
        if not self.outcome.problems and self.trial.follow_up:
            self._follow_up()
        return self.outcome

    def _begin_in_session(self) -> None:
        """Cycle 1 begun by a live session, which later asks again: its tick ended
        without `gtd cycle end` (the agent's files are written next)."""
        self.session = Session(self.folder / "session", self.env)
        answer = self._begin()
        self.outcome.begins = 0  # the scene's own, not one after the kill
        recorded = json.loads(git(self.repo, "show", "refs/gtd/state:journal.json"))["session"]
        self._problem_if(
            answer.get("task") != "T1" or (recorded or {}).get("pid") != self.session.pid,
            lambda: f"the session's first begin: {answer}, recorded session {recorded}",
        )

    def _follow_up(self) -> None:
        """The loop goes on: the cycle `begin` just started judges a breaking
        change in the clean room and reverts it, exactly. A kill can leave what
        only the next check meets (a lock in the room's private index, in the
        revert's scratch index); this is that next check."""
        before = tree_state(self.repo)
        head = self.head()
        write_files(self.repo, {"calc.py": BROKEN_ADD})
        answer = _answer(run_gtd(self.repo, self.env, "cycle", "end", "--json"))
        self.outcome.answers.append("follow-up end:" + _brief(answer))
        self._problem_if(
            answer["status"] != "reverted" or not str(answer.get("reason")).startswith("tests"),
            lambda: f"the next cycle after the crash did not judge its change: {answer}",
        )
        diff = state_diff(before, tree_state(self.repo))
        self._problem_if(
            bool(diff) or self.head() != head,
            lambda: f"the next cycle's revert did not restore the tree: {diff}",
        )

    def _offset(self) -> dict[str, str]:
        self.offsets += 1
        return abandon_offset(self.offsets)

    # -- the kill ------------------------------------------------------------------------

    def _start(self, argv: list[str], extra: dict[str, str], out: Path, err: Path) -> Child:
        """Start a command of the trial: in the session when there is one (as its
        next tick would), else as the harness's own child."""
        if self.session is not None:
            return self.session.start(argv, self.repo, out, err, extra)
        with out.open("wb") as fo, err.open("wb") as fe:
            return subprocess.Popen(
                argv, cwd=self.repo, env={**self.env, **extra}, stdout=fo, stderr=fe
            )

    def _kill_at(self, argv: list[str], extra: dict[str, str]) -> None:
        out = self.folder / "helper.out"
        err = self.folder / "helper.err"
        proc = self._start(argv, extra, out, err)
        start = time.monotonic()
        deadline = start + self.outcome.delay
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(min(0.005, max(0.0, deadline - time.monotonic())))
        if self.trial.mode == "tree-at-git":
            while proc.poll() is None and not procs.running(proc.pid, "git"):
                time.sleep(0.001)
        code = proc.poll()
        if code is not None:
            self.outcome.finished_in = time.monotonic() - start
            answer = _answer(Ran(code, out.read_text(), err.read_text(), 0.0))
            self._problem_if(
                answer["status"] != UNKILLED[self.trial.kind],
                lambda: f"the command, not killed, answered {answer}",
            )
        else:
            self.outcome.landed = True
            if self.trial.mode == "helper":
                self.outcome.killed = procs.describe([proc.pid])
                os.kill(proc.pid, signal.SIGKILL)
            else:
                self.outcome.killed = procs.kill_family([proc.pid], [self.folder])
        proc.wait()

    # -- settling -----------------------------------------------------------------------

    def _begin(self) -> dict[str, Any]:
        extra = abandon_offset(self.offsets) if self.offsets else {}
        if self.session is not None:
            out, err = self.folder / "begin.out", self.folder / "begin.err"
            argv = gtd_argv("cycle", "begin", "--json")
            code = self.session.start(argv, self.repo, out, err, extra).wait()
            ran = Ran(code, out.read_text(), err.read_text(), 0.0)
        else:
            ran = run_gtd(self.repo, {**self.env, **extra}, "cycle", "begin", "--json")
        self.outcome.begins += 1
        return _answer(ran)

    def _setup(self) -> dict[str, Any]:
        return _answer(run_gtd(self.repo, self.env, "auto", "setup", "--json"))

    def _settle(self) -> None:
        """`gtd cycle begin` until it settles, as the loop's ticks would run it.
        While a process of the trial still runs (the worker of a killed `end`, a
        git child of a killed helper) the next tick waits for it; once nothing
        runs, `begin` must settle at once: only it is left to act."""
        start = time.monotonic()
        deadline = start + SETTLE_BOUND_S
        strikes = 0
        while True:
            answer = self._begin()
            status = answer["status"]
            self.outcome.answers.append(_brief(answer))
            if status in SETTLED:
                # Nothing in these scenes gives the helper a reason to stop the loop
                # (no tampering, one revert, a working git): a halt is a crash read
                # as something only a person can fix — a stall by another name.
                if status == "halted":
                    reason = answer.get("reason")
                    self.outcome.problems.append(f"a crash halted the loop: {reason}")
                break
            if time.monotonic() > deadline:
                self._stall(f"`gtd cycle begin` did not settle within {SETTLE_BOUND_S:.0f}s")
                break
            if status == "error" and "not set up" in answer.get("message", ""):
                self._setup_until_ready(deadline)
                continue
            if status == "busy" and answer.get("phase") == "agent":
                # A cycle whose begin (or whose end, before it took over) was
                # killed: it counts as abandoned once the agent's time is up.
                self.offsets += 1
                continue
            if procs.family((), [self.folder]):
                procs.wait_quiet([self.folder], max(0.0, deadline - time.monotonic()))
                continue
            strikes += 1
            if strikes >= 2:
                self._stall(f"`gtd cycle begin` answers {status} with nothing left running")
                break
        self.outcome.settle_s = time.monotonic() - start

    def _stall(self, what: str) -> None:
        self.outcome.problems.append(f"stall: {what}; answers: {self.outcome.answers}")

    def _setup_until_ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            answer = self._setup()
            self.outcome.answers.append("setup:" + _brief(answer))
            if answer["status"] == "ready":
                return
            if answer["status"] != "checking":
                self.outcome.problems.append(f"setup after the kill answered {answer}")
                return
            procs.wait_quiet([self.folder], max(0.0, deadline - time.monotonic()))

    # -- checks ---------------------------------------------------------------------------

    def _problem_if(self, cond: bool, what: Any) -> None:
        if cond:
            self.outcome.problems.append(what())

    def head(self) -> str:
        return git(self.repo, "rev-parse", "HEAD").strip()

    def status(self) -> str:
        return git(self.repo, "status", "--porcelain", "--untracked-files=all")

    def subjects_since_base(self) -> list[str]:
        return git(self.repo, "log", "--format=%s", f"{self.base_head}..HEAD").splitlines()

    def _check_setup_now(self) -> None:
        """Right after a killed setup (nothing of it running): the tree is the base,
        HEAD is the base or the setup commit on it."""
        diff = state_diff(self.base, tree_state(self.repo))
        self._problem_if(bool(diff), lambda: f"after the kill the tree is not the base: {diff}")
        subjects = self.subjects_since_base()
        self._problem_if(
            subjects not in ([], ["chore(gtd): set up auto mode"]),
            lambda: f"after the kill HEAD is {subjects} past the base",
        )

    def _check_final(self) -> None:
        kind = self.trial.kind
        head = self.head()
        now = tree_state(self.repo)
        status = self.status()
        self._problem_if(status != "", lambda: f"git status is not clean:\n{status}")
        branch = git(self.repo, "symbolic-ref", "-q", "HEAD").strip()
        self._problem_if(branch != "refs/heads/main", lambda: f"HEAD is on {branch!r}")
        if kind == "setup":
            self._check_setup_final(now)
        elif head == self.base_head:
            self.outcome.final = "base"
            diff = state_diff(self.base, now)
            self._problem_if(bool(diff), lambda: f"HEAD is the base, the tree is not: {diff}")
            if self.agent:
                self._check_kept(1)
                self._check_recorded("reverted", None)
        else:
            self.outcome.final = "committed"
            if kind not in PASSING:
                self.outcome.problems.append(
                    f"{kind}: HEAD moved past the base: {self.subjects_since_base()}"
                )
                return
            self._check_committed(now)
            short = git(self.repo, "rev-parse", "--short", "HEAD~1").strip()
            self._check_recorded("passed", short)

    def _check_setup_final(self, now: State) -> None:
        self.outcome.final = "committed"
        subjects = self.subjects_since_base()
        self._problem_if(
            subjects != ["chore(gtd): set up auto mode"],
            lambda: f"after setup HEAD is {subjects} past the base",
        )
        diff = state_diff(self.base, now)
        self._problem_if(bool(diff), lambda: f"setup changed the tree: {diff}")
        files = git(self.repo, "show", "--format=", "--name-only", "HEAD").split()
        self._problem_if(
            sorted(files) != [".deepflow/config.yaml", "PLAN.md"],
            lambda: f"the setup commit holds {files}",
        )

    def _check_recorded(self, status: str, commit: str | None) -> None:
        """The bookkeeping agrees with git: cycle 1 is in the memory once, as
        what happened to the tree. A cycle its session left unattended is judged
        (or, killed mid-check, reverted as interrupted): never left to the
        agent's timeout."""
        import yaml

        memory = yaml.safe_load((self.repo / ".deepflow/auto-memory.yaml").read_text())
        entries = [c for c in memory.get("cycles") or [] if c.get("cycle") == 1]
        got = [(c.get("status"), c.get("commit")) for c in entries]
        self._problem_if(
            got != [(status, commit)],
            lambda: f"the memory records cycle 1 as {got}, the tree says {(status, commit)}",
        )
        reasons = [str(c.get("reason")) for c in entries]
        self._problem_if(
            self.trial.kind in JUDGING and any(r.startswith("abandoned") for r in reasons),
            lambda: f"cycle 1 waited for the agent's timeout, not judged: {reasons}",
        )

    def _check_kept(self, cycle: int) -> None:
        ref = f"refs/gtd/reverted/cycle-{cycle}"
        for rel, text in self.agent.items():
            kept = _show(self.repo, ref, rel)
            self._problem_if(
                kept != text.encode(), lambda rel=rel: f"the agent's {rel} is not kept in {ref}"
            )

    def _check_committed(self, now: State) -> None:
        subjects = self.subjects_since_base()
        if len(subjects) != 2:
            self.outcome.problems.append(f"not the cycle's two commits: {subjects}")
            return
        short = git(self.repo, "rev-parse", "--short", "HEAD~1").strip()
        want_subjects = [f"T1: mark done in PLAN.md ({short})", "T1: Add mul"]
        self._problem_if(subjects != want_subjects, lambda: f"subjects {subjects}")
        for rev in ("HEAD", "HEAD~1"):
            body = git(self.repo, "log", "-1", "--format=%B", rev)
            self._problem_if(
                "Gtd-Task: T1" not in body or "Gtd-Cycle: 1" not in body,
                lambda body=body, rev=rev: f"{rev} lacks the trailers: {body!r}",
            )
        plan = self.base["PLAN.md"][1].decode()
        assert T1_OPEN in plan
        want = dict(self.base)
        for rel, text in self.agent.items():
            parts = rel.split("/")
            for i in range(1, len(parts)):
                want["/".join(parts[:i]) + "/"] = "dir"
            want[rel] = ("-", text.encode())
        want["PLAN.md"] = ("-", plan.replace(T1_OPEN, t1_done(short), 1).encode())
        diff = state_diff(want, now)
        self._problem_if(bool(diff), lambda: f"not the committed result: {diff}")
        for rel, text in self.agent.items():
            self._problem_if(
                _show(self.repo, "HEAD", rel) != text.encode(),
                lambda rel=rel: f"the agent's {rel} is not committed as written",
            )


def leftovers(repo: Path) -> list[str]:
    """What a killed process may have left for recovery to clear: git lock files
    and the helper's atomic-write temp files (the stalls of old)."""
    out = []
    for dirpath, _dirs, names in os.walk(repo):
        for name in names:
            if TEMP_MARK in name or (name.endswith(".lock") and "/.git" in dirpath + "/"):
                out.append(os.path.relpath(os.path.join(dirpath, name), repo))
    return sorted(out)


def _show(repo: Path, rev: str, rel: str) -> bytes | None:
    res = subprocess.run(
        ["git", "show", f"{rev}:{rel}"], cwd=repo, capture_output=True, env=dict(os.environ)
    )
    return res.stdout if res.returncode == 0 else None


def _answer(ran: Ran) -> dict[str, Any]:
    if ran.code != 0:
        return {"status": "error", "message": ran.err.strip()[-500:], "code": ran.code}
    try:
        data = json.loads(ran.out)
    except ValueError:
        return {"status": "error", "message": f"not JSON: {ran.out[-300:]!r} {ran.err[-300:]!r}"}
    assert isinstance(data, dict)
    return data


def _brief(answer: dict[str, Any]) -> str:
    text = str(answer["status"])
    for key in ("phase", "recovered", "previous", "message"):
        if key in answer and (key != "message" or answer["status"] not in SETTLED):
            text += f" [{key}: {str(answer[key])[:160]}]"
    return text


__all__ = ["COUNTS", "SLOTS", "Outcome", "Runner", "Trial", "trial"]
