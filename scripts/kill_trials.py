#!/usr/bin/env python3
"""The kill harness of tests/kill/, stand-alone and as long as wanted.

Builds the template repositories once, then runs trials: each `kill -9`s a
`gtd auto setup`, `gtd cycle begin` or `gtd cycle end` (passing and failing) at a
seeded random moment — the helper alone or its whole process tree, the
detached worker and its tests included — and checks that `gtd cycle begin`
settles with no lost file and no half state (see tests/kill/trial.py).

Usage: .venv/bin/python scripts/kill_trials.py [--trials N] [--seed S]
       [--kinds KIND ...] [--only INDEX ...] [--keep] [--work DIR]

A failing trial prints its seed and index; `--seed S --only INDEX` runs it
again (the moment is the same fraction of the command's measured duration).
Exit status: 0 when every trial held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.kill import procs, scene  # noqa: E402
from tests.kill.trial import Runner, trial  # noqa: E402

# Templates hold a cycle begun at build time; rebuild them well before the
# agent's timeout would make that cycle look abandoned.
REBUILD_AFTER_S = 20 * 60


def isolated_env(home: Path) -> dict[str, str]:
    """HOME and git's global config in a scratch folder: the harness never reads
    or writes the user's own."""
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n")
    return {**os.environ, "HOME": str(home), "GIT_CONFIG_GLOBAL": str(gitconfig)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000, help="how many (default 1000)")
    parser.add_argument("--seed", type=int, default=None, help="default: a random one")
    parser.add_argument("--kinds", nargs="*", default=list(scene.KINDS), choices=scene.KINDS)
    parser.add_argument("--only", nargs="*", type=int, default=None, help="trial indexes")
    parser.add_argument("--keep", action="store_true", help="keep every trial's folder")
    parser.add_argument("--work", type=Path, default=None, help="default: a temporary folder")
    args = parser.parse_args()
    if not procs.available():
        print("kill_trials: needs /proc (Linux)", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    work = args.work or Path(tempfile.mkdtemp(prefix="gtd-kill-"))
    env = isolated_env(work / "home")
    # Trial N is the same scene as the test suite's trial N (its moment too, for
    # the same seed); past the suite's count the scenes repeat with new moments.
    indexes = args.only if args.only is not None else range(args.trials)
    trials = [t for t in (trial(seed, i) for i in indexes) if t.kind in args.kinds]
    counts = collections.Counter(t.kind for t in trials)
    print(f"kill_trials: seed {seed}, {len(trials)} trials, work in {work}", flush=True)

    built_at = time.monotonic()
    templates = scene.build(work / "templates-0", env)
    print("measured (s): " + ", ".join(f"{k} {v:.2f}" for k, v in templates.seconds.items()))
    runner = Runner(templates, work / "trials")
    tally: collections.Counter[str] = collections.Counter()
    failed = []
    spent: dict[str, float] = collections.defaultdict(float)  # seconds, by kind
    start = time.monotonic()
    for n, one in enumerate(trials, 1):
        if time.monotonic() - built_at > REBUILD_AFTER_S:
            built_at = time.monotonic()
            templates = scene.build(work / f"templates-{n}", env)
            runner = Runner(templates, work / "trials")
        began = time.monotonic()
        outcome = runner.run(one, keep=args.keep)
        spent[one.kind] += time.monotonic() - began
        tally[f"{one.kind}/{one.mode} {'killed' if outcome.landed else 'finished'}"] += 1
        tally[f"attempts {outcome.attempts}"] += 1
        words = {w.rsplit("/", 1)[-1] for k in outcome.killed for w in k.split()}
        for what in ("git", "pytest"):
            if what in words:
                tally[f"the kill caught {what} running"] += 1
        for left in outcome.leftovers:
            kind = "temp file" if ".gtd-tmp-" in left else "git lock"
            tally[f"left {kind} ({left.split('/')[-1].split('.gtd-tmp-')[0]})"] += 1
        tally[f"final {outcome.final or '?'}"] += 1
        if outcome.problems:
            failed.append(outcome)
            print(outcome.report(), flush=True)
        if n % 25 == 0:
            print(f"  {n}/{len(trials)} in {time.monotonic() - start:.0f}s", flush=True)
    print(f"{len(trials)} trials in {time.monotonic() - start:.0f}s (seed {seed})")
    for key in sorted(tally):
        print(f"  {key}: {tally[key]}")
    print(
        "seconds per trial: "
        + ", ".join(f"{k} {spent[k] / max(1, counts.get(k, 1)):.2f}" for k in sorted(spent))
    )
    if failed:
        print(
            f"{len(failed)} FAILED: rerun with --seed {seed} --only "
            + " ".join(str(o.trial.index) for o in failed)
        )
        return 1
    print("all held: no stall, no lost file, no half state")
    return 0


if __name__ == "__main__":
    sys.exit(main())
