"""`.deepflow/config.yaml`: the human's settings for auto mode, read as nested YAML.

The file is deepflow's (``quality.test_command``, ``circuit_breaker_threshold``)
plus gtd's ``ratchet`` and ``cycle`` sections. It is parsed with PyYAML's safe
loader (the C one when available) into a node tree first, so every error names the
line it is about: syntax errors, unknown keys (a typo must never silently fall back
to a default), duplicate keys, wrong types and unparseable commands.

Without a test command in the file, :mod:`gtd.detect` chooses one (the project's
own environment first) and says why (``Config.test_command_reason``); a virtualenv
inside the repository that a command runs from is linked into the clean room
whether ``ratchet.link`` names it or not (``Config.links``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, NamedTuple

from gtd.errors import InputError

CONFIG_PATH = ".deepflow/config.yaml"
HOOK_CHOICES = ("skip", "run")

TestCommandSource = Literal["config", "quality", "detected"]

_DEFAULT_TIMEOUT_S = 600.0
_DEFAULT_THRESHOLD = 3
_DEFAULT_AGENT_MINUTES = 45
_DEFAULT_RERUNS = 2
# Under the Bash tool's longest timeout (600 s), with room to answer.
_DEFAULT_WAIT_S = 540.0

# The accepted keys: a section maps to its own key table, a leaf to its type name.
_COMMAND_KEYS = ("build_command", "test_command", "typecheck_command", "lint_command")
_SCHEMA: dict[str, Any] = {
    "ratchet": {
        **{key: "command" for key in _COMMAND_KEYS},
        "timeout_seconds": "positive number",
        "junit_xml": "path",
        "link": "path list",
        "rerun_failures": "count",
        "wait_seconds": "seconds",
    },
    "quality": {"test_command": "command"},
    "circuit_breaker_threshold": "positive integer",
    "cycle": {"agent_timeout_minutes": "positive integer"},
    "commit": {"hooks": "hooks choice"},
}


class Config(NamedTuple):
    build_command: str | None = None
    test_command: str | None = None
    typecheck_command: str | None = None
    lint_command: str | None = None
    timeout_s: float = _DEFAULT_TIMEOUT_S
    junit_xml: str | None = None
    circuit_breaker_threshold: int = _DEFAULT_THRESHOLD
    agent_timeout_minutes: int = _DEFAULT_AGENT_MINUTES
    # Where test_command came from; None when no test command is known at all.
    test_command_source: TestCommandSource | None = None
    # Ignored paths the suite needs, linked into the clean room (.venv, node_modules):
    # those configured, and the virtualenvs inside the repository a command runs from.
    links: tuple[str, ...] = ()
    # Times a failing, baseline-passing test is run again before it counts.
    rerun_failures: int = _DEFAULT_RERUNS
    # How long `gtd cycle end` waits for its verdict before answering `checking`.
    wait_s: float = _DEFAULT_WAIT_S
    # Whether the repository's pre-commit hook runs on a cycle's work ("run") or not.
    commit_hooks: str = "skip"
    # Why this test command: the config key it came from, or what detection chose.
    test_command_reason: str | None = None


def template_text() -> str:
    """The commented default config that `gtd auto setup` writes."""
    from gtd.templates import template

    return template("config.yaml")


def load_config(root: Path) -> Config:
    """Read ``root/.deepflow/config.yaml``; a missing file means all defaults."""
    path = root / CONFIG_PATH
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raw = b""
    except IsADirectoryError:
        raise InputError(CONFIG_PATH, "is a directory, not a file") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(CONFIG_PATH, f"not UTF-8 text ({exc.reason})") from None
    from gtd.auto import cache

    return _config(cache.through(root, "config", raw, lambda: _validated(text)), root)


def _config(values: dict[str, Any], root: Path) -> Config:
    from gtd import detect

    ratchet = values.get("ratchet", {})
    quality = values.get("quality", {})
    cycle = values.get("cycle", {})
    test_command: str | None = ratchet.get("test_command")
    source: TestCommandSource | None = None
    reason: str | None = None
    links: list[str] = list(ratchet.get("link", ()))
    if test_command:
        source, reason = "config", f"ratchet.test_command in {CONFIG_PATH}"
    elif quality.get("test_command"):
        test_command, source = quality["test_command"], "quality"
        reason = f"quality.test_command in {CONFIG_PATH}"
    else:
        found = detect.detect(root, probe=detect.run_probe)
        if found is not None:
            test_command, source, reason = found.command, "detected", found.reason
            links += found.links
    others = [ratchet.get(key) for key in _COMMAND_KEYS if key != "test_command"]
    links += detect.implied_links(root, [test_command, *others])
    return Config(
        build_command=ratchet.get("build_command"),
        test_command=test_command,
        typecheck_command=ratchet.get("typecheck_command"),
        lint_command=ratchet.get("lint_command"),
        timeout_s=float(ratchet.get("timeout_seconds", _DEFAULT_TIMEOUT_S)),
        junit_xml=ratchet.get("junit_xml"),
        circuit_breaker_threshold=values.get("circuit_breaker_threshold", _DEFAULT_THRESHOLD),
        agent_timeout_minutes=cycle.get("agent_timeout_minutes", _DEFAULT_AGENT_MINUTES),
        test_command_source=source,
        links=tuple(dict.fromkeys(links)),
        rerun_failures=ratchet.get("rerun_failures", _DEFAULT_RERUNS),
        wait_s=float(ratchet.get("wait_seconds", _DEFAULT_WAIT_S)),
        commit_hooks=values.get("commit", {}).get("hooks", "skip"),
        test_command_reason=reason,
    )


def to_json(config: Config) -> dict[str, Any]:
    """The config as sealed in the helper's state (what a cycle is judged by)."""
    return {key: list(v) if isinstance(v, tuple) else v for key, v in config._asdict().items()}


