"""`.deepflow/config.yaml`: the human's settings for auto mode, read as nested YAML.

The file is deepflow's (``quality.test_command``, ``circuit_breaker_threshold``)
plus gtd's ``ratchet`` and ``cycle`` sections. It is parsed with PyYAML's safe
loader (the C one when available) into a node tree first, so every error names the
line it is about: syntax errors, unknown keys (a typo must never silently fall back
to a default), duplicate keys, wrong types and unparseable commands.

Without a test command in the file, :mod:`gtd.detect` chooses one (the project's
own environment first) and says why (``AutoConfig.test_command_reason``); a virtualenv
inside the repository that a command runs from is linked into the clean room
whether ``ratchet.link`` names it or not (``AutoConfig.links``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gtd import schema
from gtd.auto import budget, defaults
from gtd.auto.diffread.patterns import ACTIONS, PATTERNS
from gtd.errors import InputError
from gtd.fsio import read_bytes
from gtd.paths import CONFIG as CONFIG_PATH
from gtd.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import Any, Literal

HOOK_CHOICES = ("skip", "run")

if TYPE_CHECKING:
    TestCommandSource = Literal["config", "quality", "detected"]
else:
    TestCommandSource = str


# The accepted keys (gtd.schema): a typo must never silently fall back to a default.
_COMMAND_KEYS = ("build_command", "test_command", "typecheck_command", "lint_command")


def _command_rule(command: str) -> tuple[str, str | None] | None:
    from gtd.proc import command_argv

    try:
        argv, _ = command_argv(command)
    except ValueError as exc:
        return f"cannot split the command: {exc}", "balance the quotes"
    return None if argv else ("is empty", None)


_QUOTE_IT = "quote it if YAML reads it as something else"
_COMMAND = schema.Text(
    "a command string or null", nonempty=True, rule=_command_rule, hint=_QUOTE_IT, clean=str.strip
)
_PATH = schema.Text("a file path or glob or null", nonempty=True, hint=_QUOTE_IT, clean=str.strip)
_LINK = schema.Text(
    "a path inside the repository",
    nonempty=True,
    rule=lambda p: (
        (f"must be a path inside the repository, not {p!r}", None)
        if p.startswith("/") or ".." in p.split("/")
        else None
    ),
    clean=lambda p: p.strip().strip("/"),
)


def _pattern_rule(pattern: str) -> tuple[str, str | None] | None:
    if ".." in pattern.lstrip("!").split("/"):
        return f"must stay inside the repository, not {pattern!r}", None
    from gtd.auto.ratchet.protect import declared

    try:
        declared([pattern])
    except ValueError as exc:
        return f"is not a gitignore pattern: {exc}", "see `man gitignore`"
    return None


class _Action(schema.Choice):
    """A diff reader pattern's action. YAML reads an unquoted ``off`` as false:
    that is what the person wrote, so it means ``off``."""

    def check(self, value: object, path: schema.Path) -> str:
        return "off" if value is False else super().check(value, path)


# Golden data outside the test folders, in gitignore's pattern language.
_PROTECT = schema.Text(
    "a gitignore-style pattern", nonempty=True, rule=_pattern_rule, hint=_QUOTE_IT, clean=str.strip
)
_MEGABYTES = schema.Number(0, inclusive=False, below=1e9, unit="megabytes")
PRICE_KINDS = ("input", "output", "cache_write", "cache_read")  # gtd.auto.prices.Price
_DOLLARS = schema.Number(0, inclusive=True, below=1e6, unit="dollars per million tokens")
_DOLLARS.hint = "write US dollars per million tokens as a number, e.g. `input: 3` (docs/cost.md)"
_PRICE_ROW = schema.Fields(
    {kind: _DOLLARS for kind in PRICE_KINDS},
    required=PRICE_KINDS,
    expected=f"a mapping of {', '.join(PRICE_KINDS)}",
)
_PRICE_ROW.hint = f"give all four prices: {', '.join(PRICE_KINDS)} (docs/cost.md)"
_PRICES = schema.Table(
    _PRICE_ROW,
    "a mapping of model names to prices, e.g. `prices: {claude-opus-5-5: {input: 4, ...}}`",
    key=schema.Text("a model name", nonempty=True),
)
_SCHEMA = schema.Fields(
    {
        "ratchet": schema.Fields(
            {
                **{key: _COMMAND for key in _COMMAND_KEYS},
                "timeout_seconds": schema.Number(0, inclusive=False),
                "junit_xml": _PATH,
                "link": schema.Each(
                    _LINK, "a list of paths", hint="e.g. `link: [.venv, node_modules]`"
                ),
                "rerun_failures": schema.Integer(0, 100),
                "protect": schema.Each(
                    _PROTECT, "a list of patterns", hint="e.g. `protect: [fixtures/, golden/]`"
                ),
                "wait_seconds": schema.Number(0, inclusive=True, below=1e9),
                "diff_reader": schema.Fields({name: _Action(ACTIONS) for name in PATTERNS}),
                # The judge's box (gtd.auto.ratchet.box).
                "box": schema.Flag(),
                "memory_limit_mb": schema.Number(0, inclusive=True, below=1e12, unit="megabytes"),
                "network": schema.Flag(),
            }
        ),
        "quality": schema.Fields({"test_command": _COMMAND}),
        "circuit_breaker_threshold": schema.Integer(1),
        "cycle": schema.Fields({"agent_timeout_minutes": schema.Integer(1)}),
        "commit": schema.Fields({"hooks": schema.Choice(HOOK_CHOICES), "max_file_mb": _MEGABYTES}),
        "review": schema.Fields({"agent": schema.Flag(), "command": _COMMAND}),
        "pause": schema.Fields(
            {
                "first_wait_seconds": schema.Number(0, inclusive=False, below=1e9),
                "longest_wait_minutes": schema.Number(0, inclusive=False, below=1e9),
                "longest_pause_minutes": schema.Number(0, inclusive=False, below=1e9),
            }
        ),
        "notify": schema.Fields(
            {"command": _COMMAND, "timeout_seconds": schema.Number(0, inclusive=False, below=3600)}
        ),
        "budget": budget.SCHEMA,  # the night's ceiling (gtd.auto.budget)
        # What tokens cost (gtd.auto.prices, docs/cost.md).
        "prices": _PRICES,
        "billing": schema.Choice(("api", "subscription")),
        # Tasks a wave may run at once (docs/parallel.md).
        "parallel": schema.Integer(1, defaults.PARALLEL_MAX),
        # Judged test runs at once (gtd.auto.ratchet.seats); unset: one per two cores.
        "test_runs": schema.Integer(1, defaults.TEST_RUNS_MAX),
    }
)


class AutoConfig(NamedTuple):
    build_command: str | None = None
    test_command: str | None = None
    typecheck_command: str | None = None
    lint_command: str | None = None
    timeout_s: float = defaults.TIMEOUT_S
    junit_xml: str | None = None
    circuit_breaker_threshold: int = defaults.THRESHOLD
    agent_timeout_minutes: int = defaults.AGENT_MINUTES
    # Where test_command came from; None when no test command is known at all.
    test_command_source: TestCommandSource | None = None
    # Ignored paths the suite needs, linked into the clean room (.venv, node_modules):
    # those configured, and the virtualenvs inside the repository a command runs from.
    links: tuple[str, ...] = ()
    # Times a failing, baseline-passing test is run again before it counts.
    rerun_failures: int = defaults.RERUNS
    # How long `gtd cycle end` waits for its verdict before answering `checking`.
    wait_s: float = defaults.WAIT_S
    # Whether the repository's pre-commit hook runs on a cycle's work ("run") or not.
    commit_hooks: str = "skip"
    # Why this test command: the config key it came from, or what detection chose.
    test_command_reason: str | None = None
    # The largest file a cycle may add or change (MB): a larger one refuses it.
    max_file_mb: float = defaults.MAX_FILE_MB
    # Golden data kept outside the test folders (gitignore patterns): its files
    # join the snapshot's test files, and are held like them.
    protect: tuple[str, ...] = ()
    # The diff reader's action per pattern where the config overrides the default
    # (gtd.auto.diffread.patterns): (pattern, refuse | flag | off).
    diff_reader: tuple[tuple[str, str], ...] = ()
    # A read-only reviewer subagent before each task cycle's tests (review.agent).
    review_agent: bool = False
    # The reviewer's command for `gtd loop` (the brief on stdin); None: the agent's.
    review_command: str | None = None
    # After a harness failure (gtd.auto.pause): the first backoff, its cap, and
    # the longest pause in a row before the loop halts (seconds).
    pause_first_s: float = defaults.PAUSE_FIRST_S
    pause_cap_s: float = defaults.PAUSE_CAP_S
    pause_longest_s: float = defaults.PAUSE_LONGEST_S
    # Run on each event (gtd.auto.notifier), the event as JSON on its stdin.
    notify_command: str | None = None
    notify_timeout_s: float = 10.0
    # The judge's box (gtd.auto.ratchet.box): whether the room's commands run in
    # bubblewrap where it works, their memory limit (MB; None: the default share of
    # the machine's memory, 0: none), and whether they may use the network.
    box: bool = True
    memory_limit_mb: float | None = None
    network: bool = False
    # The night's ceiling (gtd.auto.budget): dollars and/or tokens, and the share
    # of either at which the loop warns.
    budget_usd: float | None = None
    budget_tokens: int | None = None
    budget_warn_at: float = budget.WARN_AT
    # Price rows over the shipped table (model, then PRICE_KINDS' dollars per
    # million tokens), and whether the harness charges per token ("api") or
    # not ("subscription": the cost shown is what the API would have charged).
    prices: tuple[tuple[str, float, float, float, float], ...] = ()
    billing: str = "api"
    # Tasks implemented at once in a wave (gtd.auto.cycle.waves); 1 is the serial loop.
    parallel: int = 1
    # Judged test runs at once (gtd.auto.ratchet.seats); None: one per two cores.
    test_runs: int | None = None


def template_text() -> str:
    """The commented default config that `gtd auto setup` writes."""
    from gtd.templates import template

    return template("config.yaml")


def load_auto_config(root: Path) -> AutoConfig:
    """Read ``root/.deepflow/config.yaml``; a missing file means all defaults."""
    path = root / CONFIG_PATH
    try:
        raw = read_bytes(path)
    except FileNotFoundError:
        raw = b""
    except IsADirectoryError:
        raise InputError(CONFIG_PATH, "is a directory, not a file") from None
    except OSError as exc:  # a named pipe, say: never a read that blocks
        raise InputError(CONFIG_PATH, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(CONFIG_PATH, f"not UTF-8 text ({exc.reason})") from None
    return _config(_validated(text), root)


def test_runs(root: Path) -> int:
    """The cap on judged test runs at once, from ``root``'s config alone (no
    detection of a test command: the room asks it before every run); the
    default where the key is unset. A config that does not validate raises
    InputError, as :func:`load_auto_config` does."""
    from gtd.auto.ratchet import seats

    try:
        raw = read_bytes(root / CONFIG_PATH)
    except FileNotFoundError:
        return seats.default()
    except OSError as exc:
        raise InputError(CONFIG_PATH, f"cannot read: {exc.strerror or exc}") from None
    if b"test_runs" not in raw:
        return seats.default()  # no YAML parse for a config that does not set it
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(CONFIG_PATH, f"not UTF-8 text ({exc.reason})") from None
    found = _validated(text).get("test_runs")
    return int(found) if found is not None else seats.default()


def _config(values: dict[str, Any], root: Path) -> AutoConfig:
    from gtd import detect

    ratchet = values.get("ratchet", {})
    quality = values.get("quality", {})
    cycle = values.get("cycle", {})
    pause = values.get("pause", {})
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
    return AutoConfig(
        build_command=ratchet.get("build_command"),
        test_command=test_command,
        typecheck_command=ratchet.get("typecheck_command"),
        lint_command=ratchet.get("lint_command"),
        timeout_s=float(ratchet.get("timeout_seconds", defaults.TIMEOUT_S)),
        junit_xml=ratchet.get("junit_xml"),
        circuit_breaker_threshold=values.get("circuit_breaker_threshold", defaults.THRESHOLD),
        agent_timeout_minutes=cycle.get("agent_timeout_minutes", defaults.AGENT_MINUTES),
        test_command_source=source,
        links=tuple(dict.fromkeys(links)),
        rerun_failures=ratchet.get("rerun_failures", defaults.RERUNS),
        wait_s=float(ratchet.get("wait_seconds", defaults.WAIT_S)),
        commit_hooks=values.get("commit", {}).get("hooks", "skip"),
        test_command_reason=reason,
        max_file_mb=float(values.get("commit", {}).get("max_file_mb", defaults.MAX_FILE_MB)),
        protect=tuple(dict.fromkeys(ratchet.get("protect", ()))),
        review_agent=bool(values.get("review", {}).get("agent", False)),
        review_command=values.get("review", {}).get("command"),
        diff_reader=tuple(
            sorted(
                (name, action)
                for name, action in ratchet.get("diff_reader", {}).items()
                if PATTERNS[name].action != action  # the template states the defaults
            )
        ),
        pause_first_s=float(pause.get("first_wait_seconds", defaults.PAUSE_FIRST_S)),
        pause_cap_s=float(pause.get("longest_wait_minutes", defaults.PAUSE_CAP_S / 60)) * 60,
        pause_longest_s=float(pause.get("longest_pause_minutes", defaults.PAUSE_LONGEST_S / 60))
        * 60,
        notify_command=values.get("notify", {}).get("command"),
        notify_timeout_s=float(values.get("notify", {}).get("timeout_seconds", 10.0)),
        box=ratchet.get("box", True),
        memory_limit_mb=ratchet.get("memory_limit_mb"),
        network=ratchet.get("network", False),
        budget_usd=values.get("budget", {}).get("usd"),
        budget_tokens=values.get("budget", {}).get("tokens"),
        budget_warn_at=values.get("budget", {}).get("warn_at", budget.WARN_AT),
        prices=tuple(
            (name, *(float(row[kind]) for kind in PRICE_KINDS))
            for name, row in values.get("prices", {}).items()
        ),
        billing=values.get("billing", "api"),
        parallel=values.get("parallel", 1),
        test_runs=values.get("test_runs"),
    )


def to_json(config: AutoConfig) -> dict[str, Any]:
    """The config as sealed in the helper's state (what a cycle is judged by)."""
    out = {key: list(v) if isinstance(v, tuple) else v for key, v in config._asdict().items()}
    out["diff_reader"] = [list(pair) for pair in config.diff_reader]
    if config.parallel == 1:
        # Sealed only when set: the sealed config of a repository set up before
        # the key existed stays equal, so `gtd auto setup` does not take the
        # baseline again for a setting that changes nothing.
        del out["parallel"]
    if config.test_runs is None:
        del out["test_runs"]  # the same: sealed only when set
    return out


