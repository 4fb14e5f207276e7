"""`gtd demo` from start to end: make the throwaway repository, say plainly what is
real and what is scripted, run the night (headless, or inside Claude Code), check
it against the script, and end with where everything is and the report's first
lines. Exit 0 when the night went as scripted, 1 with the reason otherwise."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gtd import paths
from gtd.demo import implementer, night, project
from gtd.demo.night import DemoFailed, Say

REPORT_LINES = 72  # at most
SHOWN = ("State", "Summary", "Cycle Log")  # the report sections the demo prints

HEADLESS = (
    "Real: the gtd helper, git, pytest and every verdict. Scripted: only the "
    "implementer's edits and the token counts it reports (gtd.demo.implementer, "
    "run by `gtd loop` as the agent)."
)
IN_CLAUDE = (
    "Real: Claude Code (`claude -p /gtd:auto-cycle` with the gtd pack), the gtd "
    "helper, git, pytest and every verdict. Scripted: only the model's replies, served "
    "on 127.0.0.1 (no account, no API key, no network)."
)


def demo(keep: Path | None, want_claude: bool, say: Say) -> int:
    for name in project.LOCAL_REPO_ENV:
        os.environ.pop(name, None)  # never reach the repository `gtd demo` started in
    claude: tuple[str, Path] | None = None
    if want_claude:
        from gtd.demo import in_claude

        exe = in_claude.find_claude()
        if exe is None:
            say(f"Claude Code (`claude`) is not on PATH: {in_claude.INSTALL_HINT}.")
            say("Running the headless demo instead.\n")
        else:
            claude = (exe, in_claude.find_pack())
    made = project.make(keep)
    root = made.root
    tasks = len(implementer.script())
    say(
        f"gtd demo: one night of auto mode on a sample project, a shopping cart with a "
        f"pytest suite and {tasks} tasks in PLAN.md."
    )
    say(IN_CLAUDE if claude else HEADLESS)
    say(f"Repository: {root}\n")
    # The clean rooms of this night live and die with it (not in ~/.cache), and
    # so does gtd's list of repositories the sandbox block went to (not in
    # ~/.local/state, where the throwaway repository would outlive the night).
    with tempfile.TemporaryDirectory(prefix="gtd-demo-rooms-") as rooms:
        env = {"XDG_CACHE_HOME": rooms, "XDG_STATE_HOME": str(Path(rooms, "state"))}
        if claude is None:
            # The headless night shows the ratchet itself catching the weakened
            # test: the scripted agent runs without the OS fence (gtd.auto
            # .agent_fence), which would refuse that write before any judging,
            # where bubblewrap is installed and not elsewhere.
            env["GTD_SANDBOX"] = "off"
        try:
            night.setup(root, env, say)
            if claude is None:
                final = night.run_loop(root, env, say)
                if final:
                    say(final[-1])
            else:
                from gtd.demo import in_claude

                in_claude.run(root, env, *claude, say)
            verified = night.verify(root, env, say)
            problems = night.check(root, night.cycles(root), verified, claude is not None)
        except DemoFailed as exc:
            problems = [str(exc)]
        except KeyboardInterrupt:
            say(f"\ninterrupted: the repository is left as it was at {root}")
            return 130
    return _ending(root, problems, say)


def _ending(root: Path, problems: list[str], say: Say) -> int:
    report = root / paths.REPORT
    say("")
    if problems:
        say("gtd demo: the night did NOT go as scripted:")
        for problem in problems:
            say(f"  {problem}")
    else:
        records = night.cycles(root)
        reverted = [r for r in records if r.status != "passed"]
        kept = ", ".join(r.kept or f"{paths.REVERTED_REF}{r.cycle}" for r in reverted)
        say(
            f"The night went as scripted: {len(records)} cycles, "
            f"{len(records) - len(reverted)} committed, {len(reverted)} reverted "
            f"(their work kept in {kept}), and the branch verified."
        )
    say(f"Repository: {root}   (try: git -C {root} log --oneline)")
    if report.exists():
        say(f"Report:     {report}")
        say("")
        for line in report_head(report.read_text(encoding="utf-8")):
            say(f"    {line}".rstrip())
        say("    ...")
    return 1 if problems else 0


def report_head(text: str) -> list[str]:
    """The report's title, state, summary and cycle log: what a terminal shows
    well (the run chart is a Mermaid diagram, for a viewer that renders it)."""
    kept: list[str] = []
    keep = True  # the title and its timestamp come before the first section
    for line in text.splitlines():
        if line.startswith("## "):
            keep = line[3:].strip() in SHOWN
        if keep:
            kept.append(line)
    return kept[:REPORT_LINES]
