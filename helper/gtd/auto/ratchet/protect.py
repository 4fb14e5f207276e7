"""Protected test configuration: the files (or parts of files) that decide which
tests run and how, so an agent cannot weaken the suite without touching a test.

Digests cover only the part that governs tests, so a legitimate edit elsewhere in a
shared file (a new dependency in pyproject.toml or package.json) passes:

- conftest.py, pytest.ini, tox.ini, jest/vitest/playwright/cypress configs,
  .mocharc.*, karma.conf.* (any depth): the whole file;
- setup.cfg: the ``[tool:pytest]`` section;
- pyproject.toml: the ``[tool.pytest...]`` tables and dotted ``tool.pytest`` keys;
- package.json: the ``scripts``, ``jest``, ``mocha`` and ``ava`` keys;
- PLAN.md and .deepflow/config.yaml (top level): the whole file, as the agent must
  never edit them.

Section digests ignore blank and comment lines and indentation. The TOML and INI
extractors are line-based on purpose: no TOML parser is needed on Python 3.10, the
digest is the same on every interpreter (a snapshot taken by one helper version is
checked by the next), and a file the agent broke still digests (differently).
A file that exists without a governing part digests to "" so that adding one later
reads as "modified".
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

PLAN = "PLAN.md"
CONFIG = ".deepflow/config.yaml"
OWNED = (PLAN, CONFIG)

_WHOLE_NAMES = frozenset({"conftest.py", "pytest.ini", "tox.ini"})
_WHOLE_PREFIXES = (
    "jest.config.",
    "vitest.config.",
    "vitest.workspace.",
    "playwright.config.",
    "cypress.config.",
    ".mocharc.",
    "karma.conf.",
)
_PARTIAL_NAMES = frozenset({"setup.cfg", "pyproject.toml", "package.json"})
_PACKAGE_KEYS = ("scripts", "jest", "mocha", "ava")

# Caches, virtualenvs and dependencies: never protected, never tests.
CACHE_DIRS_RE = re.compile(
    r"(^|/)(__pycache__|node_modules|\.pytest_cache|\.mypy_cache|\.ruff_cache|\.tox|\.nox"
    r"|\.venv|\.git|\.hypothesis)/"
)


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def is_test_only_config(path: str) -> bool:
    """conftest.py, pytest.ini, tox.ini and runner configs, at any depth."""
    name = _basename(path)
    return name in _WHOLE_NAMES or name.startswith(_WHOLE_PREFIXES)


def is_protected_path(path: str) -> bool:
    if path in OWNED:
        return True
    if path.startswith(".deepflow/") or CACHE_DIRS_RE.search(path):
        return False
    return is_test_only_config(path) or _basename(path) in _PARTIAL_NAMES


def digest(path: str, data: bytes) -> str:
    """sha256 of the part of ``data`` (the content of ``path``) that governs tests;
    "" when the file has no such part."""
    name = _basename(path)
    if path in OWNED or is_test_only_config(path):
        return hashlib.sha256(data).hexdigest()
    text = data.decode("utf-8", errors="replace")
    if name == "pyproject.toml":
        part = _toml_pytest(text)
    elif name == "setup.cfg":
        part = _ini_section(text, "tool:pytest")
    elif name == "package.json":
        part = _package_keys(text)
    else:  # pragma: no cover - is_protected_path guards every caller
        part = text
    return hashlib.sha256(part.encode("utf-8")).hexdigest() if part else ""


def discover(root: Path, listed: Iterable[str]) -> dict[str, str]:
    """Protected configuration present now: path → digest.

    ``listed`` is git's view (tracked + untracked, ignores respected); the files at
    the top of the repository are looked at directly too, so a git-ignored
    pytest.ini or conftest.py is still seen (pytest reads it all the same).
    """
    candidates = {p for p in listed if is_protected_path(p)}
    try:
        top = os.listdir(root)
    except OSError:
        top = []
    candidates.update(name for name in top if is_protected_path(name))
    candidates.add(CONFIG)
    out: dict[str, str] = {}
    for rel in sorted(candidates):
        try:
            data = (root / rel).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            continue
        out[rel] = digest(rel, data)
    return out


def governs(config_path: str, test_path: str) -> bool:
    """Whether the config file at ``config_path`` can affect ``test_path``: pytest,
    jest and friends apply a config to its own directory and everything below."""
    folder = config_path.rpartition("/")[0]
    return not folder or test_path.startswith(folder + "/")


# -- extractors -----------------------------------------------------------------------

_TOML_HEADER = re.compile(r"^\[\[?\s*(.+?)\s*\]\]?\s*(#.*)?$")
_INI_HEADER = re.compile(r"^\[([^\]]+)\]")


def _significant(line: str) -> str | None:
    stripped = line.strip()
    if not stripped or stripped.startswith(("#", ";")):
        return None
    return stripped


def _toml_key(raw: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in raw.split("."))


def _toml_pytest(text: str) -> str:
    """The ``[tool.pytest...]`` tables, plus ``pytest...`` keys written dotted under
    ``[tool]`` or as ``tool.pytest...`` before any table."""
    out: list[str] = []
    table: str | None = None
    keep = False
    depth = 0  # open brackets of a kept dotted key's multi-line value
    for line in text.splitlines():
        sig = _significant(line)
        if sig is None:
            continue
        if depth > 0:
            out.append(sig)
            depth += _bracket_balance(sig)
            continue
        header = _TOML_HEADER.match(sig) if sig.startswith("[") else None
        if header is not None and "=" not in sig.split("]", 1)[0]:
            table = _toml_key(header.group(1))
            keep = table == "tool.pytest" or table.startswith("tool.pytest.")
            if keep:
                out.append(f"[{table}]")
            continue
        if keep:
            out.append(sig)
            continue
        key = _toml_key(sig.split("=", 1)[0]) if "=" in sig else ""
        dotted = f"{table}.{key}" if table else key
        if dotted == "tool.pytest" or dotted.startswith("tool.pytest."):
            out.append(f"{dotted} = {sig.split('=', 1)[1].strip()}")
            depth = max(0, _bracket_balance(sig))
    return "\n".join(out)


def _bracket_balance(line: str) -> int:
    # Brackets inside strings are rare in test config; a miscount only widens the
    # digested part, which errs on the strict side.
    return line.count("[") + line.count("{") - line.count("]") - line.count("}")


def _ini_section(text: str, section: str) -> str:
    out: list[str] = []
    keep = False
    for line in text.splitlines():
        sig = _significant(line)
        if sig is None:
            continue
        header = _INI_HEADER.match(sig)
        if header is not None:
            keep = header.group(1).strip() == section
            if keep:
                out.append(f"[{section}]")
            continue
        if keep:
            out.append(sig)
    return "\n".join(out)


def _package_keys(text: str) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        return text  # unparseable: digest it all (differs from any parsed form)
    if not isinstance(data, dict):
        return text
    picked = {key: data[key] for key in _PACKAGE_KEYS if key in data}
    return json.dumps(picked, sort_keys=True, ensure_ascii=False) if picked else ""
