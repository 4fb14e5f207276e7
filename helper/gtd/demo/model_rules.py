"""The scripted model's behaviour in auto mode: rules for the model server
(gtd.demo.model_server) that play the main conversation of a `/gtd:auto-cycle` tick,
the implementer subagent and the loop's stop, the way the pack's command and agent
texts tell a model to act. `gtd demo --claude` runs its night with them, and the
end-to-end tests (tests/e2e) drive Claude Code with the same rules.

The model acts on what the helper printed (`status:`, `next:`, `brief:` lines) and
on the tool results Claude Code sends back; it never reads the command text, so a
wording change in the markdown is not seen here, while a changed helper output,
option, permission or agent name is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from gtd.demo.model_server import (
    Block,
    Json,
    Reply,
    Request,
    Rule,
    Text,
    ToolUse,
    message_text,
)

# What the pack's own markdown puts in a subagent's system prompt: tells the
# requests of each subagent from the main conversation's.
IMPLEMENTER = "You implement one task of a plan"
PLANNER = "You write `PLAN.md` at the repository root"
REVIEWER = "You review one change an unattended implementer made"
SUBAGENTS = (IMPLEMENTER, PLANNER, REVIEWER)
LOOP_PROMPT = "/gtd:auto-cycle"
# How Claude Code's reminder begins when a cron job's slash command is due.
SCHEDULED = "This scheduled prompt has not run yet"


# -- reading requests --------------------------------------------------------------


def role(req: Request) -> str:
    if IMPLEMENTER in req.system:
        return "implementer"
    if PLANNER in req.system:
        return "planner"
    if REVIEWER in req.system:
        return "reviewer"
    return "main"


def answered(req: Request) -> list[str]:
    """Names of the tools whose results the latest message carries."""
    names: dict[str, str] = {}
    for msg in req.messages:
        if msg.get("role") == "assistant" and isinstance(msg.get("content"), list):
            for b in msg["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    names[str(b.get("id"))] = str(b.get("name"))
    return [names.get(str(r.get("tool_use_id")), "?") for r in req.tool_results()]


def tool_failed(req: Request) -> bool:
    return any(r.get("is_error") for r in req.tool_results())


def field_of(text: str, key: str) -> str | None:
    """The value of the last `key: value` line in text."""
    found = re.findall(rf"^{re.escape(key)}: (.*)$", text, re.M)
    return found[-1].strip() if found else None


def rule(
    name: str,
    reply: Reply,
    *,
    agent: str = "main",
    after: str | None = None,
    has: Iterable[str] = (),
    when: Callable[[Request], bool] | None = None,
    times: int | None = None,
    errors: bool = False,
    usage: Json | None = None,
    delay_s: float = 0.0,
) -> Rule:
    """A rule for one speaker (`main`, `implementer`, `planner`): it answers requests
    carrying the results of tool `after` (or a fresh prompt when `after` is "prompt"),
    whose latest message contains every string of `has`. A failed tool call never
    matches unless `errors` — so a denied permission or a helper error goes
    off-script and fails the test. `usage`: counts the answer adds to what it
    says it used (Rule.usage); `delay_s`: how long the answer is held
    (Rule.delay_s)."""

    def check(req: Request) -> bool:
        if role(req) != agent:
            return False
        if after == "prompt" and req.tool_results():
            return False
        if after not in (None, "prompt") and after not in answered(req):
            return False
        if not errors and tool_failed(req):
            return False
        return when is None or when(req)

    return Rule(name, reply, last=tuple(has), when=check, times=times, usage=usage, delay_s=delay_s)


# -- the scripted model's behaviour ---------------------------------------------------

Edits = Callable[[str, Path], list[Block]]  # (task id, repo) -> the implementer's edits


def write(repo: Path, rel: str, text: str) -> ToolUse:
    return ToolUse("Write", {"file_path": str(repo / rel), "content": text})


def edit(repo: Path, rel: str, old: str, new: str) -> ToolUse:
    return ToolUse("Edit", {"file_path": str(repo / rel), "old_string": old, "new_string": new})


def _cycle_task(req: Request) -> str:
    """The task id the implementer's brief names (`# Cycle 3 — T2: ...`)."""
    found = re.findall(r"Cycle \d+ \S (T\d+|BOOTSTRAP)", req.conversation)
    return found[0] if found else "?"


def _read_brief(repo: Path) -> Callable[[Request], list[Block]]:
    """The implementer's first step: Read the brief file its prompt names."""

    def read(req: Request) -> list[Block]:
        m = re.search(r"Read (\S+) and follow it", req.last)
        if m is None:
            raise ValueError(f"the implementer's prompt names no brief: {req.last[-300:]!r}")
        return [ToolUse("Read", {"file_path": str(repo / m.group(1).strip("`"))})]

    return read


