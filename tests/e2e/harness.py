"""Drive the real `claude` CLI against the scripted model server.

The server and the model's behaviour in a tick (gtd.demo.model_server,
gtd.demo.model_rules) are shared with `gtd demo --claude`; this module adds the
sample project, `/gtd:auto`'s rules and the session runner of the tests.

One `Session` is one `claude -p` process with stream-json input: each prompt is
sent as a user message once the previous turn's `result` event arrived, which is
how /loop ticks reach a running conversation (the same conversation, growing).
The CLI's own slash-command expansion, `!` injections, permission checks,
subagents and cron tools all run for real; only the model is scripted.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gtd.demo.model_rules import (
    LOOP_PROMPT,
    answered,
    answered_command,
    field_of,
    role,
    rule,
    tool_failed,
    write,
)
from gtd.demo.model_server import (
    Block,
    Json,
    ModelServer,
    Refusal,
    Request,
    Rule,
    Text,
    ToolUse,
    block_text,
)
from tests.claude_cli import PINNED, claude_or_skip
from tests.integration.calc_project import CALC, CONFTEST, PYTEST, TESTS

ROOT = Path(__file__).resolve().parents[2]
PACK_PARTS = (".claude-plugin", "commands", "agents", "skills", "bin")


@functools.cache
def claude_version() -> str:
    res = subprocess.run(["claude", "--version"], capture_output=True, text=True, timeout=60)
    return res.stdout.strip() or res.stderr.strip()


def copy_pack(dest: Path) -> Path:
    """The plugin's parts only, so a test can break a copy."""
    dest.mkdir(parents=True, exist_ok=True)
    for part in PACK_PARTS:
        shutil.copytree(ROOT / part, dest / part, symlinks=True)
    return dest


# -- the sample project -------------------------------------------------------------

# The same calculator the integration tests use, with a plan of its own.
PLAN = """\
# Calculator

### spec-calc

- [ ] **T1**: Add mul
  - Files: calc.py, tests/test_mul.py
  - Blocked by: none
  - Done when mul(a, b) returns the product and tests/test_mul.py shows it.
- [ ] **T2**: Add sub
  - Files: calc.py, tests/test_sub.py
  - Blocked by: T1
- [ ] **T3**: Add neg
  - Files: calc.py
  - Blocked by: T2
"""


def git(repo: Path, *args: str) -> str:
    res = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    assert res.returncode == 0, f"git {args}: {res.stderr}"
    return res.stdout


