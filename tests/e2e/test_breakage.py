"""The e2e scenario fails when the pack is broken: a copy of the pack gets one
breakage at a time and the loop scenario (/gtd:auto on a plan, its first tick
through the Skill tool, a second tick typed as the cron job would deliver it) must fail.
The intact copy must pass, or the failures would prove nothing."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from gtd.demo.model_rules import (
    implementer_rules,
    tick_rules,
)
from gtd.demo.model_server import ModelServer
from tests.e2e.harness import (
    NEVER_DURING_A_TEST,
    assert_on_script,
    auto_rules,
    copy_pack,
    git,
    loop_start_rules,
    make_project,
    run_claude,
)
from tests.e2e.test_auto_cycle import TICK, good_edits

pytestmark = pytest.mark.slow


def _edit(rel: str, change: Callable[[str], str]) -> Callable[[Path], None]:
    def apply(pack: Path) -> None:
        path = pack / rel
        old = path.read_text()
        new = change(old)
        assert new != old, f"breakage did not apply to {rel}"
        path.write_text(new)

    return apply


def _frontmatter_add(line: str) -> Callable[[str], str]:
    return lambda text: text.replace("---\n", f"---\n{line}\n", 1)


BREAKAGES: dict[str, Callable[[Path], None] | None] = {
    "intact": None,
    # the injected helper call gets an option the helper does not have
    "wrong helper option": _edit(
        "commands/auto-cycle.md",
        lambda t: t.replace("!`gtd cycle begin", "!`gtd cycle begin --no-such-option", 1),
    ),
    # the tick may no longer end its cycle without a permission prompt
    "missing allowed tool": _edit(
        "commands/auto-cycle.md",
        lambda t: re.sub(r"Bash\(gtd cycle end:\*\),?\s*", "", t, count=1),
    ),
    # the loop target may no longer be invoked by the model (scheduled ticks)
    "disable-model-invocation": _edit(
        "commands/auto-cycle.md", _frontmatter_add("disable-model-invocation: true")
    ),
    # Claude Code 2.1.332 loads agent files leniently (broken YAML, no frontmatter,
    # even an empty file still register under the file name), but registers an
    # agent under its `name:`: a namespaced name makes it `gtd:gtd:implementer`,
    # so `gtd:implementer` cannot be loaded.
    "unloadable agent": _edit(
        "agents/implementer.md",
        lambda t: re.sub(r"^name: implementer$", "name: gtd:implementer", t, count=1, flags=re.M),
    ),
}


def scenario_problems(server: ModelServer, tmp_path: Path, pack: Path) -> list[str]:
    """Run the loop scenario against `pack`; what went wrong, if anything."""
    repo = make_project(tmp_path / "repo", setup=False)
    server.script(
        *auto_rules(repo),
        *loop_start_rules(NEVER_DURING_A_TEST),
        *tick_rules(),
        *implementer_rules(repo, good_edits),
    )
    session = run_claude(server, repo, ["/gtd:auto", TICK], base=tmp_path / "claude", plugin=pack)
    problems = []
    try:
        assert_on_script(server, session)
    except AssertionError as exc:
        problems.append(str(exc).splitlines()[0])
    subjects = git(repo, "log", "--format=%s").splitlines()
    for task in ("T1: Add mul", "T2: Add sub"):
        if task not in subjects:
            problems.append(f"no commit {task!r}")
    if not session.tool_calls("CronCreate"):
        problems.append("the loop was not scheduled")
    return problems


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_the_scenario_fails_when_the_pack_is_broken(
    breakage: str, server: ModelServer, tmp_path: Path
) -> None:
    pack = copy_pack(tmp_path / "pack")
    apply = BREAKAGES[breakage]
    if apply is not None:
        apply(pack)
    problems = scenario_problems(server, tmp_path, pack)
    if apply is None:
        assert problems == [], f"the intact pack must pass:\n{server.describe()}"
    else:
        assert problems, f"{breakage}: the scenario still passed:\n{server.describe()}"
        first = server.off_script[0].last[-300:] if server.off_script else ""
        print(f"{breakage}: {problems}; went off script at: {first!r}")
