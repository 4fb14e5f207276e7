"""The sections of shared configuration files that govern tests, read with the
parsers the tools themselves use. Pure: bytes in, canonical text out.

Each reader returns ``{section name: canonical text}`` for the governing
sections present, or None when the tool could not parse the file (the caller
then digests the whole file as "unparsable"). A section's canonical text is the
parsed value as sorted JSON, so a comment, blank line, key order, quoting style
or line-ending change leaves it unchanged, and any change to a value pytest (or
tox, or npm) reads changes it.

The text is decoded the way the tools read it: UTF-8, universal newlines (what
``Path.read_text`` and ``open`` give), a byte-order mark kept where the tool
keeps it. Then:

- TOML (``pyproject.toml``): ``tomllib`` (``tomli`` before Python 3.11), as
  pytest and tox do;
- pytest's INI sections (``[pytest]`` of ``tox.ini``, ``[tool:pytest]`` of
  ``setup.cfg``): ``iniconfig``, as pytest does — it splits lines with
  ``str.splitlines``, so a U+2028 is a line break there and here alike;
- tox's INI sections: ``configparser`` with tox's settings (no interpolation),
  which splits lines on ``\\n`` only — U+2028 is text to tox, and to this reader;
- ``package.json``: ``json``, with Node's strictness (no NaN or Infinity) and
  npm's tolerance of a leading byte-order mark.

Parsers are imported on first use: this module is loaded by every ``cycle end``,
never by ``cycle begin``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

Sections = dict[str, str]

# pyproject.toml tables read by pytest, always.
PYPROJECT_PYTEST = ("[tool.pytest.ini_options]", "[tool.pytest]")
# pyproject.toml tables read by task runners (tox, hatch, pdm, poe).
PYPROJECT_RUNNERS: tuple[tuple[str, ...], ...] = (
    ("tox",),
    ("hatch", "envs"),
    ("pdm", "scripts"),
    ("poe",),
)
# INI sections pytest reads, per file name.
INI_PYTEST = {"tox.ini": ("pytest",), "setup.cfg": ("tool:pytest", "pytest")}
# INI sections tox reads, per file name (``testenv:*`` stands for every env).
INI_TOX = {
    "tox.ini": ("tox", "testenv", "testenv:*", "pkgenv", "pkgenv:*"),
    "setup.cfg": ("tox:tox", "testenv", "testenv:*"),
}
# package.json keys read by test runners whatever the command, and by npm-like
# runners (npm, yarn, pnpm, bun) when a command may run them.
PACKAGE_TEST_KEYS = ("jest", "mocha", "ava")
PACKAGE_RUNNER_KEYS = ("scripts",)


def runner_table_names() -> tuple[str, ...]:
    return tuple(f"[tool.{'.'.join(p)}]" for p in PYPROJECT_RUNNERS)


def text_of(data: bytes) -> str | None:
    """``data`` as the tools read it (UTF-8, universal newlines); None when it is
    not UTF-8 (every tool here refuses such a file)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def canonical(value: Any) -> str:
    """One text per parsed value: sorted keys, TOML dates and times tagged."""
    return json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_tagged
    )


def _tagged(value: Any) -> Any:
    iso = getattr(value, "isoformat", None)
    if iso is not None:  # datetime, date, time: TOML's only non-JSON values
        return {f"${type(value).__name__}": iso()}
    raise TypeError(f"not canonical: {type(value).__name__}")  # pragma: no cover


# -- pyproject.toml -------------------------------------------------------------------


def pyproject(data: bytes, *, runners: bool) -> Sections | None:
    """``[tool.pytest.ini_options]`` and ``[tool.pytest]`` (pytest 9's native table:
    everything under ``tool.pytest`` but ``ini_options``); with ``runners``, also
    ``[tool.tox]``, ``[tool.hatch.envs]``, ``[tool.pdm.scripts]`` and ``[tool.poe]``."""
    doc = _toml(data)
    if doc is None:
        return None
    out: Sections = {}
    tool = doc.get("tool")
    if tool is None:
        return out
    if not isinstance(tool, dict):  # `tool = 1`: pytest fails reading it
        out["[tool]"] = canonical(tool)
        return out
    table = tool.get("pytest")
    if isinstance(table, dict):
        if "ini_options" in table:  # present even empty: it makes the file pytest's config
            out["[tool.pytest.ini_options]"] = canonical(table["ini_options"])
        native = {k: v for k, v in table.items() if k != "ini_options"}
        if native:
            out["[tool.pytest]"] = canonical(native)
    elif table is not None:
        out["[tool.pytest]"] = canonical(table)
    if runners:
        for path in PYPROJECT_RUNNERS:
            value = _dig(tool, path)
            if value is not None:
                out[f"[tool.{'.'.join(path)}]"] = canonical(value)
    return out