def gtd(
    repo: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gtd", *args],
        cwd=repo,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def make_project(
    path: Path,
    plan: str | None = PLAN,
    setup: bool = True,
    config_extra: str = "",
    sandbox: bool = True,
) -> Path:
    """A git repository with calc.py, a real pytest suite and (optionally) PLAN.md
    after `gtd auto setup` (which turns Claude Code's sandbox on where it can
    start; ``sandbox=False``: as where it cannot, the ratchet and the hook alone)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    files = {
        "calc.py": CALC,
        "tests/test_calc.py": TESTS,
        "conftest.py": CONFTEST,
        ".gitignore": "__pycache__/\n",
        ".deepflow/config.yaml": f"ratchet:\n  test_command: {PYTEST}\n{config_extra}",
    }
    if plan is not None:
        files["PLAN.md"] = plan
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    if setup:
        res = gtd(path, "auto", "setup", env=None if sandbox else {"GTD_SANDBOX": "off"})
        assert res.returncode == 0, res.stderr
        assert "status: ready" in res.stdout, res.stdout
    return path


def tree(repo: Path) -> dict[str, bytes]:
    """Every file outside .git and .deepflow, with its bytes."""
    out: dict[str, bytes] = {}
    for p in sorted(repo.rglob("*")):
        rel = p.relative_to(repo).as_posix()
        if rel.split("/")[0] in (".git", ".deepflow") or "__pycache__" in rel or not p.is_file():
            continue
        if rel == ".claude/settings.local.json":  # the sandbox's settings (gtd.auto.sandbox)
            continue
        out[rel] = p.read_bytes()
    return out


def memory(repo: Path) -> dict[str, Any]:
    import yaml

    data = yaml.safe_load((repo / ".deepflow/auto-memory.yaml").read_text())
    assert isinstance(data, dict)
    return data


# What the bundled loop skill schedules for `/loop 1m`.
EVERY_MINUTE = "*/1 * * * *"
# A schedule that cannot fire during a test (midnight of New Year's day): Claude
# Code under `claude -p` fires a due job whenever the session is idle between
# turns, so a test that types its ticks, to count them exactly, schedules this.
NEVER_DURING_A_TEST = "0 0 1 1 *"


def loop_start_rules(cron: str = EVERY_MINUTE) -> list[Rule]:
    """`/loop 1m /gtd:auto-cycle` as the bundled loop skill says: CronCreate (loaded
    with ToolSearch: it is deferred), then run the prompt now through the Skill tool.
    `cron` is the job's schedule (NEVER_DURING_A_TEST for typed ticks)."""
    return [
        rule(
            "main loads CronCreate",
            [ToolUse("ToolSearch", {"query": "select:CronCreate,CronList,CronDelete"})],
            has=("Call CronCreate", "1m /gtd:auto-cycle"),
            when=lambda r: "CronCreate" not in r.tools,
        ),
        rule(
            "main schedules the loop",
            [
                ToolUse(
                    "CronCreate",
                    {"cron": cron, "prompt": LOOP_PROMPT, "recurring": True},
                )
            ],
            when=lambda r: (
                "CronCreate" in r.tools
                and ("1m /gtd:auto-cycle" in r.last or "ToolSearch" in answered(r))
            ),
        ),
        rule(
            "main runs the first tick now",
            [ToolUse("Skill", {"skill": "gtd:auto-cycle"})],
            after="CronCreate",
        ),
    ]


REQUEST = "add a mul(a, b) function to calc.py"
PLANNED = """\
# Calculator

### mul

- [ ] **T1**: Add mul(a, b) to calc.py
  - Files: calc.py, tests/test_mul.py
  - Blocked by: none
  - Done when tests/test_mul.py shows mul(2, 3) == 6.
"""


def auto_rules(repo: Path, request: str = REQUEST) -> list[Rule]:
    """The main conversation following commands/auto.md, and the planner subagent:
    with PLAN.md present the model reads it and keeps it; without, the planner
    writes PLANNED."""

    def plan(req: Request) -> list[Block]:
        return [
            ToolUse(
                "Agent",
                {
                    "description": "Write PLAN.md",
                    "subagent_type": "gtd:planner",
                    "prompt": f"Write PLAN.md for this request: {request}. There are no specs.",
                    "run_in_background": False,
                },
            )
        ]

    def ran(command: str, status: str | None = None) -> Callable[[Request], bool]:
        def check(req: Request) -> bool:
            if not answered_command(req).startswith(command):
                return False
            return status is None or field_of(req.last, "status") == status

        return check

    def missing(req: Request) -> bool:
        return tool_failed(req) and "does not exist" in req.last

    return [
        rule(
            "main looks for PLAN.md",
            [ToolUse("Read", {"file_path": str(repo / "PLAN.md")})],
            after="prompt",
            has=("Set up unattended auto mode",),
        ),
        rule("main asks the planner", plan, after="Read", errors=True, when=missing),
        rule(
            "main checks the plan",
            [ToolUse("Bash", {"command": "gtd plan check"})],
            after="Read",
            has=("**T1**",),
        ),
        rule(
            "planner writes PLAN.md",
            [write(repo, "PLAN.md", PLANNED)],
            agent="planner",
            after="prompt",
            has=(request,),
        ),
        rule(
            "planner checks the plan",
            [ToolUse("Bash", {"command": "gtd plan check"})],
            agent="planner",
            after="Write",
        ),
        rule(
            "planner reports",
            [Text("1 task; first ready: T1; no spec gaps.")],
            agent="planner",
            after="Bash",
        ),
        rule(
            "main checks the plan",
            [ToolUse("Bash", {"command": "gtd plan check"})],
            after="Agent",
            has=("1 task; first ready: T1",),
        ),
        rule(
            "main sets up",
            [ToolUse("Bash", {"command": "gtd auto setup", "timeout": 600000})],
            after="Bash",
            when=ran("gtd plan check"),
        ),
        rule(
            "main starts the loop",
            [ToolUse("Skill", {"skill": "loop", "args": "1m /gtd:auto-cycle"})],
            after="Bash",
            when=ran("gtd auto setup", "ready"),
        ),
    ]


# -- running claude -----------------------------------------------------------------


@dataclass
class Session:
    """Everything one claude process did."""

    events: list[Json] = field(default_factory=list)
    stderr: str = ""
    returncode: int | None = None
    timed_out: bool = False

    @property
    def results(self) -> list[Json]:
        return [e for e in self.events if e.get("type") == "result"]

    @property
    def permission_denials(self) -> list[Json]:
        return [d for r in self.results for d in r.get("permission_denials") or []]

    def tool_calls(self, name: str) -> list[Json]:
        """Every tool_use of that name the CLI executed (subagents included)."""
        out = []
        for e in self.events:
            if e.get("type") != "assistant":
                continue
            for b in e.get("message", {}).get("content", []):
                if b.get("type") == "tool_use" and b.get("name") == name:
                    out.append(b)
        return out

    def tool_result(self, tool_use_id: str) -> str:
        for e in self.events:
            if e.get("type") != "user":
                continue
            content = e.get("message", {}).get("content", [])
            for b in content if isinstance(content, list) else []:
                if b.get("type") == "tool_result" and b.get("tool_use_id") == tool_use_id:
                    return block_text(b)
        raise AssertionError(f"no result for {tool_use_id}")


def claude_env(server: ModelServer, base: Path) -> dict[str, str]:
    """The demo's clean environment for Claude Code (gtd.demo.in_claude.claude_env:
    own HOME / config / TMPDIR under `base`, the venv's `gtd` first on PATH, the
    scripted server as the API, every optional network feature off), plus the
    test session's git identity and configuration."""
    from gtd.demo.in_claude import claude_env as demo_env

    git = {
        k: v
        for k, v in os.environ.items()
        if k in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM")
        or k.startswith(("GIT_AUTHOR", "GIT_COMMITTER"))
    }
    env = demo_env(server.url, base, git)
    # Claude Code's sandbox binds unix sockets under TMPDIR: a path past the
    # 108 bytes a socket's name may have ("Failed to create bridge sockets")
    # stops every sandboxed command, as a test's deep temporary folder would.
    short = Path(tempfile.mkdtemp(prefix="gtd-cc-"))
    env["TMPDIR"] = str(short)
    return env


def run_loop(
    repo: Path, env: dict[str, str], *, timeout: float = 240, persist: bool = False
) -> subprocess.CompletedProcess[str]:
    """`gtd loop --agent "claude -p --output-format json"` in ``repo``, as a person
    runs the headless loop: the agent's edits accepted, its result (and cost) read
    from Claude Code's JSON, the model the scripted server ``env`` names
    (claude_env). With ``persist``, each agent run writes its transcript."""
    agent = shlex.join(
        [
            claude_or_skip(),
            "-p",
            "--output-format",
            "json",
            "--permission-mode",
            "acceptEdits",
            *([] if persist else ["--no-session-persistence"]),
        ]
    )
    return subprocess.run(
        [sys.executable, "-m", "gtd", "loop", "--agent", agent],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_claude(
    server: ModelServer,
    repo: Path,
    prompts: list[str],
    *,
    base: Path,
    plugin: Path = ROOT,
    timeout: float = 120,
    allowed: Iterable[str] = (),
    idle_until: Callable[[Session], bool] | None = None,
    started: Callable[[int], None] | None = None,
    persist: bool = False,
    env: dict[str, str] | None = None,
    waits: Iterable[float | Callable[[], float]] = (),
) -> Session:
    """Send each prompt as one user turn of a single claude session and wait for its
    result; with `idle_until`, keep the session open and idle (turns the CLI starts
    itself, such as a cron job's, go on) until it holds after a turn; then close
    stdin and wait for the process. The process group is killed on timeout, so
    nothing outlives the test. `started` is told the process id (also its group's)
    as soon as it runs: a scenario may kill it, as a crash would. With `persist`,
    the CLI writes its transcripts (under `base`'s config folder), as a person's
    session does; `env`: variables added to the CLI's environment; `waits`: the
    seconds to let pass before each prompt (a later tick, as a cron job's), or a
    function saying it when the prompt is due."""
    cmd = [
        claude_or_skip(),
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--plugin-dir",
        str(plugin),
        # The implementer's Edit/Write in the repository are accepted, as in an
        # unattended run; Bash still needs the command's allowed-tools.
        "--permission-mode",
        "acceptEdits",
        *([] if persist else ["--no-session-persistence"]),
        # Extra tools a scenario's implementer may use (e.g. one shell command).
        *(["--allowedTools", *allowed] if allowed else []),
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=repo,
        env={**claude_env(server, base), **(env or {})},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    if started is not None:
        started(proc.pid)
    session = Session()
    lines: queue.Queue[str | None] = queue.Queue()
    err: list[str] = []

    def pump_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def pump_err() -> None:
        assert proc.stderr is not None
        err.append(proc.stderr.read())

    over = threading.Event()

    def watch() -> None:
        # A client killed mid-turn (a crash a scenario plays) may leave a process
        # of its own holding its output open: its end is its exit, not EOF.
        proc.wait()
        if not over.wait(2.0):  # what it wrote before it died is read first
            lines.put(None)

    readers = [threading.Thread(target=f, daemon=True) for f in (pump_out, pump_err, watch)]
    for t in readers:
        t.start()
    deadline = time.monotonic() + timeout
    try:
        assert proc.stdin is not None
        pauses = list(waits)
        for n, prompt in enumerate(prompts):
            wait = pauses[n] if n < len(pauses) else 0.0
            wait = wait() if callable(wait) else wait
            if wait > 0:
                time.sleep(wait)
            msg = {"type": "user", "message": {"role": "user", "content": prompt}}
            proc.stdin.write(json.dumps(msg) + "\n")
            proc.stdin.flush()
            if not _until_result(lines, session, deadline):
                break
        while idle_until is not None and not idle_until(session):
            if not _until_result(lines, session, deadline):
                break
        proc.stdin.close()
        while _next(lines, session, deadline) is not None:
            pass
        session.returncode = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except (subprocess.TimeoutExpired, TimeoutError, BrokenPipeError):
        session.timed_out = True
    finally:
        over.set()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        for t in readers:
            t.join(timeout=10)
        session.stderr = "".join(err)
    return session


def _next(lines: queue.Queue[str | None], session: Session, deadline: float) -> Json | None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    try:
        line = lines.get(timeout=left)
    except queue.Empty as exc:
        raise TimeoutError from exc
    if line is None:
        return None
    try:
        event = json.loads(line)
    except ValueError:
        event = {"type": "unparsed", "line": line}
    session.events.append(event)
    return event if isinstance(event, dict) else {"type": "unparsed"}


def _until_result(lines: queue.Queue[str | None], session: Session, deadline: float) -> bool:
    while True:
        event = _next(lines, session, deadline)
        if event is None:
            return False
        if event.get("type") == "result":
            return True


# -- per-tick context ---------------------------------------------------------------


def content_bytes(messages: list[Json]) -> dict[str, int]:
    """UTF-8 bytes of what the model reads in these messages (texts, tool inputs,
    tool results; not the JSON framing), by kind: `model` (what the assistant
    said and called), `results` (tool results), `user` (prompts, the command
    expansion, system turns)."""
    parts = {"user": 0, "model": 0, "results": 0}
    for msg in messages:
        content = msg.get("content", "")
        for b in [content] if isinstance(content, str) else content:
            if msg.get("role") == "assistant":
                kind = "model"
            elif isinstance(b, dict) and b.get("type") == "tool_result":
                kind = "results"
            else:
                kind = "user"
            parts[kind] += len(block_text(b).encode())
    return parts


@dataclass
class Tick:
    """What one tick added to the main conversation, in bytes."""

    command: int  # the command expansion with the helper's injected output
    parts: dict[str, int]  # everything the tick added, by kind (content_bytes)
    requests: int  # model requests of the main conversation in this tick

    @property
    def total(self) -> int:
        return sum(self.parts.values())


def tick_sizes(server: ModelServer) -> list[Tick]:
    """Per /gtd:auto-cycle tick in the main conversation, measured on the requests
    themselves. A tick starts at a request whose latest message is the command
    expansion (typed, or delivered by the cron job) and ends at the last main
    request before the next tick; its final answer is counted too."""
    main = [
        e for e in server.exchanges if e.request.body.get("tools") and role(e.request) == "main"
    ]
    starts = [
        i
        for i, e in enumerate(main)
        if "<command-name>/gtd:auto-cycle</command-name>" in e.request.last
        and not e.request.tool_results()
    ]
    ticks = []
    for n, i in enumerate(starts):
        j = (starts[n + 1] if n + 1 < len(starts) else len(main)) - 1
        first, last = main[i].request, main[j].request
        cut = len(first.messages) - len(first.latest)
        reply: list[Json] = [
            {"type": "text", "text": b.text}
            if isinstance(b, Text)
            else {"type": "tool_use", "name": b.name, "input": b.input}
            for b in main[j].reply
            if not isinstance(b, Refusal)
        ]
        added = [*last.messages[cut:], {"role": "assistant", "content": reply}]
        ticks.append(
            Tick(
                command=sum(content_bytes(first.latest).values()),
                parts=content_bytes(added),
                requests=j - i + 1,
            )
        )
    return ticks


def assert_on_script(server: ModelServer, session: Session) -> None:
    """The conversation followed the script: no request went unanswered by a rule,
    no permission was denied, the CLI finished cleanly."""
    story = f"claude {claude_version()}, scripted for {PINNED}\n{server.describe()}"
    assert not server.errors, server.errors
    assert not server.off_script, f"off script:\n{story}\nstderr: {session.stderr[-2000:]}"
    assert not session.timed_out, f"claude timed out:\n{story}\nstderr: {session.stderr[-2000:]}"
    assert session.permission_denials == [], session.permission_denials
    assert session.returncode == 0, f"claude exited {session.returncode}: {session.stderr[-2000:]}"
