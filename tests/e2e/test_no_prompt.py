"""No prompt waits for a person, through the real CLI: a sandboxed command's
connection to a host no setting allows is put to the person (here: the SDK
host, `--permission-prompt-tool stdio`, the stand-in for the interactive
session's dialog) until `gtd auto setup --user-settings` runs in the same,
already running session; after it the next host is refused without a prompt,
and the loop's end gives the user settings back byte for byte.

`claude -p` without a prompt tool refuses anyway (nobody can be asked), so the
stdio prompt tool is what makes the question visible; a terminal dialog itself
is not driven here."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gtd.auto import sandbox
from gtd.demo.model_server import ModelServer, Rule, Text, ToolUse
from tests.claude_cli import claude_or_skip
from tests.e2e.harness import claude_env, make_project

pytestmark = pytest.mark.slow

PERSON = '{\n    "theme": "dark"\n}\n'


def curl(host: str) -> str:
    return f"curl -s -m 8 -o /dev/null -w 'code=%{{http_code}}' http://{host}/; echo rc=$?"


@pytest.fixture(autouse=True)
def _needs_the_sandbox() -> None:
    why = sandbox.unavailable()
    if why is not None:
        pytest.skip(f"Claude Code's sandbox cannot start here: {why}")


def test_a_network_prompt_waits_until_setup_writes_the_user_setting(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo")
    server.rules += [
        Rule("first", [ToolUse("Bash", {"command": curl("one.example.test")})], last=("ONE",)),
        Rule("second", [ToolUse("Bash", {"command": curl("two.example.test")})], last=("TWO",)),
        Rule("done", [Text("done")], when=lambda r: bool(r.tool_results()), times=None),
    ]
    env = claude_env(server, tmp_path / "client")
    user = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(PERSON)
    cmd = [
        claude_or_skip(),
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "default",  # the mode that asks the person about a host
        "--permission-prompt-tool",
        "stdio",
        "--no-session-persistence",
        "--allowedTools",
        "Bash(curl:*)",
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=repo,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()

    def send(obj: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(obj) + "\n")
        proc.stdin.flush()

    def turn(text: str) -> tuple[list[dict[str, Any]], list[str]]:
        """The prompts the person was asked (each denied, as they would), and
        the tool results, of one turn."""
        send({"type": "user", "message": {"role": "user", "content": text}})
        asks: list[dict[str, Any]] = []
        results: list[str] = []
        end = time.monotonic() + 120
        while time.monotonic() < end:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            assert line is not None, "claude ended mid-turn"
            event = json.loads(line)
            if event.get("type") == "control_request":
                asks.append(event["request"])
                answer = {"behavior": "deny", "message": "the person said no"}
                send(
                    {
                        "type": "control_response",
                        "response": {
                            "subtype": "success",
                            "request_id": event["request_id"],
                            "response": answer,
                        },
                    }
                )
            elif event.get("type") == "user":
                for block in event["message"].get("content", []):
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        results.append(str(block.get("content")))
            elif event.get("type") == "result":
                return asks, results
        pytest.fail(f"no result for {text!r}")

    try:
        asks, results = turn("ONE")
        assert [(a.get("subtype"), a.get("tool_name")) for a in asks] == [
            ("can_use_tool", "SandboxNetworkAccess")
        ], asks
        assert asks[0]["input"] == {"host": "one.example.test"}

        gtd_env = {**os.environ, "CLAUDE_CONFIG_DIR": env["CLAUDE_CONFIG_DIR"]}
        res = subprocess.run(
            [sys.executable, "-m", "gtd", "auto", "setup", "--user-settings"],
            cwd=repo,
            env=gtd_env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert res.returncode == 0, res.stderr
        assert "prompts: refused, not asked" in res.stdout, res.stdout
        time.sleep(2)  # Claude Code notices the changed user settings

        asks, results = turn("TWO")
        assert asks == [], asks  # refused without asking anybody
        assert any("two.example.test" in r for r in results), results
        assert not any("code=200" in r for r in results), results
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    res = subprocess.run(
        [sys.executable, "-m", "gtd", "auto", "sandbox", "--off"],
        cwd=repo,
        env=gtd_env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert user.read_text() == PERSON
