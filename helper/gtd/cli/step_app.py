"""Declares step mode's commands on the typer app (the gtd 2.x surface): ``step``,
``step-agent``, ``next``, ``status``, ``review <target>`` and ``format <file>``; and
the scripted check's ``step check`` and ``run``.
Bodies live in :mod:`gtd.cli.step_cmd`; the exact ``gtd next``/``status``/``step``
argvs never reach typer (see the fast path in :mod:`gtd.cli`)."""

from __future__ import annotations

import typer

__all__ = ["register"]

_JSON_HELP = "Output structured JSON instead of plain text."
_TARGET = typer.Argument(None, help="A git ref or branch.")
_FILE = typer.Argument(None, help="The markdown file.")
_ACTOR = typer.Argument(
    None, help="Whose turn: human (the default), agent, or check (scripted checks)."
)


def register(app: typer.Typer) -> None:
    json_opt = typer.Option(False, "--json", help=_JSON_HELP)

    @app.command("step")
    def _step(actor: str | None = _ACTOR, as_json: bool = json_opt) -> None:
        """Advance the workflow as the human actor (or the one named), to fixpoint."""
        from gtd.cli import step_cmd

        if actor is None:
            raise typer.Exit(step_cmd.step(False, as_json))
        raise typer.Exit(step_cmd.step_as(actor, as_json))

    @app.command("step-agent")
    def _step_agent(as_json: bool = json_opt) -> None:
        """Advance the workflow as the agent actor (to fixpoint)."""
        from gtd.cli import step_cmd

        raise typer.Exit(step_cmd.step(True, as_json))

    @app.command("next")
    def _next(as_json: bool = json_opt) -> None:
        """Print the awaited actor's prompt (no mutation but auto-init)."""
        from gtd.cli import step_cmd

        raise typer.Exit(step_cmd.next_prompt(as_json))

    @app.command("status")
    def _status(as_json: bool = json_opt) -> None:
        """Predict the next commit and state (no mutation but auto-init)."""
        from gtd.cli import step_cmd

        raise typer.Exit(step_cmd.status(as_json))

    @app.command("run")
    def _run(
        as_json: bool = json_opt,
        wait: float | None = typer.Option(
            None,
            "--wait",
            min=0,
            help="Wait at most this many seconds; a check still running is left running "
            "(answered `checking`) and the next `gtd run` waits for it again.",
        ),
    ) -> None:
        """Run the awaited check's script (scripted checks), then step as the check."""
        from gtd.cli import step_cmd

        raise typer.Exit(step_cmd.run_check(as_json, wait))

    @app.command("review")
    def _review(
        target: list[str] | None = _TARGET,
        as_json: bool = json_opt,
    ) -> None:
        """Anchor an ad-hoc human review against a git ref or branch."""
        from gtd.cli import step_cmd

        raise typer.Exit(step_cmd.review(list(target or []), as_json))

    @app.command("format")
    def _format(
        file: list[str] | None = _FILE,
        as_json: bool = typer.Option(False, "--json", hidden=True),
    ) -> None:
        """Format a markdown file in place (80 columns, prose wrapped)."""
        from gtd.cli import step_cmd

        args = list(file or [])
        raise typer.Exit(step_cmd.format_file([*args, "--json"] if as_json else args))