def from_json(data: dict[str, Any]) -> Config:
    known = {k: v for k, v in data.items() if k in Config._fields}
    if "links" in known:
        known["links"] = tuple(known["links"])
    return Config(**known)


# -- validation -----------------------------------------------------------------------


def _validated(text: str) -> dict[str, Any]:
    """The document as nested dicts with every null leaf dropped, or an InputError."""
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_cls(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        kind = (
            "YAML error"
            if isinstance(exc, yaml.constructor.ConstructorError)
            else "YAML syntax error"
        )
        raise InputError(
            CONFIG_PATH,
            f"{kind}: {problem}",
            line=mark.line + 1 if mark is not None else None,
            hint="fix the YAML (indent nested keys with spaces), or delete the file for defaults",
        ) from None
    except yaml.YAMLError as exc:
        raise InputError(CONFIG_PATH, f"YAML error: {exc}") from None
    except ValueError as exc:
        # A number too long for Python to convert (over 4,300 digits) ends up here.
        raise InputError(
            CONFIG_PATH,
            "a number is too long to read (more than 4,300 digits)"
            if "digits" in str(exc)
            else f"a value cannot be read: {exc}",
            line=_long_number_line(node),
            hint="use a number of a sensible size",
        ) from None
    finally:
        loader.dispose()
    if node is None or data is None:
        return {}
    if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
        raise InputError(
            CONFIG_PATH,
            "the top level must be a mapping of keys (ratchet:, quality:, ...)",
            line=node.start_mark.line + 1,
            hint="see the commented template: `gtd auto setup` writes it when the file is absent",
        )
    return _check_mapping(node, data, _SCHEMA, "")


def _long_number_line(node: Any) -> int | None:
    """The line of the first scalar too long to be a number the helper reads."""
    import yaml

    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.ScalarNode):
            if len(current.value) > 1000 and current.value.lstrip("+-").isdigit():
                return int(current.start_mark.line) + 1
        elif isinstance(current, yaml.MappingNode):
            stack.extend(v for pair in reversed(current.value) for v in reversed(pair))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(reversed(current.value))
    return None


