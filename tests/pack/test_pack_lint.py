"""The pack linter run over this repository, the linter's own checks on bad input,
the bin/gtd shim, the per-tick byte budget and `claude plugin validate --strict`."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from gtd import __version__
from gtd.cli.app import app
from tests.claude_cli import claude_or_skip
from tests.conftest import Repo, run_gtd
from tests.pack import packlint

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_BEGIN = Path(__file__).parent / "data" / "cycle-begin-task.txt"
TICK_BUDGET = ROOT / "scripts" / "tick_budget.py"
CLI = typer.main.get_command(app)


def _fail_on(findings: list[packlint.Finding]) -> None:
    assert not findings, "\n" + packlint.render(findings)


# -- this repository ----------------------------------------------------------------


def test_manifests_name_the_plugin_gtd_at_the_helper_version() -> None:
    _fail_on(packlint.lint_manifests(ROOT, __version__))


def test_pack_has_its_parts() -> None:
    for rel in (
        "commands/auto.md",
        "commands/auto-cycle.md",
        "agents/implementer.md",
        "agents/planner.md",
        "skills/plan-format/SKILL.md",
    ):
        assert (ROOT / rel).is_file(), rel


def test_frontmatter_keys_are_valid_for_each_kind() -> None:
    _fail_on(packlint.lint_frontmatter(ROOT))


def test_commands_take_arguments_whole() -> None:
    _fail_on(packlint.lint_positional_args(ROOT))


def test_loop_target_stays_model_invocable_and_prompt_free() -> None:
    _fail_on(packlint.lint_loop_target(ROOT))


def test_injected_commands_are_allowed_helper_calls() -> None:
    _fail_on(packlint.lint_injections(ROOT))


def test_slash_commands_and_agents_referenced_exist() -> None:
    _fail_on(packlint.lint_references(ROOT))


def test_auto_starts_the_loop_on_auto_cycle() -> None:
    assert "/loop 1m /gtd:auto-cycle" in (ROOT / "commands" / "auto.md").read_text()


def _invocations() -> list[Any]:
    cases = []
    for path in packlint.markdown_files(ROOT):
        rel = path.relative_to(ROOT).as_posix()
        for line, _, argv in packlint.gtd_invocations(path.read_text(encoding="utf-8")):
            cases.append(pytest.param(argv, id=f"{rel}:{line}: gtd {' '.join(argv)}"))
    return cases


@pytest.mark.parametrize("argv", _invocations())
def test_gtd_invocation_exists_in_the_helper_cli(argv: list[str]) -> None:
    problem = packlint.check_invocation(CLI, argv)
    assert problem is None, problem


def test_the_pack_invokes_the_helper() -> None:
    # the parametrized test above must have something to check
    assert len(_invocations()) >= 5


def test_plan_format_example_passes_the_real_plan_check(repo: Repo) -> None:
    skill = (ROOT / "skills" / "plan-format" / "SKILL.md").read_text(encoding="utf-8")
    example = skill.split("```markdown\n", 1)[1].split("\n```", 1)[0]
    repo.write("PLAN.md", example + "\n")
    check = run_gtd(repo.path, "plan", "check")
    assert check.code == 0, check.stdout + check.stderr
    nxt = run_gtd(repo.path, "plan", "next", "--json")
    assert nxt.json["task"]["id"] == "T2"  # as the skill's closing sentence says


# -- the linter catches what it should ----------------------------------------------


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def bad_pack(tmp_path: Path) -> Path:
    _write(
        tmp_path,
        "commands/auto-cycle.md",
        "---\ndescription: tick\ndisable-model-invocation: true\nallowed-tools: Bash\n"
        "colour: red\n---\n!`git status`\nDo $1 with `gtd frob` and `gtd cycle end --fast`.\n",
    )
    _write(
        tmp_path,
        "agents/impl.md",
        "---\nname: gtd:impl\ndescription: x\npermissionMode: acceptEdits\n"
        "skills: [nope]\n---\nbody\n",
    )
    _write(tmp_path, "skills/fmt/SKILL.md", "---\nname: other\n---\nSee /gtd:missing.\n")
    _write(tmp_path, "docs/usage.md", "```sh\ngtd plan next --json\ngtd cycle reset T1 T2\n```\n")
    return tmp_path


def _messages(findings: list[packlint.Finding]) -> str:
    return packlint.render(findings)


def test_linter_flags_bad_frontmatter(bad_pack: Path) -> None:
    text = _messages(packlint.lint_frontmatter(bad_pack))
    assert "unknown command frontmatter key 'colour'" in text
    assert "unknown agent frontmatter key 'permissionMode'" in text
    assert "agent name 'gtd:impl'" in text
    assert "preloads unknown skill 'nope'" in text
    assert "skills/fmt/SKILL.md:1: a skill needs a description" in text
    assert "skill name 'other' != folder 'fmt'" in text


def test_linter_flags_positionals_and_loop_target(bad_pack: Path) -> None:
    assert "commands/auto-cycle.md:8: positional $1" in _messages(
        packlint.lint_positional_args(bad_pack)
    )
    loop = _messages(packlint.lint_loop_target(bad_pack))
    assert "disable-model-invocation would stop scheduled ticks" in loop
    assert "allowed-tools lacks CronDelete" in loop
    assert "allowed-tools lets no `gtd cycle end` run" in loop
    assert "injects 'git status'" in _messages(packlint.lint_injections(bad_pack))
    assert "unknown /gtd:missing" in _messages(packlint.lint_references(bad_pack))


def test_linter_checks_invocations_against_the_real_cli(bad_pack: Path) -> None:
    text = _messages(packlint.lint_invocations(bad_pack, CLI))
    assert "`gtd` has no command 'frob'" in text
    assert "`gtd cycle end` has no option --fast" in text
    assert "`gtd cycle reset` takes 1 argument(s), given 2" in text
    assert "plan next" not in text


@pytest.mark.parametrize(
    ("code", "argv"),
    [
        ("!`gtd cycle begin`", ["cycle", "begin"]),
        ("run `gtd cycle end --learning '<text>'` now", ["cycle", "end", "--learning", "<text>"]),
        ("`gtd cycle end [--json] [--learning TEXT]`", ["cycle", "end", "--json", "--learning"]),
        ("`python3 -m gtd plan check && echo ok`", ["plan", "check"]),
        ("`gtd`", []),
    ],
)
def test_invocations_are_read_from_code(code: str, argv: list[str]) -> None:
    found = [a for _, _, a in packlint.gtd_invocations(code)]
    assert found[0][: len(argv)] == argv


@pytest.mark.parametrize(
    "text",
    [
        "`/gtd:auto-cycle`",
        "`gtd:implementer`",
        "`Bash(gtd:*)`",
        "`claude plugin install gtd@gtd-pack`",
        "`helper/gtd/cli`",
        "`gtd 0.1.0`",
        "the gtd cycle begin command in prose",
    ],
)
def test_non_invocations_are_ignored(text: str) -> None:
    assert list(packlint.gtd_invocations(text)) == []


# -- bin/gtd ------------------------------------------------------------------------


SHIM = ROOT / "bin" / "gtd"


def _shim(tmp_path: Path, path_dirs: list[Path], python: str | None = None) -> Any:
    env = {
        "PATH": os.pathsep.join([str(SHIM.parent), *map(str, path_dirs), "/usr/bin", "/bin"]),
        "HOME": os.environ["HOME"],
    }
    if python:
        env["GTD_PYTHON"] = python
    return subprocess.run(
        [str(SHIM), "--version"], env=env, cwd=tmp_path, capture_output=True, text=True
    )


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_shim_is_posix_sh_and_executable() -> None:
    assert SHIM.read_text().startswith("#!/bin/sh\n")
    assert os.access(SHIM, os.X_OK)
    shells = [s for s in ("sh", "dash") if shutil.which(s)]
    for shell in shells:
        subprocess.run([shell, "-n", str(SHIM)], check=True)


def test_shim_prefers_an_installed_gtd(tmp_path: Path) -> None:
    _script(tmp_path / "other" / "gtd", '#!/bin/sh\necho "installed gtd $*"\n')
    res = _shim(tmp_path, [tmp_path / "other"])
    assert res.stdout == "installed gtd --version\n"


def test_shim_skips_other_copies_of_itself(tmp_path: Path) -> None:
    copy = tmp_path / "second-install" / "gtd"
    _script(copy, SHIM.read_text())
    res = _shim(tmp_path, [copy.parent], python=sys.executable)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"gtd {__version__}"


def test_shim_falls_back_to_python(tmp_path: Path) -> None:
    res = _shim(tmp_path, [], python=sys.executable)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"gtd {__version__}"


def test_shim_says_how_to_install_when_nothing_is_found(tmp_path: Path) -> None:
    # -S: no site-packages, so the editable install of gtd is invisible
    bare = _script(tmp_path / "bare-python", f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    res = _shim(tmp_path, [], python=str(bare))
    assert res.returncode == 127
    assert "python3 install.py" in res.stderr
    missing = _shim(tmp_path, [], python="no-such-python")
    assert missing.returncode == 127
    assert "python3 install.py" in missing.stderr


# -- per-tick byte budget -----------------------------------------------------------


def _tick_budget(*args: str) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, str(TICK_BUDGET), "--json", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.stdout, res.stderr
    result: dict[str, Any] = json.loads(res.stdout)
    return result


def test_tick_budget_with_a_typical_begin_output() -> None:
    budget = _tick_budget("--begin-output", str(SAMPLE_BEGIN))
    assert budget["tick_bytes"] <= packlint.TICK_LIMIT, budget
    assert budget["ok"]


@pytest.mark.slow
def test_tick_budget_with_the_real_helper() -> None:
    budget = _tick_budget()
    assert budget["begin_source"] == "generated"
    assert budget["tick_bytes"] <= packlint.TICK_LIMIT, budget


# -- claude plugin validate ---------------------------------------------------------


def _claude_validate(target: Path, home: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "HOME": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }
    res = subprocess.run(
        ["claude", "plugin", "validate", "--strict", "--json", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    report: dict[str, Any] = json.loads(res.stdout)
    report["exit_code"] = res.returncode
    return report


@pytest.mark.parametrize(
    "target", [".", ".claude-plugin/plugin.json", "commands", "agents", "skills"]
)
def test_claude_plugin_validate_strict(target: str, tmp_path: Path) -> None:
    claude_or_skip()
    home = tmp_path / "claude-home"  # the CLI writes ~/.claude.json; keep it off HOME
    home.mkdir()
    report = _claude_validate(ROOT / target, home)
    problems = [
        *(report.get("manifest") or {}).get("errors", []),
        *(report.get("manifest") or {}).get("warnings", []),
    ]
    for item in report.get("contents") or []:
        problems += [*item.get("errors", []), *item.get("warnings", [])]
    assert problems == [], json.dumps(problems, indent=1)
    assert report["success"] is True
    assert report["exit_code"] == 0
