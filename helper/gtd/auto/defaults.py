"""The defaults of auto mode's settings, in one place: the config
(gtd.auto.config), the breaker and memory read them from here, and the commented
template `gtd auto setup` writes states the same values (a test reads it back)."""

from __future__ import annotations

# Seconds each configured command may run before it is killed.
TIMEOUT_S = 600.0
# deepflow's `circuit_breaker_threshold`: consecutive reverts of one task that halt.
THRESHOLD = 3
# Minutes the implementer may work on one task before the cycle counts as abandoned.
AGENT_MINUTES = 45
# Times a failing, baseline-passing test is run again before it counts.
RERUNS = 2
# How long `gtd cycle end` waits for its verdict: under the Bash tool's longest
# timeout (600 s), with room to answer.
WAIT_S = 540.0
# The largest file a cycle may add or change, in MB (GitHub refuses files over 100).
MAX_FILE_MB = 100.0
# After a harness failure (a usage limit, an overloaded API): the first wait
# without a stated reset (doubling with each pause in a row), its cap, and the
# longest pause in a row before the loop halts, in seconds.
PAUSE_FIRST_S = 60.0
PAUSE_CAP_S = 30 * 60.0
PAUSE_LONGEST_S = 6 * 3600.0
# The most tasks a wave may run at once (`parallel:`): each is an implementer and,
# at its end, a test run; more than this is a typo on any machine the loop runs on.
PARALLEL_MAX = 16
# The most judged test runs at once (`test_runs:`): more is a typo on any machine.
TEST_RUNS_MAX = 64