def from_json(data: dict[str, Any]) -> AutoConfig:
    known = {k: v for k, v in data.items() if k in AutoConfig._fields}
    for key in ("links", "protect"):
        if key in known:
            known[key] = tuple(known[key])
    if "diff_reader" in known:
        known["diff_reader"] = tuple((str(k), str(v)) for k, v in known["diff_reader"])
    if "prices" in known:
        known["prices"] = tuple(tuple(row) for row in known["prices"])
    return AutoConfig(**known)


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
    validated: dict[str, Any] = _check_mapping(node, data, _SCHEMA, "")
    return validated


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


def _check_mapping(node: Any, data: dict[Any, Any], fields: schema.Fields, prefix: str) -> Any:
    """Walk the YAML mapping ``node`` beside its value ``data``: keys are checked
    on the nodes (duplicates, unknown keys, each with its line), leaves by the
    schema (gtd.schema, which words every mistake)."""
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
        if key not in fields.fields:
            known = ", ".join(f"{prefix}{k}" for k in fields.fields)
            raise InputError(
                CONFIG_PATH,
                f"unknown key {path}",
                line,
                hint=f"known keys here: {known} (check the spelling and the indentation)",
            )
        value = data.get(key)
        kind = fields.fields[key]
        if value is None:
            continue  # an explicit null means "the default"
        vline = value_node.start_mark.line + 1
        if isinstance(kind, schema.Fields):
            if not isinstance(value_node, yaml.MappingNode) or not isinstance(value, dict):
                raise InputError(
                    CONFIG_PATH,
                    f"{path} must be a mapping of keys ({', '.join(kind.fields)})",
                    vline,
                )
            out[key] = _check_mapping(value_node, value, kind, f"{path}.")
            continue
        try:
            out[key] = kind.check(value, tuple(path.split(".")))
        except schema.Invalid as exc:
            raise InputError(CONFIG_PATH, exc.message(), vline, hint=exc.hint) from None
    return out
