"""Auto mode: the unattended, test-ratcheted loop (plan, cycle, ratchet, memory,
breaker, report, brief, setup, verify, headless). The shared edge (git, proc, fsio,
paths, errors, clock, templates) stays at the package root."""
