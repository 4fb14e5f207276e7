"""The ratchet's verdict. Pure: (snapshot, hashes) → violations, and
(baseline, run, violations) → Verdict. No IO, no clock.

Rules, in order; the reason is the first failure found, ``details`` lists them all:

1. Integrity (needs no test run): a protected (snapshot) test changed, deleted or
   renamed ("a protected test was changed: <file>", named down to the test and
   line by gtd.auto.ratchet.edits where the files are at hand); a
   protected configuration file modified, deleted or added where it governs a
   snapshot test (its own folder and below; PLAN.md and the gtd config always).
2. Commands: a timeout or a missing executable always fails. Otherwise a command
   that passed at baseline must pass now. A command already failing at baseline
   (say lint was red before the loop started) is tolerated while it keeps failing
   the same way; it is never an excuse for the rest, and once a cycle sees it pass
   the advanced baseline holds it green from then on.
3. Tests, with per-test outcomes (JUnit XML): no test that was not failing at
   baseline may fail or error now (new tests included: they must pass, and a
   passing new test never offsets a failing old one); no baseline-passing test may
   be skipped or vanish; the count never drops. Without per-test outcomes the test
   command must exit 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gtd.auto.ratchet.edits import CHANGED
from gtd.auto.ratchet.model import (
    KINDS,
    CommandRun,
    FileHashes,
    Outcome,
    RunResult,
    Snapshot,
    command_reason,
)
from gtd.auto.ratchet.protect import OWNED, governs
from gtd.tuples import NamedTuple

_BAD: frozenset[Outcome | None] = frozenset({"failed", "error"})
_SHOWN_IDS = 3


class Verdict(NamedTuple):  # a NamedTuple: cheap to define on every run (see cycle begin)
    passed: bool
    reason: str | None
    tests_passed: int | None = None
    tests_total: int | None = None
    build_ok: bool | None = None
    details: tuple[str, ...] = ()
    tests_failed: int | None = None
    tests_skipped: int | None = None


# -- integrity ------------------------------------------------------------------------


def integrity(snapshot: Snapshot, current: FileHashes) -> list[str]:
    """Every integrity violation, most telling first; [] when the tree is intact."""
    out: list[str] = []
    missing: list[str] = []
    for path, digest in sorted(snapshot.files.items()):
        now = current.files.get(path)
        if now is None:
            missing.append(path)
        elif now != digest:
            out.append(f"{CHANGED}: {path}")
    by_digest = {digest: path for path, digest in sorted(current.new_files.items(), reverse=True)}
    for path in missing:
        twin = by_digest.get(snapshot.files[path])
        if twin is not None:
            out.append(f"a protected test file was renamed: {path} → {twin}")
        else:
            out.append(f"a protected test file was deleted or renamed: {path}")
    for path in sorted(set(snapshot.protected) | set(current.protected)):
        before, after = snapshot.protected.get(path), current.protected.get(path)
        if before == after:
            continue
        owned = path in OWNED
        if not owned and not any(governs(path, test) for test in snapshot.files):
            continue  # e.g. the conftest.py of a new test folder: no snapshot test under it
        what = "protected file" if owned else "protected test config"
        if before is None:
            if after or owned:
                out.append(f"{what} added: {path}")
        elif after is None:
            if before or owned:
                out.append(f"{what} deleted: {path}")
        else:
            out.append(f"{what} modified: {path}")
    for path, names in sorted(snapshot.doctests.items()):
        present = current.doctests.get(path, names)
        if present is None:
            out.append(f"a protected test file was deleted or renamed: {path} (doctests)")
            continue
        for name, digest in sorted(names.items()):
            if present.get(name) != digest:
                out.append(f"{CHANGED}: {path}::{name} (doctest)")
    out.extend(f"submodule changed: {path}" for path in current.submodules)
    shadowable = frozenset(snapshot.environment.shadowable) | STARTUP_HOOKS
    for path in current.new_modules:
        module = shadowed_name(path)
        if module is not None and module in shadowable:
            out.append(f"new module shadows an installed one: {path} ({module})")
    return out


# Modules Python imports at start-up from wherever the import path finds them, before
# any test code: a new one in a folder the test command puts on the path
# (`PYTHONPATH=. pytest`, `PYTHONPATH=src pytest`) runs ahead of pytest, even
# when the environment has none for it to shadow.
STARTUP_HOOKS = frozenset({"sitecustomize", "usercustomize"})


def module_stem(name: str) -> str | None:
    """The module name a file called ``name`` is imported as, or None when the
    import system would not load it: source (``x.py``), but also sourceless
    bytecode (``x.pyc`` outside ``__pycache__``) and extension modules
    (``x.cpython-311-x86_64-linux-gnu.so``, ``x.abi3.so``, ``x.so``, ``x.pyd``),
    which Python finds the same way, the extension even before the source."""
    if name.endswith(".py"):
        return name[:-3]
    if name.endswith(".pyc"):
        return name[:-4]
    if name.endswith((".so", ".pyd")):
        return name.split(".", 1)[0]
    return None


def shadowed_name(path: str) -> str | None:
    """The top-level module name a new file would take if its folder were on the
    import path (pytest puts test folders there): ``x.py`` or ``x/__init__.py``
    (or their bytecode or extension forms: :func:`module_stem`)."""
    parts = path.split("/")
    stem = module_stem(parts[-1])
    if stem == "__init__":
        return parts[-2] if len(parts) >= 2 else None
    return stem


# -- judge ----------------------------------------------------------------------------


def judge(
    baseline: RunResult,
    run: RunResult,
    integrity_violations: Sequence[str],
    tolerated: frozenset[str] = frozenset(),
    environmental: frozenset[str] = frozenset(),
) -> Verdict:
    """``tolerated``: tests whose failures are reported but never count (quarantined
    as flaky, or found flaky by this run's re-runs). ``environmental``: tests whose
    skip the environment caused (the base commit's code, run now, skips them too:
    no network, an optional dependency gone), which is no regression."""
    if integrity_violations:
        return Verdict(False, integrity_violations[0], details=tuple(integrity_violations))
    details: list[str] = []
    for cmd in sorted(run.commands, key=lambda c: KINDS.index(c.kind)):
        before = baseline.command(cmd.kind)
        if cmd.timed_out or cmd.missing is not None:
            details.append(command_reason(cmd))
        elif cmd.kind == "test":
            details.extend(_judge_tests(before, cmd, baseline, run, tolerated, environmental))
        elif not cmd.ok and (before is None or before.ok):
            details.append(command_reason(cmd))
    build = run.command("build")
    tests = run.tests
    return Verdict(
        passed=not details,
        reason=details[0] if details else None,
        tests_passed=run.tests_passed,
        tests_total=run.tests_total,
        build_ok=None if build is None else build.ok,
        details=tuple(details),
        tests_failed=None if tests is None else sum(1 for o in tests.values() if o in _BAD),
        tests_skipped=None if tests is None else sum(1 for o in tests.values() if o == "skipped"),
    )


def _judge_tests(
    before: CommandRun | None,
    cmd: CommandRun,
    baseline: RunResult,
    run: RunResult,
    tolerated: frozenset[str] = frozenset(),
    environmental: frozenset[str] = frozenset(),
) -> list[str]:
    base_tests, run_tests = baseline.tests, run.tests
    out: list[str] = []
    old = base_tests or {}
    if base_tests and run_tests is None:
        return [command_reason(cmd) if not cmd.ok else _results_missing(len(base_tests))]
    excused = False
    if run_tests is not None:
        # Baseline tests first, then the new ones; a test failing at baseline too is
        # not counted (it was not made worse).
        worse = [t for t, o in run_tests.items() if o in _BAD and old.get(t) not in _BAD]
        failed = sorted((t for t in worse if t not in tolerated), key=lambda t: (t not in old, t))
        excused = bool(worse) and not failed
        if failed:
            out.append(f"tests failed: {len(failed)} of {len(run_tests)} ({_ids(failed)})")
    if base_tests is not None and run_tests is not None:
        passing = sorted(t for t, o in base_tests.items() if o in _PASSING)
        skipped = [
            t
            for t in passing
            if skipped_now(base_tests[t], run_tests.get(t)) and t not in environmental
        ]
        vanished = [t for t in passing if t not in run_tests]
        if skipped:
            out.append(_plural("baseline test now skipped", "baseline tests now skipped", skipped))
        if vanished:
            out.append(_plural("baseline test vanished", "baseline tests vanished", vanished))
        if len(run_tests) < len(base_tests) and not vanished:
            out.append(f"test count dropped: {len(base_tests)} → {len(run_tests)}")
    if out or cmd.ok or excused:
        return out
    if base_tests is None or run_tests is None or before is None or before.ok:
        # Exit code only, or the per-test report is missing, or a green command
        # went red with every test accounted for (a crash after the tests, say).
        return [command_reason(cmd)]
    return []


_PASSING: frozenset[Outcome | None] = frozenset({"passed", "xpassed"})


def skipped_now(before: Outcome, now: Outcome | None) -> bool:
    """Whether a baseline-passing test no longer runs to a pass: skipped, or marked
    to fail when it was not before (a non-strict xfail that passed at the baseline
    may fail again: its marker says so)."""
    if now == "xfailed":
        return before != "xpassed"
    return now == "skipped"


def _results_missing(base_total: int) -> str:
    return f"test results missing: no JUnit XML this run (baseline had {base_total} tests)"


def _plural(one: str, many: str, ids: Sequence[str]) -> str:
    if len(ids) == 1:
        return f"{one}: {ids[0]}"
    return f"{many}: {len(ids)} ({_ids(ids)})"


def _ids(ids: Iterable[str]) -> str:
    listed = list(ids)
    shown = ", ".join(listed[:_SHOWN_IDS])
    return shown + (", …" if len(listed) > _SHOWN_IDS else "")