def implementer_rules(repo: Path, edits: Edits) -> list[Rule]:
    """The implementer subagent: reads the brief it was given, makes the scenario's
    edits for the brief's task, says what it did."""

    def do_edits(req: Request) -> list[Block]:
        return [Text("Implementing the task."), *edits(_cycle_task(req), repo)]

    return [
        rule("implementer reads the brief", _read_brief(repo), agent="implementer", after="prompt"),
        rule("implementer edits", do_edits, agent="implementer", after="Read"),
        rule(
            "implementer reports",
            [Text("Changed the task's files as the brief asks. Tests: all passed.")],
            agent="implementer",
            when=lambda r: bool(set(answered(r)) & {"Write", "Edit"}),
        ),
    ]


def answered_command(req: Request) -> str:
    """The Bash command whose result the latest message carries."""
    ids = {str(r.get("tool_use_id")) for r in req.tool_results()}
    for msg in req.messages:
        for b in msg.get("content", []) if isinstance(msg.get("content"), list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_use" and str(b.get("id")) in ids:
                return str(b.get("input", {}).get("command", ""))
    return ""


def _finished(req: Request) -> bool:
    """The helper's latest answer says every task is done."""
    text = req.conversation
    return "complete" in (field_of(text, "status"), field_of(text, "next"))


def _report(req: Request) -> list[Block]:
    return [Text(f"{field_of(req.last, 'status')}: {field_of(req.last, 'message')}")]


def stop_loop_rules() -> list[Rule]:
    """Stopping the loop as the command says: CronList, then CronDelete of every job
    whose prompt is /gtd:auto-cycle (the cron tools are deferred in Claude Code
    2.1.332: a model loads them with ToolSearch first unless already loaded); then,
    when the plan is complete, `gtd verify`."""

    def start(req: Request) -> list[Block]:
        if "CronList" in req.tools:
            return [ToolUse("CronList", {})]
        return [ToolUse("ToolSearch", {"query": "select:CronList,CronDelete"})]

    def after_stop(req: Request) -> list[Block]:
        if _finished(req):
            return [ToolUse("Bash", {"command": "gtd verify", "timeout": 600000})]
        return [
            Text("The gtd loop is stopped. Fix the cause, run `gtd cycle reset`, then /gtd:auto.")
        ]

    def delete(req: Request) -> list[Block]:
        ids = [
            m.group(1)
            for m in re.finditer(r"^(\S+) \S .*: (.+)$", req.last, re.M)
            if m.group(2).strip() == LOOP_PROMPT
        ]
        return [ToolUse("CronDelete", {"id": i}) for i in ids] or after_stop(req)

    def stopping(req: Request) -> bool:
        text = req.last
        return field_of(text, "status") in ("halted", "blocked", "complete", "error") or (
            field_of(text, "next") in ("halt", "complete")
            and answered_command(req).startswith("gtd cycle end")
        )

    return [
        rule("main stops the loop", start, when=stopping),
        rule("main lists jobs", [ToolUse("CronList", {})], after="ToolSearch", has=("CronList",)),
        rule("main deletes the loop's job", delete, after="CronList"),
        rule("main after the stop", after_stop, after="CronDelete"),
        rule(
            "main reports verify",
            _report,
            after="Bash",
            when=lambda r: answered_command(r).startswith("gtd verify"),
        ),
    ]


def tick_rules() -> list[Rule]:
    """The main conversation running /gtd:auto-cycle as the command text says."""

    def launch(req: Request) -> list[Block]:
        brief = field_of(req.last, "brief")
        assert brief, req.last
        return [
            ToolUse(
                "Agent",
                {
                    "description": f"Implement {field_of(req.last, 'task')}",
                    "subagent_type": "gtd:implementer",
                    "prompt": f"Read {brief} and follow it exactly.",
                    # Agents run in the background by default in 2.1.332; the next
                    # step (gtd cycle end) needs the result.
                    "run_in_background": False,
                },
            )
        ]

    def end(req: Request) -> list[Block]:
        # The Bash timeout the command text asks for (`timeout: 600000`), as a model
        # reading it would pass it.
        found = re.findall(r"`timeout: (\d+)`", req.conversation)
        timeout = int(found[-1]) if found else 600000
        # and the cycle the tick's `begin` answered, as the text asks (`--cycle`)
        began = re.findall(r"^status: task\ncycle: (\d+)$", req.conversation, re.M)
        command = f"gtd cycle end --cycle {began[-1]}" if began else "gtd cycle end"
        return [ToolUse("Bash", {"command": command, "timeout": timeout})]

    return [
        # A tick the loop's cron job delivers while the session is idle: Claude Code
        # 2.1.332 sends the prompt with a reminder to run it through the Skill tool.
        rule(
            "main runs the scheduled tick",
            [ToolUse("Skill", {"skill": LOOP_PROMPT[1:]})],
            after="prompt",
            has=(SCHEDULED, f'"{LOOP_PROMPT[1:]}"'),
        ),
        rule("main launches the implementer", launch, has=("status: task", "brief: ")),
        rule("main ends the cycle", end, after="Agent"),
        rule(
            "main reports the cycle",
            _report,
            after="Bash",
            when=lambda r: (
                field_of(r.last, "next") == "continue"
                and answered_command(r).startswith("gtd cycle end")
            ),
        ),
        *stop_loop_rules(),
    ]


def review_rules(repo: Path, verdicts: list[str]) -> list[Rule]:
    """``review.agent``: the main conversation runs the reviewer on the brief a
    `review` answer names and passes its last line back to `gtd cycle end`; the
    reviewer reads the brief and gives the next of ``verdicts`` (`approve`,
    `object: why`), one per review. Put them before :func:`tick_rules`: the
    cycle's second end follows an Agent call too."""

    def launch(req: Request) -> list[Block]:
        brief = field_of(req.last, "brief")
        return [
            ToolUse(
                "Agent",
                {
                    "description": f"Review {field_of(req.last, 'task')}",
                    "subagent_type": "gtd:reviewer",
                    "prompt": f"Read {brief} and follow it exactly.",
                    "run_in_background": False,
                },
            )
        ]

    def end(req: Request) -> list[Block]:
        # (Claude Code may quote the subagent's reply inside its result text)
        line = re.findall(r"Verdict: (?:approve|object: [^\n\"\\]*)", req.last)[-1]
        began = re.findall(r"^status: review\ncycle: (\d+)$", req.conversation, re.M)
        command = f"gtd cycle end --cycle {began[-1]} --review '{line}'"
        return [ToolUse("Bash", {"command": command, "timeout": 600000})]

    return [
        rule("main launches the reviewer", launch, after="Bash", has=("status: review", "brief: ")),
        rule("main ends the reviewed cycle", end, after="Agent", has=("Verdict: ",)),
        rule("reviewer reads the brief", _read_brief(repo), agent="reviewer", after="prompt"),
        *(
            rule(
                f"reviewer says {verdict}",
                [Text(f"Read the task and the change.\nVerdict: {verdict}")],
                agent="reviewer",
                after="Read",
                times=1,
            )
            for verdict in verdicts
        ),
    ]


# -- the demo's implementer ---------------------------------------------------------

# The Read tool numbers the lines it returns (`     1\t...`, or `     1→...`).
_NUMBERED = re.compile(r"^ *\d+(?:\t|→)", re.MULTILINE)


def _brief(req: Request) -> str:
    """The brief as the implementer read it: the Read result that holds it, with
    the line numbers taken off."""
    for msg in reversed(req.messages):
        text = _NUMBERED.sub("", message_text(msg))
        if "# Cycle " in text and "## Task" in text:
            return text
    raise ValueError("the implementer has not read a brief")


def scripted_implementer_rules(repo: Path) -> list[Rule]:
    """The implementer subagent of `gtd demo --claude`: it reads the brief, takes the
    attempt the demo's script has for it (gtd.demo.implementer.choose: the first,
    or the next after those the brief says were reverted), reads the files the
    attempt changes, writes them, and reports. The same attempts the headless
    demo's agent process makes, as Claude Code's Read and Write tool calls."""
    from gtd.demo import implementer

    def attempt(req: Request) -> implementer.Attempt:
        return implementer.choose(_brief(req))[1]

    def read_files(req: Request) -> list[Block]:
        reads = [w.path for w in attempt(req).writes if w.base is not None]
        if not reads:
            return write_files(req)
        return [
            Text("Reading the files the task changes."),
            *(ToolUse("Read", {"file_path": str(repo / rel)}) for rel in reads),
        ]

    def write_files(req: Request) -> list[Block]:
        return [
            Text("Making the change."),
            *(write(repo, w.path, w.text) for w in attempt(req).writes),
        ]

    def report(req: Request) -> list[Block]:
        return [Text(f"{attempt(req).summary} The work is left uncommitted.")]

    return [
        rule("implementer reads the brief", _read_brief(repo), agent="implementer", after="prompt"),
        rule(
            "implementer reads the files",
            read_files,
            agent="implementer",
            after="Read",
            has=("# Cycle ",),
        ),
        rule("implementer writes", write_files, agent="implementer", after="Read"),
        # The guard hook may deny one write (a protected test): the implementer
        # reports all the same, as a model would.
        rule("implementer reports", report, agent="implementer", after="Write", errors=True),
    ]
