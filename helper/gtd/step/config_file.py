"""Finding, merging and validating step mode's config files (docs/step-mode.md,
"Config"), and the auto-init stub.

Every directory from the working directory up to HOME (or the filesystem root when
the working directory is outside HOME) may hold ``.gtdrc`` (YAML), ``.gtdrc.json``,
``.gtdrc.yaml``, ``.gtdrc.yml``, ``gtd.config.json`` or ``gtd.config.yaml``. All of
them are deep-merged, the innermost directory winning; within one directory the
earlier name in that list wins. ``$schema`` is dropped before validation and any
unknown key is rejected — a typo must never silently fall back to a default.

Errors (exit 1, ``gtd: <message>``): ``<file>: <parse error>``, ``<file>: config must
be a plain object`` and ``Invalid gtd config: <field>: <reason>``.

When no file sets ``testCommand``, :func:`load_step_config` detects the project's runner
(:func:`detect_test_command`: pytest for a Python project, the package.json test
script for node, cargo, go) and falls back to gtd 2.x's ``npm run test`` only when
nothing is recognised; :attr:`StepConfig.test_command_source` records which, so the
prompts and the check script can say so. Every key is documented in
docs/step-mode.md, "Config".
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from gtd import schema
from gtd.errors import GtdError
from gtd.step.settings import (
    CHECK_MODES,
    DEFAULT_TEST_COMMAND,
    MODEL_STATE_KEYS,
    Models,
    StepConfig,
)

__all__ = [
    "CONFIG_NAMES",
    "SCHEMA_URL",
    "STUB_NAME",
    "ConfigError",
    "config_files",
    "detect_test_command",
    "load_step_config",
    "parse_config",
    "stub_text",
]

CONFIG_NAMES: tuple[str, ...] = (
    ".gtdrc",
    ".gtdrc.json",
    ".gtdrc.yaml",
    ".gtdrc.yml",
    "gtd.config.json",
    "gtd.config.yaml",
)
STUB_NAME = ".gtdrc.json"
SCHEMA_URL = "https://unpkg.com/@pmelab/gtd/schema.json"


class ConfigError(GtdError):
    """A config file that cannot be read, or a merged config that is invalid."""


def stub_text() -> str:
    return json.dumps({"$schema": SCHEMA_URL}, indent=2) + "\n"


def config_files(cwd: Path, home: Path | None = None) -> list[Path]:
    """Every config file from ``cwd`` up to HOME (or ``/``), innermost first."""
    start = Path(os.path.realpath(cwd))
    home_dir = home if home is not None else _home()
    stop = Path(os.path.realpath(home_dir)) if home_dir is not None else None
    if stop is not None and stop != start and stop not in start.parents:
        stop = None  # outside HOME: walk to the filesystem root
    found: list[Path] = []
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if candidate.is_file():
                found.append(candidate)
        if stop is not None and directory == stop:
            break
    return found


def _home() -> Path | None:
    home = os.environ.get("HOME")
    return Path(home) if home else None


def _parse_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    data: Any
    if path.name.endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    else:
        import yaml  # deferred: most repos only have the JSON stub

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            detail = " ".join(str(exc).split())
            raise ConfigError(f"{path}: {detail}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: config must be a plain object")
    return data


def _deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        old = merged.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            merged[key] = _deep_merge(old, value)
        else:
            merged[key] = value
    return merged


def _schema() -> schema.Fields:
    """``.gtdrc*``'s keys (gtd.schema); gtd 2.x reads a null value as a mistake."""
    text = schema.Text(nonempty=True)
    models = schema.Fields(
        {
            "planning": text,
            "execution": text,
            "states": schema.Fields(dict.fromkeys(MODEL_STATE_KEYS, text), null_default=False),
        },
        null_default=False,
    )
    return schema.Fields(
        {
            "testCommand": text,
            "fixAttemptCap": schema.Integer(0),
            "reviewThreshold": schema.Integer(1),
            "agenticReview": schema.Flag(),
            "squash": schema.Flag(),
            "models": models,
            "checks": schema.Choice(CHECK_MODES),
        },
        null_default=False,
    )


_SCHEMA = _schema()
# The accepted keys, from the schema (docs/step-mode.md, "Config" lists each).
_TOP_KEYS: tuple[str, ...] = tuple(_SCHEMA.fields)
_MODEL_KEYS: tuple[str, ...] = tuple(cast(schema.Fields, _SCHEMA.fields["models"]).fields)


def parse_config(data: Mapping[str, Any]) -> StepConfig:
    """Validate one merged mapping (``$schema`` already allowed) into a StepConfig.
    Errors keep gtd 2.x's words: ``Invalid gtd config: <field>: <reason>``."""
    body = {key: value for key, value in data.items() if key != "$schema"}
    try:
        found = _SCHEMA.check(body, ())
    except schema.Invalid as exc:
        raise ConfigError(
            f"Invalid gtd config: {schema.dotted(exc.path)}: {schema.gtd2_reason(exc)}"
        ) from None
    defaults = StepConfig()
    models = found.get("models", {})
    return StepConfig(
        test_command=found.get("testCommand", defaults.test_command),
        fix_attempt_cap=found.get("fixAttemptCap", defaults.fix_attempt_cap),
        review_threshold=found.get("reviewThreshold", defaults.review_threshold),
        agentic_review=found.get("agenticReview", defaults.agentic_review),
        squash=found.get("squash", defaults.squash),
        models=Models(
            models.get("planning", defaults.models.planning),
            models.get("execution", defaults.models.execution),
            models.get("states", {}),
        )
        if "models" in found
        else defaults.models,
        checks=found.get("checks", "inline"),
        test_command_source="config" if "testCommand" in found else "default",
    )


def load_step_config(cwd: Path, home: Path | None = None) -> tuple[StepConfig, list[Path]]:
    """The merged, validated config and the files it came from (innermost first).
    No files → the defaults and an empty list (the caller auto-inits). Without a
    configured ``testCommand`` the project's runner is detected in ``cwd``."""
    files = config_files(cwd, home)
    merged: dict[str, Any] = {}
    for path in reversed(files):  # outermost first, so inner levels override
        merged = _deep_merge(merged, _parse_file(path))
    config = parse_config(merged)
    if config.test_command_source == "default":
        detected = detect_test_command(cwd)
        if detected is not None:
            config = config._replace(test_command=detected, test_command_source="detected")
    return config, files


def detect_test_command(root: Path) -> str | None:
    """The project's test runner, as auto mode detects it (pytest for a Python
    project, a package.json test script, cargo, go), with node's spelled the gtd 2.x
    way (``npm run test``, the same script as ``npm test``); None when nothing is
    recognised."""
    from gtd.detect import detect_test_command as detect  # the one detector

    found = detect(root)
    return DEFAULT_TEST_COMMAND if found == "npm test" else found
