"""The verdict on a cycle: the guards that need no test run, then the ratchet in
the clean room. Runs in the worker `gtd cycle end` starts; its result is sealed in
the journal before anything is committed or reverted.

Guards, in order (the first that fails is the reason):

1. the helper's mirrors (`.deepflow/cycle.json`, `auto-snapshot.json`) match the
   sealed state, and no revert record is missing from it — otherwise the agent
   tampered with the helper's state: revert, and halt the loop;
2. what the cycle must leave alone is as sealed at `begin` (git config, hooks,
   attributes, the test interpreter's site-packages); a change to the git
   configuration outside the repository also halts the loop;
3. HEAD is still on the branch the cycle began on;
4. no submodule's checkout changed;
5. a bootstrap cycle changed only test files and made no commits;
6. something changed at all (unless the task is a spike).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gtd.auto import records, state
from gtd.auto.cycle import diff_reading, forged, large, litter, review, seals
from gtd.auto.cycle.finish import NO_CHANGES
from gtd.auto.journal import Journal
from gtd.auto.memory import CycleRecord
from gtd.auto.ratchet import check, room
from gtd.auto.ratchet import snapshot as snapshot_codec
from gtd.auto.ratchet.files import is_test_path
from gtd.auto.ratchet.held import hold
from gtd.auto.ratchet.verdict import Verdict
from gtd.auto.state import State
from gtd.clock import Now
from gtd.errors import IndexUnreadable, UnaddableFiles
from gtd.fsio import read_bytes
from gtd.git import PRIVATE_DIR, Git
from gtd.names import readable
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from gtd.auto.config import AutoConfig
    from gtd.auto.ratchet.held import Held
    from gtd.auto.ratchet.model import Snapshot


class Decision(NamedTuple):
    passed: bool
    reason: str | None
    verdict: Verdict | None = None
    candidate: str | None = None
    head: str | None = None
    duration_s: float | None = None
    halt: bool = False
    pending: bytes | None = None  # the snapshot a pass advances to
    taken_epoch: float | None = None  # when the candidate was taken
    flaky: tuple[str, ...] = ()  # failed, then passed when run again
    env_skipped: tuple[str, ...] = ()  # skipped now, as the base commit's code is
    objects_checked: float | None = None  # when the object files' check began
    look_at: tuple[str, ...] = ()  # the diff reader's flagged findings
    new_tests: str | None = None  # how the tests the change adds did ("3 ran, 3 passed")

    def journal(self, current: Journal) -> Journal:
        v = self.verdict
        return current.evolve(
            phase="committing" if self.passed else "reverting",
            passed=self.passed,
            reason=self.reason,
            details=v.details if v is not None else ((self.reason,) if self.reason else ()),
            tests_passed=v.tests_passed if v else None,
            tests_failed=v.tests_failed if v else None,
            tests_skipped=v.tests_skipped if v else None,
            tests_total=v.tests_total if v else None,
            build_ok=v.build_ok if v else None,
            candidate=self.candidate,
            head_at_check=self.head,
            duration_s=self.duration_s,
            halt=self.halt,
            checked_epoch=self.taken_epoch,
            flaky=self.flaky,
            env_skipped=self.env_skipped,
            objects_checked=self.objects_checked,
            look_at=self.look_at,
            new_tests=self.new_tests,
        )


def _rebuild_index(git: Git, base: str, cycle: int) -> Path:
    """The index as it was when the cycle began: `begin` refuses staged work, so
    then it held the base commit's tree and nothing else, and a file git cannot
    read now is the cycle's doing. The damaged file is moved aside (never
    deleted); the working tree is untouched (the revert keeps it first)."""
    index = git.git_dir() / "index"
    aside = git.git_dir() / PRIVATE_DIR / "damaged-index" / f"cycle-{cycle}"
    aside.parent.mkdir(parents=True, exist_ok=True)
    if aside.exists():
        aside.unlink()  # an earlier attempt of this very cycle's check
    os.replace(index, aside)
    git.run("read-tree", base)
    return aside


def judge(root: Path, git: Git, st: State, now: Now) -> Decision:
    """The verdict on the cycle in flight (``now``: unused, the verdict depends on
    no clock)."""
    del now
    checked = time.time()  # a file written from here on is checked next time
    return _judge(root, git, st)._replace(objects_checked=checked)


def _judge(root: Path, git: Git, st: State) -> Decision:
    from gtd.auto.state import sealed_config

    current = st.journal
    assert current is not None
    assert st.summary is not None
    config = sealed_config(st)
    restored = seals.restore(git, current.seals or {})  # before git reads anything more
    since = current.started_epoch
    if current.objects_since is not None:
        since = min(since, current.objects_since)
    fake = forged.check(git, since, current.cycle)  # nor an object
    if fake is not None:
        return Decision(False, fake, head=git.head(), halt=True)
    try:
        tree = git.state()
    except IndexUnreadable as exc:
        aside = _rebuild_index(git, current.base, current.cycle)
        tree = git.state()
        why = (
            f"git's index damaged during the cycle ({exc.index}): rebuilt from the "
            f"cycle's base, the damaged file moved to {readable(os.path.relpath(aside, root))}"
        )
        return Decision(False, why, head=tree.head)
    # `end` checked the mirrors exactly before it sealed the check; it may have been
    # killed after its last seal and before that seal's mirror, so here the mirror
    # may be one seal behind (its own content), never anything else.
    tampered = state.tampered(root, git, st) or _rewound(git, st)
    if tampered:
        return Decision(False, f"helper state modified: {tampered[0]}", head=tree.head, halt=True)
    objected = review.objection(current.review)
    if objected is not None:  # the tests still judge an approval; an objection ends it
        return Decision(False, f"the reviewer objected: {objected}", head=tree.head)
    outside = seals.outside_changes(git, current.seals or {})
    if outside:  # not ours to put back, and every later cycle would be judged under it
        return Decision(False, outside[0], head=tree.head, halt=True)
    sealed, env_dirs = current.seals or {}, st.summary.get("environment_dirs") or []
    broken = restored + seals.broken(git, sealed, env_dirs)
    if broken:
        return Decision(False, broken[0], head=tree.head)
    if tree.branch != current.branch:
        # HEAD made a link to a ref that is no branch (`refs/gtd/state`): git's
        # status calls it "(null)"; the ref is named instead.
        link = git.call("symbolic-ref", "-q", "HEAD").stdout.strip() or _head_file(git)
        named = link.removeprefix("refs/heads/") if link else None
        if named == current.branch:  # status says "(unknown)": the ref is broken
            return Decision(
                False,
                f"the branch {current.branch} cannot be read: "
                f"{readable(str(git.common_dir() / link))} (not a commit git has)",
                head=tree.head,
            )
        where = named or tree.branch or "a detached HEAD"
        return Decision(
            False,
            f"checked out another branch: {where} (the cycle began on {current.branch})",
            head=tree.head,
        )
    moved = [e.path for e in tree.entries if e.submodule]
    if moved:
        return Decision(False, f"submodule changed: {moved[0]}", head=tree.head)
    found = large.too_large(root, (e.path for e in tree.entries), config.max_file_mb)
    if found:
        aside = large.where(git, current.cycle)
        why = large.reason(found, config.max_file_mb, aside, root)
        return Decision(False, why, head=tree.head)
    folders = litter.untracked_only(git, litter.found(tree.entries))
    if folders:
        why = litter.reason(folders, litter.where(git, current.cycle), root)
        return Decision(False, why, head=tree.head)
    if config.commit_hooks == "run":
        failed = run_pre_commit(root, config.timeout_s)
        if failed is not None:
            return Decision(False, f"pre-commit hook failed: {failed}", head=tree.head)
    snapshot = sealed_snapshot(git, st)
    taken = time.time()
    with room.acquire(git) as rm:
        # The test process starts now, held until the room is ready: it loads
        # while the candidate is built and guarded (gtd.auto.ratchet.held).
        held = hold(rm, config, room.environment(rm))
        # Refused before the run: the held process ends at the gate.
        with held or contextlib.nullcontext():
            index = room.candidate_index(rm, trust_until=current.started_epoch)
            try:
                candidate = git.worktree_tree(index, tree.head)
            except UnaddableFiles as exc:  # nothing to judge, nor to commit: the revert
                return Decision(False, exc.message, head=tree.head, taken_epoch=taken)
            base_tree = check.tree_of(git, current.base)
            guard = _guard(git, current, tree.head, base_tree, candidate)
            refused: str | None = None
            look_at: tuple[str, ...] = ()
            if guard is None and current.kind == "task":
                refused, look_at = diff_reading.read(git, base_tree, candidate, snapshot, config)
            if guard is not None or refused is not None:
                return Decision(
                    False, guard or refused, candidate=candidate, head=tree.head, taken_epoch=taken
                )
            job = request(st, current, snapshot, base_tree, candidate, held, sealed, env_dirs)
            judged = check.judge_candidate(git, rm, config, job)
    from gtd.auto.ratchet import newtests

    verdict = judged.verdict
    pending = advanced(git, config, current.base, candidate, snapshot, judged)
    took = judged.duration_s
    if not judged.run.commands:
        # Refused before any test ran (a protected test edited): the time the
        # judging took, room and candidate included, not the check's few ms.
        took = max(took, round(time.time() - taken, 3))
    return Decision(
        verdict.passed,
        verdict.reason,
        verdict,
        candidate,
        tree.head,
        took,
        pending=pending,
        taken_epoch=taken,
        flaky=judged.flaky,
        env_skipped=judged.env_skipped,
        look_at=look_at,
        new_tests=newtests.tally(snapshot.baseline.tests, judged.run.tests),
    )


def sealed_snapshot(git: Git, st: State) -> Snapshot:
    """The snapshot sealed in the state a cycle is judged against (set-up sealed
    it: a state without one is not ready, and no cycle begins)."""
    raw = state.read_blob(git, st, state.SNAPSHOT)
    assert raw is not None
    return snapshot_codec.loads(raw, f"{state.ref(git)}:{state.SNAPSHOT}")


def request(
    st: State,
    current: Journal,
    snapshot: Snapshot,
    base_tree: str,
    candidate: str,
    held: Held | None,
    sealed: dict[str, str],
    env_dirs: list[str],
) -> check.JudgeRequest:
    """What the ratchet is asked to judge: ``candidate`` on the cycle's base,
    trusting what was there before the agent's turn began, the quarantined
    tests tolerated (a single cycle and a wave's task alike)."""
    return check.JudgeRequest(
        snapshot,
        base=current.base,
        base_tree=base_tree,
        candidate=candidate,
        tolerated=frozenset(records.fold(st.records).quarantined),
        trust_until=current.started_epoch,  # the agent's turn began
        held=held,
        environment=lambda: seals.environment_changes(sealed, env_dirs),
    )


def advanced(
    git: Git,
    config: AutoConfig,
    base: str,
    candidate: str,
    snapshot: Snapshot,
    judged: check.Judgement,
) -> bytes | None:
    """The snapshot a passing candidate moves the ratchet to, encoded (None when
    it did not pass): its run's tests and doctest modules, the accepted kept."""
    if not judged.verdict.passed:
        return None
    modules = tuple(sorted({*snapshot.doctests, *judged.doctest_modules}))
    baseline = check.Baseline(judged.run, snapshot.environment, judged.collected, modules)
    moved = check.snapshot_of(git, base, candidate, baseline, declared=config.protect)
    return snapshot_codec.dumps(moved._replace(accepted=snapshot.accepted))


def _head_file(git: Git) -> str:
    """The ref `.git/HEAD` names, read as a file: git's `symbolic-ref` answers "No
    such ref" when that ref is broken."""
    try:
        text = read_bytes(git.git_dir() / "HEAD", limit=4096).decode("utf-8", "replace")
    except OSError:
        return ""
    return text.removeprefix("ref:").strip() if text.startswith("ref:") else ""


def run_pre_commit(root: Path, timeout_s: float) -> str | None:
    """The repository's own pre-commit hook on the cycle's work (`commit.hooks:
    run`), as `git commit` would run it: everything staged, the hook run by git.
    Files it reformats stay reformatted (they are what is judged). Returns the end
    of its output when it fails, else None."""
    plain = Git(root)  # the repository's hooks, as sealed at begin (restored above)
    plain.run("add", "-A")
    result = plain.call("hook", "run", "--ignore-missing", "pre-commit", timeout=timeout_s)
    if result.ok:
        return None
    lines = [line for line in result.output.splitlines() if line.strip()][-15:]
    if result.timed_out:
        lines.append(f"(stopped after {timeout_s:g} s)")
    return " | ".join(lines) or f"exit {result.returncode}"


def _guard(
    git: Git, current: Journal, head: str | None, base_tree: str, candidate: str
) -> str | None:
    changes = git.diff_trees(base_tree, candidate) if candidate != base_tree else []
    hidden = seals.was_ignored(current.seals or {}, [c.path for c in changes if c.status == "A"])
    if hidden:
        from gtd.names import readable

        shown = ", ".join(readable(p) for p in hidden[:5]) + (", …" if len(hidden) > 5 else "")
        # A person's file (their `.env`): a commit would publish it. The revert puts
        # the ignore rules back and leaves it where it is, ignored again.
        return (
            f"a file git ignored when the cycle began would be committed: {shown} "
            "(a `.gitignore` edit made it visible; it stays on disk, ignored again)"
        )
    from gtd.auto.cycle import yours

    smuggled = yours.guard(git, current, changes)
    if smuggled:
        from gtd.names import readable

        shown = ", ".join(readable(p) for p in smuggled[:5]) + (", …" if len(smuggled) > 5 else "")
        # `mv .env notes.txt`, `cp .env notes.txt`, `mv build out`: the same bytes
        # under a name git does not ignore. The revert moves them back (or sets a
        # copy aside) before keeping the cycle's work: in no ref either way.
        return f"a person's ignored file would be committed under another name: {shown}"
    if current.kind == "bootstrap":
        if head != current.base:
            return "bootstrap cycle made commits of its own"
        non_tests = sorted(c.path for c in changes if not is_test_path(c.path))
        if non_tests:
            return f"bootstrap changed non-test files: {', '.join(non_tests[:5])}"
    if candidate == base_tree and not current.spike:
        return NO_CHANGES
    return None


def _rewound(git: Git, st: State) -> list[str]:
    """A kept revert the sealed records do not know: the state was rolled back."""
    raw = git.run("for-each-ref", "--format=%(refname)", state.reverted_refs(git))
    recorded = {
        r.cycle
        for r in st.records
        if isinstance(r, CycleRecord) and r.status in ("reverted", "paused")
    }
    assert st.summary is not None
    recorded |= set(st.summary.get("reverted_before_setup") or ())
    out: list[str] = []
    for ref in raw.split():
        number = ref.rsplit("-", 1)[-1]
        if number.isdigit() and int(number) not in recorded:
            current = st.journal
            if current is not None and int(number) == current.cycle:
                continue  # this cycle's own ref, from an earlier attempt to revert it
            out.append(f"{state.ref(git)} (no record of {ref})")
    return out
