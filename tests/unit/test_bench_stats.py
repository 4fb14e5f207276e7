"""The statistics scripts/bench.py reports a claim by (docs/performance.md): the
interval of a median must cover it as often as it says."""

from __future__ import annotations

import random
import runpy
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "scripts" / "bench.py"
Interval = Callable[[list[float]], tuple[float, float]]


def _interval() -> Interval:
    found: Interval = runpy.run_path(str(BENCH))["median_interval"]  # not run as __main__
    return found


def test_the_median_interval_is_the_tables_order_statistics() -> None:
    interval = _interval()
    # The binomial tables' 95 % ranks: n = 10 -> 2nd and 9th, n = 41 -> 14th and 28th.
    assert interval([float(x) for x in range(1, 11)]) == (2.0, 9.0)
    assert interval([float(x) for x in range(41, 0, -1)]) == (14.0, 28.0)
    assert interval([3.0, 1.0, 2.0]) == (1.0, 3.0)  # too few for 95 %: the whole range


def test_the_median_interval_covers_the_median_at_least_as_often_as_it_says() -> None:
    interval = _interval()
    rng = random.Random(7)
    runs = 2000
    # Skewed like ratios of noisy timings; the true median of lognormal(0, s) is 1.
    covered = 0
    for _ in range(runs):
        lo, hi = interval([rng.lognormvariate(0, 0.3) for _ in range(41)])
        covered += lo <= 1.0 <= hi
    assert covered / runs >= 0.95 - 0.01  # 0.97 by the table; 0.01 for the sampling
