"""The typer declaration of every command: options and help only. Bodies are in the
``*_cmd`` modules and import what they need lazily."""

from __future__ import annotations

import typer

from gtd import __version__
from gtd.auto.defaults import PARALLEL_MAX
from gtd.cli.output import JSON_HELP
from gtd.cli.reply import Reply

app = typer.Typer(
    name="gtd",
    help="Deterministic helper for the gtd pack: auto mode (plan, ratchet, cycle) and step mode.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
plan_app = typer.Typer(no_args_is_help=True, help="Read and check PLAN.md.")
ratchet_app = typer.Typer(
    no_args_is_help=True, help="The test ratchet: snapshot, check, quarantine."
)
cycle_app = typer.Typer(no_args_is_help=True, help="One auto-mode cycle: begin, end, reset.")
auto_app = typer.Typer(no_args_is_help=True, help="Auto-mode set-up and status.")
hook_app = typer.Typer(no_args_is_help=True, help="Claude Code hooks the plugin installs.")
app.add_typer(plan_app, name="plan")
app.add_typer(ratchet_app, name="ratchet")
app.add_typer(cycle_app, name="cycle")
app.add_typer(auto_app, name="auto")
app.add_typer(hook_app, name="hook")


@hook_app.command("pre-tool-use")
def _hook_pre_tool_use() -> None:
    """Refuse edits of protected files while a cycle is in flight (reads the tool
    call as JSON on stdin; see gtd.auto.guard)."""
    import gtd.cli.hook_cmd as hook_cmd

    raise typer.Exit(hook_cmd.pre_tool_use())


JsonOpt = typer.Option(False, "--json", help=JSON_HELP)


def _version(value: bool) -> None:
    if value:
        print(f"gtd {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """gtd helper."""


@app.command("doctor")
def _doctor(
    as_json: bool = JsonOpt,
    installation: bool = typer.Option(
        False,
        "--installation",
        help="Check the installation only, not the repository in the current folder.",
    ),
) -> None:
    """Check the installation: helper vs pack version, git, test command, commands."""
    import gtd.cli.doctor_cmd as doctor_cmd

    raise typer.Exit(doctor_cmd.doctor(as_json, installation))


@app.command("validate")
def _validate(
    file: str | None = typer.Argument(None, help="Steering file to validate (default: all)."),
    as_json: bool = JsonOpt,
) -> None:
    """Validate .gtd/TODO.md and .gtd/REVIEW.md; exit 1 with findings if malformed."""
    import gtd.cli.validate_cmd as validate_cmd

    raise typer.Exit(validate_cmd.validate(file, as_json))


@app.command("lsp")
def _lsp() -> None:
    """Language server (stdio) for the steering files."""
    import gtd.cli.lsp_cmd as lsp_cmd

    raise typer.Exit(lsp_cmd.lsp())


def _register_step_mode() -> None:
    """Step mode's commands (step, step-agent, next, status, review, format) keep the
    gtd 2.x contract and are declared in their own module."""
    from gtd.cli.step_app import register

    register(app)


def usage_exit(args: list[str], reply: Reply) -> int:
    """The exit code of a usage error: EXIT_USAGE, but gtd 2.x's 1 for bare `gtd`
    (or a leading flag) and step mode's commands, whose contract it is."""
    from gtd.exits import EXIT_STUCK, EXIT_USAGE

    two_x = reply.step or not args or args[0].startswith("-")
    return EXIT_STUCK if two_x else EXIT_USAGE


def run(args: list[str], reply: Reply) -> int:
    """Run typer on ``args``; usage errors become `gtd: ...` messages with
    usage_exit's code."""
    from gtd.cli.reply import fail
    from gtd.exits import EXIT_INTERRUPTED

    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="gtd", standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        fail("aborted", reply, EXIT_INTERRUPTED)
    except typer.TyperException as exc:
        # typer vendors click (pinned <0.30 in pyproject); its usage errors carry
        # format_message(), and NoSuchOption the offending option's name.
        kind = type(exc).__name__
        if kind == "NoArgsIsHelpError":
            print(exc.format_message(), file=__import__("sys").stderr)
            return usage_exit(args, reply)
        option = getattr(exc, "option_name", None)
        if kind == "NoSuchOption" and option:
            fail(f"unknown option '{option}' — see `gtd --help`", reply, usage_exit(args, reply))
        fail(f"{exc.format_message()} — see `gtd --help`", reply, usage_exit(args, reply))
    return code if isinstance(code, int) else 0


# -- plan ------------------------------------------------------------------------------


@plan_app.command("check")
def _plan_check(as_json: bool = JsonOpt) -> None:
    """Validate PLAN.md; list every problem as PLAN.md:<line>. Exit 1 if any."""
    from gtd.cli import plan_cmd

    raise typer.Exit(plan_cmd.check(as_json))


@plan_app.command("next")
def _plan_next(as_json: bool = JsonOpt) -> None:
    """Show the next ready task (first [ ] whose blockers are all [x])."""
    from gtd.cli import plan_cmd

    raise typer.Exit(plan_cmd.next_task(as_json))


# -- ratchet ---------------------------------------------------------------------------


@ratchet_app.command("snapshot")
def _ratchet_snapshot(as_json: bool = JsonOpt) -> None:
    """Record the test files, protected test config and a baseline test run."""
    from gtd.cli import ratchet_cmd

    raise typer.Exit(ratchet_cmd.snapshot(as_json))


@ratchet_app.command("run")
def _ratchet_run(as_json: bool = JsonOpt) -> None:
    """Check the working tree against the snapshot and baseline; print the verdict."""
    from gtd.cli import ratchet_cmd

    raise typer.Exit(ratchet_cmd.run(as_json))


@ratchet_app.command("quarantine")
def _ratchet_quarantine(
    test: str = typer.Argument(..., help="The test id, as `gtd ratchet run` shows it."),
    reason: str | None = typer.Option(
        None, "--reason", help="Why (recorded as the quarantine's evidence)."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Quarantine a flaky test: its failures are reported, never alone a revert."""
    from gtd.cli import ratchet_cmd

    raise typer.Exit(ratchet_cmd.quarantine(test, reason, as_json))


@ratchet_app.command("release")
def _ratchet_release(
    test: str = typer.Argument(..., help="The quarantined test id."),
    as_json: bool = JsonOpt,
) -> None:
    """Put a quarantined test back under the ratchet: its failures count again."""
    from gtd.cli import ratchet_cmd

    raise typer.Exit(ratchet_cmd.release(test, as_json))


# -- cycle -----------------------------------------------------------------------------


@cycle_app.command("begin")
def _cycle_begin(
    as_json: bool = JsonOpt,
    tick: bool = typer.Option(
        False, "--tick", help="Answer errors as `status: error` with exit 0 (for `!` injection)."
    ),
) -> None:
    """Start a cycle: answer task / busy / halted / blocked / dirty / complete."""
    from gtd.cli import cycle_cmd

    raise typer.Exit(cycle_cmd.begin(as_json, tick))


@cycle_app.command("end")
def _cycle_end(
    as_json: bool = JsonOpt,
    learning: str | None = typer.Option(
        None, "--learning", help="What a spike/probe task learned (recorded in memory)."
    ),
    cycle: int | None = typer.Option(
        None,
        "--cycle",
        min=1,
        help="The cycle `gtd cycle begin` began (the loop names it): one its agent "
        "ended already answers its verdict, or halts where anything changed since.",
    ),
    review: str | None = typer.Option(
        None,
        "--review",
        help="The reviewer's last line (`Verdict: approve` or `Verdict: object: why`), "
        "when `gtd cycle end` answered `status: review`.",
    ),
) -> None:
    """Finish the cycle: ratchet, then commit or revert; update memory and report."""
    from gtd.cli import cycle_cmd

    raise typer.Exit(cycle_cmd.end(as_json, learning, cycle, review))


@cycle_app.command("reset")
def _cycle_reset(
    as_json: bool = JsonOpt,
    task: str | None = typer.Argument(None, help="Task id to reset (default: every tripped task)."),
    budget: bool = typer.Option(
        False, "--budget", help="Start a new night: the budget's spend counts from zero again."
    ),
) -> None:
    """Clear a tripped circuit breaker (or, with --budget, the night's spend) so the
    loop can run again."""
    from gtd.cli import cycle_cmd

    if budget and task is not None:
        raise typer.BadParameter("--budget resets the night's spend, not a task: drop the task")
    raise typer.Exit(cycle_cmd.reset(as_json, task, budget))


# -- auto ------------------------------------------------------------------------------


@auto_app.command("setup")
def _auto_setup(
    as_json: bool = JsonOpt,
    accept: bool = typer.Option(
        False,
        "--accept-baseline",
        help="Seal a baseline with problems (collection errors, no test passing) anyway.",
    ),
    user_settings: bool = typer.Option(
        False,
        "--user-settings",
        help="For the loop's duration, set permissions.denyInsteadOfPrompting in your "
        "Claude Code user settings, so no prompt waits for you (docs/sandbox.md).",
    ),
) -> None:
    """Check repo and PLAN.md, write config, snapshot + baseline; print the loop command."""
    from gtd.cli import auto_cmd

    raise typer.Exit(auto_cmd.setup(as_json, accept, user_settings))


@auto_app.command("status")
def _auto_status(as_json: bool = JsonOpt) -> None:
    """The loop at a glance: its state, tasks done and left, the last verdict."""
    from gtd.cli import auto_cmd

    raise typer.Exit(auto_cmd.status(as_json))


@auto_app.command("sandbox")
def _auto_sandbox(
    off: bool = typer.Option(False, "--off", help="Take gtd's sandbox block out of the settings."),
    everywhere: bool = typer.Option(
        False, "--all", help="With --off: in every repository gtd wrote it to."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Claude Code's sandbox settings of auto mode: on, off or unavailable here."""
    from gtd.cli import auto_cmd

    raise typer.Exit(auto_cmd.sandbox(off, everywhere, as_json))


# -- verify and the headless loop ------------------------------------------------------


@app.command("verify")
def _verify(as_json: bool = JsonOpt) -> None:
    """When every task is done: L0 build, L1 files vs plan, L2 coverage, L4 full suite."""
    from gtd.cli import verify_cmd

    raise typer.Exit(verify_cmd.verify(as_json))


@app.command("loop")
def _loop(
    agent: str = typer.Option(
        ..., "--agent", help="Command that reads the brief on stdin (e.g. 'claude -p')."
    ),
    max_cycles: int | None = typer.Option(
        None, "--max-cycles", min=1, help="Stop after this many cycles."
    ),
    parallel: int | None = typer.Option(
        None,
        "--parallel",
        min=1,
        max=PARALLEL_MAX,
        help="Tasks a wave may run at once in this loop (overrides `parallel:`).",
    ),
) -> None:
    """Headless driver: begin, pipe the brief to the agent, end; until done or stuck.

    Exit status: 0 complete (or --max-cycles reached), 1 a person must act, 4
    blocked, 5 halted, 130 interrupted; 3 only for a bug in gtd (docs/errors.md).
    """
    from gtd.cli import loop_cmd

    raise typer.Exit(loop_cmd.loop(agent, max_cycles, parallel))


# -- the demo --------------------------------------------------------------------------


@app.command("demo")
def _demo(
    keep: str | None = typer.Option(
        None,
        "--keep",
        metavar="DIR",
        help="Make the demo's repository in DIR (new or empty) instead of a temporary directory.",
    ),
    claude: bool = typer.Option(
        False,
        "--claude",
        help="Run the night inside Claude Code (`claude -p`) with a scripted local model.",
    ),
) -> None:
    """Run a night of auto mode on a built-in sample project in a throwaway repository."""
    from gtd.cli import demo_cmd

    raise typer.Exit(demo_cmd.demo(keep, claude))


_register_step_mode()