def _dig(table: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = table
    for key in path:
        if not isinstance(value, dict):
            return value  # a scalar where a table was expected: digest what is there
        value = value.get(key)
        if value is None:
            return None
    return value


def _toml(data: bytes) -> dict[str, Any] | None:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib

    text = text_of(data)
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


# -- INI files ------------------------------------------------------------------------


def ini(name: str, data: bytes, *, runners: bool) -> Sections | None:
    """The sections of ``tox.ini`` or ``setup.cfg`` (``name``) that govern tests:
    pytest's always (read with iniconfig); tox's when ``runners`` (read with
    configparser), with every section they pull in by ``{[section]key}``
    substitution or ``base =``."""
    text = text_of(data)
    if text is None:
        return None
    pytest_sections = _iniconfig(text)
    if pytest_sections is None:
        return None
    out: Sections = {
        f"[{section}]": canonical(dict(pytest_sections[section]))
        for section in INI_PYTEST.get(name, ())
        if section in pytest_sections
    }
    if runners and name in INI_TOX:
        tox_sections = _tox_sections(text, INI_TOX[name])
        if tox_sections is None:
            return None
        out.update(tox_sections)
    return out


def _iniconfig(text: str) -> Mapping[str, Mapping[str, str]] | None:
    import iniconfig

    try:
        return iniconfig.IniConfig("config.ini", data=text).sections
    except iniconfig.ParseError:
        return None


_SUBSTITUTION = re.compile(r"\{\[([^\]]+)\]")


def _tox_sections(text: str, patterns: tuple[str, ...]) -> Sections | None:
    from configparser import ConfigParser
    from configparser import Error as ConfigError

    parser = ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except ConfigError:
        return None

    def wanted(section: str) -> bool:
        return any(
            section == p or (p.endswith(":*") and section.startswith(p[:-1])) for p in patterns
        )

    todo = [s for s in parser.sections() if wanted(s)]
    out: Sections = {}
    while todo:
        section = todo.pop()
        if f"[{section}]" in out or not parser.has_section(section):
            continue
        values = dict(parser[section].items())  # [DEFAULT] values included, as tox sees them
        out[f"[{section}]"] = canonical(values)
        for value in values.values():
            todo.extend(_SUBSTITUTION.findall(value))
        base = values.get("base")
        if base:
            todo.extend(b.strip() for b in re.split(r"[,\n]", base) if b.strip())
            todo.extend(f"testenv:{b.strip()}" for b in re.split(r"[,\n]", base) if b.strip())
    return out


# -- package.json ---------------------------------------------------------------------


def package_json(data: bytes, *, runners: bool) -> Sections | None:
    """The ``jest``, ``mocha`` and ``ava`` keys; with ``runners``, ``scripts`` too."""
    text = text_of(data)
    if text is None:
        return None
    try:
        doc = json.loads(text.removeprefix("\ufeff"), parse_constant=_no_constant)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None  # npm refuses a package.json that is not an object
    keys = PACKAGE_TEST_KEYS + (PACKAGE_RUNNER_KEYS if runners else ())
    return {key: canonical(doc[key]) for key in keys if key in doc}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JSON.parse rejects NaN and Infinity


READERS: Mapping[str, Callable[[bytes, bool], Sections | None]] = {
    "pyproject.toml": lambda data, runners: pyproject(data, runners=runners),
    "tox.ini": lambda data, runners: ini("tox.ini", data, runners=runners),
    "setup.cfg": lambda data, runners: ini("setup.cfg", data, runners=runners),
    "package.json": lambda data, runners: package_json(data, runners=runners),
}
