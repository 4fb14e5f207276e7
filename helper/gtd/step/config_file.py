"""Finding, merging and validating step mode's config files (docs/step-mode.md, "Config";
README "Configuration"), and the auto-init stub.

Every directory from the working directory up to HOME (or the filesystem root when
the working directory is outside HOME) may hold ``.gtdrc`` (YAML), ``.gtdrc.json``,
``.gtdrc.yaml``, ``.gtdrc.yml``, ``gtd.config.json`` or ``gtd.config.yaml``. All of
them are deep-merged, the innermost directory winning; within one directory the
earlier name in that list wins. ``$schema`` is dropped before validation and any
unknown key is rejected — a typo must never silently fall back to a default.

Errors (exit 1, ``gtd: <message>``): ``<file>: <parse error>``, ``<file>: config must
be a plain object`` and ``Invalid gtd config: <field>: <reason>``.

When no file sets ``testCommand``, :func:`load_config` detects the project's runner
(:func:`detect_test_command`: pytest for a Python project, the package.json test
script for node, cargo, go) and falls back to gtd 2.x's ``npm run test`` only when
nothing is recognised; :attr:`Config.test_command_source` records which, so the
prompts and the check script can say so. Every key is documented in
docs/step-mode.md, "Config".
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gtd.errors import GtdError
from gtd.step.config import (
    CHECK_MODES,
    DEFAULT_TEST_COMMAND,
    MODEL_STATE_KEYS,
    CheckMode,
    Config,
    Models,
)

__all__ = [
    "CONFIG_NAMES",
    "SCHEMA_URL",
    "STUB_NAME",
    "ConfigError",
    "config_files",
    "detect_test_command",
    "load_config",
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

_TOP_KEYS = (
    "testCommand",
    "fixAttemptCap",
    "reviewThreshold",
    "agenticReview",
    "squash",
    "models",
    "checks",
)
_MODEL_KEYS = ("planning", "execution", "states")


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


def _invalid(field: str, reason: str) -> ConfigError:
    return ConfigError(f"Invalid gtd config: {field}: {reason}")


def _int(data: Mapping[str, Any], key: str, minimum: int, default: int) -> int:
    if key not in data:
        return default
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(key, f"expected an integer, got {json.dumps(value)}")
    if value < minimum:
        raise _invalid(key, f"must be ≥ {minimum}, got {value}")
    return value


def _bool(data: Mapping[str, Any], key: str, default: bool) -> bool:
    if key not in data:
        return default
    value = data[key]
    if not isinstance(value, bool):
        raise _invalid(key, f"expected true or false, got {json.dumps(value)}")
    return value


def _checks(data: Mapping[str, Any]) -> CheckMode:
    if "checks" not in data:
        return "inline"
    value = data["checks"]
    for mode in CHECK_MODES:
        if value == mode:
            return mode
    allowed = " or ".join(json.dumps(mode) for mode in CHECK_MODES)
    raise _invalid("checks", f"expected {allowed}, got {json.dumps(value)}")


def _string(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _invalid(field, f"expected a non-empty string, got {json.dumps(value)}")
    return value


def _unknown(data: Mapping[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
    for key in data:
        if key not in allowed:
            raise _invalid(f"{prefix}{key}", f"unknown key (allowed: {', '.join(allowed)})")


def _models(value: Any) -> Models:
    if not isinstance(value, dict):
        raise _invalid("models", f"expected an object, got {json.dumps(value)}")
    _unknown(value, _MODEL_KEYS, "models.")
    defaults = Models()
    planning = _string(value["planning"], "models.planning") if "planning" in value else None
    execution = _string(value["execution"], "models.execution") if "execution" in value else None
    states: dict[str, str] = {}
    if "states" in value:
        raw = value["states"]
        if not isinstance(raw, dict):
            raise _invalid("models.states", f"expected an object, got {json.dumps(raw)}")
        _unknown(raw, MODEL_STATE_KEYS, "models.states.")
        states = {key: _string(model, f"models.states.{key}") for key, model in raw.items()}
    return Models(planning or defaults.planning, execution or defaults.execution, states)


def parse_config(data: Mapping[str, Any]) -> Config:
    """Validate one merged mapping (``$schema`` already allowed) into a Config."""
    body = {key: value for key, value in data.items() if key != "$schema"}
    _unknown(body, _TOP_KEYS, "")
    defaults = Config()
    test_command = (
        _string(body["testCommand"], "testCommand")
        if "testCommand" in body
        else defaults.test_command
    )
    return Config(
        test_command=test_command,
        fix_attempt_cap=_int(body, "fixAttemptCap", 0, defaults.fix_attempt_cap),
        review_threshold=_int(body, "reviewThreshold", 1, defaults.review_threshold),
        agentic_review=_bool(body, "agenticReview", defaults.agentic_review),
        squash=_bool(body, "squash", defaults.squash),
        models=_models(body["models"]) if "models" in body else defaults.models,
        checks=_checks(body),
        test_command_source="config" if "testCommand" in body else "default",
    )


def load_config(cwd: Path, home: Path | None = None) -> tuple[Config, list[Path]]:
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
