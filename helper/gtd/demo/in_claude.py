"""`gtd demo --claude`: the demo's night inside the real Claude Code.

Each tick is one `claude -p /gtd:auto-cycle` process with the gtd pack loaded
(``--plugin-dir``): Claude Code expands the command, runs its injected `gtd cycle
begin`, starts the implementer subagent, runs `gtd cycle end`, and on the last
tick stops the loop and runs `gtd verify` — all for real. Only the model's replies
are scripted: gtd.demo.model_rules, served by gtd.demo.model_server on 127.0.0.1,
the scripted model of the end-to-end tests. Claude Code runs with a home and
configuration of its own in a temporary directory, a dummy API key and every
optional network feature off: no account, no key, no network.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import gtd
from gtd import proc
from gtd.demo import implementer
from gtd.demo.night import DemoFailed, Say, cycle_line, cycles
from gtd.errors import GtdError

if TYPE_CHECKING:
    from gtd.demo.model_server import ModelServer

# The Claude Code the scripted model is written for; scripts/check installs the same
# version for the end-to-end tests (a test keeps the two equal).
CLAUDE_CODE_VERSION = "2.1.332"
INSTALL_HINT = (
    "install Claude Code with `npm install -g @anthropic-ai/claude-code` "
    "(https://docs.anthropic.com/en/docs/claude-code)"
)
_TICK_TIMEOUT_S = 300.0
_PASS_THROUGH = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")


def find_claude() -> str | None:
    return shutil.which("claude")


def claude_version(exe: str) -> str:
    res = proc.run([exe, "--version"], Path.cwd(), timeout=60)
    return (res.stdout.strip() or res.stderr.strip()).split(" ", 1)[0]


def find_pack() -> Path:
    """The pack Claude Code loads: the plugin copy install.py made beside this
    helper's virtual environment, else the checkout this helper runs from."""
    candidates = [
        Path(sys.prefix).parent / "plugin",
        Path(gtd.__file__).resolve().parents[2],
    ]
    for path in candidates:
        try:
            manifest = json.loads((path / ".claude-plugin" / "plugin.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(manifest, dict) and manifest.get("name") == "gtd":
            return path
    raise GtdError(
        "the gtd pack (the Claude Code plugin) was not found beside this helper",
        "install it with `python3 install.py` from the pack's checkout, then run `gtd demo "
        "--claude` again",
    )


def claude_env(url: str, base: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """Claude Code's whole environment: its own HOME, configuration and TMPDIR under
    ``base``, this helper's `gtd` first on PATH, the scripted server as the API."""
    home, tmp = base / "home", base / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    env = {k: os.environ[k] for k in _PASS_THROUGH if k in os.environ}
    env.update(
        {
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
            "GTD_PYTHON": sys.executable,  # the plugin's bin/gtd falls back to it
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "TMPDIR": str(tmp),
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-ant-gtd-demo-scripted",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            **extra,
        }
    )
    return env


def tick_argv(claude: str, pack: Path, env: Mapping[str, str]) -> list[str]:
    """One tick. `env -i` gives Claude Code exactly ``env``: no variable of the
    caller's (an API key, a proxy, a cloud provider switch) reaches it."""
    from gtd.demo.model_rules import LOOP_PROMPT

    return [
        "env",
        "-i",
        *(f"{k}={v}" for k, v in env.items()),
        claude,
        "-p",
        LOOP_PROMPT,
        "--plugin-dir",
        str(pack),
        # The implementer's Write calls are accepted, as in an unattended run; Bash
        # still needs the command's allowed-tools.
        "--permission-mode",
        "acceptEdits",
        # Its transcripts are kept (under the demo's own config folder, thrown
        # away with it): `gtd cycle end` reads the cycle's tokens from them.
        "--output-format",
        "json",
    ]


def run(root: Path, env: Mapping[str, str], claude: str, pack: Path, say: Say) -> None:
    """Tick until the plan is done; DemoFailed when a tick leaves the script."""
    from gtd.auto import plan_file
    from gtd.demo.model_rules import scripted_implementer_rules, tick_rules
    from gtd.demo.model_server import ModelServer

    version = claude_version(claude)
    say(f"Claude Code {version} ({claude}) with the pack from {pack}")
    if version != CLAUDE_CODE_VERSION:
        say(
            f"note: the scripted model is written for Claude Code {CLAUDE_CODE_VERSION}; "
            "another version may answer differently and leave the script"
        )
    limit = len(implementer.expected()) + 1
    with ModelServer() as server, tempfile.TemporaryDirectory(prefix="gtd-demo-claude-") as base:
        server.script(*tick_rules(), *scripted_implementer_rules(root))
        argv = tick_argv(claude, pack, claude_env(server.url, Path(base), env))
        seen = len(cycles(root))
        for tick in range(1, limit + 1):
            res = proc.run(argv, root, timeout=_TICK_TIMEOUT_S)
            problem = _tick_problem(res, server)
            if problem:
                raise DemoFailed(f"tick {tick} of /gtd:auto-cycle in Claude Code: {problem}")
            for denial in _denials(_result(res.stdout)):
                say(f"tick {tick}: the guard hook refused the agent's {_what(denial)}")
            now = cycles(root)
            for rec in now[seen:]:
                say(f"tick {tick}: {cycle_line(rec)}")
            _, plan = plan_file.load_valid(root)
            if len(now) == seen or all(t.status != "todo" for t in plan.tasks):
                say(f"Claude Code's last word: {_result_text(res.stdout)}")
                return
            seen = len(now)
    raise DemoFailed(f"the loop was still going after {limit} ticks")


def _tick_problem(res: proc.Result, server: ModelServer) -> str | None:
    story = server.describe().splitlines()[-12:]
    if res.timed_out:
        return f"claude timed out after {_TICK_TIMEOUT_S:.0f} s\n" + "\n".join(story)
    if server.errors:
        return "the scripted model failed: " + "; ".join(server.errors)
    if server.off_script:
        return "Claude Code left the script:\n" + "\n".join(story)
    if res.returncode != 0:
        return f"claude exited {res.returncode}: {res.stderr.strip()[-1500:]}"
    result = _result(res.stdout)
    if result.get("is_error"):
        return f"claude answered an error: {result.get('result')}"
    denied = [d for d in _denials(result) if not _guarded(d)]
    if denied:
        return f"Claude Code denied a permission: {denied}"
    return None


def _denials(result: dict[str, object]) -> list[object]:
    found = result.get("permission_denials")
    return list(found) if isinstance(found, list) else []


def _guarded(denial: object) -> bool:
    """A denial the script has coming: the guard hook refusing a protected test."""
    if not isinstance(denial, dict):
        return False
    tool_input = denial.get("tool_input")
    path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
    return isinstance(path, str) and any(
        path.endswith("/" + rel) for rel in implementer.guarded_paths()
    )


def _what(denial: object) -> str:
    if isinstance(denial, dict):
        tool_input = denial.get("tool_input")
        path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
        if isinstance(path, str):
            return f"{denial.get('tool_name', 'edit')} of a protected test, {Path(path).name}"
    return "tool call"


def _result(stdout: str) -> dict[str, object]:
    for line in reversed(stdout.strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return {}


def _result_text(stdout: str) -> str:
    return str(_result(stdout).get("result", "")).strip().replace("\n", " ")[:300]