def _check_mapping(
    node: Any, data: dict[Any, Any], schema: dict[str, Any], prefix: str
) -> dict[str, Any]:
    import yaml

    out: dict[str, Any] = {}
    seen: set[str] = set()
    for key_node, value_node in node.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        line = key_node.start_mark.line + 1
        if not isinstance(key, str):
            raise InputError(
                CONFIG_PATH, f"{prefix or 'top level'}: keys must be plain names", line
            )
        path = f"{prefix}{key}"
        if key in seen:
            raise InputError(CONFIG_PATH, f"duplicate key {path}", line, hint="keep one of them")
        seen.add(key)
        if key not in schema:
            known = ", ".join(f"{prefix}{k}" for k in schema)
            raise InputError(
                CONFIG_PATH,
                f"unknown key {path}",
                line,
                hint=f"known keys here: {known} (check the spelling and the indentation)",
            )
        value = data.get(key)
        expected = schema[key]
        if value is None:
            continue  # an explicit null means "the default"
        vline = value_node.start_mark.line + 1
        if isinstance(expected, dict):
            if not isinstance(value_node, yaml.MappingNode) or not isinstance(value, dict):
                raise InputError(
                    CONFIG_PATH,
                    f"{path} must be a mapping of keys ({', '.join(expected)})",
                    vline,
                )
            out[key] = _check_mapping(value_node, value, expected, f"{path}.")
        else:
            out[key] = _check_leaf(path, value, expected, vline)
    return out


def _check_leaf(path: str, value: Any, expected: str, line: int) -> Any:
    got = _describe(value)
    if expected == "hooks choice":
        if value not in HOOK_CHOICES:
            raise InputError(
                CONFIG_PATH,
                f"{path} must be one of {', '.join(HOOK_CHOICES)}, not {got}",
                line,
            )
        return value
    if expected in ("command", "path"):
        if not isinstance(value, str) or not value.strip():
            what = "a command string" if expected == "command" else "a file path or glob"
            raise InputError(
                CONFIG_PATH,
                f"{path} must be {what} or null, not {got}",
                line,
                hint="quote it if YAML reads it as something else",
            )
        if expected == "command":
            _check_command(path, value, line)
        return value.strip()
    if expected == "path list":
        items = value if isinstance(value, list) else None
        if items is None or not all(isinstance(i, str) and i.strip() for i in items):
            raise InputError(
                CONFIG_PATH, f"{path} must be a list of paths, not {got}", line,
                hint="e.g. `link: [.venv, node_modules]`",
            )  # fmt: skip
        bad = [i for i in items if i.startswith("/") or ".." in i.split("/")]
        if bad:
            raise InputError(
                CONFIG_PATH, f"{path}: {bad[0]!r} must be a path inside the repository", line
            )
        return [i.strip().strip("/") for i in items]
    if expected == "count":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
            raise InputError(
                CONFIG_PATH, f"{path} must be an integer from 0 to 100, not {got}", line
            )
        return value
    if expected == "seconds":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e9:
            raise InputError(
                CONFIG_PATH, f"{path} must be a number of seconds ≥ 0, not {got}", line
            )
        return float(value)
    if expected == "positive integer":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(CONFIG_PATH, f"{path} must be an integer ≥ 1, not {got}", line)
        return value
    # positive number
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise InputError(CONFIG_PATH, f"{path} must be a number of seconds > 0, not {got}", line)
    if value == float("inf"):
        raise InputError(CONFIG_PATH, f"{path} must be finite", line)
    return float(value)


def _check_command(path: str, command: str, line: int) -> None:
    from gtd.proc import command_argv

    try:
        argv, _ = command_argv(command)
    except ValueError as exc:
        raise InputError(
            CONFIG_PATH, f"{path}: cannot split the command: {exc}", line, hint="balance the quotes"
        ) from None
    if not argv:
        raise InputError(CONFIG_PATH, f"{path} is empty", line)


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    if isinstance(value, int) and abs(value) >= 10**100:
        return "an integer of more than 100 digits"
    return f"{type(value).__name__} {value!r}"
