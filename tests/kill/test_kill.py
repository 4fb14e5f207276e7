"""`kill -9` at random moments of `gtd auto setup`, `gtd cycle begin` and
`gtd cycle end` (passing and failing), the helper alone or its whole process
tree, each followed by `gtd cycle begin` until it settles: no stall, no lost
file, no half state (tests/kill/trial.py says exactly what is checked).

One test per trial. The trial's scene (command, kill mode) is fixed by its
index; its moment is drawn from the run's seed (``GTD_KILL_SEED`` to repeat a
run; a failure prints it, and `scripts/kill_trials.py --seed S --only N` runs
one trial alone).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kill import scene
from tests.kill.trial import SLOTS, Runner, trial


@pytest.mark.slow
@pytest.mark.parametrize(
    "index", range(len(SLOTS)), ids=[f"{i:03d}-{k}-{m}" for i, (k, m) in enumerate(SLOTS)]
)
def test_kill_trial(index: int, kill_setup: tuple[scene.Templates, int], tmp_path: Path) -> None:
    templates, seed = kill_setup
    outcome = Runner(templates, tmp_path).run(trial(seed, index))
    assert not outcome.problems, (
        f"{outcome.report()}\n"
        f"repeat: GTD_KILL_SEED={seed} pytest tests/kill -k '{index:03d}-', or "
        f"scripts/kill_trials.py --seed {seed} --only {index} --keep"
    )
