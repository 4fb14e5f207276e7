"""`gtd auto setup`."""

from __future__ import annotations

from gtd.cli.cycle_cmd import fence, render
from gtd.cli.output import emit, root
from gtd.exits import EXIT_DONE, EXIT_STUCK

# The answers of a setup that took no baseline because the baseline cannot be judged.
REFUSED = frozenset({"baseline-red", "baseline-broken"})


def setup(as_json: bool, accept: bool = False, user_settings: bool = False) -> int:
    from gtd.auto import user_settings as no_prompt
    from gtd.auto.setup import setup as run_setup
    from gtd.cli.cycle_cmd import render
    from gtd.clock import now

    here = root()
    answer = run_setup(here, now(), accept=accept)
    fence(answer)
    no_prompt.follow_setup(here, answer, user_settings)
    emit(answer, render(answer), as_json)
    # A refused baseline needs a person before any loop can start: a script's
    # `gtd auto setup && gtd loop` must not go on (docs/errors.md).
    return EXIT_STUCK if answer.get("status") in REFUSED else EXIT_DONE


def sandbox(off: bool, everywhere: bool, as_json: bool) -> int:
    """`gtd auto sandbox [--off [--all]]` (docs/sandbox.md)."""
    from gtd.auto import sandbox as box
    from gtd.auto import user_settings
    from gtd.git import Git

    if off and everywhere:
        done = box.remove_everywhere()
        answer = {
            "status": "off",
            "removed": done,
            "user_settings": "removed" if user_settings.release_all() else "untouched",
            "message": f"removed in {len(done)} repositories",
        }
    else:
        here = root()
        git = Git(here)
        if off:
            box.remove(here, git)
            user_settings.release(here)
        why = box.unavailable()
        status = "on" if box.active(git) else "unavailable" if why else "off"
        answer = {"status": status, "settings": box.SETTINGS, "message": why or f"sandbox {status}"}
    emit(answer, render(answer), as_json)
    return 0


def status(as_json: bool) -> int:
    """`gtd auto status`: read the sealed state (no lock), PLAN.md and the
    notifier's marker; print one line or one object."""
    import time

    from gtd.auto import notifier, plan_file, state
    from gtd.auto import status as status_mod
    from gtd.errors import GtdError
    from gtd.git import Git

    where = root()
    st = state.read(Git(where, hardened=True))
    if st.summary is None:
        raise GtdError("auto mode is not set up in this work tree", "run `gtd auto setup` first")
    from gtd.auto import budget

    failure = notifier.last_failure(where)
    plan = plan_file.load(where)[1]
    config = state.sealed_config(st)
    answer = status_mod.status(
        st.journal,
        st.records,
        plan,
        config.circuit_breaker_threshold,
        time.time(),
        f"{failure.kind} ({failure.at}): {failure.why}" if failure else None,
        budget.for_next(st.records, budget.ceiling_of(config), plan),
        billing=config.billing,
    )
    emit(answer, answer["line"], as_json)
    return 0
