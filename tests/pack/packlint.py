"""The pack linter: static checks on the markdown half of the gtd pack.

`claude plugin validate --strict` checks the manifests but not the frontmatter of
commands, agents and skills (it accepts unknown keys and agent names with `:`), and
knows nothing of our helper. These checks fill that gap; every one returns findings
(`path:line: message`) so a failing test names the exact place to fix.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# Frontmatter keys Claude Code reads, from its documentation (code.claude.com/docs:
# "Skills" frontmatter reference, which slash commands share, and "Subagents").
COMMAND_KEYS = frozenset(
    {
        "name",
        "description",
        "when_to_use",
        "argument-hint",
        "arguments",
        "disable-model-invocation",
        "user-invocable",
        "allowed-tools",
        "model",
        "effort",
        "context",
        "agent",
        "hooks",
        "paths",
        "shell",
    }
)
SKILL_KEYS = COMMAND_KEYS
# Plugin subagents: the documented agent keys minus hooks, mcpServers and
# permissionMode, which Claude Code ignores for agents that come from a plugin.
AGENT_KEYS = frozenset(
    {
        "name",
        "description",
        "tools",
        "disallowedTools",
        "model",
        "maxTurns",
        "skills",
        "memory",
        "background",
        "effort",
        "isolation",
        "color",
        "initialPrompt",
    }
)
AGENT_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
PLUGIN = "gtd"
LOOP_TARGET = "commands/auto-cycle.md"
TICK_LIMIT = 4096

# `$0`..`$9` and `$ARGUMENTS[n]` are positional; the pack takes the whole line.
POSITIONAL = re.compile(r"\$(?:\d|ARGUMENTS\[\d+\])")
INJECTION = re.compile(r"!`([^`]*)`")
FENCE = re.compile(r"^\s*(```+|~~~+)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# `gtd` as a program name: not part of a path, a slash command (`/gtd:auto`), a
# namespaced agent (`gtd:implementer`), a package name (`gtd-pack`) or `gtd@gtd-pack`.
GTD_WORD = re.compile(r"(?<![\w./:@-])gtd(?=\s|$)")
SHELL_STOP = frozenset({";", "&&", "||", "|", "&", ")", "(", ">", ">>", "<", "2>", "2>&1"})
PLACEHOLDERS = frozenset({"…", "...", ""})


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Doc:
    """A markdown file split into its YAML frontmatter and body."""

    path: Path
    rel: str
    meta: dict[str, Any] | None  # None: no frontmatter block
    body: str
    body_line: int  # 1-based line number where the body starts
    error: str | None = None  # frontmatter that is not a YAML mapping


def read_doc(root: Path, path: Path) -> Doc:
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(root).as_posix()
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return Doc(path, rel, None, text, 1)
    for end in range(1, len(lines)):
        if lines[end].rstrip() == "---":
            break
    else:
        return Doc(path, rel, None, text, 1, "frontmatter opened with --- but never closed")
    body = "\n".join(lines[end + 1 :])
    try:
        meta = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        return Doc(path, rel, None, body, end + 2, f"frontmatter is not valid YAML: {exc}")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return Doc(path, rel, None, body, end + 2, "frontmatter is not a YAML mapping")
    return Doc(path, rel, meta, body, end + 2)


# -- which files --------------------------------------------------------------------


def commands(root: Path) -> list[Path]:
    return sorted((root / "commands").glob("*.md"))


def agents(root: Path) -> list[Path]:
    return sorted((root / "agents").glob("*.md"))


def skills(root: Path) -> list[Path]:
    return sorted((root / "skills").glob("*/SKILL.md"))


def markdown_files(root: Path) -> list[Path]:
    """Every markdown file a person or the model reads a `gtd` command from."""
    found = [*commands(root), *agents(root), *sorted((root / "skills").rglob("*.md"))]
    found += sorted((root / "docs").rglob("*.md"))
    if (root / "README.md").is_file():
        found.append(root / "README.md")
    return found


# -- manifests ----------------------------------------------------------------------


def lint_manifests(root: Path, version: str) -> list[Finding]:
    out: list[Finding] = []
    plugin_rel = ".claude-plugin/plugin.json"
    plugin = json.loads((root / plugin_rel).read_text(encoding="utf-8"))
    if plugin.get("name") != PLUGIN:
        out.append(Finding(plugin_rel, 1, f"name must be {PLUGIN!r} (commands are /gtd:<name>)"))
    if plugin.get("version") != version:
        out.append(
            Finding(plugin_rel, 1, f"version {plugin.get('version')!r} != helper {version!r}")
        )
    for key in ("description", "author", "license"):
        if not plugin.get(key):
            out.append(Finding(plugin_rel, 1, f"missing {key!r}"))
    market_rel = ".claude-plugin/marketplace.json"
    market = json.loads((root / market_rel).read_text(encoding="utf-8"))
    entries = [p for p in market.get("plugins", []) if p.get("name") == PLUGIN]
    if len(entries) != 1:
        out.append(Finding(market_rel, 1, f"needs exactly one plugin entry named {PLUGIN!r}"))
    else:
        entry = entries[0]
        if entry.get("source") not in ("./", "."):
            out.append(Finding(market_rel, 1, "the gtd entry's source must be the repo root ./"))
        if entry.get("version") not in (None, version):
            out.append(Finding(market_rel, 1, f"version {entry.get('version')!r} != {version!r}"))
    return out


# -- frontmatter --------------------------------------------------------------------


def _check_keys(doc: Doc, allowed: frozenset[str], kind: str) -> Iterator[Finding]:
    if doc.error:
        yield Finding(doc.rel, 1, doc.error)
        return
    if doc.meta is None:
        yield Finding(doc.rel, 1, f"a {kind} needs a --- frontmatter block")
        return
    for key in doc.meta:
        if key not in allowed:
            yield Finding(doc.rel, 1, f"unknown {kind} frontmatter key {key!r}")
    description = doc.meta.get("description")
    if not isinstance(description, str) or not description.strip():
        yield Finding(doc.rel, 1, f"a {kind} needs a description")
    for key in ("disable-model-invocation", "user-invocable", "background"):
        if key in doc.meta and not isinstance(doc.meta[key], bool):
            yield Finding(doc.rel, 1, f"{key} must be true or false")


def lint_frontmatter(root: Path) -> list[Finding]:
    out: list[Finding] = []
    for path in commands(root):
        out += _check_keys(read_doc(root, path), COMMAND_KEYS, "command")
    for path in skills(root):
        doc = read_doc(root, path)
        out += _check_keys(doc, SKILL_KEYS, "skill")
        name = (doc.meta or {}).get("name")
        if name is not None and name != path.parent.name:
            out.append(Finding(doc.rel, 1, f"skill name {name!r} != folder {path.parent.name!r}"))
    skill_names = {p.parent.name for p in skills(root)}
    for path in agents(root):
        doc = read_doc(root, path)
        out += _check_keys(doc, AGENT_KEYS, "agent")
        meta = doc.meta or {}
        name = meta.get("name")
        if not isinstance(name, str) or not AGENT_NAME.match(name):
            out.append(
                Finding(doc.rel, 1, f"agent name {name!r}: lowercase letters, digits, '-' only")
            )
        elif name != path.stem:
            out.append(Finding(doc.rel, 1, f"agent name {name!r} != file name {path.stem!r}"))
        wanted = meta.get("skills") or []
        for skill in [wanted] if isinstance(wanted, str) else wanted:
            if str(skill).removeprefix(f"{PLUGIN}:") not in skill_names:
                out.append(Finding(doc.rel, 1, f"preloads unknown skill {skill!r}"))
    return out


def lint_positional_args(root: Path) -> list[Finding]:
    """Commands and skills take `$ARGUMENTS`; `$1` would silently drop the rest."""
    out: list[Finding] = []
    for path in [*commands(root), *skills(root)]:
        doc = read_doc(root, path)
        for offset, line in enumerate(doc.body.split("\n")):
            for match in POSITIONAL.finditer(line):
                out.append(
                    Finding(
                        doc.rel,
                        doc.body_line + offset,
                        f"positional {match.group()}: use $ARGUMENTS",
                    )
                )
    return out


def lint_loop_target(root: Path) -> list[Finding]:
    """A /loop tick is a model-invoked prompt: the target must stay invocable, and its
    injected commands must be helper calls its allowed-tools let run unprompted."""
    path = root / LOOP_TARGET
    if not path.is_file():
        return [Finding(LOOP_TARGET, 1, "the /loop target is missing")]
    doc = read_doc(root, path)
    meta = doc.meta or {}
    out: list[Finding] = []
    if meta.get("disable-model-invocation") is True:
        out.append(Finding(doc.rel, 1, "disable-model-invocation would stop scheduled ticks"))
    if meta.get("user-invocable") is False:
        out.append(Finding(doc.rel, 1, "user-invocable: false hides the /loop target"))
    tools = _allowed_tools(meta)
    for needed in ("Agent", "CronList", "CronDelete"):
        if needed not in tools:
            out.append(Finding(doc.rel, 1, f"allowed-tools lacks {needed}"))
    for step in ("cycle begin", "cycle end", "verify"):
        if not _allows(tools, f"gtd {step} --json"):
            out.append(Finding(doc.rel, 1, f"allowed-tools lets no `gtd {step}` run"))
    return out


def _allows(tools: list[str], command: str) -> bool:
    """Whether a ``Bash(<prefix>:*)`` (or ``Bash(<prefix> *)``) rule of ``tools``
    lets ``command`` run unprompted."""
    for tool in tools:
        found = re.fullmatch(r"Bash\((.+?)(?::\*| \*)\)", tool)
        if found and (command == found.group(1) or command.startswith(found.group(1) + " ")):
            return True
    return False


def lint_injections(root: Path) -> list[Finding]:
    """`!` lines run before the model sees the command; a failure aborts it. Only our
    helper (fast, exit 0 for every verdict) may be injected, and it must be allowed."""
    out: list[Finding] = []
    for path in [*commands(root), *skills(root)]:
        doc = read_doc(root, path)
        tools = _allowed_tools(doc.meta or {})
        for offset, line in enumerate(doc.body.split("\n")):
            for match in INJECTION.finditer(line):
                where = doc.body_line + offset
                command = match.group(1).strip()
                if not command.startswith("gtd "):
                    out.append(Finding(doc.rel, where, f"injects {command!r}: only gtd calls"))
                elif not _allows(tools, command):
                    out.append(
                        Finding(doc.rel, where, f"injects {command!r}, which no rule allows")
                    )
    return out


def _allowed_tools(meta: dict[str, Any]) -> list[str]:
    raw = meta.get("allowed-tools") or []
    if isinstance(raw, str):
        return [t.strip() for t in re.split(r",\s*(?![^()]*\))", raw) if t.strip()]
    return [str(t).strip() for t in raw]


def lint_references(root: Path) -> list[Finding]:
    """`/gtd:<name>` must be a command or skill of ours, `gtd:<name>` an agent or skill."""
    invocable = {p.stem for p in commands(root)} | {p.parent.name for p in skills(root)}
    agent_names = {p.stem for p in agents(root)} | {p.parent.name for p in skills(root)}
    out: list[Finding] = []
    for path in markdown_files(root):
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            for match in re.finditer(r"(/?)\bgtd:([a-z][a-z0-9-]*)", line):
                slash, name = match.groups()
                known = invocable if slash else agent_names | invocable
                if name not in known:
                    out.append(Finding(rel, number, f"unknown {match.group()}"))
    return out


# -- gtd invocations ----------------------------------------------------------------


def code_fragments(text: str) -> Iterator[tuple[int, str]]:
    """(line number, code) for every inline code span and fenced code line."""
    fence: str | None = None
    pending = ""
    for number, line in enumerate(text.split("\n"), 1):
        opener = FENCE.match(line)
        if fence is None and opener:
            fence = opener.group(1)
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
                continue
            if line.rstrip().endswith("\\"):  # a continued shell line
                pending += line.rstrip()[:-1] + " "
                continue
            yield number, pending + line
            pending = ""
            continue
        for match in CODE_SPAN.finditer(line):
            yield number, match.group(2)


def gtd_invocations(text: str) -> Iterator[tuple[int, str, list[str]]]:
    """(line, the code as written, argv after `gtd`) for every `gtd ...` written as
    code. Output samples such as `gtd 0.1.0` or `gtd: error` are not invocations."""
    for number, code in code_fragments(text):
        if code.lstrip().startswith("# "):  # a shell comment, or a heading a command printed
            continue
        for match in GTD_WORD.finditer(code):
            argv = _tokens(code[match.end() :])
            if argv and not argv[0].startswith("-") and not re.match(r"^[a-z][a-z-]*$", argv[0]):
                continue
            yield number, code.strip(), argv


def _tokens(rest: str) -> list[str]:
    try:
        lexer = shlex.shlex(rest, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        raw = list(lexer)
    except ValueError:  # unbalanced quotes in a placeholder
        raw = rest.split()
    argv: list[str] = []
    for token in raw:
        if token in SHELL_STOP or token.startswith(("`", "$(")):
            break
        # usage notation: `gtd cycle end [--learning TEXT]`, `gtd cycle reset [TASK]`
        word = token.strip("[]")
        if word not in PLACEHOLDERS:
            argv.append(word)
    return argv


def check_invocation(root_command: Any, argv: Sequence[str]) -> str | None:
    """None when `gtd <argv>` names an existing command with options it declares and
    no more arguments than it takes; else what is wrong. ``root_command`` is
    ``typer.main.get_command(app)`` (typer's click objects, duck-typed)."""
    command = root_command
    path = ["gtd"]
    i = 0
    while hasattr(command, "commands"):
        if i == len(argv):
            return None  # naming a group (`the gtd cycle commands`) is fine
        token = argv[i]
        if token.startswith("-"):
            problem, i = _option(command, path, argv, i)
            if problem:
                return problem
            continue
        sub = command.commands.get(token)
        if sub is None:
            return f"`{' '.join(path)}` has no command {token!r}"
        command, i = sub, i + 1
        path.append(token)
    capacity = 0.0
    for param in command.params:
        if param.param_type_name == "argument":
            capacity += float("inf") if param.nargs < 0 else param.nargs
    positional = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            positional += len(argv) - i - 1
            break
        if token.startswith("-") and len(token) > 1:
            problem, i = _option(command, path, argv, i)
            if problem:
                return problem
            continue
        positional += 1
        i += 1
    if positional > capacity:
        return f"`{' '.join(path)}` takes {int(capacity)} argument(s), given {positional}"
    return None


def _option(command: Any, path: list[str], argv: Sequence[str], i: int) -> tuple[str | None, int]:
    name, has_inline, _ = argv[i].partition("=")
    if name == "--help":
        return None, i + 1
    for param in command.params:
        if param.param_type_name == "option" and name in (*param.opts, *param.secondary_opts):
            if param.is_flag or has_inline:
                return None, i + 1
            if i + 1 >= len(argv):
                return f"`{' '.join(path)} {name}` needs a value", i + 1
            return None, i + 2
    return f"`{' '.join(path)}` has no option {name}", i + 1


def lint_invocations(root: Path, root_command: Any) -> list[Finding]:
    out: list[Finding] = []
    for path in markdown_files(root):
        rel = path.relative_to(root).as_posix()
        for number, code, argv in gtd_invocations(path.read_text(encoding="utf-8")):
            problem = check_invocation(root_command, argv)
            if problem:
                out.append(Finding(rel, number, f"{problem} (in `{code}`)"))
    return out


def lint_all(root: Path, version: str, root_command: Any) -> list[Finding]:
    return [
        *lint_manifests(root, version),
        *lint_frontmatter(root),
        *lint_positional_args(root),
        *lint_loop_target(root),
        *lint_injections(root),
        *lint_references(root),
        *lint_invocations(root, root_command),
    ]


def render(findings: Iterable[Finding]) -> str:
    return "\n".join(str(f) for f in findings)
